"""The rules' small questions about a position, compiled, one home each: the liberties a move would give its
string, the liberties a 2-liberty string keeps by extending, own eyes, empty neighbours.

Modelled on KataGo's ``cpp/game/board.cpp`` (``getNumLibertiesAfterPlay``, ``getNumImmediateLiberties``,
``isSimpleEye``) and read on the engine's arrays (:mod:`gotk.game.kernels`): the alphago encoder's move planes
and ladder filters, the ladder reader, KataGo's ladder features and the players' sensible moves all ask these,
and all ask them here. Each rule takes only the arrays it reads (a compiled call passes every field of every
array it is given); :func:`liberties_after_play` also has a form over a whole :class:`~gotk.game.kernels.Engine`.

Counted liberties are distinct points, deduplicated with the position's ``mark`` array and a fresh stamp
(:func:`gotk.game.kernels.next_stamp`); nothing is played and no other array is written.
"""

from __future__ import annotations

from gotk.game.kernels import next_stamp
from gotk.jit import inline_kernel, internal_kernel, kernel


@internal_kernel
def empty_neighbours(board, nbr, p):
    """How many on-board neighbours of ``p`` are empty (KataGo's ``getNumImmediateLiberties``)."""
    c = 0
    for k in range(4):
        q = nbr[p, k]
        if q < 0:
            break
        if board[q] == 0:
            c += 1
    return c


@kernel
def is_own_eye(board, nbr, diag, p, color):
    """True if the point ``p`` is one of ``color``'s own eyes: every on-board neighbour is ``color``'s and the
    on-board diagonals hold at most one opponent stone in the centre, none on the edge or in a corner (the
    alphago encoder's sensibleness plane; ``p`` itself is not looked at, callers ask for empty points)."""
    nn = 0
    for k in range(4):
        q = nbr[p, k]
        if q < 0:
            break
        if board[q] != color:
            return False
        nn += 1
    bad = 0
    opp = 3 - color
    for k in range(4):
        q = diag[p, k]
        if q < 0:
            break
        if board[q] == opp:
            bad += 1
    return bad == 0 if nn < 4 else bad <= 1


@inline_kernel
def liberties_after(board, head, nxt, libs, nbr, mark, meta, point, color, cap):
    """The liberties, counted up to ``cap``, of the string a ``color`` stone on the empty ``point`` would belong
    to once its captures are resolved (KataGo's ``getNumLibertiesAfterPlay``): its empty neighbours, the
    liberties of the strings it joins (``point`` aside), and every stone of a captured opponent string (one in
    atari next to ``point``) that touches the new string. Returns ``min(count, cap)``; the move's legality is
    not checked. Strings with more than ``cap`` liberties decide at once, without a walk.

    Inlined into its callers (numba's ``inline="always"``): the alphago encoder asks it at every legal point
    of every position, and a call, which passes every field of its seven arrays, cost as much as the count."""
    opp = 3 - color
    s = next_stamp(mark, meta)
    mark[point] = s
    cnt = 0
    c0 = -1  # heads of the captured strings (at most four)
    c1 = -1
    c2 = -1
    c3 = -1
    f0 = -1  # heads of the joined strings (at most four)
    f1 = -1
    f2 = -1
    f3 = -1
    for k in range(4):
        q = nbr[point, k]
        if q < 0:
            break
        v = board[q]
        if v == 0:
            mark[q] = s
            cnt += 1
        elif v == color:
            h = head[q]
            if libs[h] > cap:
                return cap
            if f0 < 0:
                f0 = h
            elif f1 < 0:
                f1 = h
            elif f2 < 0:
                f2 = h
            else:
                f3 = h
        else:
            h = head[q]
            if libs[h] == 1:
                mark[q] = s
                cnt += 1
                if c0 < 0:
                    c0 = h
                elif c1 < 0:
                    c1 = h
                elif c2 < 0:
                    c2 = h
                else:
                    c3 = h
    if f0 < 0 or cnt >= cap:
        return min(cnt, cap)
    for i in range(4):
        h = f0 if i == 0 else f1 if i == 1 else f2 if i == 2 else f3
        if h < 0:
            break
        if (i > 0 and h == f0) or (i > 1 and h == f1) or (i > 2 and h == f2):
            continue  # a string met on two sides of the point: walked once
        x = h
        while True:
            for j in range(4):
                r = nbr[x, j]
                if r < 0:
                    break
                if mark[r] == s:
                    continue
                w = board[r]
                if w == 0:
                    mark[r] = s
                    cnt += 1
                elif w == opp:
                    hr = head[r]
                    if hr == c0 or hr == c1 or hr == c2 or hr == c3:
                        mark[r] = s
                        cnt += 1
            if cnt >= cap:
                return cap
            x = nxt[x]
            if x == h:
                break
    return cnt


@inline_kernel
def liberties_after_play(e, point, color, cap):
    """:func:`liberties_after` on the position of the :class:`~gotk.game.kernels.Engine` ``e``."""
    return liberties_after(e.board, e.head, e.nxt, e.libs, e.nbr, e.mark, e.meta, point, color, cap)


@internal_kernel
def extension_liberties(board, head, nxt, libs, nbr, mark, meta, t, x, y, cap):
    """The liberties, counted up to ``cap``, the string through ``t`` keeps when the opponent plays ``x`` and
    it extends at ``y`` (``x`` and ``y`` its only liberties): 0 if ``x`` would capture a string of ``t``'s
    colour (then the board changes and only playing tells); else the empty neighbours of ``y`` and the
    liberties of the other strings ``y`` joins, ``x`` and ``y`` aside, not counting what ``y`` would capture
    (a lower bound then: a count of at least ``cap`` means the extension has that many, exactly). The ladder
    filters of the alphago encoder and the ladder reader: an atari answered this way reaches no ladder."""
    dcol = board[t]
    for k in range(4):
        q = nbr[x, k]
        if q < 0:
            break
        if board[q] == dcol and libs[head[q]] == 1:
            return 0
    st = next_stamp(mark, meta)
    mark[x] = st
    mark[y] = st
    ht = head[t]
    cnt = 0
    for k in range(4):
        q = nbr[y, k]
        if q < 0:
            break
        v = board[q]
        if v == 0:
            if mark[q] != st:
                mark[q] = st
                cnt += 1
        elif v == dcol and head[q] != ht:
            h = head[q]
            z = h
            while cnt < cap:
                for j in range(4):
                    r = nbr[z, j]
                    if r < 0:
                        break
                    if board[r] == 0 and mark[r] != st:
                        mark[r] = st
                        cnt += 1
                z = nxt[z]
                if z == h:
                    break
        if cnt >= cap:
            break
    return cnt


__all__ = ["empty_neighbours", "extension_liberties", "is_own_eye", "liberties_after", "liberties_after_play"]
