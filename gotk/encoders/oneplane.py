"""``oneplane``: one int8 plane, +1 on the mover's stones, -1 on the opponent's, 0 on empty points."""

from __future__ import annotations

from gotk.encoders import planes as P
from gotk.encoders.game_loop import FillEncoder

PLANES = (P.Plane("own_minus_opponent_stones", P.stone_sign),)

oneplane_fill = P.compose_fill("oneplane_fill", PLANES, __name__)


class OnePlaneEncoder(FillEncoder):
    """One int8 plane: +1 own stones, -1 opponent stones, 0 empty (player to move's view)."""

    name = "oneplane"
    version = 1
    dtype = "int8"
    fill = staticmethod(oneplane_fill)
    names = tuple(p.name for p in PLANES)
    dense = P.writes_every_point(PLANES)
    board_only = P.reads_board_only(PLANES)
