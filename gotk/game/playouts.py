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


@nogil_kernel
def _playouts(root_t, work_t, count, allow_suicide, max_moves, seed, komi, scores, owned, empt, owner, seen,
              stack, region):
    np.random.seed(seed)
    root = K.Engine(*root_t)
    w = K.Engine(*work_t)
    total = 0
    for j in range(count):
        total += playout(root, w, allow_suicide, max_moves, empt, owner, seen, stack, region)
        s = 0
        for p in range(owner.shape[0]):
            s += owner[p]
            owned[p] += owner[p]
        scores[j] = s - komi
    return total


class Playouts:
    """Uniform playouts of positions of one board size (module docstring). ``run(state, n)`` plays ``n`` from
    ``state`` and returns their scores; ``ownership`` then holds the mean final ownership (Black +1) of the last
    call's playouts, ``moves`` its moves played. ``seed`` makes the playouts reproducible: call ``k`` of an object
    draws from ``seed + k``."""

    def __init__(self, size: int, seed: int | None = None, max_moves: int | None = None) -> None:
        self.size = size
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
        self.moves = int(_playouts(tuple(position_arrays(state.e)) + tuple(state.e[9:]), tuple(self.work), n,
                                   state.rules.suicide, self.max_moves, seed, float(state.komi), scores, owned,
                                   self.empt, self.owner, self.seen, self.stack, self.region))
        self.ownership = owned / n
        return scores


__all__ = ["Playouts", "playout"]
