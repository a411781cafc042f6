"""Compiled (numba) kernels of the rules engine: one position, :class:`Engine`, with ``play`` and ``undo``.

The board is a flat ``int8`` array of ``size * size`` points (index ``row * size + col``, row 0 at
the top, see :mod:`gotk.coords`): 0 empty, 1 black, 2 white. Strings are kept
incrementally as circular linked lists. An :class:`Engine` names every array of a position:

* ``board[p]``  the stone on ``p``;
* ``head[p]``   representative point of the string through ``p``;
* ``nxt[p]``    next stone of the same string (circular);
* ``libs[h]``   number of distinct liberties of the string whose head is ``h``;
* ``ssize[h]``  number of stones of that string;
* ``placed[p]`` move number at which the stone on ``p`` was placed (-1 for setup stones);
* ``mark``      scratch array for de-duplication, used with a stamp counter in ``meta``;
* ``meta``      scalars (see the ``M_*`` indices);
* ``hashv[0]``  Zobrist hash of the stones on the board (positional);
* ``log``, ``moves`` the undo log of :func:`play_recorded` (entries and move records; empty arrays where
  nothing is ever undone);
* ``nbr[p, k]`` / ``diag[p, k]`` the on-board neighbours / diagonal neighbours of ``p``, padded with -1 at
  the end, and ``zob`` the Zobrist keys: tables shared by every position of a board size, never written.

An empty point always holds ``head = nxt = itself`` and ``ssize = libs = 0``; :func:`undo` relies on it.

There is one set of rules: :func:`play` (replay loops, which never undo) and :func:`play_recorded` (look-ahead:
the ladder reader, search, superko checks) are the same function compiled with and without its undo log, as
KataGo's ``playMoveAssumeLegal`` / ``playMoveRecorded`` + ``undo``. Every kernel is a plain function over an
:class:`Engine`, so encoders and replay loops call them from their own compiled loops without Python in
between. The loops over a whole position or move sequence (replay, the legal mask, setup, the board hash) are in
:mod:`gotk.game.loops`; the rules' smaller questions (liberties after a move, own eyes) in :mod:`gotk.game.rules`.
"""

from __future__ import annotations

from collections import namedtuple
from typing import NamedTuple

import numpy as np

from gotk.jit import inline_kernel, internal_kernel, kernel

EMPTY = 0
BLACK = 1
WHITE = 2

# meta indices
M_TO_PLAY = 0
M_KO = 1  # forbidden point for M_KO_COLOR, -1 if none
M_KO_COLOR = 2
M_MOVE_NO = 3  # moves played so far (passes included, setup excluded)
M_PASSES = 4  # consecutive passes
M_CAPT_B = 5  # stones captured by black
M_CAPT_W = 6
M_STAMP = 7
M_LAST = 8  # last move point (-1 none)
M_DEPTH = 9  # moves on the undo stack (records in ``moves``)
M_TOP = 10  # entries in use in ``log``
META_LEN = 11

# status codes of play / check_move
OK = 0
OCCUPIED = 1
SUICIDE = 2
KO = 3
OFF_BOARD = 4
NO_ROOM = 5  # play_recorded: the undo log is full (nothing was played; grow it and play again)
STATUS_NAMES = ("ok", "occupied", "suicide", "ko", "off_board", "no_room")

# columns of a move record (``moves[d]``, int64): what undo needs beyond the log, and how the move went. Columns
# 0 to MV_META - 1 hold ``meta[:MV_META]`` before the move (to play, ko, move number, passes, captures, last move;
# the stamp's column is not restored)
MV_META = M_LAST + 1
MV_HASH, MV_PLACED, MV_TOP, MV_POINT, MV_CAPTURED, MV_MERGED = range(MV_META, MV_META + 6)
MV_LEN = MV_META + 6

# kinds of undo-log entries (kind, index, old value); L_MERGE: (surviving head, merged head)
L_BOARD, L_HEAD, L_NXT, L_LIBS, L_SSIZE, L_MERGE = 0, 1, 2, 3, 4, 5
MOVE_LOG = 16  # log entries a move writes besides its captures (≤ 3 merges, ≤ 4 liberty changes, its string)
STONE_LOG = 8  # log entries per stone a move takes off the board (≤ 3 neighbour strings, 5 fields)


