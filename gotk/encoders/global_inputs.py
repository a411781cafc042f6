"""The global inputs: a small vector per position beside its planes, the one owner of what it holds.

A position's planes say nothing of the komi, yet the komi decides who wins a close game. KataGo feeds it as a global
input (``cpp/neuralnet/nninputs.cpp``, ``fillRowV7``: ``rowGlobal[5] = selfKomi / 20``, where ``selfKomi`` is the
komi for the player to move, ``+komi`` when white is to move and ``-komi`` when black is, clipped to the board's
area plus one). gotk follows that convention:

* ``komi``: the komi from the player to move's view (the points that player receives; negative for black under
  a positive komi), clipped to ``±(size² + 1)``, divided by :data:`KOMI_SCALE` (20);
* ``white_to_move``: 1 when white is to move, else 0.

Every place that feeds a model calls this module: the encode run and self-play write the vector into shards (the
optional ``globals`` column, :mod:`gotk.shards.format`), and the search's evaluator and the policy player compute it
from a :class:`~gotk.game.state.GameState` (its komi and colour to move). A game of unknown komi has komi 0.
"""

from __future__ import annotations

import numpy as np

from gotk.game import kernels as K

NAMES = ("komi", "white_to_move")
KOMI_SCALE = 20.0
VERSION = 1


def describe() -> dict:
    """JSON-able description recorded in shard metadata and agent files (names in order, the komi scale)."""
    return {"names": list(NAMES), "komi_scale": KOMI_SCALE, "version": VERSION}


def size() -> int:
    """Length of the vector."""
    return len(NAMES)


def global_rows(komi, white_to_move, board_size: int = 19) -> np.ndarray:
    """``(N, G)`` float32 vectors: ``komi`` the game's komi (points given to white; a scalar or one per row),
    ``white_to_move`` booleans (N,) (true where white is to move)."""
    white = np.asarray(white_to_move, dtype=bool).reshape(-1)
    bound = float(board_size * board_size + 1)
    komi = np.clip(np.nan_to_num(np.asarray(komi, dtype=np.float64), nan=0.0), -bound, bound)
    out = np.empty((white.shape[0], len(NAMES)), dtype=np.float32)
    out[:, 0] = np.where(white, komi, -komi) / KOMI_SCALE
    out[:, 1] = white
    return out


def from_to_play(komi, to_play: np.ndarray, board_size: int = 19) -> np.ndarray:
    """:func:`global_rows` of shard rows: ``to_play`` the shards' column (+1 black, -1 white)."""
    return global_rows(komi, np.asarray(to_play) < 0, board_size)


def for_color(komi: float, color: int, board_size: int = 19) -> np.ndarray:
    """The ``(G,)`` vector of one position: ``color`` the player to move (1 black, 2 white)."""
    return global_rows(komi, [int(color) == K.WHITE], board_size)[0]


def for_state(state, color: int | None = None) -> np.ndarray:
    """The ``(G,)`` vector of a :class:`~gotk.game.state.GameState` (its komi; ``color`` overrides its player to
    move)."""
    return for_color(state.komi, state.to_play if color is None else color, state.size)
