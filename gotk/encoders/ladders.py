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

The search is iterative (numba cannot cache recursive functions reliably): ply ``d`` plays on layer
``d`` of preallocated scratch arrays (a copy of layer ``d - 1``), so the engine's arrays are never
written.

**Footprint.** Every query also records the points whose contents it may depend on (its
*footprint*). Before any read it *touches* what that read looks at, in the layer it reads, adding
points to a *core* bitset (``scr[FP]``); the footprint is the core plus every neighbour of a core
point (:func:`footprint`, one shift of the bitset per direction):

* ``touch_string(x)``: every stone of the string through ``x`` (``x`` alone if empty); with the
  neighbours the footprint gets, these fix all the string's fields — head, links, size, liberties;
* ``touch_point(x)``: ``x`` and ``touch_string`` of each neighbouring stone.

``touch_string`` walks a string only if its head was not walked before in the same query (each head
remembers the query it was last walked in). That skips only strings whose stones are all in the core
already. Touches happen only in the search's current (deepest) layer. Claim: whenever head ``h`` is marked
for this query, every stone of the string through ``h`` in the current layer is in the core. It holds when
the mark is set. A move played into the next layer keeps every other string as it was; it merges the
played point with strings next to it, and removes captured strings next to it. ``_play`` touched all of
these first. Going back up to a parent layer: the string through ``h`` there is either a subset of the
string that was walked (merges keep the larger string's head), or it was captured on the way down, and
was touched then. So the core, and with it every footprint, is the one the walks without the mark give.

Each ``_play`` touches its point first (``play_move`` reads only the point, its neighbours, the
strings next to it — merged or captured — and the neighbours of their stones: the liberty updates
of strings next to a captured one are writes whose values are read later only through a touch);
each liberty count or liberty list of the target touches the target string; the defender's frame
also touches every string next to the target; the atari filter touches both liberties (which
covers the empty-neighbour counts of the move order); the ko-retake test touches the liberty. The ko
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
_C_N, _C_IDX, _C_TYPE, _C0 = 0, 1, 2, 3  # columns of the per-layer candidate table
FP = 9  # index of the touched-core bitset in the scratch tuple
MASKS = 10  # index of the board masks used by footprint()
VERS = 11  # index of the per-head array: the query each string head was last walked in (ctl[4]: this query)


@kernel
def max_plies(n):
    """Plies read past the first move on a board of ``n`` points: ``max(80, 4 * size + 8)``."""
    size = 1
    while size * size < n:
        size += 1
    return max(80, 4 * size + 8)


def new_scratch(n, plies):
    """Preallocated search state, passed around as one tuple:
    ``(board[L, n], ints[L, 4, n] (head, nxt, libs, ssize), meta[L, M], cand[L, 3 + MAX_CANDIDATES],
    placed, mark, hashv, zob, ctl, core, masks, walked)`` with ``L = plies + 2`` layers. ``ctl``
    holds the shared ``mark`` stamp, the node count, the ply limit, the node budget and the number of
    the current query; ``core`` is the bitset (``W = (n + 63) // 64`` words) of the points the last
    query touched; ``masks[4, W]``: points not in the first column, not in the last column, on the
    board, and the board size (for :func:`footprint`); ``walked[n]``: per string head, the query it
    was last walked in (see *Footprint* above).

    Plain Python here (numpy: nothing to compile, for the per-thread caches); compiled code calls
    :func:`make_scratch`, the same function compiled.
    """
    layers = plies + 2
    ctl = np.zeros(5, dtype=np.int64)
    ctl[2] = plies
    ctl[3] = NODE_BUDGET
    size = 1
    while size * size < n:
        size += 1
    masks = np.zeros((4, (n + 63) // 64), dtype=np.uint64)
    for x in range(n):
        b = np.uint64(1) << np.uint64(x & 63)
        if x % size != 0:
            masks[0, x >> 6] |= b
        if x % size != size - 1:
            masks[1, x >> 6] |= b
        masks[2, x >> 6] |= b
    masks[3, 0] = size
    # only mark and ctl need initial values; every layer is written before it is read
    return (np.empty((layers, n), dtype=np.int8), np.empty((layers, 4, n), dtype=np.int32),
            np.empty((layers, K.META_LEN), dtype=np.int64), np.empty((layers, _C0 + MAX_CANDIDATES), dtype=np.int32),
            np.empty(n, dtype=np.int32), np.zeros(n, dtype=np.int32), np.zeros(1, dtype=np.uint64),
            np.zeros((3, n), dtype=np.uint64), ctl, np.zeros((n + 63) // 64, dtype=np.uint64), masks,
            np.zeros(n, dtype=np.int64))


make_scratch = compiled(new_scratch)


@internal_kernel
def _fp_set(fp, x):
    fp[x >> 6] |= np.uint64(1) << np.uint64(x & 63)


@internal_kernel
def touch_string(scr, d, x, nbr):
    """Add the stones of the string through ``x`` (layer ``d``, the current one) to the core (just ``x``
    if empty); a head already walked in this query is not walked again (see *Footprint* above)."""
    sb, si, fp = scr[0], scr[1], scr[FP]
    if sb[d, x] == 0:
        _fp_set(fp, x)
        return
    h = si[d, 0, x]
    walked, query = scr[VERS], scr[8][4]
    if walked[h] == query:
        return
    walked[h] = query
    p = h
    while True:
        _fp_set(fp, np.int64(p))
        p = si[d, 1, p]
        if p == h:
            break


@internal_kernel
def touch_point(scr, d, x, nbr):
    """Add ``x`` and the strings next to it (layer ``d``) to the core."""
    sb = scr[0]
    _fp_set(scr[FP], x)
    for k in range(4):
        q = nbr[x, k]
        if q < 0:
            break
        if sb[d, q] != 0:
            touch_string(scr, d, np.int64(q), nbr)


@kernel
def footprint(scr, out):
    """Write the last query's footprint — its core plus every neighbour of a core point — into ``out``
    (a bitset of ``(n + 63) // 64`` words): a shift by one column and by one row of the core."""
    core, masks = scr[FP], scr[MASKS]
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
    """Start a query: an empty core and a new query number (no head walked yet)."""
    fp = scr[FP]
    for i in range(fp.shape[0]):
        fp[i] = 0
    scr[8][4] += 1


@kernel
def load_position(scr, board, head, nxt, libs, ssize, meta):
    """Copy the engine position into layer 0 (searches only read it, so once per position is enough)."""
    sb, si, sm = scr[0], scr[1], scr[2]
    for j in range(board.shape[0]):
        sb[0, j] = board[j]
        si[0, 0, j] = head[j]
        si[0, 1, j] = nxt[j]
        si[0, 2, j] = libs[j]
        si[0, 3, j] = ssize[j]
    for j in range(meta.shape[0]):
        sm[0, j] = meta[j]


@internal_kernel
def _play(scr, d, point, color, nbr):
    """Copy layer ``d`` to ``d + 1`` and play ``point`` there; returns the engine status."""
    touch_point(scr, d, point, nbr)
    sb, si, sm, ctl = scr[0], scr[1], scr[2], scr[8]
    e = d + 1
    n = sb.shape[1]
    for j in range(n):  # explicit loops: much faster than 2-D slice assignment in numba
        sb[e, j] = sb[d, j]
    for a in range(4):
        for j in range(n):
            si[e, a, j] = si[d, a, j]
    for j in range(sm.shape[1]):
        sm[e, j] = sm[d, j]
    sm[e, K.M_STAMP] = ctl[0]
    # an int32 point, as the game loops pass: one compiled play_move for both
    st = K.play_move(sb[e], si[e, 0], si[e, 1], si[e, 2], si[e, 3], scr[4], scr[5], sm[e], scr[6], nbr, scr[7],
                     np.int32(point), color, np.bool_(False))
    ctl[0] = sm[e, K.M_STAMP]
    ctl[1] += 1
    return st


@internal_kernel
def _libs_of(scr, d, t, nbr):
    touch_string(scr, d, t, nbr)
    si = scr[1]
    return si[d, 2, si[d, 0, t]]


@internal_kernel
def _add_liberties(scr, d, t, row, limit, nbr):
    """Append the distinct liberties of the string through ``t`` (layer ``d``) to candidate row
    ``row`` until it holds ``limit`` candidates; returns the first liberty found (-1 if none)."""
    touch_string(scr, d, t, nbr)
    sb, si, cand = scr[0], scr[1], scr[3]
    first = -1
    h = si[d, 0, t]
    p = h
    while True:
        for k in range(4):
            q = nbr[p, k]
            if q < 0:
                break
            if sb[d, q] == 0:
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
        p = si[d, 1, p]
        if p == h:
            break
    return first


@internal_kernel
def _empty_nbrs(sb, d, p, nbr):
    c = 0
    for k in range(4):
        q = nbr[p, k]
        if q < 0:
            break
        if sb[d, q] == 0:
            c += 1
    return c


@internal_kernel
def _escapes_by_extension(scr, d, t, x, y, nbr):
    """Liberties (up to 3) the defender's string through ``t`` (liberties ``x`` and ``y``, layer
    ``d``) gets by extending at ``y`` after the attacker plays ``x``; 0 when ``x`` would capture
    something (then the board changes and only playing tells)."""
    touch_point(scr, d, x, nbr)
    touch_point(scr, d, y, nbr)
    sb, si, sm, ctl, mark = scr[0], scr[1], scr[2], scr[8], scr[5]
    dcol = sb[d, t]
    for k in range(4):
        q = nbr[x, k]
        if q < 0:
            break
        if sb[d, q] == dcol and si[d, 2, si[d, 0, q]] == 1:
            return 0
    sm[d, K.M_STAMP] = ctl[0]
    s = K.next_stamp(mark, sm[d])
    ctl[0] = s
    mark[x] = s
    mark[y] = s
    ht = si[d, 0, t]
    cnt = 0
    for k in range(4):
        q = nbr[y, k]
        if q < 0:
            break
        v = sb[d, q]
        if v == 0:
            if mark[q] != s:
                mark[q] = s
                cnt += 1
        elif v == dcol and si[d, 0, q] != ht:
            h = si[d, 0, q]
            z = h
            while cnt < 3:
                for j in range(4):
                    r = nbr[z, j]
                    if r < 0:
                        break
                    if sb[d, r] == 0 and mark[r] != s:
                        mark[r] = s
                        cnt += 1
                z = si[d, 1, z]
                if z == h:
                    break
        if cnt >= 3:
            break
    return cnt


@internal_kernel
def _open(scr, d, kind, t, nbr):
    """Set up the frame of layer ``d``: its side and candidate moves."""
    sb, si, cand = scr[0], scr[1], scr[3]
    cand[d, _C_N] = 0
    cand[d, _C_IDX] = 0
    cand[d, _C_TYPE] = kind
    if kind == ATT:
        _add_liberties(scr, d, t, d, np.int64(2), nbr)
        if cand[d, _C_N] == 2:
            a, b = np.int64(cand[d, _C0]), np.int64(cand[d, _C0 + 1])
            # drop an atari the defender answers by extending to ≥3 liberties (exact: no play needed)
            keep_a = _escapes_by_extension(scr, d, t, a, b, nbr) < 3
            keep_b = _escapes_by_extension(scr, d, t, b, a, nbr) < 3
            if keep_a and keep_b:
                # first the atari that leaves the defender the liberty with fewer empty neighbours
                if _empty_nbrs(sb, d, b, nbr) > _empty_nbrs(sb, d, a, nbr):
                    cand[d, _C0], cand[d, _C0 + 1] = b, a
            elif keep_b:
                cand[d, _C0] = b
                cand[d, _C_N] = 1
            elif not keep_a:
                cand[d, _C_N] = 0
            else:
                cand[d, _C_N] = 1
        return
    # the target's liberty first, then the liberty of each attacker string next to it in atari; every
    # string next to the target is touched (one walk of the target's stones does both)
    _add_liberties(scr, d, t, d, np.int64(1), nbr)
    h = si[d, 0, t]
    p = h
    while True:
        for k in range(4):
            q = nbr[p, k]
            if q < 0:
                break
            if sb[d, q] != 0 and si[d, 0, q] != h:  # a stone next to the string is the attacker's
                touch_string(scr, d, np.int64(q), nbr)
                if si[d, 2, si[d, 0, q]] == 1:
                    _add_liberties(scr, d, np.int64(q), d, np.int64(MAX_CANDIDATES), nbr)
        p = si[d, 1, p]
        if p == h:
            break


@internal_kernel
def read_ladder(scr, root, kind, t, nbr):
    """Iterative AND/OR search from layer ``root``: True if the attacker captures the string
    through ``t``. ``kind`` says who moves at the root (``ATT``: target has 2 liberties; ``DEF``:
    1). Cut-offs (ply limit, node budget) count as the defender surviving."""
    sb, cand, ctl = scr[0], scr[3], scr[8]
    dcol = sb[root, t]
    acol = 3 - dcol
    ctl[1] = 0
    _open(scr, root, kind, t, nbr)
    d = root
    ret = -1  # result of the child frame just closed (-1: none)
    while True:
        kind = cand[d, _C_TYPE]
        val = -1
        if ret >= 0:
            if kind == DEF and ret == 0:
                val = 0
            elif kind == ATT and ret == 1:
                val = 1
            ret = -1
        pushed = False
        while val < 0 and not pushed and cand[d, _C_IDX] < cand[d, _C_N]:
            m = np.int64(cand[d, _C0 + cand[d, _C_IDX]])
            cand[d, _C_IDX] += 1
            if _play(scr, d, m, acol if kind == ATT else dcol, nbr) != K.OK:
                continue
            e = d + 1
            nl = _libs_of(scr, e, t, nbr)
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
            else:
                # one liberty left: the attacker takes it unless that is illegal (ko)
                cand[e, _C_N] = 0
                lib = _add_liberties(scr, e, t, e, np.int64(0), nbr)
                si = scr[1]
                touch_point(scr, e, lib, nbr)
                if K.check_move(sb[e], si[e, 0], si[e, 2], scr[2][e], nbr, np.int32(lib), acol,
                                np.bool_(False)) != K.OK:
                    val = 0
            if pushed:
                _open(scr, e, np.int64(DEF if kind == ATT else ATT), t, nbr)
                d = e
        if pushed:
            continue
        if val < 0:
            val = 1 if kind == DEF else 0  # every defence failed / no atari worked
        if d == root:
            return val == 1
        d -= 1
        ret = val


@inline_kernel
def ladder_capture(point, color, target, nbr, scr):
    """True if ``color`` playing ``point`` (legal, a liberty of the 2-liberty opponent string through
    ``target``) leaves that string in atari and it cannot escape the ladder. Layer 0 of ``scr`` must
    hold the position (:func:`load_position`). The query's footprint is left in ``scr[FP]``."""
    clear_footprint(scr)
    d0, d1, t = np.int64(0), np.int64(1), np.int64(target)
    if _play(scr, d0, np.int64(point), np.int64(color), nbr) != K.OK:
        return False
    if _libs_of(scr, d1, t, nbr) != 1:
        return False
    return read_ladder(scr, d1, np.int64(DEF), t, nbr)


@inline_kernel
def ladder_escape(point, color, nbr, scr):
    """True if ``color`` playing ``point`` (legal, the liberty of its own string in atari) leaves
    that string with ≥3 liberties, or with 2 and no working ladder for the opponent. Layer 0 of
    ``scr`` must hold the position (:func:`load_position`). The query's footprint is left in ``scr[FP]``."""
    clear_footprint(scr)
    d0, d1, x = np.int64(0), np.int64(1), np.int64(point)
    if _play(scr, d0, x, np.int64(color), nbr) != K.OK:
        return False
    nl = _libs_of(scr, d1, x, nbr)
    if nl >= 3:
        return True
    if nl <= 1:
        return False
    return not read_ladder(scr, d1, np.int64(ATT), x, nbr)
