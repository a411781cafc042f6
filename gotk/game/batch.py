"""Compiled (numba) loops over a batch of games on the one engine (:mod:`gotk.game.kernels`): each game set to its
first position, its main line replayed with the engine's move, optionally noting the stones each move took.
:class:`gotk.game.replay.GameBatch` builds the arrays they read; the encoders' batch loops reuse :func:`start_game`.
"""

from __future__ import annotations

import numpy as np

from gotk.game.kernels import M_CAPT_B, M_CAPT_W, M_DEPTH, M_TO_PLAY, M_TOP, OK, play
from gotk.jit import internal_kernel, kernel

# columns of a game batch's table (``games[g]``, int64): the game's main line is ``colors[M0:M1]`` /
# ``points[M0:M1]``, its setup stones ``setup_b[B0:B1]``, ``setup_w[W0:W1]``, ``setup_e[E0:E1]`` (one
# concatenated array per kind, for the whole batch), ``SUICIDE`` 1 where its rules allow suicide, ``START`` the
# row of its first position in the batch's :class:`Positions` (-1: its setup stones are unusable)
G_M0, G_M1, G_B0, G_B1, G_W0, G_W1, G_E0, G_E1, G_SUICIDE, G_START = range(10)
G_COLS = 10
SETUP_FAILED = -2  # replay_games' status of a game whose setup stones are unusable


@internal_kernel
def start_game(e, starts, t, colors, m0, m1):
    """Set ``e`` to a game's first position: row ``t`` of ``starts`` (the position
    ``gotk.game.replay.initial_state`` builds, setup stones placed), then, as it does, the first move's colour to
    play (a game without moves plays and encodes nothing, so it is left as is). Recorded moves are dropped."""
    board, head, nxt, libs, ssize, placed, mark = e.board, e.head, e.nxt, e.libs, e.ssize, e.placed, e.mark
    for p in range(board.shape[0]):
        board[p] = starts.board[t, p]
        head[p] = starts.head[t, p]
        nxt[p] = starts.nxt[t, p]
        libs[p] = starts.libs[t, p]
        ssize[p] = starts.ssize[t, p]
        placed[p] = starts.placed[t, p]
        mark[p] = starts.mark[t, p]
    meta = e.meta
    for j in range(meta.shape[0]):
        meta[j] = starts.meta[t, j]
    e.hashv[0] = starts.hashv[t, 0]
    meta[M_DEPTH] = 0
    meta[M_TOP] = 0
    if m1 > m0:
        meta[M_TO_PLAY] = colors[m0]


@internal_kernel
def _note_taken(point, board, shadow, nbr, taken, r):
    """After a move on ``point`` took stones off the board: append them to ``taken[r:]`` (returns the new end).
    They are the stones ``shadow`` (the board before the move, the move's own stone placed) has and the board
    lacks, connected to ``point`` (captured strings touch it; a suicided one holds it): a flood fill from it,
    ``taken`` its queue, each stone cleared from the shadow as it joins."""
    r0 = r
    if shadow[point] != 0 and board[point] == 0:
        shadow[point] = 0
        taken[r] = point
        r += 1
    x = point
    k0 = r0
    while True:
        for k in range(4):
            q = nbr[x, k]
            if q < 0:
                break
            if shadow[q] != 0 and board[q] == 0:
                shadow[q] = 0
                taken[r] = q
                r += 1
        if k0 == r:
            return r
        x = taken[k0]
        k0 += 1


@kernel
def replay_games(games, result, colors, points, e, starts, shadow, taken_at, taken):
    """:func:`replay_moves` (without superko) of every game of a batch (``games``: the ``G_*`` columns), each
    from its own first position (:func:`start_game`, a row of ``starts``), in one call on the scratch position
    ``e``: ``result[g]`` = (moves played, status), status :data:`SETUP_FAILED` when the setup stones are
    unusable.

    With a ``taken_at`` as long as ``points`` plus one (else empty: nothing is noted), it also notes the stones
    each played move took off the board (captures, or a suicide's own string: :func:`_note_taken`): those of
    move ``i`` are ``taken[taken_at[i]:taken_at[i + 1]]`` (``taken`` as long as the batch's moves and setup
    stones together: a stone leaves the board at most once per placement), so that a game's boards can be
    replayed again without the engine (:func:`gotk.encoders.game_loop.board_loop_for`). ``shadow`` is scratch of
    the board's length: the board as the trace knows it."""
    note = taken_at.shape[0] > 0
    board, meta = e.board, e.meta
    n = board.shape[0]
    r = np.int64(0)  # typed, not a literal 0: numba would compile _note_taken once more for Literal[int](0)
    for g in range(games.shape[0]):
        t = games[g, G_START]
        m0 = games[g, G_M0]
        m1 = games[g, G_M1]
        if t < 0:
            if note:
                for i in range(m0, m1 + 1):
                    taken_at[i] = r
            result[g, 0] = 0
            result[g, 1] = SETUP_FAILED
            continue
        start_game(e, starts, t, colors, m0, m1)
        if note:
            taken_at[m0] = r
            for p in range(n):
                shadow[p] = board[p]
        gone = meta[M_CAPT_B] + meta[M_CAPT_W]
        allow_suicide = games[g, G_SUICIDE] != 0
        played = m1 - m0
        st = OK
        for i in range(m0, m1):
            p = points[i]
            st = play(e, p, colors[i], allow_suicide)
            if st != OK:
                played = i - m0
                break
            if note:
                if p != n:
                    shadow[p] = colors[i]
                if meta[M_CAPT_B] + meta[M_CAPT_W] != gone:  # stones left the board
                    gone = meta[M_CAPT_B] + meta[M_CAPT_W]
                    r = _note_taken(p, board, shadow, e.nbr, taken, r)
                taken_at[i + 1] = r
        if note:
            for i in range(m0 + played + 1, m1 + 1):  # moves not played take nothing
                taken_at[i] = r
        result[g, 0] = played
        result[g, 1] = st