def move_log_bound(n: int) -> int:
    """Log entries one recorded move can write on a board of ``n`` points (it takes at most ``n`` stones)."""
    return MOVE_LOG + STONE_LOG * n


class Engine(NamedTuple):
    """The arrays of one position (see the module docstring); numba passes it as one value."""

    board: np.ndarray
    head: np.ndarray
    nxt: np.ndarray
    libs: np.ndarray
    ssize: np.ndarray
    placed: np.ndarray
    mark: np.ndarray
    meta: np.ndarray
    hashv: np.ndarray
    log: np.ndarray
    moves: np.ndarray
    nbr: np.ndarray
    diag: np.ndarray
    zob: np.ndarray


#: The fields of :class:`Engine` that make a position (the rest are its undo log and the size's tables).
POSITION_FIELDS = Engine._fields[:9]

#: Many positions' arrays, one row each (the first positions of a batch of games): the position fields of
#: :class:`Engine`, stacked.
Positions = namedtuple("Positions", POSITION_FIELDS)


def make_tables(size: int) -> tuple[np.ndarray, np.ndarray]:
    """Neighbour and diagonal tables for a board size (-1 padded at the end of each row)."""
    n = size * size
    nbr = -np.ones((n, 4), dtype=np.int32)
    diag = -np.ones((n, 4), dtype=np.int32)
    for p in range(n):
        r, c = divmod(p, size)
        k = 0
        for dr, dc in ((-1, 0), (0, -1), (0, 1), (1, 0)):
            rr, cc = r + dr, c + dc
            if 0 <= rr < size and 0 <= cc < size:
                nbr[p, k] = rr * size + cc
                k += 1
        k = 0
        for dr, dc in ((-1, -1), (-1, 1), (1, -1), (1, 1)):
            rr, cc = r + dr, c + dc
            if 0 <= rr < size and 0 <= cc < size:
                diag[p, k] = rr * size + cc
                k += 1
    return nbr, diag


def make_zobrist(size: int, seed: int = 0x60C0FFEE) -> np.ndarray:
    """Zobrist keys ``zob[color, point]`` (row 0 unused), fixed seed so hashes are stable."""
    rng = np.random.default_rng(seed + size)
    zob = rng.integers(1, np.iinfo(np.uint64).max, size=(3, size * size), dtype=np.uint64, endpoint=True)
    zob[0, :] = 0
    return zob


@internal_kernel
def next_stamp(mark, meta):
    """A fresh stamp value for ``mark``; resets the array before the counter could overflow."""
    s = meta[M_STAMP] + 1
    if s >= 1 << 30:
        mark[:] = 0
        s = 1
    meta[M_STAMP] = s
    return s


@internal_kernel
def count_libs(h, board, nxt, nbr, mark, meta):
    """Distinct liberties of the string with head ``h``, counted from scratch."""
    s = next_stamp(mark, meta)
    count = 0
    p = h
    while True:
        for k in range(4):
            q = nbr[p, k]
            if q < 0:
                break
            if board[q] == 0 and mark[q] != s:
                mark[q] = s
                count += 1
        p = nxt[p]
        if p == h:
            break
    return count


@kernel
def check_move(e, point, color, allow_suicide):
    """Status a stone of ``color`` on ``point`` would get (``OK``, ``OCCUPIED``, ``KO``, ``SUICIDE``).

    Constant time: looks only at the four neighbours' strings. Passes are always ``OK``.
    """
    return check_arrays(e.board, e.head, e.libs, e.meta, e.nbr, np.int64(point), np.int64(color), allow_suicide)


@inline_kernel
def check_rule(e, point, color, allow_suicide):
    """:func:`check_move`, inlined into its callers (as :func:`play_rule`)."""
    return check_arrays(e.board, e.head, e.libs, e.meta, e.nbr, np.int64(point), np.int64(color), allow_suicide)


