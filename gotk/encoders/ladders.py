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
copy of the position (the caller's engine is never written) with the engine's own moves:
:func:`gotk.game.kernels.play_recorded` and :func:`~gotk.game.kernels.undo`, so the position at ply ``d`` is
exactly what a fresh copy with the same moves played would hold: the same stones, heads, links, liberty
counts, sizes and ko point. A move writes a handful of log entries where a copy of the position was 1,800.

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
is in the core (:func:`_play` touches its point first), and so is every root string a move joins or takes
(:func:`_play` touches the strings next to its point first). A point of a root string enters the core only
in a walk of a string holding it — which, in that position, holds the point's whole root string unless
a move took that root string earlier on its line — or as an empty point, again after a move took its
root string. So a string with a played stone is in the core whole (its root strings were joined by
moves), and a string without one is a single root string, in the core whole once one point is.

Each :func:`_play` touches its point first (a move reads only the point, its neighbours, the strings
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

from typing import NamedTuple

import numpy as np

from gotk.game import kernels as K
from gotk.game import rules as R
from gotk.game.state import new_engine
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
NODES, PLY_LIMIT, BUDGET = 0, 1, 2  # entries of ``ctl``: moves played by the last query, its limits
CORE = 4  # row of the touched-core bitset in ``bits``


class Scratch(NamedTuple):
    """A ladder search's preallocated state (:func:`new_scratch`)."""

    eng: K.Engine  # the position read, a copy of the caller's (:func:`load_position`), with its undo log
    ctl: np.ndarray  # int64: NODES, PLY_LIMIT, BUDGET
    cand: np.ndarray  # int32 (plies + 2, _C0 + MAX_CANDIDATES): each ply's frame and candidate moves
    bits: np.ndarray  # uint64 (5, W): four board masks for footprint(), then the touched core


@kernel
def max_plies(n):
    """Plies read past the first move on a board of ``n`` points: ``max(80, 4 * size + 8)``."""
    size = 1
    while size * size < n:
        size += 1
    return max(80, 4 * size + 8)


@kernel
def log_room(n, plies):
    """Undo-log entries a search needs: a move writes at most ``K.MOVE_LOG`` entries plus ``K.STONE_LOG`` per
    stone it takes, and a line of play takes at most the ``n`` stones of the root and the ones it placed."""
    return (plies + 2) * K.MOVE_LOG + K.STONE_LOG * (n + plies + 2)


def scratch_parts(n, plies):
    """``(ctl, cand, bits)`` of a :class:`Scratch` (plain numpy, also compiled: :func:`make_scratch`).
    ``bits``: points not in the first column, not in the last column, on the board, the board size (for
    :func:`footprint`), and the core: the points the last query touched. ``cand`` is written before read."""
    ctl = np.zeros(3, dtype=np.int64)
    ctl[PLY_LIMIT] = plies
    ctl[BUDGET] = NODE_BUDGET
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
    return ctl, np.empty((plies + 2, _C0 + MAX_CANDIDATES), dtype=np.int32), masks


_scratch_parts = compiled(scratch_parts)


def new_scratch(n: int, plies: int) -> Scratch:
    """A :class:`Scratch` for a board of ``n`` points reading ``plies`` plies (for the per-thread caches)."""
    size = int(round(n ** 0.5))
    return Scratch(new_engine(size, log_entries=log_room(n, plies), log_moves=plies + 2),
                   *scratch_parts(n, plies))


@compiled
def make_scratch(e, plies):
    """:func:`new_scratch` in compiled code, sharing the tables of the position ``e``."""
    n = e.board.shape[0]
    eng = K.Engine(np.empty(n, np.int8), np.empty(n, np.int32), np.empty(n, np.int32), np.empty(n, np.int32),
                   np.empty(n, np.int32), np.empty(n, np.int32), np.zeros(n, np.int32),
                   np.zeros(e.meta.shape[0], np.int64), np.zeros(1, np.uint64),
                   np.empty((log_room(n, plies), 3), np.int32), np.empty((plies + 2, K.MV_LEN), np.int64),
                   e.nbr, e.diag, e.zob)
    ctl, cand, bits = _scratch_parts(n, plies)
    return Scratch(eng, ctl, cand, bits)


@inline_kernel
def _fp_set(fp, x):
    fp[x >> 6] |= np.uint64(1) << np.uint64(x & 63)


# The reader's helpers come in pairs: a one-line wrapper over the scratch (inlined where it is called) and the
# work, a kernel given only the arrays it reads: a compiled call passes every field of every array it is given,
# and the scratch holds seventeen.


@inline_kernel
def touch_string(scr, x):
    """Add the stones of the string through ``x`` (current position) to the core (just ``x`` if empty);
    a string with ``x`` in the core already is all there (see *Footprint* above), and is not walked."""
    _touch_string(scr.bits[CORE], scr.eng.board, scr.eng.nxt, x)


@inline_kernel
def _touch_string(fp, board, nxt, x):
    b = np.uint64(1) << np.uint64(x & 63)
    if fp[x >> 6] & b:
        return
    fp[x >> 6] |= b
    if board[x] == 0:
        return
    p = nxt[x]
    while p != x:
        _fp_set(fp, np.int64(p))
        p = nxt[p]


@inline_kernel
def touch_point(scr, x):
    """Add ``x`` and the strings next to it (current position) to the core."""
    _touch_point(scr.bits[CORE], scr.eng.board, scr.eng.nxt, scr.eng.nbr, x)


@inline_kernel
def _touch_point(fp, board, nxt, nbr, x):
    _fp_set(fp, x)
    for k in range(4):
        q = nbr[x, k]
        if q < 0:
            break
        if board[q] != 0:
            _touch_string(fp, board, nxt, np.int64(q))


@kernel
def footprint(scr, out):
    """Write the last query's footprint — its core plus every neighbour of a core point — into ``out``
    (a bitset of ``(n + 63) // 64`` words): a shift by one column and by one row of the core."""
    masks = scr.bits
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
    fp = scr.bits[CORE]
    for i in range(fp.shape[0]):
        fp[i] = 0


@kernel
def load_position(scr, e):
    """Copy the position ``e`` into the scratch (searches undo every move they play, so once per position is
    enough); the scratch keeps its own ``mark`` stamp."""
    s = scr.eng
    board, head, nxt, libs, ssize = e.board, e.head, e.nxt, e.libs, e.ssize
    for j in range(board.shape[0]):
        s.board[j] = board[j]
        s.head[j] = head[j]
        s.nxt[j] = nxt[j]
        s.libs[j] = libs[j]
        s.ssize[j] = ssize[j]
    for j in range(e.meta.shape[0]):
        if j != K.M_STAMP:
            s.meta[j] = e.meta[j]
    s.hashv[0] = e.hashv[0]
    K.forget_moves(s)


@inline_kernel
def _play(scr, point, color):
    """Play ``point`` in the current position (suicide forbidden, simple ko) with the engine's recorded move,
    after touching it (see *Footprint*); returns the engine status. Every move counts against the budget."""
    touch_point(scr, point)
    scr.ctl[NODES] += 1
    return K.play_rule(scr.eng, point, color, False, True, False)  # recorded; only what legality reads


@inline_kernel
def _libs_of(scr, t):
    touch_string(scr, t)
    s = scr.eng
    return s.libs[s.head[t]]


@inline_kernel
def _add_liberties(scr, t, row, limit):
    """Append the distinct liberties of the string through ``t`` to candidate row ``row`` until it holds
    ``limit`` candidates; returns the first liberty found (-1 if none). A string with one or two liberties
    stops walking once it has met them all (its liberty count says when): the rest of the walk would only
    meet them again, which changes nothing."""
    s = scr.eng
    return _liberties_into(scr.bits[CORE], s.board, s.nxt, s.head, s.libs, s.nbr, scr.cand, t, row, limit)


@inline_kernel
def _liberties_into(fp, sb, nxt, head, libs, nbr, cand, t, row, limit):
    _touch_string(fp, sb, nxt, t)
    first = -1
    second = -1
    h = head[t]
    nlibs = libs[h]
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
        p = nxt[p]
        if p == h:
            break
    return first


@inline_kernel
def _escapes_by_extension(scr, t, x, y):
    """Liberties (up to 3) the defender's string through ``t`` (liberties ``x`` and ``y``) gets by
    extending at ``y`` after the attacker plays ``x``; 0 when ``x`` would capture something (then the
    board changes and only playing tells): :func:`gotk.game.rules.extension_liberties`. The caller touches
    ``x`` and ``y`` (:func:`touch_point`) first."""
    s = scr.eng
    return R.extension_liberties(s.board, s.head, s.nxt, s.libs, s.nbr, s.mark, s.meta, t, x, y, np.int64(3))


@inline_kernel
def _open(scr, d, kind, t):
    """Set up the frame of ply ``d`` (the current position): its side and candidate moves."""
    sb, nbr, cand = scr.eng.board, scr.eng.nbr, scr.cand
    cand[d, _C_N] = 0
    cand[d, _C_IDX] = 0
    cand[d, _C_TYPE] = kind
    cand[d, _C_MORE] = 0
    if kind == ATT:
        _add_liberties(scr, t, d, np.int64(2))
        if cand[d, _C_N] == 2:
            a, b = np.int64(cand[d, _C0]), np.int64(cand[d, _C0 + 1])
            touch_point(scr, a)
            touch_point(scr, b)
            # drop an atari the defender answers by extending to ≥3 liberties (exact: no play needed)
            keep_a = _escapes_by_extension(scr, t, a, b) < 3
            keep_b = _escapes_by_extension(scr, t, b, a) < 3
            if keep_a and keep_b:
                # first the atari that leaves the defender the liberty with fewer empty neighbours
                if R.empty_neighbours(sb, nbr, b) > R.empty_neighbours(sb, nbr, a):
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
    _add_liberties(scr, t, d, np.int64(1))
    cand[d, _C_MORE] = 1


@inline_kernel
def _add_captures(scr, d, t):
    """Append to the defender's frame at ply ``d`` (the current position, its extension tried and failed)
    the liberty of each attacker string next to the target in atari, in the order of a walk of the
    target's stones; every string next to the target is touched. Looked for only when needed — the
    extension mostly decides — the options and their order are those an eager frame would have: the same
    position, the same walk after the same first candidate (so a liberty equal to it is not added again).
    Returns True if some attacker string next to the target is in atari."""
    s = scr.eng
    sb, head, libs, nxt, nbr = s.board, s.head, s.libs, s.nxt, s.nbr
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
                touch_string(scr, np.int64(q))
                if libs[last] == 1:
                    found = True
                    _add_liberties(scr, np.int64(q), d, np.int64(MAX_CANDIDATES))
        p = nxt[p]
        if p == h:
            break
    return found


@inline_kernel
def _none_after_step(scr, d):
    """True if no attacker string next to the target is in atari at ply ``d``, a defender's frame whose
    extension lost (the attacker won after it), known without walking: the frame two plies down — opened
    after the extension and the attacker's winning atari — found none, neither move took a stone, and the
    atari joined no string (the engine's move records ``d`` and ``d + 1`` say how those moves went).

    Exact: then every attacker string next to the target at ply ``d`` is still a string two plies down, next
    to the target (which only grew), with no more liberties than now (two stones were added and nothing was
    taken); none was in atari there, so none is now. Every value this reads was read, under touches, by
    the search itself; the strings the walk would touch were touched two plies down (the same stones)."""
    cand, mv = scr.cand, scr.eng.moves
    return (cand[d + 2, _C_TYPE] == DEF and cand[d + 2, _C_MORE] == _NO_ATARI
            and mv[d, K.MV_CAPTURED] == 0 and mv[d + 1, K.MV_CAPTURED] == 0 and mv[d + 1, K.MV_MERGED] == 0)


@internal_kernel
def read_ladder(scr, kind, t, dcol, point):
    """The iterative AND/OR search of a query: True if the attacker (colour ``3 - dcol``) captures the string
    through ``t``. Its root frame, at ply 0, holds the query's first move ``point``: the attacker's (``kind``
    ``ATT``: a ladder capture, which needs the target in atari after it) or the defender's (``DEF``: a ladder
    escape; its string is ``t = point``, which needs ≥3 liberties, or 2 and no working ladder; one is not
    enough, whatever a ko). The first move is not counted against the node budget. Cut-offs (ply limit,
    node budget) count as the defender surviving. Every move it plays is undone before it returns (the move
    into ply ``d + 1`` is the engine's recorded move ``d``); one call site of :func:`_play`, inlined."""
    cand, ctl, eng = scr.cand, scr.ctl, scr.eng
    acol = 3 - dcol
    ctl[NODES] = -1
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
            _open(scr, d, opening, t)
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
                if (lost and _none_after_step(scr, d)) or not _add_captures(scr, d, t):
                    cand[d, _C_MORE] = _NO_ATARI
                else:
                    cand[d, _C_MORE] = 0
                continue
            m = np.int64(cand[d, _C0 + cand[d, _C_IDX]])
            cand[d, _C_IDX] += 1
            if _play(scr, m, acol if kind == ATT else dcol) != K.OK:
                continue
            e = d + 1
            nl = _libs_of(scr, t)
            deeper = e + 2 <= ctl[PLY_LIMIT] and ctl[NODES] < ctl[BUDGET]
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
                lib = _add_liberties(scr, t, e, np.int64(0))
                touch_point(scr, lib)
                if K.check_rule(eng, lib, acol, False) != K.OK:
                    val = 0
            if pushed:
                opening = np.int64(DEF if kind == ATT else ATT)
                d = e
            else:
                K.undo_rule(eng, False)
        if pushed:
            continue
        if val < 0:
            val = 1 if kind == DEF else 0  # every defence failed / no atari worked
        if d == 0:
            return val == 1
        K.undo_rule(eng, False)
        d -= 1
        ret = val


@inline_kernel
def ladder_capture(scr, point, color, target):
    """True if ``color`` playing ``point`` (legal, a liberty of the 2-liberty opponent string through
    ``target``) leaves that string in atari and it cannot escape the ladder. The scratch must hold the
    position (:func:`load_position`); it holds it again afterwards. The query's footprint is left in
    ``scr.bits[CORE]``."""
    clear_footprint(scr)
    return read_ladder(scr, np.int64(ATT), np.int64(target), np.int64(3 - color), np.int64(point))


@inline_kernel
def ladder_escape(scr, point, color):
    """True if ``color`` playing ``point`` (legal, the liberty of its own string in atari) leaves
    that string with ≥3 liberties, or with 2 and no working ladder for the opponent. The scratch must
    hold the position (:func:`load_position`); it holds it again afterwards. The query's footprint is
    left in ``scr.bits[CORE]``."""
    clear_footprint(scr)
    x = np.int64(point)
    return not read_ladder(scr, np.int64(DEF), x, np.int64(color), x)
