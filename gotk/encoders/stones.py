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


def _plane_sets(names: list[str], int8: bool) -> dict[str, list[int]] | None:
    """The planes that name stones, by whose (``own``, ``opp``, ``black``, ``white``; module docstring); None when
    no plane does."""
    sets: dict[str, list[int]] = {"own": [], "opp": [], "black": [], "white": [], "signed": []}
    for i, name in enumerate(names):
        if int8 and name.startswith("own_minus_opponent"):
            sets["signed"].append(i)
            continue
        for key, pattern in _STONE_PLANES:
            if pattern.match(name):
                sets[key].append(i)
                break
    return sets if any(sets.values()) else None


def stones_batch(planes: np.ndarray, names: list[str], to_play: np.ndarray) -> np.ndarray | None:
    """Flat boards ``(N, H*W)`` (0 empty, 1 black, 2 white) of a batch of planes ``(N, C, H, W)`` whose players to
    move are ``to_play`` (+1 black, −1 white), by the rules of :func:`stones_from_planes`; None when no plane names
    stones."""
    n, _, h, w = planes.shape
    sets = _plane_sets(names, planes.dtype == np.int8)
    if sets is None:
        return None

    def union(idx: list[int]) -> np.ndarray:
        if not idx:
            return np.zeros((n, h * w), dtype=bool)
        return (planes[:, idx] != 0).any(axis=1).reshape(n, h * w)

    own, opp = union(sets["own"]), union(sets["opp"])
    for i in sets["signed"]:
        plane = planes[:, i].reshape(n, h * w)
        own |= plane > 0
        opp |= plane < 0
    black_moves = (np.asarray(to_play) > 0)[:, None]
    board = np.zeros((n, h * w), dtype=np.int8)
    board[union(sets["black"])] = 1
    board[union(sets["white"])] = 2
    board[own & black_moves] = 1
    board[own & ~black_moves] = 2
    board[opp & black_moves] = 2
    board[opp & ~black_moves] = 1
    return board


def stones_from_planes(planes: np.ndarray, names: list[str], to_play: int) -> np.ndarray | None:
    """A flat board (0 empty, 1 black, 2 white) recovered from planes by their names: stone or
    liberty planes of ``own``/``opponent`` (``stone_player``/``stone_opponent``; relative to
    ``to_play``, +1 black) or ``black``/``white``, or a signed ``own_minus_opponent`` int8 plane.
    None when no plane names stones."""
    out = stones_batch(planes[None], names, np.array([to_play]))
    return None if out is None else out[0]
