"""A board recovered from encoded planes by their names (for drawing stored positions)."""

from __future__ import annotations

import re

import numpy as np

_STONE_PLANES = (
    ("own", re.compile(r"^(own_(liberties|stones?)|stone_player$|player_stones?$)")),
    ("opp", re.compile(r"^(opponent_(liberties|stones?)|stone_opponent$|opponent_stones?$)")),
    ("black", re.compile(r"^black_(liberties|stones?)")),
    ("white", re.compile(r"^white_(liberties|stones?)")),
)


def stones_from_planes(planes: np.ndarray, names: list[str], to_play: int) -> np.ndarray | None:
    """A flat board (0 empty, 1 black, 2 white) recovered from planes by their names: stone or
    liberty planes of ``own``/``opponent`` (``stone_player``/``stone_opponent``; relative to
    ``to_play``, +1 black) or ``black``/``white``, or a signed ``own_minus_opponent`` int8 plane.
    None when no plane names stones."""
    c, h, w = planes.shape
    sets = {k: np.zeros(h * w, dtype=bool) for k in ("own", "opp", "black", "white")}
    found = False
    for i, name in enumerate(names):
        plane = planes[i].reshape(-1)
        if planes.dtype == np.int8 and name.startswith("own_minus_opponent"):
            sets["own"] |= plane > 0
            sets["opp"] |= plane < 0
            found = True
            continue
        for key, pattern in _STONE_PLANES:
            if pattern.match(name):
                sets[key] |= plane != 0
                found = True
                break
    if not found:
        return None
    me, them = (1, 2) if to_play > 0 else (2, 1)
    board = np.zeros(h * w, dtype=np.int8)
    board[sets["black"]] = 1
    board[sets["white"]] = 2
    board[sets["own"]] = me
    board[sets["opp"]] = them
    return board
