"""KataGo's ladder features (input version 7, features 14-17), compiled (numba) on gotk's flat board arrays.

Written from KataGo's ``cpp/game/board.cpp`` (``searchIsLadderCaptured``,
``searchIsLadderCapturedAttackerFirst2Libs``) and ``cpp/neuralnet/nninputs.cpp`` (``iterLadders``); see
docs/katago-export.md. Not gotk's own ladder reader (:mod:`gotk.encoders.ladders`, AlphaGo planes):
KataGo's search has its own early exits, move ordering, ko and stack-limit rules, and the features must
be KataGo's.

The search runs on layered copies of the position (layer ``d`` = the node at depth ``d``, read as an
:class:`~gotk.game.kernels.Engine` by :func:`_layer`), each move played with the engine's
:func:`gotk.game.kernels.play`, so nothing needs undoing. Legality is KataGo's
``isLegal(loc, pla, multiStoneSuicideLegal=false)``: an empty point, no suicide of any size, and not the
board's simple-ko point whoever moves.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gotk.game import kernels as K
from gotk.game import rules as R
from gotk.jit import compiled, kernel

MAX_MOVES = 64  # candidate moves per search node (liberties + capturing moves); far above what occurs


class Scratch(NamedTuple):
    """The search's state (:func:`make_scratch`). ``L`` layers: KataGo's stack limit ``n * 3 // 2 + 1`` plus a spare
    root layer."""

    board: np.ndarray  # int8 (L, n): each layer's stones
    ints: np.ndarray  # int32 (L, 4, n): each layer's head, nxt, libs, ssize
    meta: np.ndarray  # int64 (L, META_LEN)
    cand: np.ndarray  # int32 (L, MAX_MOVES): each node's candidate moves
    ncand: np.ndarray  # int32 (L): how many
    cur: np.ndarray  # int32 (L): the one tried now
    placed: np.ndarray  # engine fields no layer reads (shared)
    mark: np.ndarray
    hashv: np.ndarray
    zob: np.ndarray
    ctl: np.ndarray  # int64: the ``mark`` stamp, plies played
    log: np.ndarray  # the engine's undo log and records: empty (nothing is undone)
    moves: np.ndarray


@compiled
def make_scratch(n):
    """A fresh :class:`Scratch` for a board of ``n`` points."""
    layers = n * 3 // 2 + 3
    return Scratch(np.zeros((layers, n), dtype=np.int8), np.zeros((layers, 4, n), dtype=np.int32),
                   np.zeros((layers, K.META_LEN), dtype=np.int64), np.zeros((layers, MAX_MOVES), dtype=np.int32),
                   np.zeros(layers, dtype=np.int32), np.zeros(layers, dtype=np.int32), np.zeros(n, dtype=np.int32),
                   np.zeros(n, dtype=np.int32), np.zeros(1, dtype=np.uint64), np.zeros((3, n), dtype=np.uint64),
                   np.zeros(2, dtype=np.int64), np.zeros((0, 3), dtype=np.int32),
                   np.zeros((0, K.MV_LEN), dtype=np.int64))


@kernel
def load(scr, t):
    """Copy the position whose Engine's arrays are the plain tuple ``t`` into layer 0."""
    e = K.Engine(*t)
    sb, si, sm = scr.board, scr.ints, scr.meta
    board, head, nxt, libs, ssize, meta = e.board, e.head, e.nxt, e.libs, e.ssize, e.meta
    for j in range(board.shape[0]):
        sb[0, j] = board[j]
        si[0, 0, j] = head[j]
        si[0, 1, j] = nxt[j]
        si[0, 2, j] = libs[j]
        si[0, 3, j] = ssize[j]
    for j in range(meta.shape[0]):
        sm[0, j] = meta[j]


@kernel
def _layer(scr, d, nbr):
    """Layer ``d`` as an engine position (its own stones and strings; ``placed``, ``mark`` and the hash shared by
    every layer: the search reads none of them). ``nbr`` stands in for the diagonal table too (never read)."""
    sb, si = scr.board, scr.ints
    return K.Engine(sb[d], si[d, 0], si[d, 1], si[d, 2], si[d, 3], scr.placed, scr.mark, scr.meta[d], scr.hashv,
                    scr.log, scr.moves, nbr, nbr, scr.zob)


