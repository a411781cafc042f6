"""Compiled (numba) kernels of the rules engine, on flat arrays.

The board is a flat ``int8`` array of ``size * size`` points (index ``row * size + col``, row 0 at
the top, see :mod:`gotk.coords`): 0 empty, 1 black, 2 white. Strings are kept
incrementally as circular linked lists:

* ``head[p]``   representative point of the string through ``p``;
* ``nxt[p]``    next stone of the same string (circular);
* ``libs[h]``   number of distinct liberties of the string whose head is ``h``;
* ``ssize[h]``  number of stones of that string;
* ``placed[p]`` move number at which the stone on ``p`` was placed (-1 for setup stones);
* ``mark``      scratch array for de-duplication, used with a stamp counter in ``meta``;
* ``meta``      scalars (see the ``M_*`` indices);
* ``hashv[0]``  Zobrist hash of the stones on the board (positional).

``nbr[p, k]`` lists on-board neighbours, padded with -1 at the end. Every kernel here is a plain
function over these arrays so encoders and replay loops can call them from their own compiled
loops without Python in between.
"""

from __future__ import annotations

import numpy as np

from gotk.jit import internal_kernel, kernel

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
META_LEN = 9

# status codes of play_move / check_move
OK = 0
OCCUPIED = 1
SUICIDE = 2
KO = 3
OFF_BOARD = 4
STATUS_NAMES = ("ok", "occupied", "suicide", "ko", "off_board")


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


@internal_kernel
def rebuild_strings(board, head, nxt, libs, ssize, nbr, mark, meta, stack):
    """Recompute every string and liberty count from the stones alone (flood fill; ``stack`` is int32
    scratch of the board's length)."""
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
            libs[p] = count_libs(np.int32(p), board, nxt, nbr, mark, meta)  # int32 as in play_move: one compile
    for p in range(n):
        if head[p] < 0:
            head[p] = p


@kernel
def setup_position(board, head, nxt, libs, ssize, nbr, mark, meta, zob, hashv, stack):
    """After setup stones were written into ``board``: rebuild every string and the hash (``hashv[0]``)
    in one call. Returns the first point of a string left without liberties, else -1. ``stack``: int32
    scratch of the board's length (the caller's: a kernel that allocates compiles numba's array
    constructors, on a fresh install's first encode of a handicap game)."""
    rebuild_strings(board, head, nxt, libs, ssize, nbr, mark, meta, stack)
    hashv[0] = board_hash(board, zob)
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
def check_move(board, head, libs, meta, nbr, point, color, allow_suicide):
    """Status a stone of ``color`` on ``point`` would get (``OK``, ``OCCUPIED``, ``KO``, ``SUICIDE``).

    Constant time: looks only at the four neighbours' strings. Passes are always ``OK``.
    """
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


@internal_kernel
def _remove_string(h, board, head, nxt, libs, ssize, nbr, zob, hashv):
    """Take the string with head ``h`` off the board; neighbours gain the freed liberties."""
    color = board[h]
    removed = 0
    p = h
    # first clear the stones so a stone's neighbours are judged on the final board
    while True:
        board[p] = 0
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
                    libs[hq] += 1
                    if h0 < 0:
                        h0 = hq
                    elif h1 < 0:
                        h1 = hq
                    else:
                        h2 = hq
        nx = nxt[p]
        head[p] = p
        nxt[p] = p
        ssize[p] = 0
        libs[p] = 0
        p = nx
        if p == h:
            break
    return removed


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


