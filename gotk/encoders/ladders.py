"""Compiled ladder reading for the AlphaGo encoder (planes 46–47).

Semantics: a standard depth-limited AND/OR ladder search. Every move is checked by the engine with
suicide forbidden and simple ko respected; ladder breakers of either colour count because the moves
are played on the real board.

* **Attacker to move** (target string with exactly 2 liberties, an OR node): the attacker tries
  each of the two liberties (first the one that leaves the defender the liberty with fewer empty
  neighbours); a try counts only if it leaves the target with exactly 1 liberty. The attacker wins
  if after some try the defender dies.
* **Defender to move** (target with exactly 1 liberty, an AND node): the defender's options are
  extending at the liberty and capturing any attacker string adjacent to the target that is in
  atari (playing at that string's liberty). After an option the target has ≥3 liberties → it
  escaped; 2 → the attacker must win again; 1 → the attacker captures it at once unless that
  capture is illegal (a ko retake), in which case it escaped. The defender dies if every option
  fails or it has none.
* **Ladder capture** (plane 46): a legal move that leaves an adjacent opponent string which had 2
  liberties with exactly 1, after which the defender dies. **Ladder escape** (plane 47): a legal
  move at the liberty of a player string in atari after which that string has ≥3 liberties, or 2
  and the attacker does not win.
* Reading stops :func:`max_plies` plies (≥80; ``4 * size + 8``) past the first move or after
  :data:`NODE_BUDGET` moves per query; a search cut by either limit counts as "not captured".

The search is iterative (numba cannot cache recursive functions reliably) and plays on one scratch
copy of the position (the engine's arrays are never written). Each move logs the old value of every
array entry it writes (a merge logs the two heads and is undone by splitting the rings again);
leaving a move undoes its log entries newest first, so the position at ply ``d`` is exactly what a
fresh copy with the same moves played would hold: the same stones, heads, links, liberty counts,
sizes and ko point. A move writes a handful of entries where a copy of the position was 1,800.

**Footprint.** Every query also records the points whose contents it may depend on (its
*footprint*). Before any read it *touches* what that read looks at, in the position it reads, adding
points to a *core* bitset (``scr[BITS][CORE]``); the footprint is the core plus every neighbour of a
core point (:func:`footprint`, one shift of the bitset per direction):

* ``touch_string(x)``: every stone of the string through ``x`` (``x`` alone if empty); with the
  neighbours the footprint gets, these fix all the string's fields — head, links, size, liberties;
* ``touch_point(x)``: ``x`` and ``touch_string`` of each neighbouring stone.

Touches happen only in the search's current position (its deepest ply). ``touch_string`` walks a
string only if its stone ``x`` is not in the core yet. Claim: in any position the search reaches, a
string with one stone in the core has all of them there, so the skip changes nothing (the core, and
with it every footprint, is the one that walking every time gives). Such a string is one or more of the
root position's strings, each whole, joined by stones the search played. Every stone the search plays
is in the core (``_play`` touches its point first), and so is every root string a move joins or takes
(``_play`` touches the strings next to its point first). A point of a root string enters the core only
in a walk of a string holding it — which, in that position, holds the point's whole root string unless
a move took that root string earlier on its line — or as an empty point, again after a move took its
root string. So a string with a played stone is in the core whole (its root strings were joined by
moves), and a string without one is a single root string, in the core whole once one point is.

Each ``_play`` touches its point first (a move reads only the point, its neighbours, the strings
next to it — merged or captured — and the neighbours of their stones: the liberty updates of strings
next to a captured one are writes whose values are read later only through a touch);
each liberty count or liberty list of the target touches the target string; the defender's capture
options, looked for only once extending has failed (:func:`_add_captures`), touch every string next to
the target; the atari filter touches both liberties (which covers the empty-neighbour counts of the move order); the
ko-retake test touches the liberty. The ko
point of the position is read only by the first move, which callers only ask for where it is legal
(not the ko point); every later ko point comes from the search's own moves.
:mod:`gotk.encoders.ladder_cache` proves from this that a query's answer cannot change while no
footprint point changes, and caches answers across the positions of a game.
"""
from __future__ import annotations

import numpy as np

from gotk.game import kernels as K
from gotk.jit import compiled, inline_kernel, internal_kernel, kernel