@kernel
def _legal(scr, d, p, color, nbr):
    """KataGo's ``Board::isLegal(p, color, false)`` on layer ``d``."""
    sb, sm = scr.board, scr.meta
    if sb[d, p] != 0 or p == sm[d, K.M_KO]:
        return False
    return K.check_move(_layer(scr, d, nbr), p, color, False) == K.OK


@kernel
def _play(scr, d, p, color, nbr):
    """Copy layer ``d`` to ``d + 1`` and play ``p`` there."""
    sb, si, sm, ctl = scr.board, scr.ints, scr.meta, scr.ctl
    e = d + 1
    n = sb.shape[1]
    for j in range(n):
        sb[e, j] = sb[d, j]
    for a in range(4):
        for j in range(n):
            si[e, a, j] = si[d, a, j]
    for j in range(sm.shape[1]):
        sm[e, j] = sm[d, j]
    sm[e, K.M_STAMP] = ctl[0]
    K.play(_layer(scr, e, nbr), p, color, False)
    ctl[0] = sm[e, K.M_STAMP]
    ctl[1] += 1  # plies played (statistics)


@kernel
def _libs(scr, d, loc):
    if scr.board[d, loc] == 0:
        return 0
    return scr.ints[d, 2, scr.ints[d, 0, loc]]


@kernel
def _push(buf, start, count, p):
    """Append ``p`` to ``buf[start:start+count]`` unless present; returns the new count."""
    for i in range(start, start + count):
        if buf[i] == p:
            return count
    if start + count < buf.shape[0]:
        buf[start + count] = p
        return count + 1
    return count


@kernel
def _find_liberties(scr, d, loc, buf, start, count, nbr):
    """KataGo's ``findLiberties``: the chain's liberties appended (deduplicated) after ``count``."""
    sb, si = scr.board, scr.ints
    p = loc
    while True:
        for k in range(4):
            q = nbr[p, k]
            if q < 0:
                break
            if sb[d, q] == 0:
                count = _push(buf, start, count, q)
        p = si[d, 1, p]
        if p == loc:
            break
    return count


@compiled
def _find_capture_moves(scr, d, loc, buf, start, nbr):
    """KataGo's ``findLibertyGainingCaptures``: liberties of adjacent opposing chains in atari."""
    sb, si = scr.board, scr.ints
    opp = 3 - sb[d, loc]
    count = 0
    checked = np.empty(4 * 64, dtype=np.int32)
    nchecked = 0
    p = loc
    while True:
        for k in range(4):
            q = nbr[p, k]
            if q < 0:
                break
            if sb[d, q] == opp:
                h = si[d, 0, q]
                if si[d, 2, h] == 1:
                    seen = False
                    for i in range(nchecked):
                        if checked[i] == h:
                            seen = True
                            break
                    if not seen and nchecked < checked.shape[0]:
                        checked[nchecked] = h
                        nchecked += 1
                        count = _find_liberties(scr, d, q, buf, start, count, nbr)
        p = si[d, 1, p]
        if p == loc:
            break
    return count


@kernel
def _has_capture_moves(scr, d, loc, nbr):
    sb, si = scr.board, scr.ints
    opp = 3 - sb[d, loc]
    p = loc
    while True:
        for k in range(4):
            q = nbr[p, k]
            if q < 0:
                break
            if sb[d, q] == opp and si[d, 2, si[d, 0, q]] == 1:
                return True
        p = si[d, 1, p]
        if p == loc:
            break
    return False


@kernel
def _would_be_ko_capture(scr, d, p, pla, nbr):
    """``p`` is empty, every neighbour is ``pla``'s opponent, and exactly one neighbour is a lone stone in atari."""
    sb, si = scr.board, scr.ints
    if sb[d, p] != 0:
        return False
    opp = 3 - pla
    found = -1
    for k in range(4):
        q = nbr[p, k]
        if q < 0:
            break
        if sb[d, q] != opp:
            return False
        if si[d, 2, si[d, 0, q]] == 1:
            if found >= 0:
                return False
            found = q
    if found < 0:
        return False
    return si[d, 3, si[d, 0, found]] == 1