@kernel
def play_move(board, head, nxt, libs, ssize, placed, mark, meta, hashv, nbr, zob, point, color, allow_suicide):
    """Play ``color`` at ``point`` (``size*size`` = pass), updating every array in place.

    Returns ``OK`` or the reason the move is illegal (the state is then unchanged). With
    ``allow_suicide`` a suicide removes the mover's own string.
    """
    n = board.shape[0]
    opp = 3 - color
    if point == n:
        meta[M_PASSES] += 1
        meta[M_KO] = -1
        meta[M_TO_PLAY] = opp
        meta[M_MOVE_NO] += 1
        meta[M_LAST] = point
        return OK
    st = check_move(board, head, libs, meta, nbr, point, color, allow_suicide)
    if st != OK:
        return st

    board[point] = color
    head[point] = point
    nxt[point] = point
    ssize[point] = 1
    libs[point] = 0
    placed[point] = meta[M_MOVE_NO]
    hashv[0] ^= zob[color, point]

    # merge friendly neighbours
    h = point
    for k in range(4):
        q = nbr[point, k]
        if q < 0:
            break
        if board[q] == color:
            hq = head[q]
            if hq != h:
                h = _merge(h, hq, head, nxt, ssize)

    # opponent neighbours lose the liberty; capture those left with none
    captured = 0
    captured_point = -1
    s = next_stamp(mark, meta)
    for k in range(4):
        q = nbr[point, k]
        if q < 0:
            break
        if board[q] == opp:
            hq = head[q]
            if mark[hq] != s:
                mark[hq] = s
                libs[hq] -= 1
                if libs[hq] == 0:
                    if ssize[hq] == 1:
                        captured_point = hq
                    captured += _remove_string(hq, board, head, nxt, libs, ssize, nbr, zob, hashv)

    h = head[point]
    libs[h] = count_libs(h, board, nxt, nbr, mark, meta)

    if libs[h] == 0:
        # only reachable with allow_suicide: the mover's own string dies
        suicided = _remove_string(h, board, head, nxt, libs, ssize, nbr, zob, hashv)
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

    if color == BLACK:
        meta[M_CAPT_B] += captured
    else:
        meta[M_CAPT_W] += captured
    meta[M_TO_PLAY] = opp
    meta[M_MOVE_NO] += 1
    meta[M_PASSES] = 0
    meta[M_LAST] = point
    return OK


@internal_kernel
def _restore(board, head, nxt, libs, ssize, placed, meta, s_board, s_head, s_nxt, s_libs, s_ssize, s_placed,
             s_meta):
    """Copy a position's arrays from the ``s_*`` ones (same shapes). Element loops, not ``a[:] = b``:
    numba's slice assignment compiles a shape check with a formatted error message, which pulls
    string formatting into the compile and cost several seconds of every first run."""
    for p in range(board.shape[0]):
        board[p] = s_board[p]
        head[p] = s_head[p]
        nxt[p] = s_nxt[p]
        libs[p] = s_libs[p]
        ssize[p] = s_ssize[p]
        placed[p] = s_placed[p]
    for j in range(meta.shape[0]):
        meta[j] = s_meta[j]


_NO_BACKUP = tuple(np.empty(0, dtype) for dtype in (np.int8, np.int32, np.int32, np.int32, np.int32, np.int32,
                                                      np.int64))


def superko_backup(board, head, nxt, libs, ssize, placed, meta, superko: bool) -> tuple[np.ndarray, ...]:
    """The seven arrays :func:`replay_moves` restores a refused superko repetition from: copies of the
    position's arrays with ``superko``, else empty ones (never written: most replays never need them).
    Allocated here, not in the kernel: a kernel that allocates compiles numba's reference counting
    and array constructors into every fresh install's first ``gotk replay``."""
    if not superko:
        return _NO_BACKUP
    return board.copy(), head.copy(), nxt.copy(), libs.copy(), ssize.copy(), placed.copy(), meta.copy()


@kernel
def replay_moves(board, head, nxt, libs, ssize, placed, mark, meta, hashv, nbr, zob, colors, points,
                 allow_suicide, superko, hashes, b_board, b_head, b_nxt, b_libs, b_ssize, b_placed, b_meta):
    """Play a whole move sequence in one compiled loop.

    ``hashes`` (length ``len(points) + 1``) receives the position hash before the first move and after
    each move. With ``superko`` a move that recreates an earlier position is refused (status ``-1``);
    the ``b_*`` arrays are then scratch of the position's shapes (:func:`superko_backup`), unused
    without it. Returns ``(moves_played, status)``; on an illegal move (superko included) the state is
    the position before it.
    """
    m = points.shape[0]
    n = board.shape[0]
    hashes[0] = hashv[0]
    for i in range(m):
        if superko and points[i] != n:
            _restore(b_board, b_head, b_nxt, b_libs, b_ssize, b_placed, b_meta,
                     board, head, nxt, libs, ssize, placed, meta)
        st = play_move(board, head, nxt, libs, ssize, placed, mark, meta, hashv, nbr, zob,
                       points[i], colors[i], allow_suicide)
        if st != OK:
            return i, st
        hashes[i + 1] = hashv[0]
        if superko and points[i] != n:
            for j in range(i + 1):
                if hashes[j] == hashv[0]:
                    stamp = meta[M_STAMP]
                    _restore(board, head, nxt, libs, ssize, placed, meta,
                             b_board, b_head, b_nxt, b_libs, b_ssize, b_placed, b_meta)
                    meta[M_STAMP] = stamp  # ``mark`` was stamped since; keep the counter moving on
                    hashv[0] = hashes[i]
                    return i, -1
    return m, OK


