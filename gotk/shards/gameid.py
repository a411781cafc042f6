"""Stable game identities: a hash of what was played, never of metadata or file names.

``game_id`` is the hex BLAKE2b digest (16 bytes → 32 hex characters) of the board size, the setup
stones (sorted, per colour) and the main-line move sequence (colour, point). Two records of the same
game in different archives, or with different player names, dates or comments, get the same id; any
difference in the stones played gives a different one. The layout of the hashed bytes is versioned
(``GAME_ID_VERSION``) and documented in ``docs/shards.md``.
"""

from __future__ import annotations

import hashlib
import struct

import numpy as np

GAME_ID_VERSION = 1
_PREFIX = b"gotk-game-id-v1\x00"
_HEADER = struct.Struct("<5I")  # size, setup counts (black, white, empty), moves: five little-endian uint32


def game_id(record) -> str:
    """The 32-hex-character id of a :class:`~gotk.sgf.record.GameRecord`."""
    return game_id_from_parts(record.size, record.setup_black, record.setup_white, record.setup_empty,
                              record.colors, record.points)


def game_id_from_parts(size: int, setup_black, setup_white, setup_empty, colors, points) -> str:
    """The id from raw parts: ``size``; setup point sequences; main-line ``colors`` (1 black,
    2 white) and flat ``points`` (pass = size*size)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(_PREFIX)
    h.update(_HEADER.pack(size, len(setup_black), len(setup_white), len(setup_empty), len(points)))
    for stones in (setup_black, setup_white, setup_empty):
        if len(stones):  # an empty list adds no bytes
            h.update(np.sort(np.asarray(stones, dtype="<u2")).tobytes())
    h.update(np.asarray(colors, dtype="u1").tobytes())
    h.update(np.asarray(points, dtype="<u2").tobytes())
    return h.hexdigest()


def game_ids(size: int, colors: np.ndarray, points: np.ndarray, moves: np.ndarray,
             setup: list[tuple[np.ndarray, np.ndarray]]) -> list[str]:
    """:func:`game_id_from_parts` of many games of one board size at once: game ``g``'s main line is
    ``colors[moves[g]:moves[g + 1]]`` / ``points[...]``, its setup points ``pts[off[g]:off[g + 1]]`` for each
    ``(pts, off)`` of ``setup`` (black, white, empty). The arrays are converted once, not per game."""
    color_bytes = memoryview(np.asarray(colors, dtype="u1").tobytes())
    point_bytes = memoryview(np.asarray(points, dtype="<u2").tobytes())
    stones = [(np.asarray(pts, dtype="<u2"), np.asarray(off).tolist()) for pts, off in setup]
    bounds = np.asarray(moves).tolist()
    out: list[str] = []
    for g in range(len(bounds) - 1):
        m0, m1 = bounds[g], bounds[g + 1]
        h = hashlib.blake2b(digest_size=16)
        h.update(_PREFIX)
        h.update(_HEADER.pack(size, *(off[g + 1] - off[g] for _, off in stones), m1 - m0))
        for pts, off in stones:
            if off[g + 1] > off[g]:  # an empty list adds no bytes
                h.update(np.sort(pts[off[g]:off[g + 1]]).tobytes())
        h.update(color_bytes[m0:m1])
        h.update(point_bytes[2 * m0:2 * m1])
        out.append(h.hexdigest())
    return out


def unit_fraction(gid: str) -> float:
    """A game id mapped uniformly onto [0, 1): the top 53 bits of its first 7 bytes (big-endian)
    / 2**53 — exact in a float64, so never rounds up to 1."""
    return (int(gid[:14], 16) >> 3) / float(1 << 53)
