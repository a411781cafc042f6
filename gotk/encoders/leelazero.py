"""``leelazero``: Leela Zero's 18 input planes (``Network::gather_features`` in Leela Zero's ``src/Network.cpp``).

* planes 0-7: the stones of the side to move at T, T-1 … T-7 (T = the position to encode);
* planes 8-15: the opponent's stones at T … T-7;
* plane 16: all ones when black is to move; plane 17: all ones when white is to move.

A position before the game's first one (its setup position: handicap stones) is empty, as Leela Zero's
``get_past_board`` never reaches past its move 0. Planes are in gotk's orientation (row 0 at the top), for any
board size; Leela Zero's own networks are 19x19 and number their points from the bottom row
(:func:`gotk.coords.to_leelazero`), which :mod:`gotk.export.leelaz_weights` converts when it writes weights.

This module owns the history planes: :func:`history_planes` writes them from a sequence of boards, and both
this encoder (boards kept in a ring, :func:`push_board`, one per main-line position) and Leela Zero's training
data (:mod:`gotk.export.leelazero`, every board of a game) call it.

Two paths give the same planes:

* ``encode_game`` / ``gotk encode``: the generic game loop with a per-game ring of the last 8 boards
  (:func:`new_history`), which :func:`track_board` fills before every main-line move, kept as a row or not;
* ``encode(state)`` on a :class:`~gotk.game.state.GameState`: its setup and ``history`` replayed in one compiled
  call into the same ring (a state whose replay does not give its board, changed by hand, has no history beyond T).
"""

from __future__ import annotations

import numpy as np

from gotk.encoders.game_loop import FillEncoder
from gotk.game import kernels as K
from gotk.jit import kernel

HISTORY = 8  # T … T-7
NUM_PLANES = 2 * HISTORY + 2
P_OWN, P_OPPONENT, P_BLACK_TO_MOVE, P_WHITE_TO_MOVE = 0, HISTORY, 2 * HISTORY, 2 * HISTORY + 1


def plane_names() -> list[str]:
    """The 18 plane names in order."""
    return ([f"own_stones_t{h}" for h in range(HISTORY)] + [f"opponent_stones_t{h}" for h in range(HISTORY)]
            + ["black_to_move", "white_to_move"])


@kernel
def history_planes(out, boards, last, count, color):
    """Write all 18 planes (every element, zero or not) into ``out`` (18, N) for ``color`` (1 black, 2 white) to
    move: position T-h is ``boards[(last - h) % R]`` (``boards`` (R, N), R ≥ 1, 0 empty / 1 black / 2 white) when
    ``h < count``, else empty. A ring of the last R positions (``last`` its newest row, ``count`` the positions
    pushed) and every board of a game (``last = k``, ``count = k + 1`` for position ``k``) both read this way."""
    r = boards.shape[0]
    n = out.shape[1]
    own = np.int8(color)
    opp = np.int8(3 - color)
    for h in range(HISTORY):
        if h < count:
            b = boards[(last - h + r * HISTORY) % r]
            for p in range(n):
                v = b[p]
                out[P_OWN + h, p] = v == own
                out[P_OPPONENT + h, p] = v == opp
        else:
            for p in range(n):
                out[P_OWN + h, p] = 0
                out[P_OPPONENT + h, p] = 0
    black = 1 if color == K.BLACK else 0
    for p in range(n):
        out[P_BLACK_TO_MOVE, p] = black
        out[P_WHITE_TO_MOVE, p] = 1 - black


def new_history(n: int) -> tuple[np.ndarray, np.ndarray]:
    """A ring of the last :data:`HISTORY` boards of ``n`` points and its count (one int64), empty: the game loop's
    per-game state."""
    return np.zeros((HISTORY, n), dtype=np.int8), np.zeros(1, dtype=np.int64)


@kernel
def push_board(ring, count, board):
    """Add ``board`` as the newest position of ``ring`` (the oldest drops out past :data:`HISTORY`)."""
    k = count[0] % ring.shape[0]
    for p in range(board.shape[0]):
        ring[k, p] = board[p]
    count[0] += 1


