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


def unit_fraction(gid: str) -> float:
    """A game id mapped uniformly onto [0, 1): the top 53 bits of its first 7 bytes (big-endian)
    / 2**53 — exact in a float64, so never rounds up to 1."""
    return (int(gid[:14], 16) >> 3) / float(1 << 53)