@inline_kernel
def check_arrays(board, head, libs, meta, nbr, point, color, allow_suicide):
    """:func:`check_move` on the arrays it reads (a call with the whole Engine passes every field of every
    array: the engine's own loops call this, and :func:`gotk.game.loops.legal_mask`)."""
    n = board.shape[0]
    if point == n:
        return OK
    if point < 0 or point > n:
        return OFF_BOARD
    if board[point] != 0:
        return OCCUPIED
    if point == meta[M_KO] and color == meta[M_KO_COLOR]:
        return KO
    if allow_suicide:
        return OK
    for k in range(4):
        q = nbr[point, k]
        if q < 0:
            break
        v = board[q]
        if v == 0:
            return OK
        if v == color:
            if libs[head[q]] > 1:
                return OK
        elif libs[head[q]] == 1:
            return OK
    return SUICIDE


@inline_kernel
def _log(lg, i, kind, x, old):
    """Write undo-log entry ``i``; returns the log's new length (kept in a local by :func:`play_rule`, written back
    to ``meta`` once the move is done)."""
    lg[i, 0] = kind
    lg[i, 1] = x
    lg[i, 2] = old
    return i + 1


@internal_kernel
def _remove_string(board, head, nxt, libs, ssize, nbr, zob, hashv, lg, h, record, full, top):
    """Take the string with head ``h`` off the board; neighbours gain the freed liberties (and, ``full``, the hash
    loses its stones). With ``record`` every write is logged in ``lg`` from entry ``top`` on. Returns (stones
    removed, the log's new length)."""
    color = board[h]
    removed = 0
    p = h
    # first clear the stones so a stone's neighbours are judged on the final board
    while True:
        if record:
            top = _log(lg, top, np.int64(L_BOARD), np.int64(p), np.int64(color))
        board[p] = 0
        if full:
            hashv[0] ^= zob[color, p]
        removed += 1
        p = nxt[p]
        if p == h:
            break
    p = h
    while True:
        # each freed point is a new liberty of each distinct adjacent string
        h0 = -1
        h1 = -1
        h2 = -1
        for k in range(4):
            q = nbr[p, k]
            if q < 0:
                break
            if board[q] != 0:
                hq = head[q]
                if hq != h0 and hq != h1 and hq != h2:
                    if record:
                        top = _log(lg, top, np.int64(L_LIBS), np.int64(hq), np.int64(libs[hq]))
                    libs[hq] += 1
                    if h0 < 0:
                        h0 = hq
                    elif h1 < 0:
                        h1 = hq
                    else:
                        h2 = hq
        nx = nxt[p]
        if record:
            top = _log(lg, top, np.int64(L_HEAD), np.int64(p), np.int64(head[p]))
            top = _log(lg, top, np.int64(L_NXT), np.int64(p), np.int64(nx))
            top = _log(lg, top, np.int64(L_SSIZE), np.int64(p), np.int64(ssize[p]))
            top = _log(lg, top, np.int64(L_LIBS), np.int64(p), np.int64(libs[p]))
        head[p] = p
        nxt[p] = p
        ssize[p] = 0
        libs[p] = 0
        p = nx
        if p == h:
            break
    return removed, top


@internal_kernel
def _merge(a, b, head, nxt, ssize):
    """Merge string ``b`` into ``a`` (heads); returns the surviving head (the larger string)."""
    if ssize[a] < ssize[b]:
        a, b = b, a
    p = b
    while True:
        head[p] = a
        p = nxt[p]
        if p == b:
            break
    na = nxt[a]
    nxt[a] = nxt[b]
    nxt[b] = na
    ssize[a] += ssize[b]
    return a


@inline_kernel
def _libs_after(board, head, nbr, pt, h, color, merged, merged_libs):
    """Liberties of the string ``h`` that the stone just played at ``pt`` belongs to, when the move captured
    nothing and joined at most one string (``merged``; its liberties before were ``merged_libs``, ``pt``
    among them): that string's other liberties plus each empty neighbour of ``pt`` that is not already one
    of them (no stone of the string but ``pt`` next to it) — exactly what counting the string's liberties
    from scratch gives, without walking it (a ladder's string grows by a stone a ply)."""
    cnt = merged_libs - 1 if merged == 1 else 0
    for k in range(4):
        q = nbr[pt, k]
        if q < 0:
            break
        if board[q] != 0:
            continue
        new = True
        if merged == 1:
            for j in range(4):
                r = nbr[q, j]
                if r < 0:
                    break
                if r != pt and board[r] == color and head[r] == h:
                    new = False
                    break
        if new:
            cnt += 1
    return cnt


