"""``simple``: black / white stones by liberty bucket (1, 2, 3, ≥4), who is to move, the ko point."""

from __future__ import annotations

from gotk.encoders import planes as P
from gotk.encoders.game_loop import FillEncoder

PLANES = (
    P.Plane("black_liberties_1", P.stones_with_liberties, (P.BLACK, 1, 1)),
    P.Plane("black_liberties_2", P.stones_with_liberties, (P.BLACK, 2, 2)),
    P.Plane("black_liberties_3", P.stones_with_liberties, (P.BLACK, 3, 3)),
    P.Plane("black_liberties_4plus", P.stones_with_liberties, (P.BLACK, 4, P.UNBOUNDED)),
    P.Plane("white_liberties_1", P.stones_with_liberties, (P.WHITE, 1, 1)),
    P.Plane("white_liberties_2", P.stones_with_liberties, (P.WHITE, 2, 2)),
    P.Plane("white_liberties_3", P.stones_with_liberties, (P.WHITE, 3, 3)),
    P.Plane("white_liberties_4plus", P.stones_with_liberties, (P.WHITE, 4, P.UNBOUNDED)),
    P.Plane("black_to_move", P.to_move, (P.BLACK,)),
    P.Plane("white_to_move", P.to_move, (P.WHITE,)),
    P.Plane("ko", P.ko_forbidden),
)

simple_fill = P.compose_fill("simple_fill", PLANES, __name__)


class SimpleEncoder(FillEncoder):
    """Eleven bit planes: black / white stones with 1, 2, 3, ≥4 liberties; black / white to move; ko."""

    name = "simple"
    version = 1
    dtype = "bit"
    fill = staticmethod(simple_fill)
    names = tuple(p.name for p in PLANES)
