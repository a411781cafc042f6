"""The AlphaGo encoder's planes that need no ladder reading, and the ladder moves to read (compiled).

:func:`local_planes` writes every plane of :mod:`gotk.encoders.alphago` but 46–47 and collects the moves whose
ladders must be read; the encoder's uncached fill (:func:`gotk.encoders.alphago.fill_planes`) and the ladder
cache (:mod:`gotk.encoders.ladder_cache`) both start from it, so it lives apart from both. The plane layout
and the meaning of every plane are in :mod:`gotk.encoders.alphago`; the liberty and eye rules are
:mod:`gotk.game.rules`'.
"""

from __future__ import annotations

import numpy as np

from gotk.game import kernels as K
from gotk.game import rules as R
from gotk.jit import compiled, internal_kernel

NUM_PLANES = 48
P_PLAYER, P_OPPONENT, P_EMPTY, P_ONES, P_ZEROS, P_SENSIBLE = 0, 1, 2, 3, 4, 5
P_TURNS, P_LIBS, P_LIBS_AFTER, P_CAPTURE, P_SELF_ATARI = 6, 14, 22, 30, 38
P_LADDER_CAPTURE, P_LADDER_ESCAPE, P_PLAYER_COLOR = 46, 47, 48


@internal_kernel(always_inline=True)
def _extension_libs(board, head, nxt, libs, nbr, mark, meta, t, point, limit, hint):
    """Liberties (counted up to ``limit``) the 2-liberty string through ``t`` gets by extending at its
    other liberty once the opponent has played ``point`` (the first liberty), asked where that move
    captures nothing (:func:`gotk.game.rules.extension_liberties`). Returns -1 if ``point`` is not one of its
    liberties.

    ``hint[head]``: a guess at the other liberty, any value (the last ``point`` asked for this head, so
    that the string's second liberty finds the first without a walk); it is used only if it is an empty
    point other than ``point`` next to a stone of the string, which for a string of two liberties makes it
    the other one. ``hint[head]`` is set to ``point``."""
    ht = head[t]
    other = -1
    g = hint[ht]
    hint[ht] = point
    if g != point and 0 <= g < board.shape[0] and board[g] == 0 and R.touches_string(board, head, nbr, g, ht):
        other = g
    x = ht
    while other < 0:
        for k in range(4):
            q = nbr[x, k]
            if q < 0:
                break
            if board[q] == 0 and q != point:
                other = q
                break
        x = nxt[x]
        if x == ht:
            break
    if other < 0:
        return -1
    return R.extension_liberties(board, head, nxt, libs, nbr, mark, meta, np.int64(t), np.int64(point),
                                 np.int64(other), limit)


@internal_kernel(always_inline=True)
def _ladder_moves(out, board, head, nxt, libs, nbr, mark, meta, color, cap_move, cap_target, esc_move, nnoted):
    """:func:`local_planes`'s second pass over the ``nnoted`` points it noted: the ladder moves to read, and
    the escapes that need no reading (plane 47). Apart from the first pass, so that its loop keeps the
    registers it has without ladders; inlined after it (a call passed every field of thirteen arguments)."""
    n = board.shape[0]
    oh = cap_target[4 * n + 8:4 * n + 12]  # heads of a point's opponent neighbours with 2 liberties
    hint = cap_target[4 * n + 12:5 * n + 12]  # per head: a guess at its other liberty (_extension_libs)
    noted = cap_target[5 * n + 12:6 * n + 12]
    ncap = 0
    nesc = 0
    for j in range(nnoted):
        p = noted[j] & 0xFFFF
        nl = (noted[j] >> 16) & 0xF
        nc = noted[j] >> 20
        # an own string in atari next to p (oh as scratch), then the opponent's 2-liberty strings next to it
        atari_friend = R.with_liberties(libs, oh, R.neighbour_strings(board, head, nbr, p, color, oh), 1) > 0
        no = R.with_liberties(libs, oh, R.neighbour_strings(board, head, nbr, p, 3 - color, oh), 2)
        for i in range(no):
            # skip ataris the defender escapes at once by extending to ≥3 liberties
            if nc == 0 and _extension_libs(board, head, nxt, libs, nbr, mark, meta, oh[i], p, np.int64(3), hint) >= 3:
                continue
            cap_move[ncap] = p
            cap_target[ncap] = oh[i]
            ncap += 1
        if atari_friend:
            if nl >= 3:
                out[P_LADDER_ESCAPE, p] = 1
            elif nl == 2:
                esc_move[nesc] = p
                nesc += 1
    return ncap, nesc


