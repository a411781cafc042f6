"""The AlphaGo policy-network encoder (Silver et al. 2016, Extended Data Table 2): 48 bit planes.

Every plane is from the point of view of the player to move (``color``):

* 0–2 stone colour: player / opponent / empty; 3 ones; 4 zeros;
* 5 sensibleness: legal and not filling one of the player's own eyes. An own eye is an empty
  point whose on-board neighbours are all the player's stones and whose on-board diagonals hold
  at most one opponent stone (centre) or none (edge and corner);
* 6–13 turns since: ``move_no - placed[p]`` = 1..7 on planes 6..12, ≥8 and setup stones on 13;
* 14–21 liberties of the string through each stone: 1..7, ≥8;
* 22–29 liberties after move: for each legal move, of the new stone's string once captures are
  resolved: 1..7, ≥8;
* 30–37 capture size: for each legal move, opponent stones captured: 0..6, ≥7;
* 38–45 self-atari size: for each legal move leaving the new string with one liberty, its size:
  1..7, ≥8;
* 46 ladder capture: a legal move that reduces an adjacent 2-liberty opponent string to one
  liberty and wins the ladder that follows;
* 47 ladder escape: a legal move at the liberty of a player string in atari after which that
  string has ≥3 liberties, or 2 and the opponent has no working ladder against it;
* 48 (option ``player_plane``): all ones when black is to move.

"Legal" always means empty, not ko-forbidden for the player and not suicide, whatever the game's
rules. The move planes are computed from the neighbouring strings without playing (union of the
empty neighbours, the merged strings' liberties and the freed points next to the new string); only
ladders are read by playing, on a scratch copy (:mod:`gotk.encoders.ladders`, which defines the
ladder semantics). Option ``ladders=False`` leaves planes 46–47 zero (benchmarks time the ladder
reading apart). ``encode_game`` is the generic compiled loop of :mod:`gotk.encoders.game_loop`.
"""

from __future__ import annotations

import numpy as np

from gotk.encoders import ladders as LD
from gotk.encoders.game_loop import FillEncoder
from gotk.game import kernels as K
from gotk.jit import compiled, inline_kernel, internal_kernel, kernel

NUM_PLANES = 48
P_PLAYER, P_OPPONENT, P_EMPTY, P_ONES, P_ZEROS, P_SENSIBLE = 0, 1, 2, 3, 4, 5
P_TURNS, P_LIBS, P_LIBS_AFTER, P_CAPTURE, P_SELF_ATARI = 6, 14, 22, 30, 38
P_LADDER_CAPTURE, P_LADDER_ESCAPE, P_PLAYER_COLOR = 46, 47, 48


def plane_names(player_plane: bool = False) -> list[str]:
    """Names of the 48 (or 49) planes in order."""
    names = ["stone_player", "stone_opponent", "stone_empty", "ones", "zeros", "sensibleness"]
    names += [f"turns_since_{k}" for k in range(1, 8)] + ["turns_since_8plus"]
    names += [f"liberties_{k}" for k in range(1, 8)] + ["liberties_8plus"]
    names += [f"liberties_after_{k}" for k in range(1, 8)] + ["liberties_after_8plus"]
    names += [f"capture_size_{k}" for k in range(0, 7)] + ["capture_size_7plus"]
    names += [f"self_atari_size_{k}" for k in range(1, 8)] + ["self_atari_size_8plus"]
    names += ["ladder_capture", "ladder_escape"]
    if player_plane:
        names.append("player_is_black")
    return names


@internal_kernel(always_inline=True)
def _add_head(heads, count, h):
    """Append string head ``h`` to ``heads[:count]`` unless it is there; returns the new count (a point's
    neighbour strings, at most four)."""
    for i in range(count):
        if heads[i] == h:
            return count
    heads[count] = h
    return count + 1


@kernel
def _is_own_eye(board, nbr, diag, p, color):
    """Every on-board neighbour is ``color``; ≤1 opponent diagonal in the centre, 0 on the edge."""
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


