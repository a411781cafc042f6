"""Random playouts on the compiled engine: a position played to its end by a rollout policy, many a call, no Python
per move.

A playout copies the position into a scratch :class:`~gotk.game.kernels.Engine` and plays on it with the one rule
of a move (:func:`gotk.game.kernels.play`): the player to move picks uniformly among the empty points that are
legal for it (:func:`~gotk.game.kernels.check_move`: occupied, ko and, unless the rules allow it, suicide
refused) and fill none of its own eyes (:func:`gotk.game.rules.is_own_eye`), and passes when none is left (the
book's random bot, and the rollouts of the Monte Carlo engines before AlphaGo). Two passes in a row, or
``max_moves`` moves, end it. Its result is the area count with every stone alive
(:func:`gotk.game.scoring.area_into`): by then no stone is left in atari that the other side could take without
filling an eye, so the stones on the board are alive and every empty point is an eye. The score is Black's area
minus White's minus komi.

The empty points are kept in a list; a pick swaps rejected points to its end, so a move costs a few checks, and the
list is rebuilt only after a capture. Randomness is numba's generator (one per thread), seeded at each call: a seed
gives the same playouts. A call releases the GIL, so threads with a :class:`Playouts` each run on several cores.
"""

from __future__ import annotations

import numpy as np

from gotk.game import kernels as K
from gotk.game import patterns as PT
from gotk.game.rules import is_own_eye
from gotk.game.scoring import area_into
from gotk.game.state import GameState, new_engine, position_arrays
from gotk.jit import internal_kernel, kernel, nogil_kernel


@internal_kernel(always_inline=True)
def _copy(src, dst):
    for i in range(src.shape[0]):
        dst[i] = src[i]


@kernel
def _copy_position(src, dst):
    _copy(src.board, dst.board)
    _copy(src.head, dst.head)
    _copy(src.nxt, dst.nxt)
    _copy(src.libs, dst.libs)
    _copy(src.ssize, dst.ssize)
    _copy(src.placed, dst.placed)
    _copy(src.meta, dst.meta)
    _copy(src.hashv, dst.hashv)


@kernel
def _empties(board, out):
    n = 0
    for p in range(board.shape[0]):
        if board[p] == 0:
            out[n] = p
            n += 1
    return n


@kernel
def playout(root, w, allow_suicide, max_moves, empt, owner, seen, stack, region):
    """One uniform playout from ``root`` on the scratch engine ``w`` (``root`` is left as it is); returns the
    moves played and writes the final position's area ownership into ``owner``; the count is
    ``owner.sum()``. ``empt``, ``seen``, ``stack``, ``region``: scratch of the board's size."""
    _copy_position(root, w)
    board, meta, nbr, diag = w.board, w.meta, w.nbr, w.diag
    npts = board.shape[0]
    n = _empties(board, empt)
    moves = 0
    while moves < max_moves and meta[K.M_PASSES] < 2:
        color = meta[K.M_TO_PLAY]
        k = n
        chosen = -1
        at = -1
        while k > 0:
            i = np.random.randint(0, k)
            p = empt[i]
            if K.check_move(w, p, color, allow_suicide) == K.OK and not is_own_eye(board, nbr, diag, p, color):
                chosen = p
                at = i
                break
            k -= 1
            empt[i] = empt[k]
            empt[k] = p
        if chosen < 0:
            K.play(w, npts, color, allow_suicide)
        else:
            taken = meta[K.M_CAPT_B] + meta[K.M_CAPT_W]
            K.play(w, chosen, color, allow_suicide)
            if meta[K.M_CAPT_B] + meta[K.M_CAPT_W] != taken or board[chosen] == 0:
                n = _empties(board, empt)  # a capture (or a suicide) emptied points
            else:
                n -= 1
                empt[at] = empt[n]
        moves += 1
    area_into(board, nbr, owner, seen, stack, region)
    return moves