@internal_kernel
def local_planes(out, e, color, ladders, cap_move, cap_target, esc_move):
    """Write every plane but the ladder reads into zeroed ``out`` (C, N); with ``ladders`` collect the
    moves that need reading: ``(move, target)`` pairs in ``cap_move``/``cap_target`` (room for
    ``4 * N``; ``cap_target`` has ``2 N + 12`` more entries, this function's scratch) and escape moves in
    ``esc_move`` (room for ``N``), both in point order. Returns ``(ncap, nesc)``. Every collected move is
    legal for ``color`` (so never the ko point). Allocates nothing (a :func:`~gotk.jit.kernel`).

    The pass over the points only notes the few legal points next to a string that ladders concern (an
    opponent string with two liberties, an own string in atari); a second pass collects their moves. Kept
    in the first pass, that work made the hot loop spill registers."""
    board, head, nxt, libs, ssize, placed = e.board, e.head, e.nxt, e.libs, e.ssize, e.placed
    mark, meta, nbr, diag = e.mark, e.meta, e.nbr, e.diag
    n = board.shape[0]
    move_no = meta[K.M_MOVE_NO]
    ko = meta[K.M_KO] if meta[K.M_KO_COLOR] == color else -1
    fh = cap_target[4 * n:4 * n + 4]  # heads of one point's friendly neighbour strings
    ch = cap_target[4 * n + 4:4 * n + 8]  # ... of its opponent neighbours in atari
    noted = cap_target[5 * n + 12:6 * n + 12]  # points for the second pass: p | nl << 16 | nc << 20
    nnoted = np.int64(0)  # typed: a literal 0 (what ladders=False leaves it) compiled _ladder_moves once more
    for p in range(n):
        out[P_ONES, p] = 1
        v = board[p]
        if v != 0:
            out[P_PLAYER if v == color else P_OPPONENT, p] = 1
            age = move_no - placed[p] if placed[p] >= 0 else 8
            out[P_TURNS + (min(age, 8) - 1 if age >= 1 else 7), p] = 1
            out[P_LIBS + min(libs[head[p]], 8) - 1, p] = 1
            continue
        out[P_EMPTY, p] = 1
        if p == ko:
            continue
        # neighbour strings: friendly heads, captured opponent heads, 2-liberty opponent heads
        nf = np.int64(0)  # typed: a literal 0 would compile R.add_head once more
        nc = np.int64(0)
        ne = 0
        weak = False  # an own string in atari or an opponent string with 2 liberties next to p
        big_friend = False
        for k in range(4):
            q = nbr[p, k]
            if q < 0:
                break
            w = board[q]
            if w == 0:
                ne += 1
                continue
            h = head[q]
            if w == color:
                if R.add_head(fh, nf, h) > nf:
                    nf += 1
                    weak = weak or libs[h] == 1
                    big_friend = big_friend or libs[h] >= 9
            elif libs[h] == 1:
                nc = R.add_head(ch, nc, h)
            elif libs[h] == 2:
                weak = True
        legal = ne > 0 or nc > 0
        if not legal:
            for i in range(nf):
                if libs[fh[i]] > 1:
                    legal = True
        if not legal:
            continue
        if not R.is_own_eye(board, nbr, diag, p, color):
            out[P_SENSIBLE, p] = 1
        captured = 0
        for i in range(nc):
            captured += ssize[ch[i]]
        out[P_CAPTURE + min(captured, 7), p] = 1
        # liberties of the new string, counted up to 8
        if big_friend:
            nl = 8
        else:
            nl = R.liberties_after_heads(board, head, nxt, nbr, mark, meta, p, color, fh, nf, ch, nc, np.int64(8))
        out[P_LIBS_AFTER + min(nl, 8) - 1, p] = 1
        if nl == 1:
            size = 1
            for i in range(nf):
                size += ssize[fh[i]]
            out[P_SELF_ATARI + min(size, 8) - 1, p] = 1
        if ladders and weak:
            noted[nnoted] = p | min(nl, 8) << 16 | nc << 20
            nnoted += 1
    if out.shape[0] > P_PLAYER_COLOR and color == K.BLACK:
        out[P_PLAYER_COLOR, :] = 1
    if not ladders:
        return 0, 0
    return _ladder_moves(out, board, head, nxt, libs, nbr, mark, meta, color, cap_move, cap_target, esc_move,
                         nnoted)


def new_lists(n):
    """:func:`local_planes`'s move lists ``(cap_move, cap_target, esc_move)`` for a board of ``n`` points.
    Plain Python (numpy: nothing to compile, for the game loop's per-game state); compiled code calls
    :func:`make_lists`, the same function compiled."""
    return np.empty(4 * n, dtype=np.int32), np.empty(6 * n + 12, dtype=np.int32), np.empty(n, dtype=np.int32)


make_lists = compiled(new_lists)