@compiled
def _libs_after_play(scr, d, p, pla, max_libs, nbr):
    """KataGo's ``getNumLibertiesAfterPlay`` on layer ``d``: :func:`gotk.game.rules.liberties_after`, its stamp
    the scratch's (``ctl[0]``, as :func:`_play` keeps it)."""
    sm, ctl, si = scr.meta, scr.ctl, scr.ints
    sm[d, K.M_STAMP] = ctl[0]
    c = R.liberties_after(scr.board[d], si[d, 0], si[d, 1], si[d, 2], nbr, scr.mark, sm[d], np.int64(p),
                          np.int64(pla), np.int64(max_libs), np.empty(8, dtype=np.int32))
    ctl[0] = sm[d, K.M_STAMP]
    return c


@kernel
def _connection_libs_x2(scr, d, p, pla, nbr):
    """KataGo's move-ordering heuristic: per adjacent ``pla`` stone, ``max(0, 2 * libs - 3)``."""
    sb, si = scr.board, scr.ints
    c = 0
    for k in range(4):
        q = nbr[p, k]
        if q < 0:
            break
        if sb[d, q] == pla:
            v = 2 * si[d, 2, si[d, 0, q]] - 3
            if v > 0:
                c += v
    return c


@kernel
def _adjacent(p, q, nbr):
    for k in range(4):
        if nbr[p, k] == q:
            return True
    return False


@compiled
def ladder_captured(scr, root, loc, defender_first, nbr):
    """KataGo's ``searchIsLadderCaptured``: can the chain through ``loc`` (position in layer ``root``)
    be captured by continuous ataris? ``defender_first``: its owner moves first (the chain must have
    one liberty) and the root's ko point is lifted; otherwise the attacker starts (two liberties)."""
    sb, sm, mv, nmv, cur = scr.board, scr.meta, scr.cand, scr.ncand, scr.cur
    if sb[root, loc] == 0:
        return False
    libs = _libs(scr, root, loc)
    if libs > 2 or (defender_first and libs > 1):
        return False
    pla = sb[root, loc]
    opp = 3 - pla
    saved_ko = sm[root, K.M_KO]
    if defender_first:
        sm[root, K.M_KO] = -1
    limit = sb.shape[1] * 3 // 2 + 1  # KataGo's stack size (arrSize), counted from this search's root
    d = root
    cur[d] = -1
    ret = False
    while True:
        if d < root:
            sm[root, K.M_KO] = saved_ko
            return ret
        if d - root >= limit - 1:
            ret = True  # stack limit: KataGo counts it a failed ladder (captured)
            d -= 1
            continue
        is_def = ((d - root) % 2 == 0) == defender_first
        if cur[d] == -1:
            libs = _libs(scr, d, loc)
            if not is_def and libs <= 1:
                ret = True
                d -= 1
                continue
            if not is_def and libs >= 3:
                ret = False
                d -= 1
                continue
            if is_def and libs >= 2:
                ret = False
                d -= 1
                continue
            if is_def and sm[d, K.M_KO] >= 0:
                ret = False  # the attacker left a ko: ladders that need a ko do not count
                d -= 1
                continue
            buf = mv[d]
            if is_def:
                c = _find_capture_moves(scr, d, loc, buf, 0, nbr)
                c = _find_liberties(scr, d, loc, buf, 0, c, nbr)
                nmv[d] = c
            else:
                c = _find_liberties(scr, d, loc, buf, 0, 0, nbr)
                m0 = buf[0]
                m1 = buf[1]
                l0 = R.empty_neighbours(scr.board[d], nbr, m0)
                l1 = R.empty_neighbours(scr.board[d], nbr, m1)
                if (l0 == 0 and l1 == 0 and _would_be_ko_capture(scr, d, m0, opp, nbr)
                        and _would_be_ko_capture(scr, d, m1, opp, nbr)):
                    if (_libs_after_play(scr, d, m0, pla, 3, nbr) <= 2
                            and _libs_after_play(scr, d, m1, pla, 3, nbr) <= 2
                            and not _has_capture_moves(scr, d, loc, nbr)):
                        ret = True  # double-ko death
                        d -= 1
                        continue
                if not _adjacent(m0, m1, nbr):
                    if l0 >= 3 and l1 >= 3:
                        ret = False
                        d -= 1
                        continue
                    elif l0 >= 3:
                        c = 1
                    elif l1 >= 3:
                        buf[0] = m1
                        c = 1
                if c > 1:
                    h0 = l0 * 2 + _connection_libs_x2(scr, d, m0, pla, nbr)
                    h1 = l1 * 2 + _connection_libs_x2(scr, d, m1, pla, nbr)
                    if h1 > h0:
                        buf[0] = m1
                        buf[1] = m0
                nmv[d] = c
            cur[d] = 0
        else:
            if is_def and not ret:
                d -= 1
                continue
            if not is_def and ret:
                d -= 1
                continue
            cur[d] += 1
        if cur[d] >= nmv[d]:
            ret = is_def
            d -= 1
            continue
        move = mv[d, cur[d]]
        p = pla if is_def else opp
        if not _legal(scr, d, move, p, nbr):
            ret = is_def  # an illegal move counts as a failed one; try the next
            continue
        _play(scr, d, move, p, nbr)
        d += 1
        cur[d] = -1