@kernel
def legal_mask(board, head, libs, meta, nbr, color, allow_suicide, out):
    """``out[p] = 1`` where ``color`` may legally play ``p`` (simple ko); ``out[n]`` (pass) = 1."""
    n = board.shape[0]
    for p in range(n):
        out[p] = 1 if check_move(board, head, libs, meta, nbr, p, color, allow_suicide) == OK else 0
    out[n] = 1


# columns of a game batch's table (``games[g]``, int64): the game's main line is ``colors[M0:M1]`` /
# ``points[M0:M1]``, its setup stones ``setup_b[B0:B1]``, ``setup_w[W0:W1]``, ``setup_e[E0:E1]`` (one
# concatenated array per kind, for the whole batch), ``SUICIDE`` 1 where its rules allow suicide, ``START`` the
# row of its first position in the batch's ``s_*`` arrays (-1: its setup stones are unusable)
G_M0, G_M1, G_B0, G_B1, G_W0, G_W1, G_E0, G_E1, G_SUICIDE, G_START = range(10)
G_COLS = 10
SETUP_FAILED = -2  # replay_games' status of a game whose setup stones are unusable


@internal_kernel
def start_game(board, head, nxt, libs, ssize, placed, mark, meta, hashv, s_board, s_head, s_nxt, s_libs, s_ssize,
               s_placed, s_mark, s_meta, s_hashv, t, colors, m0, m1):
    """Set the engine arrays to a game's first position: row ``t`` of the ``s_*`` arrays (the position
    ``gotk.game.replay.initial_state`` builds, setup stones placed), then, as it does, the first move's colour to
    play (a game without moves plays and encodes nothing, so it is left as is)."""
    for p in range(board.shape[0]):
        board[p] = s_board[t, p]
        head[p] = s_head[t, p]
        nxt[p] = s_nxt[t, p]
        libs[p] = s_libs[t, p]
        ssize[p] = s_ssize[t, p]
        placed[p] = s_placed[t, p]
        mark[p] = s_mark[t, p]
    for j in range(meta.shape[0]):
        meta[j] = s_meta[t, j]
    hashv[0] = s_hashv[t, 0]
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
def replay_games(games, result, colors, points, board, head, nxt, libs, ssize, placed, mark, meta, hashv, nbr, zob,
                 s_board, s_head, s_nxt, s_libs, s_ssize, s_placed, s_mark, s_meta, s_hashv, shadow, taken_at, taken):
    """:func:`replay_moves` (without superko) of every game of a batch (``games``: the ``G_*`` columns), each
    from its own first position (:func:`start_game`), in one call: ``result[g]`` = (moves played, status),
    status :data:`SETUP_FAILED` when the setup stones are unusable.

    With a ``taken_at`` as long as ``points`` plus one (else empty: nothing is noted), it also notes the stones
    each played move took off the board (captures, or a suicide's own string: :func:`_note_taken`): those of
    move ``i`` are ``taken[taken_at[i]:taken_at[i + 1]]`` (``taken`` as long as the batch's moves and setup
    stones together: a stone leaves the board at most once per placement), so that a game's boards can be
    replayed again without the engine (:func:`gotk.encoders.game_loop.board_loop_for`). ``shadow`` is scratch of
    the board's length: the board as the trace knows it."""
    note = taken_at.shape[0] > 0
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
        start_game(board, head, nxt, libs, ssize, placed, mark, meta, hashv, s_board, s_head, s_nxt, s_libs, s_ssize,
                   s_placed, s_mark, s_meta, s_hashv, t, colors, m0, m1)
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
            st = play_move(board, head, nxt, libs, ssize, placed, mark, meta, hashv, nbr, zob, p, colors[i],
                           allow_suicide)
            if st != OK:
                played = i - m0
                break
            if note:
                if p != n:
                    shadow[p] = colors[i]
                if meta[M_CAPT_B] + meta[M_CAPT_W] != gone:  # stones left the board
                    gone = meta[M_CAPT_B] + meta[M_CAPT_W]
                    r = _note_taken(p, board, shadow, nbr, taken, r)
                taken_at[i + 1] = r
        if note:
            for i in range(m0 + played + 1, m1 + 1):  # moves not played take nothing
                taken_at[i] = r
        result[g, 0] = played
        result[g, 1] = st
