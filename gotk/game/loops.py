"""Compiled loops over one engine position (:class:`gotk.game.kernels.Engine`): a whole move sequence replayed
in one call (:func:`replay_moves`, :func:`replay_moves_superko`), the legal mask, the strings rebuilt from the
stones after setup (:func:`setup_position`) and the board hash from scratch.

Apart from :mod:`gotk.game.kernels`, which owns the position and the one rule of a move: these are its users,
each a plain function over an :class:`~gotk.game.kernels.Engine` that Python (:mod:`gotk.game.state`) calls.
"""

from __future__ import annotations

import numpy as np

from gotk.game.kernels import M_DEPTH, M_TOP, OK, check_arrays, count_libs, play, play_recorded, undo
from gotk.jit import internal_kernel, kernel


@internal_kernel
def rebuild_strings(e, stack):
    """Recompute every string and liberty count of ``e`` from the stones alone (flood fill; ``stack`` is int32
    scratch of the board's length)."""
    board, head, nxt, libs, ssize, nbr = e.board, e.head, e.nxt, e.libs, e.ssize, e.nbr
    n = board.shape[0]
    for p in range(n):
        head[p] = -1
        nxt[p] = p
        libs[p] = 0
        ssize[p] = 0
    for p in range(n):
        if board[p] == 0 or head[p] >= 0:
            continue
        color = board[p]
        head[p] = p
        ssize[p] = 1
        top = 0
        stack[top] = p
        top += 1
        last = p
        while top > 0:
            top -= 1
            x = stack[top]
            for k in range(4):
                q = nbr[x, k]
                if q < 0:
                    break
                if board[q] == color and head[q] < 0:
                    head[q] = p
                    ssize[p] += 1
                    # splice q after last in the circular list
                    nxt[q] = nxt[last]
                    nxt[last] = q
                    last = q
                    stack[top] = q
                    top += 1
    for p in range(n):
        if board[p] != 0 and head[p] == p:
            libs[p] = count_libs(np.int32(p), board, nxt, nbr, e.mark, e.meta)  # int32 as in play: one compile
    for p in range(n):
        if head[p] < 0:
            head[p] = p


@kernel
def setup_position(e, stack):
    """After setup stones were written into ``e.board``: rebuild every string and the hash in one call. Returns
    the first point of a string left without liberties, else -1. ``stack``: int32 scratch of the board's length
    (the caller's: a kernel that allocates compiles numba's array constructors)."""
    rebuild_strings(e, stack)
    e.hashv[0] = board_hash(e.board, e.zob)
    board, head, libs = e.board, e.head, e.libs
    for p in range(board.shape[0]):
        if board[p] != 0 and libs[head[p]] == 0:
            return p
    return -1


@kernel
def board_hash(board, zob):
    """Zobrist hash of the stones on ``board``, from scratch."""
    h = np.uint64(0)
    for p in range(board.shape[0]):
        if board[p] != 0:
            h ^= zob[board[p], p]
    return h


@kernel
def replay_moves(e, colors, points, allow_suicide, hashes):
    """Play a whole move sequence in one compiled loop (recorded moves of ``e`` are dropped first).

    ``hashes`` (length ``len(points) + 1``) receives the position hash before the first move and after
    each move. Returns ``(moves_played, status)``; on an illegal move the state is the position before it.
    """
    m = points.shape[0]
    e.meta[M_DEPTH] = 0
    e.meta[M_TOP] = 0
    hashes[0] = e.hashv[0]
    for i in range(m):
        st = play(e, points[i], colors[i], allow_suicide)
        if st != OK:
            return i, st
        hashes[i + 1] = e.hashv[0]
    return m, OK


@kernel
def replay_moves_superko(e, colors, points, allow_suicide, hashes):
    """:func:`replay_moves` refusing a move that recreates an earlier position (status ``-1``; positional
    superko): each move is played recorded and undone if it repeats, so ``e`` needs room to record one move
    (:func:`play_recorded`). A separate kernel: replays without superko never compile the undo."""
    m = points.shape[0]
    n = e.board.shape[0]
    e.meta[M_DEPTH] = 0
    e.meta[M_TOP] = 0
    hashes[0] = e.hashv[0]
    for i in range(m):
        st = play_recorded(e, points[i], colors[i], allow_suicide)
        if st != OK:
            return i, st
        hashes[i + 1] = e.hashv[0]
        if points[i] != n:
            for j in range(i + 1):
                if hashes[j] == e.hashv[0]:
                    undo(e)
                    return i, -1
        e.meta[M_DEPTH] = 0  # kept: nothing to undo
        e.meta[M_TOP] = 0
    return m, OK


@kernel
def legal_mask(e, color, allow_suicide, out):
    """``out[p] = 1`` where ``color`` may legally play ``p`` (simple ko); ``out[n]`` (pass) = 1."""
    n = e.board.shape[0]
    board, head, libs, meta, nbr = e.board, e.head, e.libs, e.meta, e.nbr
    for p in range(n):
        st = check_arrays(board, head, libs, meta, nbr, np.int64(p), np.int64(color), allow_suicide)
        out[p] = 1 if st == OK else 0
    out[n] = 1