@internal_kernel
def _refresh(w, EW, canon_pat, size, p, sw):
    """The static weights of ``p`` for both players (:func:`policy_playout`; ``EW``: the exponentiated weights)."""
    if w.board[p] != 0:
        sw[0, p] = 0.0
        sw[1, p] = 0.0
        return
    line = EW[PT.OFF_LINE + PT.line_of(p, size)]
    kb, kw = PT.pattern_keys(w.board, w.head, w.libs, size, p)
    sw[0, p] = 0.0 if not PT.pattern_legal(kb) or PT.own_eye_pattern(kb) else EW[PT.OFF_PAT + canon_pat[kb]] * line
    sw[1, p] = 0.0 if not PT.pattern_legal(kw) or PT.own_eye_pattern(kw) else EW[PT.OFF_PAT + canon_pat[kw]] * line


@internal_kernel
def _touch(w, W, canon_pat, size, q, sw, mark, stamp):
    """After a move on ``q``, or a capture of the stone on it: refresh its 3×3 and the liberties of the strings on
    and next to it (their liberty counts changed, and the patterns of their liberties with them). ``stamp``: one
    for every call after a move (each point refreshed once)."""
    board, head, nxt, nbr = w.board, w.head, w.nxt, w.nbr
    r0 = q // size
    c0 = q - r0 * size
    for dr in range(-1, 2):
        for dc in range(-1, 2):
            r = r0 + dr
            c = c0 + dc
            if 0 <= r < size and 0 <= c < size:
                p = r * size + c
                if mark[p] != stamp:
                    mark[p] = stamp
                    _refresh(w, W, canon_pat, size, p, sw)
    for j in range(5):
        x0 = q if j == 0 else nbr[q, j - 1]
        if j > 0 and x0 < 0:
            break
        if board[x0] == 0:
            continue
        h = head[x0]
        if mark[h] == -stamp:  # this string was walked already
            continue
        mark[h] = -stamp
        x = h
        while True:
            for k in range(4):
                y = nbr[x, k]
                if y < 0:
                    break
                if board[y] == 0 and mark[y] != stamp:
                    mark[y] = stamp
                    _refresh(w, W, canon_pat, size, y, sw)
            x = nxt[x]
            if x == h:
                break


