"""``sevenplane``: stones by owner and liberty bucket (1, 2, ≥3), plus the ko-forbidden point."""

from __future__ import annotations

from gotk.encoders import planes as P
from gotk.encoders.game_loop import FillEncoder

PLANES = (
    P.Plane("own_liberties_1", P.stones_with_liberties, (P.OWN, 1, 1)),
    P.Plane("own_liberties_2", P.stones_with_liberties, (P.OWN, 2, 2)),
    P.Plane("own_liberties_3plus", P.stones_with_liberties, (P.OWN, 3, P.UNBOUNDED)),
    P.Plane("opponent_liberties_1", P.stones_with_liberties, (P.OPPONENT, 1, 1)),
    P.Plane("opponent_liberties_2", P.stones_with_liberties, (P.OPPONENT, 2, 2)),
    P.Plane("opponent_liberties_3plus", P.stones_with_liberties, (P.OPPONENT, 3, P.UNBOUNDED)),
    P.Plane("ko", P.ko_forbidden),
)

sevenplane_fill = P.compose_fill("sevenplane_fill", PLANES, __name__)


class SevenPlaneEncoder(FillEncoder):
    """Seven bit planes: own / opponent stones whose string has 1, 2, ≥3 liberties; ko point."""

    name = "sevenplane"
    version = 1
    dtype = "bit"
    fill = staticmethod(sevenplane_fill)
    names = tuple(p.name for p in PLANES)