MAX_CANDIDATES = 16
NODE_BUDGET = 4000
ATT = 0  # attacker to move: the target has 2 liberties (an OR node)
DEF = 1  # defender to move: the target has 1 liberty (an AND node)
# columns of the per-ply candidate table; _C_MORE: 1 while a defender's capture options are still to be
# looked for (after its extension, the frame's first option), then 0, or _NO_ATARI if no attacker string
# next to the target is in atari
_C_N, _C_IDX, _C_TYPE, _C_MORE, _C0 = 0, 1, 2, 3, 4
_NO_ATARI = 2
# the scratch tuple (new_scratch): few arrays, because compiled calls pass every field of every array
WIDE = 2  # index of the int64 rows: meta, ctl, per-ply log starts, per-ply move kinds
LOG = 4  # index of the undo log
BITS = 5  # index of the uint64 rows: four board masks for footprint(), then the touched core
MARK = 4  # row of ``mark`` in scr[1]
META, CTL, START, QUIET = 0, 1, 2, 3  # rows of scr[WIDE]
_Q_NO_CAPTURE, _Q_NO_JOIN = 1, 2  # bits of quiet[d]: the move into ply d took no stone / joined no string
CORE = 4  # row of the touched-core bitset in scr[BITS]
_TOP = 5  # ctl[_TOP]: entries in the undo log
# kinds of undo-log entries (kind, index, old value); _L_MERGE: (surviving head, merged head); _L_PLACE:
# (point, (old ko point + 1) * 4 + old ko colour), a move's first entry: its stone was placed on an empty
# point, which held head = nxt = itself, size and liberties 0 (the engine's empty points, and the reader's,
# always do), and the ko point it changes is restored with it
_L_BOARD, _L_HEAD, _L_NXT, _L_LIBS, _L_SSIZE, _L_MERGE, _L_PLACE = 0, 1, 2, 3, 4, 5, 6


@kernel
def max_plies(n):
    """Plies read past the first move on a board of ``n`` points: ``max(80, 4 * size + 8)``."""
    size = 1
    while size * size < n:
        size += 1
    return max(80, 4 * size + 8)