@kernel
def policy_playout(root, w, allow_suicide, max_moves, last2, W, canon_pat, canon_resp, sw, mark, lp, lf, seen,
                   lw, capt, owner, visited, stack, region, full):
    """One playout from ``root`` (left as it is) by the rollout policy whose weights exponentiated are ``W``
    (:mod:`gotk.game.patterns`: a move's probability is the product of its features' entries): each move drawn
    from the policy's softmax over the legal moves that fill no own eye, the player passing when none is left.
    ``last2``: the move before the root's last (-1 none). Returns the moves played; the final area ownership into
    ``owner`` as :func:`playout`. Scratch: ``sw`` (2, points) float64, ``mark`` (points) int64, ``lp``/``lf``
    (:data:`~gotk.game.patterns.MAX_LOCAL`) int64, ``seen`` (5) int64, ``lw`` (points) float64, ``capt`` (points)
    int64.

    The pattern and line part of every point's weight is kept per point and player (``sw``) and refreshed where a
    move changed it (:func:`_touch`: around the move and the stones it took; ``full``: every point after every
    move instead, the reference the tests hold the updates to); the features of the last two moves are added
    for the points near them at each move."""
    _copy_position(root, w)
    board, meta = w.board, w.meta
    npts = board.shape[0]
    size = 1
    while size * size < npts:
        size += 1
    for p in range(npts):
        mark[p] = 0
        _refresh(w, W, canon_pat, size, p, sw)
    stamp = 1
    prev = last2
    moves = 0
    while moves < max_moves and meta[K.M_PASSES] < 2:
        color = meta[K.M_TO_PLAY]
        ci = color - 1
        last = meta[K.M_LAST]
        ko = meta[K.M_KO] if meta[K.M_KO_COLOR] == color else -1
        stamp += 1
        m = PT.local_features(board, w.head, w.nxt, w.libs, w.ssize, w.nbr, canon_resp, size, color, last, prev,
                              lp, lf, seen)
        total = 0.0
        for p in range(npts):
            total += sw[ci, p]
        nl = 0  # local points: their weights this move in lw[p], listed in stack[:nl]
        for i in range(m):
            p = lp[i]
            if sw[ci, p] <= 0.0:
                continue
            if mark[p] != stamp:
                mark[p] = stamp
                lw[p] = sw[ci, p]
                stack[nl] = p
                nl += 1
            lw[p] *= W[lf[i]]
        for i in range(nl):
            p = stack[i]
            total += lw[p] - sw[ci, p]
        if ko >= 0 and sw[ci, ko] > 0.0:
            total -= lw[ko] if mark[ko] == stamp else sw[ci, ko]
        chosen = -1
        while total > 1e-300 and chosen < 0:
            r = np.random.random() * total
            pick = -1
            for i in range(nl):
                p = stack[i]
                if p == ko:
                    continue
                if r < lw[p]:
                    pick = p
                    break
                r -= lw[p]
            if pick < 0:
                for p in range(npts):
                    v = sw[ci, p]
                    if v <= 0.0 or mark[p] == stamp or p == ko:
                        continue
                    pick = p
                    if r < v:
                        break
                    r -= v
            if pick < 0:
                break
            if K.check_move(w, pick, color, allow_suicide) == K.OK:
                chosen = pick
            else:  # refused by a rule the patterns do not see: off for this player until its 3x3 changes
                total -= lw[pick] if mark[pick] == stamp else sw[ci, pick]
                sw[ci, pick] = 0.0
                lw[pick] = 0.0
        prev = last
        if chosen < 0:
            K.play(w, npts, color, allow_suicide)
        else:
            nc = 0  # the stones this move takes: the opponent's strings in atari next to it
            opp = 3 - color
            for k in range(4):
                q = w.nbr[chosen, k]
                if q < 0:
                    break
                if board[q] == opp and w.libs[w.head[q]] == 1:
                    h = w.head[q]
                    dup = False
                    for i in range(nc):
                        if capt[i] == h:
                            dup = True
                    if dup:
                        continue
                    x = h
                    while True:
                        capt[nc] = x
                        nc += 1
                        x = w.nxt[x]
                        if x == h:
                            break
            K.play(w, chosen, color, allow_suicide)
            stamp += 1
            if full or board[chosen] == 0:  # (a suicide the rules allowed: every point afresh)
                for p in range(npts):
                    _refresh(w, W, canon_pat, size, p, sw)
            else:
                _touch(w, W, canon_pat, size, chosen, sw, mark, stamp)
                for i in range(nc):
                    _touch(w, W, canon_pat, size, capt[i], sw, mark, stamp)
        moves += 1
    area_into(board, w.nbr, owner, visited, stack, region)
    return moves


@internal_kernel(always_inline=True)
def _count(owner, owned):
    """A finished playout's area count (Black's minus White's), its ownership added to ``owned``."""
    s = 0
    for p in range(owner.shape[0]):
        s += owner[p]
        owned[p] += owner[p]
    return s


@nogil_kernel
def _policy_playouts(root_t, work_t, count, allow_suicide, max_moves, last2, seed, komi, W, canon_pat, canon_resp,
                     sw, mark, lp, lf, seen, lw, capt, scores, owned, owner, visited, stack, region, full):
    np.random.seed(seed)
    root = K.Engine(*root_t)
    w = K.Engine(*work_t)
    total = 0
    for j in range(count):
        total += policy_playout(root, w, allow_suicide, max_moves, last2, W, canon_pat, canon_resp, sw, mark, lp, lf,
                                seen, lw, capt, owner, visited, stack, region, full)
        scores[j] = _count(owner, owned) - komi
    return total


