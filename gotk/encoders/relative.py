"""``relative``: ``simple``'s information from the player to move's view.

Own / opponent stones by liberty bucket (1, 2, 3, ≥4), a plane of ones (the board's extent, which zero padding
otherwise hides from the convolutions), white to move, and the ko point. Every target (the move, the value, the
search's policy) is from the player to move's view, as AlphaGo Zero's, Leela Zero's and KataGo's inputs are; the
komi and the side to move also reach a model as its global inputs (:mod:`gotk.encoders.globals`), and the
``white_to_move`` plane keeps the side to move in the planes for models trained without them.
"""

from __future__ import annotations

from gotk.encoders import planes as P
from gotk.encoders.game_loop import FillEncoder

PLANES = (
    P.Plane("own_liberties_1", P.stones_with_liberties, (P.OWN, 1, 1)),
    P.Plane("own_liberties_2", P.stones_with_liberties, (P.OWN, 2, 2)),
    P.Plane("own_liberties_3", P.stones_with_liberties, (P.OWN, 3, 3)),
    P.Plane("own_liberties_4plus", P.stones_with_liberties, (P.OWN, 4, P.UNBOUNDED)),
    P.Plane("opponent_liberties_1", P.stones_with_liberties, (P.OPPONENT, 1, 1)),
    P.Plane("opponent_liberties_2", P.stones_with_liberties, (P.OPPONENT, 2, 2)),
    P.Plane("opponent_liberties_3", P.stones_with_liberties, (P.OPPONENT, 3, 3)),
    P.Plane("opponent_liberties_4plus", P.stones_with_liberties, (P.OPPONENT, 4, P.UNBOUNDED)),
    P.Plane("board", P.ones),
    P.Plane("white_to_move", P.to_move, (P.WHITE,)),
    P.Plane("ko", P.ko_forbidden),
)

relative_fill = P.compose_fill("relative_fill", PLANES, __name__)


class RelativeEncoder(FillEncoder):
    """Eleven bit planes: own / opponent stones with 1, 2, 3, ≥4 liberties; ones; white to move; ko."""

    name = "relative"
    version = 1
    dtype = "bit"
    fill = staticmethod(relative_fill)
    names = tuple(p.name for p in PLANES)