@compiled
def ladder_working_moves(scr, loc, nbr, out):
    """KataGo's ``searchIsLadderCapturedAttackerFirst2Libs`` on layer 0: the attacker's atari moves
    (among the chain's two liberties) after which the chain is ladder-captured; returns their count."""
    sb = scr.board
    if sb[0, loc] == 0 or _libs(scr, 0, loc) != 2:
        return 0
    opp = 3 - sb[0, loc]
    libs = np.empty(4, dtype=np.int32)
    nl = _find_liberties(scr, 0, loc, libs, 0, 0, nbr)
    found = 0
    for i in range(nl):
        m = libs[i]
        if _legal(scr, 0, m, opp, nbr):
            _play(scr, 0, m, opp, nbr)
            if ladder_captured(scr, 1, loc, True, nbr):
                out[found] = m
                found += 1
    return found


@kernel
def _surely_escapes(scr, loc, libs, buf, nbr):
    """Exact shortcuts of the search: a chain in atari whose liberty has 3+ empty neighbours escapes by
    extending; a 2-liberty chain whose liberties are not adjacent and have 3+ empty neighbours each
    escapes whichever the attacker plays (KataGo's own early exit, taken before playing anything)."""
    k = _find_liberties(scr, 0, loc, buf, 0, 0, nbr)
    if libs == 1:
        return k == 1 and R.empty_neighbours(scr.board[0], nbr, buf[0]) >= 3
    return (k == 2 and not _adjacent(buf[0], buf[1], nbr) and R.empty_neighbours(scr.board[0], nbr, buf[0]) >= 3
            and R.empty_neighbours(scr.board[0], nbr, buf[1]) >= 3)


@compiled
def iter_ladders(scr, nbr, laddered, working):
    """KataGo's ``iterLadders`` on the position in layer 0: ``laddered[p] = 1`` for every stone of a chain
    with 1 liberty that cannot escape, or with 2 liberties that the attacker can ladder; ``working[c, p] = 1``
    where playing ``p`` ladders a 2-liberty chain of colour ``c`` (feature 17 uses the opponent's)."""
    sb, si = scr.board, scr.ints
    n = sb.shape[1]
    solved = np.full(n, -1, dtype=np.int8)  # per chain head: -1 unsolved, 0 / 1
    moves = np.empty(4, dtype=np.int32)
    for j in range(n):
        laddered[j] = 0
        working[0, j] = 0
        working[1, j] = 0
        working[2, j] = 0
    for p in range(n):
        c = sb[0, p]
        if c == 0:
            continue
        h = si[0, 0, p]
        libs = si[0, 2, h]
        if libs != 1 and libs != 2:
            continue
        if solved[h] < 0 and _surely_escapes(scr, p, libs, moves, nbr):
            solved[h] = 0
        if solved[h] < 0:
            if libs == 1:
                ok = ladder_captured(scr, 0, p, True, nbr)
            else:
                k = ladder_working_moves(scr, p, nbr, moves)
                ok = k > 0
                for i in range(k):
                    working[c, moves[i]] = 1
            solved[h] = 1 if ok else 0
        if solved[h] == 1:
            laddered[p] = 1