@nogil_kernel
def _playouts(root_t, work_t, count, allow_suicide, max_moves, seed, komi, scores, owned, empt, owner, seen,
              stack, region):
    np.random.seed(seed)
    root = K.Engine(*root_t)
    w = K.Engine(*work_t)
    total = 0
    for j in range(count):
        total += playout(root, w, allow_suicide, max_moves, empt, owner, seen, stack, region)
        scores[j] = _count(owner, owned) - komi
    return total


class Playouts:
    """Playouts of positions of one board size (module docstring): uniform, or drawn by a rollout ``policy``
    (:class:`gotk.train.rollout.RolloutPolicy` of this board size: :func:`policy_playout`). ``run(state, n)`` plays
    ``n`` from ``state`` and returns their scores; ``ownership`` then holds the mean final ownership (Black +1) of
    the last call's playouts, ``moves`` its moves played. ``seed`` makes the playouts reproducible: call ``k`` of an
    object draws from ``seed + k``."""

    def __init__(self, size: int, seed: int | None = None, max_moves: int | None = None, policy=None,
                 full_refresh: bool = False) -> None:
        if policy is not None and policy.board_size != size:
            raise ValueError(f"a rollout policy of {policy.board_size}x{policy.board_size} cannot play {size}x{size} "
                             f"playouts")
        self.size = size
        self.policy = policy
        self.full_refresh = bool(full_refresh)  # the policy's weights recomputed everywhere each move (tests)
        self.seed = int(np.random.SeedSequence(seed).generate_state(1)[0]) if seed is None else int(seed)
        self.calls = 0
        self.max_moves = int(max_moves) if max_moves is not None else 3 * size * size
        npts = size * size
        self.work = new_engine(size)
        self.empt = np.empty(npts, dtype=np.int64)
        self.owner = np.empty(npts, dtype=np.int8)
        self.seen = np.empty(npts, dtype=np.uint8)
        self.stack = np.empty(npts, dtype=np.int32)
        self.region = np.empty(npts, dtype=np.int32)
        self.ownership = np.zeros(npts, dtype=np.float64)
        self.moves = 0
        if policy is not None:
            self.sw = np.zeros((2, npts), dtype=np.float64)
            self.mark = np.zeros(npts, dtype=np.int64)
            self.lw = np.zeros(npts, dtype=np.float64)
            self.lp = np.empty(PT.MAX_LOCAL, dtype=np.int64)
            self.lf = np.empty(PT.MAX_LOCAL, dtype=np.int64)
            self.strings = np.empty(5, dtype=np.int64)

    def run(self, state: GameState, n: int) -> np.ndarray:
        """Scores (Black's area − White's − komi) of ``n`` playouts from ``state``."""
        if state.size != self.size:
            raise ValueError(f"playouts of {self.size}x{self.size} positions, not {state.size}x{state.size}")
        if n < 1:
            raise ValueError(f"playouts must be >= 1, not {n}")
        scores = np.empty(n, dtype=np.float64)
        owned = np.zeros(self.size * self.size, dtype=np.int64)
        seed = (self.seed + self.calls) % (2**32)
        self.calls += 1
        root = tuple(position_arrays(state.e)) + tuple(state.e[9:])
        if self.policy is None:
            moves = _playouts(root, tuple(self.work), n, state.rules.suicide, self.max_moves, seed, float(state.komi),
                              scores, owned, self.empt, self.owner, self.seen, self.stack, self.region)
        else:
            pol = self.policy
            hist = state.history
            last2 = hist[-2][1] if len(hist) >= 2 and hist[-2][1] < self.size * self.size else -1
            moves = _policy_playouts(root, tuple(self.work), n, state.rules.suicide, self.max_moves, last2, seed,
                                     float(state.komi), pol.exp_weights, pol.canon_pat, pol.canon_resp, self.sw,
                                     self.mark, self.lp, self.lf, self.strings, self.lw, self.empt, scores, owned,
                                     self.owner, self.seen, self.stack, self.region, self.full_refresh)
        self.moves = int(moves)
        self.ownership = owned / n
        return scores


__all__ = ["Playouts", "playout", "policy_playout"]