def new_scratch(n, plies):
    """Preallocated search state, passed around as one tuple of six arrays:
    ``(board[n], ints[5, n] (head, nxt, libs, ssize, mark), wide[4, R] (meta, ctl, start, quiet),
    cand[L, 4 + MAX_CANDIDATES], log[G, 3], bits[5, W] (masks, core))`` with ``L = plies + 2`` plies,
    ``R = max(L, 9)`` and ``W = (n + 63) // 64`` words per bitset. ``log`` is the undo log
    (``G = 25 L + 9 n + 64`` entries: a move writes at most 10 entries plus 9 per stone it captures, and
    a line of play captures at most the ``n`` stones of the root and the ones it placed); ``start[d]``:
    where the move into ply ``d`` starts in it. ``ctl`` holds the node count (1), the ply limit (2), the
    node budget (3) and the log's length (``_TOP``); ``quiet[d]``: how the move into ply ``d`` went
    (:data:`_Q_NO_CAPTURE`, :data:`_Q_NO_JOIN`); ``meta[M_STAMP]`` is the stamp of ``mark``, kept
    across positions. ``bits``: points not in the first column, not in the last column, on the board,
    the board size (for :func:`footprint`), and the core: the points the last query touched.

    Plain Python here (numpy: nothing to compile, for the per-thread caches); compiled code calls
    :func:`make_scratch`, the same function compiled.
    """
    layers = plies + 2
    wide = np.zeros((4, max(layers, K.META_LEN)), dtype=np.int64)
    wide[CTL, 2] = plies
    wide[CTL, 3] = NODE_BUDGET
    size = 1
    while size * size < n:
        size += 1
    masks = np.zeros((5, (n + 63) // 64), dtype=np.uint64)
    for x in range(n):
        b = np.uint64(1) << np.uint64(x & 63)
        if x % size != 0:
            masks[0, x >> 6] |= b
        if x % size != size - 1:
            masks[1, x >> 6] |= b
        masks[2, x >> 6] |= b
    masks[3, 0] = size
    # only ints (mark), wide and masks need initial values; board, cand and log are written before read
    return (np.empty(n, dtype=np.int8), np.zeros((5, n), dtype=np.int32), wide,
            np.empty((layers, _C0 + MAX_CANDIDATES), dtype=np.int32),
            np.empty((25 * layers + 9 * n + 64, 3), dtype=np.int32), masks)


make_scratch = compiled(new_scratch)


@internal_kernel
def _fp_set(fp, x):
    fp[x >> 6] |= np.uint64(1) << np.uint64(x & 63)


@internal_kernel
def touch_string(scr, x, nbr):
    """Add the stones of the string through ``x`` (current position) to the core (just ``x`` if empty);
    a string with ``x`` in the core already is all there (see *Footprint* above), and is not walked."""
    fp = scr[BITS][CORE]
    b = np.uint64(1) << np.uint64(x & 63)
    if fp[x >> 6] & b:
        return
    fp[x >> 6] |= b
    if scr[0][x] == 0:
        return
    nxt = scr[1][1]
    p = nxt[x]
    while p != x:
        _fp_set(fp, np.int64(p))
        p = nxt[p]


@internal_kernel(always_inline=True)
def touch_point(scr, x, nbr):
    """Add ``x`` and the strings next to it (current position) to the core."""
    sb = scr[0]
    _fp_set(scr[BITS][CORE], x)
    for k in range(4):
        q = nbr[x, k]
        if q < 0:
            break
        if sb[q] != 0:
            touch_string(scr, np.int64(q), nbr)


@kernel
def footprint(scr, out):
    """Write the last query's footprint — its core plus every neighbour of a core point — into ``out``
    (a bitset of ``(n + 63) // 64`` words): a shift by one column and by one row of the core."""
    masks = scr[BITS]
    core = masks[CORE]
    size = np.uint64(masks[3, 0])
    w = core.shape[0]
    one = np.uint64(1)
    for i in range(w):
        c = core[i]
        lo1 = core[i - 1] if i > 0 else np.uint64(0)
        hi1 = core[i + 1] if i + 1 < w else np.uint64(0)
        # bit x of the result from x - 1 (left neighbour), x + 1, x - size, x + size
        from_left = ((c << one) | (lo1 >> np.uint64(63))) & masks[0, i]  # x - 1 -> x, x not in column 0
        from_right = ((c >> one) | (hi1 << np.uint64(63))) & masks[1, i]  # x + 1 -> x, x not in the last column
        from_up = (c << size) | (lo1 >> (np.uint64(64) - size))
        from_down = (c >> size) | (hi1 << (np.uint64(64) - size))
        out[i] = (c | from_left | from_right | from_up | from_down) & masks[2, i]


@internal_kernel
def clear_footprint(scr):
    """Start a query: an empty core."""
    fp = scr[BITS][CORE]
    for i in range(fp.shape[0]):
        fp[i] = 0


@kernel
def load_position(scr, board, head, nxt, libs, ssize, meta):
    """Copy the engine position into the scratch (searches undo every move they play, so once per
    position is enough); the scratch keeps its own ``mark`` stamp."""
    sb, si, sm = scr[0], scr[1], scr[WIDE][META]
    for j in range(board.shape[0]):
        sb[j] = board[j]
        si[0, j] = head[j]
        si[1, j] = nxt[j]
        si[2, j] = libs[j]
        si[3, j] = ssize[j]
    for j in range(meta.shape[0]):
        if j != K.M_STAMP:
            sm[j] = meta[j]
    scr[WIDE][CTL, _TOP] = 0


@internal_kernel
def _log(lg, i, kind, x, old):
    """Write undo-log entry ``i``; returns the log's new length (kept in a local by the caller, written back
    to ``ctl`` once a move is done: a store through ``ctl`` after every entry cost a load and a store each)."""
    lg[i, 0] = kind
    lg[i, 1] = x
    lg[i, 2] = old
    return i + 1


@internal_kernel
def _remove(h, board, head, nxt, libs, ssize, nbr, lg, top):
    """The engine's ``_remove_string`` with every write logged (from entry ``top`` on; returns the log's new
    length): take the string with head ``h`` off the board, its neighbours gain the freed liberties."""
    color = board[h]
    p = h
    while True:
        top = _log(lg, top, np.int64(_L_BOARD), np.int64(p), np.int64(color))
        board[p] = 0
        p = nxt[p]
        if p == h:
            break
    p = h
    while True:
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
                    top = _log(lg, top, np.int64(_L_LIBS), np.int64(hq), np.int64(libs[hq]))
                    libs[hq] += 1
                    if h0 < 0:
                        h0 = hq
                    elif h1 < 0:
                        h1 = hq
                    else:
                        h2 = hq
        nx = nxt[p]
        top = _log(lg, top, np.int64(_L_HEAD), np.int64(p), np.int64(head[p]))
        top = _log(lg, top, np.int64(_L_NXT), np.int64(p), np.int64(nx))
        top = _log(lg, top, np.int64(_L_SSIZE), np.int64(p), np.int64(ssize[p]))
        top = _log(lg, top, np.int64(_L_LIBS), np.int64(p), np.int64(libs[p]))
        head[p] = p
        nxt[p] = p
        ssize[p] = 0
        libs[p] = 0
        p = nx
        if p == h:
            break
    return top


@internal_kernel(always_inline=True)
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


@internal_kernel(always_inline=True)
def _play(scr, d, point, color, nbr):
    """Play ``point`` in the current position (suicide forbidden, simple ko), logging every write so that
    :func:`_undo` back to ``start[d + 1]`` restores the position; returns the engine status. The same
    strings, liberty counts, heads, links and ko point as ``play_move``; only what the search never
    reads (``placed``, the hash, move and capture counters) is left out."""
    touch_point(scr, point, nbr)
    board, si, wide, lg = scr[0], scr[1], scr[WIDE], scr[LOG]
    head, nxt, libs, ssize, mark, meta, ctl = si[0], si[1], si[2], si[3], si[MARK], wide[META], wide[CTL]
    top = ctl[_TOP]
    wide[START, d + 1] = top
    ctl[1] += 1
    pt = np.int32(point)
    # int32 points and these array types, as the engine's own callers pass: one compile of each helper
    st = K.check_move(board, head, libs, meta, nbr, pt, color, np.bool_(False))
    if st != K.OK:
        return st
    top = _log(lg, top, np.int64(_L_PLACE), np.int64(pt), np.int64((meta[K.M_KO] + 1) * 4 + meta[K.M_KO_COLOR]))
    board[pt] = color
    head[pt] = pt
    nxt[pt] = pt
    ssize[pt] = 1
    libs[pt] = 0
    h = pt
    # typed, not literal zeros: numba would compile _libs_after once more for Literal[int](0) arguments
    merged = np.int64(0)
    merged_libs = np.int64(0)  # liberties of the first string merged, before the move
    for k in range(4):
        q = nbr[pt, k]
        if q < 0:
            break
        if board[q] == color:
            hq = head[q]
            if hq != h:
                merged += 1
                merged_libs = libs[hq]
                a = K._merge(h, hq, head, nxt, ssize)
                top = _log(lg, top, np.int64(_L_MERGE), np.int64(a), np.int64(h + hq - a))
                h = a
    opp = 3 - color
    captured = 0
    captured_point = -1
    s = K.next_stamp(mark, meta)
    for k in range(4):
        q = nbr[pt, k]
        if q < 0:
            break
        if board[q] == opp:
            hq = head[q]
            if mark[hq] != s:
                mark[hq] = s
                top = _log(lg, top, np.int64(_L_LIBS), np.int64(hq), np.int64(libs[hq]))
                libs[hq] -= 1
                if libs[hq] == 0:
                    if ssize[hq] == 1:
                        captured_point = hq
                    captured += ssize[hq]
                    top = _remove(hq, board, head, nxt, libs, ssize, nbr, lg, top)
    h = head[pt]
    if h != pt:  # else its liberties were 0, which _L_PLACE restores
        top = _log(lg, top, np.int64(_L_LIBS), np.int64(h), np.int64(libs[h]))
    wide[QUIET, d + 1] = (_Q_NO_CAPTURE if captured == 0 else 0) | (_Q_NO_JOIN if merged == 0 else 0)
    if captured == 0 and merged <= 1:
        libs[h] = _libs_after(board, head, nbr, pt, h, color, merged, merged_libs)
    else:
        libs[h] = K.count_libs(h, board, nxt, nbr, mark, meta)
    if captured == 1 and ssize[h] == 1 and libs[h] == 1:
        meta[K.M_KO] = captured_point
        meta[K.M_KO_COLOR] = opp
    else:
        meta[K.M_KO] = -1
    ctl[_TOP] = top
    return st


@internal_kernel
def _undo(scr, top):
    """Undo the logged writes back to log length ``top``, newest first."""
    board, si, lg = scr[0], scr[1], scr[LOG]
    head, nxt, libs, ssize, meta, ctl = si[0], si[1], si[2], si[3], scr[WIDE][META], scr[WIDE][CTL]
    i = ctl[_TOP]
    while i > top:
        i -= 1
        kind, x, v = lg[i, 0], lg[i, 1], lg[i, 2]
        if kind == _L_LIBS:
            libs[x] = v
        elif kind == _L_PLACE:
            board[x] = 0
            head[x] = x
            nxt[x] = x
            ssize[x] = 0
            libs[x] = 0
            meta[K.M_KO] = (v >> 2) - 1
            meta[K.M_KO_COLOR] = v & 3
        elif kind == _L_MERGE:  # split string v (its old head) back off string x
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
        elif kind == _L_BOARD:
            board[x] = v
        elif kind == _L_HEAD:
            head[x] = v
        elif kind == _L_NXT:
            nxt[x] = v
        else:
            ssize[x] = v
    ctl[_TOP] = top


@internal_kernel
def _libs_of(scr, t, nbr):
    touch_string(scr, t, nbr)
    si = scr[1]
    return si[2, si[0, t]]


@internal_kernel(always_inline=True)
def _add_liberties(scr, t, row, limit, nbr):
    """Append the distinct liberties of the string through ``t`` to candidate row ``row`` until it holds
    ``limit`` candidates; returns the first liberty found (-1 if none). A string with one or two liberties
    stops walking once it has met them all (its liberty count says when): the rest of the walk would only
    meet them again, which changes nothing."""
    touch_string(scr, t, nbr)
    sb, si, cand = scr[0], scr[1], scr[3]
    first = -1
    second = -1
    h = si[0, t]
    nlibs = si[2, h]
    p = h
    while True:
        for k in range(4):
            q = nbr[p, k]
            if q < 0:
                break
            if sb[q] == 0:
                if first < 0:
                    first = q
                nc = cand[row, _C_N]
                if nc >= limit:
                    return first
                seen = False
                for i in range(nc):
                    if cand[row, _C0 + i] == q:
                        seen = True
                        break
                if not seen:
                    cand[row, _C0 + nc] = q
                    cand[row, _C_N] = nc + 1
                if q != first and second < 0:
                    second = q
                if nlibs == 1 or (nlibs == 2 and second >= 0):
                    return first
        p = si[1, p]
        if p == h:
            break
    return first


@internal_kernel
def _empty_nbrs(sb, p, nbr):
    c = 0
    for k in range(4):
        q = nbr[p, k]
        if q < 0:
            break
        if sb[q] == 0:
            c += 1
    return c


@internal_kernel(always_inline=True)
def _escapes_by_extension(scr, t, x, y, nbr):
    """Liberties (up to 3) the defender's string through ``t`` (liberties ``x`` and ``y``) gets by
    extending at ``y`` after the attacker plays ``x``; 0 when ``x`` would capture something (then the
    board changes and only playing tells). The caller touches ``x`` and ``y`` (:func:`touch_point`) first."""
    sb, si = scr[0], scr[1]
    mark = si[MARK]
    dcol = sb[t]
    for k in range(4):
        q = nbr[x, k]
        if q < 0:
            break
        if sb[q] == dcol and si[2, si[0, q]] == 1:
            return 0
    s = K.next_stamp(mark, scr[WIDE][META])
    mark[x] = s
    mark[y] = s
    ht = si[0, t]
    cnt = 0
    for k in range(4):
        q = nbr[y, k]
        if q < 0:
            break
        v = sb[q]
        if v == 0:
            if mark[q] != s:
                mark[q] = s
                cnt += 1
        elif v == dcol and si[0, q] != ht:
            h = si[0, q]
            z = h
            while cnt < 3:
                for j in range(4):
                    r = nbr[z, j]
                    if r < 0:
                        break
                    if sb[r] == 0 and mark[r] != s:
                        mark[r] = s
                        cnt += 1
                z = si[1, z]
                if z == h:
                    break
        if cnt >= 3:
            break
    return cnt


@internal_kernel(always_inline=True)
def _open(scr, d, kind, t, nbr):
    """Set up the frame of ply ``d`` (the current position): its side and candidate moves."""
    sb, cand = scr[0], scr[3]
    cand[d, _C_N] = 0
    cand[d, _C_IDX] = 0
    cand[d, _C_TYPE] = kind
    cand[d, _C_MORE] = 0
    if kind == ATT:
        _add_liberties(scr, t, d, np.int64(2), nbr)
        if cand[d, _C_N] == 2:
            a, b = np.int64(cand[d, _C0]), np.int64(cand[d, _C0 + 1])
            touch_point(scr, a, nbr)
            touch_point(scr, b, nbr)
            # drop an atari the defender answers by extending to ≥3 liberties (exact: no play needed)
            keep_a = _escapes_by_extension(scr, t, a, b, nbr) < 3
            keep_b = _escapes_by_extension(scr, t, b, a, nbr) < 3
            if keep_a and keep_b:
                # first the atari that leaves the defender the liberty with fewer empty neighbours
                if _empty_nbrs(sb, b, nbr) > _empty_nbrs(sb, a, nbr):
                    cand[d, _C0], cand[d, _C0 + 1] = b, a
            elif keep_b:
                cand[d, _C0] = b
                cand[d, _C_N] = 1
            elif not keep_a:
                cand[d, _C_N] = 0
            else:
                cand[d, _C_N] = 1
        return
    # the target's liberty; the capture options follow only if extending there fails (_add_captures)
    _add_liberties(scr, t, d, np.int64(1), nbr)
    cand[d, _C_MORE] = 1


@internal_kernel(always_inline=True)
def _add_captures(scr, d, t, nbr):
    """Append to the defender's frame at ply ``d`` (the current position, its extension tried and failed)
    the liberty of each attacker string next to the target in atari, in the order of a walk of the
    target's stones; every string next to the target is touched. Looked for only when needed — the
    extension mostly decides — the options and their order are those an eager frame would have: the same
    position, the same walk after the same first candidate (so a liberty equal to it is not added again).
    Returns True if some attacker string next to the target is in atari."""
    sb, si = scr[0], scr[1]
    head, libs = si[0], si[2]
    acol = 3 - sb[t]
    h = head[t]
    last = -1  # the string met last (a wall of the ladder meets the walk stone after stone)
    found = False
    p = h
    while True:
        for k in range(4):
            q = nbr[p, k]
            if q < 0:
                break
            if sb[q] == acol and head[q] != last:
                last = head[q]
                touch_string(scr, np.int64(q), nbr)
                if libs[last] == 1:
                    found = True
                    _add_liberties(scr, np.int64(q), d, np.int64(MAX_CANDIDATES), nbr)
        p = si[1, p]
        if p == h:
            break
    return found


@internal_kernel(always_inline=True)
def _none_after_step(scr, d):
    """True if no attacker string next to the target is in atari at ply ``d``, a defender's frame whose
    extension lost (the attacker won after it), known without walking: the frame two plies down — opened
    after the extension and the attacker's winning atari — found none, neither move took a stone, and the
    atari joined no string.

    Exact: then every attacker string next to the target at ply ``d`` is still a string two plies down, next
    to the target (which only grew), with no more liberties than now (two stones were added and nothing was
    taken); none was in atari there, so none is now. Every value this reads was read, under touches, by
    the search itself; the strings the walk would touch were touched two plies down (the same stones)."""
    cand, quiet = scr[3], scr[WIDE][QUIET]
    return (cand[d + 2, _C_TYPE] == DEF and cand[d + 2, _C_MORE] == _NO_ATARI
            and (quiet[d + 1] & _Q_NO_CAPTURE) != 0 and quiet[d + 2] == _Q_NO_CAPTURE | _Q_NO_JOIN)


@internal_kernel
def read_ladder(scr, kind, t, dcol, point, nbr):
    """The iterative AND/OR search of a query: True if the attacker (colour ``3 - dcol``) captures the string
    through ``t``. Its root frame, at ply 0, holds the query's first move ``point``: the attacker's (``kind``
    ``ATT``: a ladder capture, which needs the target in atari after it) or the defender's (``DEF``: a ladder
    escape; its string is ``t = point``, which needs ≥3 liberties, or 2 and no working ladder; one is not
    enough, whatever a ko). The first move is not counted against the node budget. Cut-offs (ply limit,
    node budget) count as the defender surviving. Every move it plays is undone before it returns; one
    call site of :func:`_play`, inlined (a call passes every field of every scratch array)."""
    sb, cand, ctl, start = scr[0], scr[3], scr[WIDE][CTL], scr[WIDE][START]
    acol = 3 - dcol
    ctl[1] = -1
    d = np.int64(0)  # typed: a literal 0 compiled every helper taking the ply once more
    cand[0, _C_N] = 1
    cand[0, _C_IDX] = 0
    cand[0, _C_TYPE] = kind
    cand[0, _C_MORE] = 0
    cand[0, _C0] = point
    opening = np.int64(-1)  # the side of the frame to open at ply d (-1: it is open): one call site of _open, inlined
    ret = -1  # result of the child frame just closed (-1: none)
    while True:
        if opening >= 0:
            _open(scr, d, opening, t, nbr)
            opening = -1
        kind = cand[d, _C_TYPE]
        val = -1
        lost = False  # back at a defender's frame whose last option lost (the attacker won below it)
        if ret >= 0:
            if kind == DEF and ret == 0:
                val = 0
            elif kind == ATT and ret == 1:
                val = 1
            lost = kind == DEF and ret == 1
            ret = -1
        pushed = False
        while val < 0 and not pushed:
            if cand[d, _C_IDX] >= cand[d, _C_N]:
                if cand[d, _C_MORE] != 1:
                    break
                if (lost and _none_after_step(scr, d)) or not _add_captures(scr, d, t, nbr):
                    cand[d, _C_MORE] = _NO_ATARI
                else:
                    cand[d, _C_MORE] = 0
                continue
            m = np.int64(cand[d, _C0 + cand[d, _C_IDX]])
            cand[d, _C_IDX] += 1
            if _play(scr, d, m, acol if kind == ATT else dcol, nbr) != K.OK:
                continue
            e = d + 1
            nl = _libs_of(scr, t, nbr)
            deeper = e + 2 <= ctl[2] and ctl[1] < ctl[3]
            if kind == ATT:
                if nl == 1 and deeper:
                    pushed = True
            elif nl >= 3:
                val = 0
            elif nl == 2:
                if deeper:
                    pushed = True
                else:
                    val = 0
            elif d > 0:
                # one liberty left: the attacker takes it unless that is illegal (ko)
                cand[e, _C_N] = 0
                lib = _add_liberties(scr, t, e, np.int64(0), nbr)
                si = scr[1]
                touch_point(scr, lib, nbr)
                if K.check_move(sb, si[0], si[2], scr[WIDE][META], nbr, np.int32(lib), acol,
                                np.bool_(False)) != K.OK:
                    val = 0
            if pushed:
                opening = np.int64(DEF if kind == ATT else ATT)
                d = e
            else:
                _undo(scr, start[e])
        if pushed:
            continue
        if val < 0:
            val = 1 if kind == DEF else 0  # every defence failed / no atari worked
        if d == 0:
            return val == 1
        _undo(scr, start[d])
        d -= 1
        ret = val


@inline_kernel
def ladder_capture(point, color, target, nbr, scr):
    """True if ``color`` playing ``point`` (legal, a liberty of the 2-liberty opponent string through
    ``target``) leaves that string in atari and it cannot escape the ladder. The scratch must hold the
    position (:func:`load_position`); it holds it again afterwards. The query's footprint is left in
    ``scr[BITS][CORE]``."""
    clear_footprint(scr)
    return read_ladder(scr, np.int64(ATT), np.int64(target), np.int64(3 - color), np.int64(point), nbr)


@inline_kernel
def ladder_escape(point, color, nbr, scr):
    """True if ``color`` playing ``point`` (legal, the liberty of its own string in atari) leaves
    that string with ≥3 liberties, or with 2 and no working ladder for the opponent. The scratch must
    hold the position (:func:`load_position`); it holds it again afterwards. The query's footprint is
    left in ``scr[BITS][CORE]``."""
    clear_footprint(scr)
    x = np.int64(point)
    return not read_ladder(scr, np.int64(DEF), x, np.int64(color), x, nbr)
