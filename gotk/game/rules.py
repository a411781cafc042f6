"""The rules' small questions about a position, compiled, one home each: the liberties a move would give its
string, the liberties a 2-liberty string keeps by extending, own eyes, empty neighbours, the strings next to a
point (and those a move captures), whether a point touches a string, a string's hash key. The questions over a
whole :class:`~gotk.game.state.GameState` that players and the search ask (the sensible moves, whether a pass
wins) are :mod:`gotk.game.moves`, built on these.

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


@inline_kernel
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


@internal_kernel(always_inline=True)
def add_head(heads, count, h):
    """Append string head ``h`` to ``heads[:count]`` unless it is there; returns the new count (a point's
    neighbour strings: at most four)."""
    for i in range(count):
        if heads[i] == h:
            return count
    heads[count] = h
    return count + 1


@inline_kernel
def neighbour_strings(board, head, nbr, p, color, out):
    """The distinct heads of ``color``'s strings next to ``p``, in neighbour order, into ``out`` (4 long at
    least); returns how many."""
    n = 0
    for k in range(4):
        q = nbr[p, k]
        if q < 0:
            break
        if board[q] == color:
            n = add_head(out, n, head[q])
    return n


@inline_kernel
def with_liberties(libs, heads, count, nlibs):
    """Keep of ``heads[:count]`` those whose string has exactly ``nlibs`` liberties (in order, in place);
    returns how many: with :func:`neighbour_strings`, the strings a move captures (``nlibs`` 1)."""
    m = 0
    for i in range(count):
        if libs[heads[i]] == nlibs:
            heads[m] = heads[i]
            m += 1
    return m


@inline_kernel
def touches_string(board, head, nbr, p, h):
    """True if a neighbour of ``p`` is a stone of the string with head ``h``."""
    c = board[h]
    for k in range(4):
        q = nbr[p, k]
        if q < 0:
            break
        if board[q] == c and head[q] == h:
            return True
    return False


@inline_kernel
def string_key(zob, nxt, color, h):
    """The xor of the Zobrist keys ``zob[color]`` of the stones of the string with head ``h``: what its removal
    (or placing) does to the position's hash."""
    key = zob[0, h]  # row 0 holds zeros: a 0 of the keys' type
    x = h
    while True:
        key ^= zob[color, x]
        x = nxt[x]
        if x == h:
            return key


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
def liberties_after_heads(board, head, nxt, nbr, mark, meta, point, color, friends, nf, captured, nc, cap):
    """The liberties, counted up to ``cap``, of the string a ``color`` stone on the empty ``point`` would belong
    to once its captures are resolved (KataGo's ``getNumLibertiesAfterPlay``), given the distinct heads of the
    strings it joins (``friends[:nf]``) and of the opponent strings it captures (``captured[:nc]``, those in
    atari next to it): its empty neighbours, every stone of a captured string that touches the new string
    (``point`` or a joined string), and the liberties of the joined strings (``point`` aside). Returns
    ``min(count, cap)``; the move's legality is not checked.

    For a caller that has gathered the heads already (the alphago encoder, at every legal point of every
    position); :func:`liberties_after` gathers them. Inlined into its callers (numba's ``inline="always"``):
    a call, which passes every field of its arrays, cost as much as the count."""
    s = next_stamp(mark, meta)
    mark[point] = s
    cnt = 0
    for k in range(4):
        q = nbr[point, k]
        if q < 0:
            break
        if board[q] == 0:
            mark[q] = s
            cnt += 1
    for i in range(nc):
        h = captured[i]
        x = h
        while True:
            adj = False
            for k in range(4):
                r = nbr[x, k]
                if r < 0:
                    break
                if r == point:
                    adj = True
                elif board[r] == color:
                    hr = head[r]
                    for j in range(nf):
                        if friends[j] == hr:
                            adj = True
                if adj:
                    break
            if adj:
                cnt += 1
            x = nxt[x]
            if x == h:
                break
    for i in range(nf):
        if cnt >= cap:
            break
        h = friends[i]
        x = h
        while cnt < cap:
            for k in range(4):
                q = nbr[x, k]
                if q < 0:
                    break
                if board[q] == 0 and mark[q] != s:
                    mark[q] = s
                    cnt += 1
            x = nxt[x]
            if x == h:
                break
    return min(cnt, cap)


@inline_kernel
def liberties_after(board, head, nxt, libs, nbr, mark, meta, point, color, cap, heads):
    """:func:`liberties_after_heads`, gathering the heads itself into ``heads`` (int32 scratch of 8: the joined
    strings', then the captured ones'). A joined string with more than ``cap`` liberties decides at once."""
    friends = heads[:4]
    captured = heads[4:]
    nf = neighbour_strings(board, head, nbr, point, color, friends)
    for i in range(nf):
        if libs[friends[i]] > cap:
            return cap
    nc = with_liberties(libs, captured, neighbour_strings(board, head, nbr, point, 3 - color, captured), 1)
    return liberties_after_heads(board, head, nxt, nbr, mark, meta, point, color, friends, nf, captured, nc, cap)


@inline_kernel
def liberties_after_play(e, point, color, cap, heads):
    """:func:`liberties_after` on the position of the :class:`~gotk.game.kernels.Engine` ``e``."""
    return liberties_after(e.board, e.head, e.nxt, e.libs, e.nbr, e.mark, e.meta, point, color, cap, heads)


@inline_kernel
def extension_liberties(board, head, nxt, libs, nbr, mark, meta, t, x, y, cap):
    """The liberties, counted up to ``cap``, the string through ``t`` keeps when the opponent plays ``x`` and
    it extends at ``y`` (``x`` and ``y`` its only liberties): 0 if ``x`` would capture a string of ``t``'s
    colour (then the board changes and only playing tells); else the empty neighbours of ``y`` and the
    liberties of the other strings ``y`` joins, ``x`` and ``y`` aside, not counting what ``y`` would capture
    (a lower bound then: a count of at least ``cap`` means the extension has that many, exactly). The ladder
    filters of the alphago encoder and the ladder reader: an atari answered this way reaches no ladder. Inlined
    into its callers (numba's ``inline="always"``), as :func:`liberties_after_heads`."""
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


@kernel
def clear_own_eyes(board, nbr, diag, color, mask):
    """Zero ``mask[p]`` at every empty point ``p`` that is one of ``color``'s own eyes."""
    for p in range(board.shape[0]):
        if mask[p] != 0 and board[p] == 0 and is_own_eye(board, nbr, diag, p, color):
            mask[p] = 0


__all__ = ["add_head", "clear_own_eyes", "empty_neighbours", "extension_liberties", "is_own_eye", "liberties_after",
           "liberties_after_heads", "liberties_after_play", "neighbour_strings", "string_key", "touches_string",
           "with_liberties"]
