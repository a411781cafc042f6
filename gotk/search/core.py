"""The one search: a tree over positions of one game, with the parts of :mod:`gotk.search.config` plugged in, that
play (GTP, matches, analysis, the web app), self-play and the zero loop's evaluations all drive.

A search of one move goes :meth:`Search.set_position` (the tree of earlier moves is kept when the new position
continues it), :meth:`Search.begin` (the visits to reach), then rounds of :meth:`Search.gather` (walks to leaves,
each leaf's planes written into a batch the caller owns) and :meth:`Search.absorb` (the network's priors and
values for those leaves: expansion and backup) until :attr:`Search.finished`. :meth:`Search.run` is that loop for
one game with its own evaluator and ``batch`` leaves a call under virtual loss; :class:`gotk.selfplay.games.
SelfPlayBatch` runs it for many games at once, one leaf each, in one network call.

Every walk plays its path's moves on the search's one :class:`~gotk.game.state.GameState` (the engine's recorded
``play``), encodes the leaf there, and takes the moves back with ``undo``: no position is copied. Leaves:

* children are the candidates of the pass rule (``pass_rule``): the *sensible* moves (legal, not filling an own
  eye: :func:`gotk.game.moves.sensible_moves`), plus pass when none is left or the opponent has just passed
  (``"answer"``), or always (``"always"``). Priors are the policy restricted to them and renormalised; a pass that
  would end the game gets at least ``pass_prior``;
* a position after two passes is terminal: its value is exact, from the score a finished game is counted by
  (:meth:`GameState.score_final`: area, komi included; the stones dead inside the opponent's pass-alive area
  removed, and the answering passer's own homeless stones, those touching none of its area; every other
  stone alive): +1 win, −1 loss, 0 draw. This is how the search decides to pass: by its value, not a fixed
  rule. So it answers a pass only where that count wins: a stone of its own in an eye of the opponent's
  unconditionally living group, or a lone stone in the opponent's framework, which an opponent's
  ``final_score`` removes, does not count for it, and it plays on instead (self-play's results use the same
  count, so its value targets agree). A pass whose exact value is a loss is never the move played while another
  candidate is left (:meth:`Search.losing_passes`), however few visits told it apart from the rest;
* else the value head's estimate (the mover's view).

The root rule (PUCT or Gumbel, :mod:`gotk.search.roots`) decides where walks start and what the policy target is;
the move played is :func:`gotk.search.choice.choose`'s.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gotk.game.moves import sensible_moves
from gotk.game.state import GameState
from gotk.search import choice as C
from gotk.search import tree as T
from gotk.search.config import SearchConfig
from gotk.search.lcb import lower_bounds
from gotk.search.roots import root_rule

BLACK = 1


def candidates(state: GameState, pass_rule: str = "answer") -> np.ndarray:
    """The moves a search considers in ``state`` under ``pass_rule`` (module docstring), pass last when present."""
    moves = sensible_moves(state)
    if pass_rule == "always" or moves.size == 0 or state.passes >= 1:
        moves = np.append(moves, state.pass_point)
    return moves.astype(np.int32)


def terminal_value(state: GameState) -> float:
    """After two passes: +1 / −1 / 0 for the player who moved last (into the node), by the final count
    (:meth:`GameState.score_final`)."""
    score = state.score_final()
    mover_in = 3 - state.to_play
    return 0.0 if score == 0 else (1.0 if (score > 0) == (mover_in == BLACK) else -1.0)


class Search:
    """A search tree over positions of one game. ``evaluator`` (the seam of :mod:`gotk.search.evaluate`:
    ``leaves(rows)``, ``write(leaves, row, state)`` at each leaf, ``evaluate_leaves(leaves, rows)`` → priors and
    values; :class:`~gotk.search.evaluate.NetEvaluator`, or the rollouts and AlphaGo's mix of
    :mod:`gotk.search.rollouts`) is needed to gather leaves (None: a tree alone); ``rng`` draws the root's noise
    and sampled moves (default: seeded from ``config.seed``)."""

    def __init__(self, evaluator, config: SearchConfig | None = None, rng: np.random.Generator | None = None,
                 capacity: int = 4096) -> None:
        self.evaluator = evaluator
        self.cfg = (config or SearchConfig()).validate()
        seed = self.cfg.seed
        self.rng = rng if rng is not None else np.random.default_rng(None if seed is None else seed + 1)
        self.tree = T.Tree(capacity)
        self.root = root_rule(self.cfg)  # the root rule and its per-move state (noise, Gumbel draws, schedule)
        self.root_state: GameState | None = None
        self.path = np.zeros(256, dtype=np.int64)
        self.scratch = np.zeros(64, dtype=np.float64)
        self.leaves = None  # run()'s room for a batch of leaves (the evaluator's Leaves)
        self.leaves_rows = 0
        self.pending: list[tuple[int, np.ndarray, np.ndarray, bool]] = []  # (node, path, candidates, answers a pass)
        self.target: int | None = None  # root visits this move's search reaches
        self.started = False  # the root rule has its per-search draws (noise, Gumbel, schedule)
        self.noise = True
        self.playouts = 0  # playouts of the last run()
        self.reused = 0  # root visits kept by the last set_position()
        self.seconds = 0.0  # wall time of the last run()
        self.net_seconds = 0.0  # ... of it inside the network
        self.folds = 0  # times the tree was full and its least visited expansions were folded (see room)
        # KataGo's avoidMoves / allowMoves (the analysis protocol): (colour, points, until depth, allow) — at a node
        # fewer than ``until`` moves below the root, that colour's candidates leave out ``points`` (or, with
        # ``allow``, keep only them); pass stays a candidate when nothing else is left
        self.avoid: list[tuple[int, np.ndarray, int, bool]] = []
        self.root_temperature = 1.0  # the root's priors are p^(1/T) renormalised (KataGo's rootPolicyTemperature)

    # --- the root ---------------------------------------------------------------------------------------

    def clear(self) -> None:
        self.tree.reset()
        self.root_state = None
        self.pending = []

    def clear_tree(self) -> None:
        """Forget the statistics but keep the root position."""
        self.tree.reset()
        self.pending = []
        self.started = False

    def set_position(self, state: GameState) -> bool:
        """Search ``state`` next; keep the subtree when it continues the current root. True when kept."""
        old = self.root_state
        kept = False
        tree = self.tree
        self.pending = []
        if old is not None and self.cfg.reuse and self._continues(old, state):
            node = 0
            mover = old.to_play
            for color, point in state.history[len(old.history):]:
                if color != mover or tree.status[node] != T.EXPANDED:
                    node = -1
                    break
                kids = tree.children(node)
                hit = kids[tree.move[kids] == point]
                if hit.size == 0:
                    node = -1
                    break
                node = int(hit[0])
                mover = 3 - mover
            if node >= 0 and mover == state.to_play:
                tree.reroot(node)
                kept = True
        if not kept:
            tree.reset()
        elif tree.status[0] == T.PENDING:
            tree.status[0] = T.UNEXPANDED
        self.root_state = state.copy()
        self.reused = int(tree.N[0])
        self.started = False
        return kept

    @staticmethod
    def _continues(old: GameState, new: GameState) -> bool:
        n = len(old.history)
        return (old.size == new.size and old.komi == new.komi and old.rules == new.rules
                and old._setup == new._setup and len(new.history) >= n and new.history[:n] == old.history)

    def begin(self, target: int | None, noise: bool = True) -> None:
        """Start a move's search: until the root has ``target`` visits (None: no bound; reused visits count).
        ``noise``: the PUCT root's Dirichlet noise (``noise_fraction``) is added this time."""
        if self.root_state is None:
            raise RuntimeError("set_position() first")
        self.target = target
        self.noise = noise
        self.started = False
        self.pending = []
        if self.tree.status[0] == T.EXPANDED:
            self._start_root()

    def _start_root(self) -> None:
        """The root rule's per-search draws, once the root's children are known."""
        k = int(self.tree.nchild[0])
        if self.scratch.shape[0] < k + 1:
            self.scratch = np.zeros(2 * k + 2, dtype=np.float64)
        self.root.start(self.tree, self.rng, self.root_state.size, self.target, self.noise, self.scratch)
        self.started = True

    @property
    def finished(self) -> bool:
        """The move's search is done: its target reached (or the root is a finished game), nothing in flight."""
        status = self.tree.status[0]
        if self.pending or status == T.UNEXPANDED or status == T.PENDING:
            return False
        return status == T.TERMINAL or (self.target is not None and self.tree.N[0] >= self.target)

    # --- walks and leaves ------------------------------------------------------------------------------

    def gather(self, leaves, row: int = 0, limit: int = 1) -> int:
        """Up to ``limit`` walks from the root, each to a new leaf that the evaluator writes into row ``row + i`` of
        ``leaves`` (its :class:`~gotk.search.evaluate.Leaves`; a finished game on the way is backed up at once, with
        its exact value); stops early at a collision with a leaf in flight or at the target. Returns the leaves
        written, for :meth:`absorb`."""
        tree, cfg, state, pending = self.tree, self.cfg, self.root_state, self.pending
        status, N, VL = tree.status, tree.N, tree.VL  # a walk changes no array's identity (an expansion may)
        if not pending and status[0] == T.EXPANDED and not self.started:
            self._start_root()
        rule = T.GUMBEL if cfg.interior_rule == "gumbel" else T.PUCT
        target = self.target
        for _ in range(limit):
            root = status[0]
            if root == T.EXPANDED:
                if target is not None and N[0] + VL[0] >= target:
                    break
                start = self.root.child(tree, self.scratch)
            elif root == T.TERMINAL:
                break
            else:
                start = 0
            if self.path.shape[0] < tree.size + 2:
                self.path = np.zeros(2 * tree.size + 2, dtype=np.int64)
            code, length = T.walk(tree.arrays, start, rule, cfg.c_puct, cfg.fpu, cfg.c_visit, cfg.c_scale, self.scratch,
                                  self.path)
            if code == T.TERMINAL_LEAF:
                continue
            if code == T.COLLISION:
                break
            path = self.path[:length].copy()
            node = int(path[-1])
            moves = tree.move[path[1:]].tolist()
            for i, m in enumerate(moves):
                try:
                    state.play(m)
                except BaseException:
                    for _ in range(i):
                        state.undo()
                    raise
            if state.passes >= 2:
                v = terminal_value(state)
                status[node] = T.TERMINAL
                tree.TV[node] = v
                tree.backup(path, v)
            else:
                try:
                    self.evaluator.write(leaves, row + len(pending), state)
                    cands = candidates(state, cfg.pass_rule)
                    if self.avoid:
                        cands = self._allowed(state, len(moves), cands)
                    pending.append((node, path, cands, state.passes == 1))
                finally:
                    for _ in moves:
                        state.undo()
                continue
            for _ in moves:
                state.undo()
        return len(pending)

    def _allowed(self, state: GameState, depth: int, moves: np.ndarray) -> np.ndarray:
        """``moves`` less those :attr:`avoid` forbids the player to move ``depth`` moves below the root."""
        keep = np.ones(moves.size, dtype=bool)
        for color, points, until, allow in self.avoid:
            if color == state.to_play and depth < until:
                hit = np.isin(moves, points)
                keep &= hit | (moves == state.pass_point) if allow else ~hit
        if keep.all():
            return moves
        left = moves[keep]
        if left.size == 0 or (left.size == 1 and left[0] == state.pass_point):
            return np.array([state.pass_point], dtype=np.int32)
        return left

    def absorb(self, probs: np.ndarray, values: np.ndarray) -> None:
        """The network's move probabilities ``(B, size²+1)`` and values ``(B,)`` (the mover's view) for the leaves
        of the last :meth:`gather`, in its order: each leaf is expanded and its value backed up."""
        tree, cfg = self.tree, self.cfg
        for (node, path, moves, answers), p, v in zip(self.pending, probs, values, strict=True):
            pri = p[moves]
            if answers and cfg.pass_prior > 0 and moves[-1] == self.root_state.pass_point:
                pri[-1] = max(pri[-1], cfg.pass_prior * max(pri.sum(), 1e-12))
            if node == 0 and self.root_temperature != 1.0:
                pri = pri ** (1.0 / self.root_temperature)
            total = float(pri.sum())
            pri = pri / total if total > 0 and math.isfinite(total) else np.full(moves.size, 1.0 / moves.size)
            v = float(v)
            tree.expand(node, moves, pri, v)
            tree.backup(path, -v)
        self.pending = []

    # --- one game's loop --------------------------------------------------------------------------------

    def run(self, visits: int | None = None, seconds: float | None = None,
            stop: Callable[[], bool] | None = None, on_batch: Callable[[], None] | None = None) -> int:
        """Search until the root has ``visits`` visits, ``seconds`` have passed or ``stop()`` is true (checked
        between batches; at least one batch runs when the root is not expanded). Returns the playouts done."""
        self.begin(visits)
        t0 = time.perf_counter()
        net0 = self.evaluator.seconds
        tree = self.tree
        if self.leaves is None or self.leaves_rows < self.cfg.batch:
            self.leaves = self.evaluator.leaves(self.cfg.batch)
            self.leaves_rows = self.cfg.batch
        done = 0
        while True:
            if tree.status[0] == T.EXPANDED:
                if self.finished or not self.room(self.cfg.batch):
                    break
                if seconds is not None and time.perf_counter() - t0 >= seconds:
                    break
                if stop is not None and stop():
                    break
            before = tree.N[0]
            try:
                n = self.gather(self.leaves, 0, self.cfg.batch)
                if n:
                    self.absorb(*self.evaluator.evaluate_leaves(self.leaves, n))
            except BaseException:
                self.clear_tree()  # leaves left pending would block every later walk
                raise
            got = int(tree.N[0] - before)
            if got == 0:
                break
            done += got
            if on_batch is not None:
                on_batch()
            if tree.status[0] == T.TERMINAL:
                break
        self.playouts = done
        self.seconds = time.perf_counter() - t0
        self.net_seconds = self.evaluator.seconds - net0
        return done

    def room(self, leaves: int) -> bool:
        """Room in the tree for ``leaves`` more expansions, folding the least visited ones when the tree would
        pass ``max_nodes`` rows (down to half of it, so that folds are rare). False only when even that cannot
        make room (``max_nodes`` smaller than a few expansions): the search has reached its limit."""
        need = leaves * (self.root_state.pass_point + 1)
        if self.tree.size + need <= self.cfg.max_nodes:
            return True
        self.tree.prune(min(self.cfg.max_nodes // 2, self.cfg.max_nodes - need))
        self.folds += 1
        return self.tree.size + need <= self.cfg.max_nodes

    # --- results ----------------------------------------------------------------------------------------

    @property
    def root_visits(self) -> int:
        return int(self.tree.N[0])

    def root_value(self) -> float:
        """The search's value of the root for its player to move (−1..1)."""
        n = self.tree.N[0]
        return float(-self.tree.W[0] / n) if n > 0 else 0.0

    def pv_nodes(self, node: int, limit: int = 30) -> list[int]:
        """The tree rows from ``node`` on, following the most visited child (at most ``limit``)."""
        tree = self.tree
        out = [node]
        while len(out) < limit and tree.status[node] == T.EXPANDED:
            kids = tree.children(node)
            best = kids[np.argmax(tree.N[kids])]
            if tree.N[best] <= 0:
                break
            node = int(best)
            out.append(node)
        return out

    def pv(self, node: int, limit: int = 30) -> list[int]:
        """Moves from ``node`` on, following the most visited child."""
        return [int(self.tree.move[n]) for n in self.pv_nodes(node, limit)]

    def losing_passes(self, kids: np.ndarray) -> np.ndarray:
        """Bool per root child in ``kids``: a pass that ends the game as a loss for the root's player by the final
        count (a terminal child with a negative exact value). The final choice puts them last: playing on is never
        worse than a certain loss, and a few visits may not have told the two apart."""
        tree = self.tree
        return (tree.status[kids] == T.TERMINAL) & (tree.TV[kids] < 0)

    def lower_bounds(self, kids: np.ndarray) -> np.ndarray:
        """The lower confidence bound of each root child's value (the root mover's view, −1..1; :mod:`.lcb`)."""
        tree = self.tree
        return lower_bounds(tree.N[kids], tree.W[kids], tree.W2[kids])

    def final_row(self) -> int:
        """The root rule's own final choice (a root child's row: Gumbel's argmax of ``g + log π + σ(q)`` among the
        most visited since the search began), −1 when the rule has none or the root has no children."""
        if not self.root.chooses or self.tree.status[0] != T.EXPANDED:
            return -1
        if not self.started:
            self._start_root()
        return self.root.final(self.tree, self.scratch)

    def policy_target(self) -> np.ndarray:
        """The search's policy over the root's children (in child order), the root rule's: Gumbel's improved
        policy π', else the visit shares (the priors before any visit)."""
        return self.root.target(self.tree, self.scratch)

    def infos(self, min_moves: int = 0, max_moves: int | None = None, pv_limit: int = 30) -> list[MoveInfo]:
        """Root children best first (:func:`gotk.search.choice.ranking`): the visited ones, and unvisited ones by
        prior up to ``min_moves``; at most ``max_moves``. The first is the move played at temperature 0."""
        tree = self.tree
        kids, order = C.ranking(self)
        n = tree.N[kids]
        q = np.where(n > 0, tree.W[kids] / np.maximum(n, 1), 0.0)
        out = []
        for i in order:
            c = int(kids[i])
            if n[i] <= 0 and len(out) >= min_moves:
                break
            out.append(MoveInfo(int(tree.move[c]), int(n[i]), float(q[i]), float(tree.P[c]),
                                self.pv(c, pv_limit) if n[i] > 0 else [int(tree.move[c])]))
            if max_moves is not None and len(out) >= max_moves:
                break
        return out


@dataclass
class MoveInfo:
    """One root child, for choosing and for analysis output (values from the root mover's view)."""

    move: int
    visits: int
    q: float  # mean value, −1..1 (0 when unvisited)
    prior: float
    pv: list[int]


__all__ = ["MoveInfo", "Search", "candidates", "terminal_value"]