@internal_kernel(always_inline=True)
def _extension_libs(board, head, nxt, nbr, mark, meta, t, point, limit, hint):
    """Liberties (counted up to ``limit``) the 2-liberty string through ``t`` gets by extending at its
    other liberty once the opponent has played ``point`` (the first liberty), assuming that move
    captured nothing. Returns -1 if ``point`` is not one of its liberties.

    ``hint[head]``: a guess at the other liberty, any value (the last ``point`` asked for this head, so
    that the string's second liberty finds the first without a walk); it is used only if it is an empty
    point other than ``point`` next to a stone of the string, which for a string of two liberties makes it
    the other one. ``hint[head]`` is set to ``point``."""
    ht = head[t]
    dcol = board[t]
    other = -1
    g = hint[ht]
    hint[ht] = point
    if g != point and 0 <= g < board.shape[0] and board[g] == 0:
        for k in range(4):
            q = nbr[g, k]
            if q < 0:
                break
            if board[q] == dcol and head[q] == ht:
                other = g
                break
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
    s = K.next_stamp(mark, meta)
    mark[point] = s
    mark[other] = s
    cnt = 0
    for k in range(4):
        q = nbr[other, k]
        if q < 0:
            break
        if board[q] == 0:
            if mark[q] != s:
                mark[q] = s
                cnt += 1
        elif board[q] == dcol and head[q] != ht:
            h = head[q]
            y = h
            while cnt < limit:
                for j in range(4):
                    r = nbr[y, j]
                    if r < 0:
                        break
                    if board[r] == 0 and mark[r] != s:
                        mark[r] = s
                        cnt += 1
                y = nxt[y]
                if y == h:
                    break
        if cnt >= limit:
            break
    return cnt


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
        no = np.int64(0)
        atari_friend = False
        for k in range(4):
            q = nbr[p, k]
            if q < 0:
                break
            w = board[q]
            if w == 0:
                continue
            h = head[q]
            if w == color:
                atari_friend = atari_friend or libs[h] == 1
            elif libs[h] == 2:
                no = _add_head(oh, no, h)
        for i in range(no):
            # skip ataris the defender escapes at once by extending to ≥3 liberties
            if nc == 0 and _extension_libs(board, head, nxt, nbr, mark, meta, oh[i], p, 3, hint) >= 3:
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
        nf = np.int64(0)  # typed: a literal 0 would compile _add_head once more
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
                if _add_head(fh, nf, h) > nf:
                    nf += 1
                    weak = weak or libs[h] == 1
                    big_friend = big_friend or libs[h] >= 9
            elif libs[h] == 1:
                nc = _add_head(ch, nc, h)
            elif libs[h] == 2:
                weak = True
        legal = ne > 0 or nc > 0
        if not legal:
            for i in range(nf):
                if libs[fh[i]] > 1:
                    legal = True
        if not legal:
            continue
        if not _is_own_eye(board, nbr, diag, p, color):
            out[P_SENSIBLE, p] = 1
        captured = 0
        for i in range(nc):
            captured += ssize[ch[i]]
        out[P_CAPTURE + min(captured, 7), p] = 1
        # liberties of the new string, counted up to 8: empty neighbours, freed points of captured
        # strings next to the new string, liberties of merged friendly strings
        if big_friend:
            nl = 8
        else:
            s = K.next_stamp(mark, meta)
            mark[p] = s
            nl = 0
            for k in range(4):
                q = nbr[p, k]
                if q < 0:
                    break
                if board[q] == 0:
                    mark[q] = s
                    nl += 1
            for i in range(nc):
                h = ch[i]
                x = h
                while True:
                    adj = False
                    for k in range(4):
                        r = nbr[x, k]
                        if r < 0:
                            break
                        if r == p:
                            adj = True
                        elif board[r] == color:
                            hr = head[r]
                            for j in range(nf):
                                if fh[j] == hr:
                                    adj = True
                        if adj:
                            break
                    if adj:
                        nl += 1
                    x = nxt[x]
                    if x == h:
                        break
            for i in range(nf):
                if nl >= 8:
                    break
                h = fh[i]
                x = h
                while nl < 8:
                    for k in range(4):
                        q = nbr[x, k]
                        if q < 0:
                            break
                        if board[q] == 0 and mark[q] != s:
                            mark[q] = s
                            nl += 1
                    x = nxt[x]
                    if x == h:
                        break
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


@compiled
def fill_planes(out, e, color, ladders):
    """Write every plane into zeroed ``out`` (C, N); ladder planes (46–47) only with ``ladders``.

    One pass over the points computes the local planes and collects the few moves that need ladder
    reading (:func:`local_planes`); a second step reads every one of those ladders on a scratch
    copy. This is the uncached reference of :mod:`gotk.encoders.ladder_cache`.
    """
    n = e.board.shape[0]
    # (move, target) pairs to read as ladder captures, moves to read as ladder escapes
    cap_move, cap_target, esc_move = make_lists(n)
    ncap, nesc = local_planes(out, e, color, ladders, cap_move, cap_target, esc_move)
    if ncap + nesc > 0:
        scr = LD.make_scratch(e, LD.max_plies(n))
        LD.load_position(scr, e)
        for i in range(ncap):
            p = cap_move[i]
            if out[P_LADDER_CAPTURE, p] == 0 and LD.ladder_capture(scr, p, color, cap_target[i]):
                out[P_LADDER_CAPTURE, p] = 1
        for i in range(nesc):
            p = esc_move[i]
            if LD.ladder_escape(scr, p, color):
                out[P_LADDER_ESCAPE, p] = 1


@compiled
def alphago_fill(out, e, color):
    """Fill zeroed ``out`` (48 or 49, N) for ``color`` to move; plane 48 if ``out`` has 49 rows."""
    fill_planes(out, e, color, True)


@compiled
def alphago_fill_noladders(out, e, color):
    """:func:`alphago_fill` with planes 46–47 left zero."""
    fill_planes(out, e, color, False)


@inline_kernel
def fill_noladders_lists(out, e, color, lists):
    """:func:`alphago_fill_noladders` with the move lists made once per game (``lists`` from
    :func:`new_lists`, the game loop's per-game state), so that the loop allocates nothing per position."""
    local_planes(out, e, color, False, lists[0], lists[1], lists[2])


class AlphaGoEncoder(FillEncoder):
    """48 AlphaGo planes (49 with ``player_plane``); ``ladders=False`` skips ladder reading.

    ``encode_game`` reads ladders through the cache of :mod:`gotk.encoders.ladder_cache` (one per
    thread, same planes); ``cache_ladders=False`` (not an option of the format) reads every ladder afresh.
    """

    name = "alphago"
    version = 1
    dtype = "bit"
    compile_ahead = True  # its own kernels are most of a first run's compile

    def __init__(self, board_size: int = 19, player_plane: bool = False, ladders: bool = True, *,
                 cache_ladders: bool = True) -> None:
        super().__init__(board_size, player_plane=bool(player_plane), ladders=bool(ladders))
        self.player_plane = bool(player_plane)
        self.ladders = bool(ladders)
        self.names = tuple(plane_names(self.player_plane))
        self.fill = alphago_fill if self.ladders else alphago_fill_noladders
        if self.ladders and cache_ladders:
            from gotk.encoders import ladder_cache as LC

            self.game_fill = LC.fill_cached
            self.state_maker = LC.game_cache
        elif not self.ladders:
            self.game_fill = fill_noladders_lists
            self.state_maker = new_lists