@kernel
def ring_planes(out, ring, count, color):
    """:func:`history_planes` of the positions pushed into ``ring``, the newest as T."""
    c = count[0]
    history_planes(out, ring, (c - 1) % ring.shape[0], min(c, HISTORY), color)


@kernel
def track_board(e, color, state):
    """The game loop's ``track``: before every main-line move, the position's board into the ring."""
    push_board(state[0], state[1], e.board)


@kernel
def leelazero_game_fill(out, e, color, state):
    """The game loop's fill: the planes of the position the ring's newest board is (``track_board`` ran first)."""
    ring_planes(out, state[0], state[1], color)


@kernel
def leelazero_fill(out, e, color):
    """The planes of ``e`` alone, as the first position of a game: T is ``e``'s board, T-1 … T-7 empty. The
    planes of a position within a game come from ``encode_game`` or ``encode(state)``, which know its history."""
    history_planes(out, e.board.reshape(1, e.board.shape[0]), 0, 1, color)


@kernel
def replay_history(t, colors, points, allow_suicide, ring, count):
    """Replay ``points`` (played by ``colors``) from the position whose Engine arrays are the plain tuple ``t``,
    pushing every position, the first and the one after the last move included, into ``ring``. Returns the
    engine's status of the first move refused (0: all played)."""
    e = K.Engine(*t)
    push_board(ring, count, e.board)
    for i in range(points.shape[0]):
        st = K.play(e, points[i], colors[i], allow_suicide)
        if st != 0:
            return st
        push_board(ring, count, e.board)
    return 0


def state_history(state) -> tuple[np.ndarray, np.ndarray]:
    """The ring (and count) of ``state``'s last positions: its setup and ``history`` replayed on a fresh engine.
    When that replay does not end on ``state``'s board (a position changed by hand), the ring holds that board
    alone."""
    from gotk.game.state import GameState

    n = state.size * state.size
    ring, count = new_history(n)
    fresh = GameState(state.size, state.rules, state.komi)
    black, white = state._setup
    if black or white:
        fresh.setup(black, white)
    if state.history:
        colors = np.fromiter((c for c, _ in state.history), dtype=np.int64, count=len(state.history))
        points = np.fromiter((p for _, p in state.history), dtype=np.int32, count=len(state.history))
    else:
        colors, points = np.empty(0, np.int64), np.empty(0, np.int32)
    status = replay_history(fresh.engine_arrays, colors, points, state.rules.suicide, ring, count)
    if status != 0 or not np.array_equal(ring[(int(count[0]) - 1) % HISTORY], state.board):
        ring, count = new_history(n)
        push_board(ring, count, state.board)
    return ring, count


class LeelaZeroEncoder(FillEncoder):
    """Leela Zero's 18 bit planes: own / opponent stones at T … T-7, black to move, white to move."""

    name = "leelazero"
    version = 1
    dtype = "bit"
    dense = True  # every plane written, zero or not
    fill = staticmethod(leelazero_fill)
    game_fill = staticmethod(leelazero_game_fill)
    game_track = staticmethod(track_board)
    state_maker = staticmethod(new_history)
    names = tuple(plane_names())

    def encode(self, state, color: int | None = None) -> np.ndarray:
        """Planes ``(18, H, W)`` of ``state`` with its history (``state.history`` since its setup); ``color``
        overrides the player to move."""
        if state.size != self.board_size:
            raise ValueError(f"{self.name} encoder is for {self.board_size}x{self.board_size}, "
                             f"the state is {state.size}x{state.size}")
        color = state.to_play if color is None else int(color)
        if color not in (K.BLACK, K.WHITE):
            raise ValueError(f"color must be 1 (black) or 2 (white), not {color}")
        ring, count = state_history(state)
        n = state.size * state.size
        out = np.empty((NUM_PLANES, n), dtype=self.np_dtype)
        ring_planes(out, ring, count, color)
        return out.reshape(NUM_PLANES, state.size, state.size)