@inline_kernel
def play_rule(e, point, color, allow_suicide, record, full):
    """The rules of a move: :func:`play` (``record`` False) and :func:`play_recorded` (True). Inlined into its
    callers: a compiled search that plays in its inner loop (the ladder reader) calls it directly. ``full``: keep the
    whole position; without it only what legality reads (stones, strings, liberties, the ko point) is kept, and
    the hash, stone ages (``placed``), player to move, move and capture counts, passes and last move are left as
    they were: a search that reads none of them (the ladder reader) passes False, and undoes with the same."""
    board, head, nxt, libs, ssize, meta, nbr = e.board, e.head, e.nxt, e.libs, e.ssize, e.meta, e.nbr
    n = board.shape[0]
    opp = 3 - color
    if point != n:
        st = check_arrays(board, head, libs, meta, nbr, point, color, allow_suicide)
        if st != OK:
            return st
    d = meta[M_DEPTH]
    top = meta[M_TOP]
    if record:
        if d >= e.moves.shape[0] or top + MOVE_LOG + STONE_LOG * n > e.log.shape[0]:
            return NO_ROOM
        mv = e.moves
        if full:
            for j in range(MV_META):
                mv[d, j] = meta[j]
            mv[d, MV_HASH] = np.int64(e.hashv[0])
        else:
            mv[d, M_KO] = meta[M_KO]
            mv[d, M_KO_COLOR] = meta[M_KO_COLOR]
        mv[d, MV_TOP] = top
        mv[d, MV_POINT] = point
        meta[M_DEPTH] = d + 1
    if point == n:
        if record:
            e.moves[d, MV_CAPTURED] = 0
            e.moves[d, MV_MERGED] = 0
        meta[M_KO] = -1
        if full:
            meta[M_PASSES] += 1
            meta[M_TO_PLAY] = opp
            meta[M_MOVE_NO] += 1
            meta[M_LAST] = point
        return OK
    lg = e.log
    if full:
        if record:
            e.moves[d, MV_PLACED] = e.placed[point]
        e.placed[point] = meta[M_MOVE_NO]
        e.hashv[0] ^= e.zob[color, point]
    board[point] = color
    head[point] = point
    nxt[point] = point
    ssize[point] = 1
    libs[point] = 0

    # merge friendly neighbours
    h = point
    # typed, not literal zeros: numba would compile _libs_after once more for Literal[int](0) arguments
    merged = np.int64(0)
    merged_libs = np.int64(0)  # liberties of the first string merged, before the move
    for k in range(4):
        q = nbr[point, k]
        if q < 0:
            break
        if board[q] == color:
            hq = head[q]
            if hq != h:
                merged += 1
                merged_libs = libs[hq]
                a = _merge(h, hq, head, nxt, ssize)
                if record:
                    top = _log(lg, top, np.int64(L_MERGE), np.int64(a), np.int64(h + hq - a))
                h = a

    # opponent neighbours lose the liberty; capture those left with none
    captured = np.int64(0)
    captured_point = -1
    s = next_stamp(e.mark, meta)
    for k in range(4):
        q = nbr[point, k]
        if q < 0:
            break
        if board[q] == opp:
            hq = head[q]
            if e.mark[hq] != s:
                e.mark[hq] = s
                if record:
                    top = _log(lg, top, np.int64(L_LIBS), np.int64(hq), np.int64(libs[hq]))
                libs[hq] -= 1
                if libs[hq] == 0:
                    if ssize[hq] == 1:
                        captured_point = hq
                    removed, top = _remove_string(board, head, nxt, libs, ssize, nbr, e.zob, e.hashv, lg, hq, record,
                                                  full, top)
                    captured += removed

    h = head[point]
    if record and h != point:  # else its liberties were 0, which undo restores with the empty point
        top = _log(lg, top, np.int64(L_LIBS), np.int64(h), np.int64(libs[h]))
    if captured == 0 and merged <= 1:
        libs[h] = _libs_after(board, head, nbr, point, h, color, merged, merged_libs)
    else:
        libs[h] = count_libs(h, board, nxt, nbr, e.mark, meta)

    suicided = np.int64(0)
    if libs[h] == 0:
        # only reachable with allow_suicide: the mover's own string dies
        suicided, top = _remove_string(board, head, nxt, libs, ssize, nbr, e.zob, e.hashv, lg, h, record,
                                        full, top)
        if full:
            if color == BLACK:
                meta[M_CAPT_W] += suicided
            else:
                meta[M_CAPT_B] += suicided
        meta[M_KO] = -1
    elif captured == 1 and ssize[h] == 1 and libs[h] == 1:
        meta[M_KO] = captured_point
        meta[M_KO_COLOR] = opp
    else:
        meta[M_KO] = -1

    if full:
        if color == BLACK:
            meta[M_CAPT_B] += captured
        else:
            meta[M_CAPT_W] += captured
        meta[M_TO_PLAY] = opp
        meta[M_MOVE_NO] += 1
        meta[M_PASSES] = 0
        meta[M_LAST] = point
    if record:
        e.moves[d, MV_CAPTURED] = captured
        e.moves[d, MV_MERGED] = merged
        meta[M_TOP] = top
    return OK


@kernel
def play(e, point, color, allow_suicide):
    """Play ``color`` at ``point`` (``size*size`` = pass), updating every array of ``e`` in place.

    Returns ``OK`` or the reason the move is illegal (the state is then unchanged). With
    ``allow_suicide`` a suicide removes the mover's own string. Not undoable: nothing is logged, and moves
    recorded before it can no longer be undone (the caller drops them, see :func:`forget_moves`).
    """
    # int64 whatever the caller's point type: one compile of the rule (the replay loops pass int32 points)
    return play_rule(e, np.int64(point), np.int64(color), allow_suicide, False, True)


@kernel
def play_recorded(e, point, color, allow_suicide):
    """:func:`play`, logging every write so that :func:`undo` restores the position exactly (every array but
    ``mark``, whose stamp only moves on). Needs a free row of ``e.moves`` and :func:`move_log_bound` free entries of
    ``e.log``, else it plays nothing and returns ``NO_ROOM``. An illegal move records nothing."""
    return play_rule(e, np.int64(point), np.int64(color), allow_suicide, True, True)


@kernel
def undo(e):
    """Take back the last move :func:`play_recorded` played (``meta[M_DEPTH]`` must be > 0)."""
    undo_rule(e, True)


@inline_kernel
def undo_rule(e, full):
    """:func:`undo`, inlined into its callers (as :func:`play_rule`; ``full`` as the move was played with)."""
    board, head, nxt, libs, ssize, meta, lg, mv = e.board, e.head, e.nxt, e.libs, e.ssize, e.meta, e.log, e.moves
    d = meta[M_DEPTH] - 1
    top = mv[d, MV_TOP]
    i = meta[M_TOP]
    while i > top:
        i -= 1
        kind, x, v = lg[i, 0], lg[i, 1], lg[i, 2]
        if kind == L_LIBS:
            libs[x] = v
        elif kind == L_MERGE:  # split string v (its old head) back off string x
            na = nxt[x]
            nxt[x] = nxt[v]
            nxt[v] = na
            p = v
            while True:
                head[p] = v
                p = nxt[p]
                if p == v:
                    break
            ssize[x] -= ssize[v]
        elif kind == L_BOARD:
            board[x] = v
        elif kind == L_HEAD:
            head[x] = v
        elif kind == L_NXT:
            nxt[x] = v
        else:
            ssize[x] = v
    point = mv[d, MV_POINT]
    if point != board.shape[0]:
        board[point] = 0
        head[point] = point
        nxt[point] = point
        ssize[point] = 0
        libs[point] = 0
        if full:
            e.placed[point] = mv[d, MV_PLACED]
    if full:
        stamp = meta[M_STAMP]  # the stamp only moves on
        for j in range(MV_META):
            meta[j] = mv[d, j]
        meta[M_STAMP] = stamp
        e.hashv[0] = np.uint64(mv[d, MV_HASH])
    else:
        meta[M_KO] = mv[d, M_KO]
        meta[M_KO_COLOR] = mv[d, M_KO_COLOR]
    meta[M_TOP] = top
    meta[M_DEPTH] = d


@kernel
def forget_moves(e):
    """Drop every recorded move (they can no longer be undone): after :func:`play` or a change by hand."""
    e.meta[M_DEPTH] = 0
    e.meta[M_TOP] = 0
