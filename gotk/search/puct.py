"""PUCT tree search (AlphaGo Zero) over a policy + value network, and a player that plays with it.

A playout walks the tree by PUCT (:mod:`gotk.search.tree`), replays the path's moves on a copy of the
root position, and evaluates the leaf; ``batch`` leaves are gathered under virtual loss and evaluated in
one network call (each under a random symmetry). Leaves:

* children are the *sensible* moves (legal, not filling an own eye: :func:`gotk.play.players.sensible_moves`)
  plus pass; priors are the policy restricted to them and renormalised. When the opponent has just
  passed, pass (which then ends the game) gets at least ``pass_prior`` so that the search weighs it;
* a position after two passes is terminal: its value is exact, from gotk's area score (every stone alive,
  komi included): +1 win, −1 loss, 0 draw. This is how the search decides to pass: passing is played
  when it has the most visits, not by a fixed rule;
* else the value head's estimate (the mover's view).

The move played is the root child with the most visits (``temperature`` 0), else one sampled with
probability ∝ ``N^(1/T)``. With ``lcb`` > 0 the most visited move gives way, at temperature 0, to the move whose
value has the best lower confidence bound among those with more than ``lcb`` times the most visits (and more
than 2): mean − t · sqrt(variance / N), ``t`` Student's quantile at 1 − 10⁻⁵ for N − 1 degrees of freedom
(Leela Zero 0.17's rule, its ratio 0.10): a move whose few visits all looked good can win over a more visited
one whose values are spread. The tree is kept between moves: the next search starts from the subtree of
the moves played since (ours and the opponent's), when the new position continues the old one.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from gotk.game.state import GameState
from gotk.play.players import RESIGN, sensible_moves
from gotk.search import tree as T
from gotk.search.evaluate import SearchSetupError

MAX_VISITS = 10_000_000
LCB_ALPHA = 1e-5  # the lower confidence bound's one-sided error (Leela Zero's ci_alpha)


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b) (continued fraction, modified Lentz)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    if x > (a + 1.0) / (a + b + 2.0):  # the fraction converges fast below the mean: use the symmetry there
        return 1.0 - _incomplete_beta(b, a, 1.0 - x)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)) / a
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    f = d
    for m in range(1, 500):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            f *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return front * f


@lru_cache(maxsize=1024)
def t_quantile(df: int, alpha: float = LCB_ALPHA) -> float:
    """Student's t with ``df`` degrees of freedom exceeded with probability ``alpha`` (one-sided upper quantile);
    ``df`` above 1000 is taken as 1000 (the quantile has all but converged to the normal one there)."""
    df = min(max(int(df), 1), 1000)

    def tail(t: float) -> float:
        return 0.5 * _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))

    lo, hi = 0.0, 1.0
    while tail(hi) > alpha:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if tail(mid) > alpha:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return 0.5 * (lo + hi)


@dataclass
class SearchConfig:
    """Search settings; :meth:`validate` raises :class:`SearchSetupError` for values out of range."""

    visits: int = 200  # root visits per move (reused ones count); 0 or 1: play the policy, no search
    seconds: float | None = None  # thinking time per move (cap); with a clock, the smaller budget wins
    batch: int = 8  # leaves per network call
    # tuned so that a briefly trained network (its value head barely better than komi and handicap) does not
    # search below its own raw policy at tens of visits: the prior weighs more (c_puct), and an unvisited move
    # starts at its parent's value rather than below it (no first-play-urgency reduction)
    c_puct: float = 5.0
    fpu: float = 0.0  # first-play-urgency reduction
    lcb: float = 0.0  # 0: play the most visited move; r > 0: the best lower confidence bound above r x those visits
    temperature: float = 0.0
    pass_prior: float = 0.1  # least prior of a pass that would end the game (the opponent just passed)
    resign_threshold: float | None = -0.9  # resign when the search's value stays below this...
    resign_moves: int = 3  # ... at this many consecutive own moves ...
    resign_min_move: int = 30  # ... and never before this move number
    symmetries: bool = True  # a random board symmetry per evaluation
    reuse: bool = True  # keep the subtree between moves
    seed: int | None = None
    max_nodes: int = 4_000_000  # tree rows; when full, the least visited expansions are folded (memory bound)

    def validate(self) -> SearchConfig:
        def bad(msg: str) -> None:
            raise SearchSetupError(msg)

        if not isinstance(self.visits, int) or self.visits < 0:
            bad(f"--visits must be >= 0, not {self.visits}")
        if self.visits > MAX_VISITS:
            bad(f"--visits {self.visits} is more than the {MAX_VISITS} a search may hold; use --seconds for long "
                f"searches")
        if self.seconds is not None and not (0 < self.seconds <= 86400):
            bad(f"--seconds must be in (0, 86400], not {self.seconds}")
        if not 1 <= self.batch <= 1024:
            bad(f"--batch must be 1..1024, not {self.batch}")
        if not (self.c_puct > 0 and np.isfinite(self.c_puct)):
            bad(f"--c-puct must be > 0, not {self.c_puct}")
        if not (0 <= self.fpu <= 2):
            bad(f"--fpu must be in 0..2, not {self.fpu}")
        if not (0 <= self.lcb <= 1):
            bad(f"--lcb must be in 0..1, not {self.lcb}")
        if not (0 <= self.temperature <= 100):
            bad(f"--temperature must be in 0..100, not {self.temperature}")
        if not 0 <= self.pass_prior <= 1:
            bad(f"pass prior must be in 0..1, not {self.pass_prior}")
        if self.resign_threshold is not None and not -1 <= self.resign_threshold <= 1:
            bad(f"--resign-threshold must be in -1..1, not {self.resign_threshold}")
        if not isinstance(self.max_nodes, int) or self.max_nodes < 1000:
            bad(f"max nodes must be >= 1000, not {self.max_nodes}")
        if self.resign_moves < 1 or self.resign_min_move < 0:
            bad("--resign-moves must be >= 1 and --resign-min-move >= 0")
        return self

    @property
    def searches(self) -> bool:
        return self.visits > 1 or self.seconds is not None

    def with_agent(self, settings: Mapping[str, float], keep: Collection[str] = ()) -> SearchConfig:
        """This config with an agent's own search constants (agent.json ``search``: ``batch``, ``c_puct``,
        ``fpu``, ``lcb``) in place of its own, except the fields named in ``keep`` (those a user gave). A value out of
        range raises :class:`SearchSetupError` that names the agent's settings."""
        taken = {k: v for k, v in settings.items() if k not in keep}
        if not taken:
            return self
        try:
            return replace(self, **taken).validate()
        except SearchSetupError as e:
            raise SearchSetupError(f"the agent's search settings {dict(settings)}: {e}") from None


@dataclass
class MoveInfo:
    """One root child, for choosing and for analysis output (values from the root mover's view)."""

    move: int
    visits: int
    q: float  # mean value, −1..1 (0 when unvisited)
    prior: float
    pv: list[int]


class Search:
    """A search tree over positions of one game, driven by ``evaluator(states) → (probs, values)``."""

    def __init__(self, evaluator, config: SearchConfig | None = None) -> None:
        self.evaluator = evaluator
        self.cfg = (config or SearchConfig()).validate()
        self.tree = T.Tree()
        self.root_state: GameState | None = None
        self.path = np.zeros(self.tree.capacity + 1, dtype=np.int64)
        self.playouts = 0  # playouts of the last run()
        self.reused = 0  # root visits kept by the last set_position()
        self.seconds = 0.0  # wall time of the last run()
        self.net_seconds = 0.0  # ... of it inside the network
        self.folds = 0  # times the tree was full and its least visited expansions were folded (see _room)

    # --- the root ---------------------------------------------------------------------------------------

    def clear(self) -> None:
        self.tree.reset()
        self.root_state = None

    def clear_tree(self) -> None:
        """Forget the statistics but keep the root position."""
        self.tree.reset()

    def set_position(self, state: GameState) -> bool:
        """Search ``state`` next; keep the subtree when it continues the current root. True when kept."""
        old = self.root_state
        kept = False
        if old is not None and self.cfg.reuse and self._continues(old, state):
            node = 0
            mover = old.to_play
            for color, point in state.history[len(old.history):]:
                if color != mover or self.tree.status[node] != T.EXPANDED:
                    node = -1
                    break
                kids = self.tree.children(node)
                hit = kids[self.tree.move[kids] == point]
                if hit.size == 0:
                    node = -1
                    break
                node = int(hit[0])
                mover = 3 - mover
            if node >= 0 and mover == state.to_play:
                self.tree.reroot(node)
                kept = True
        if not kept:
            self.tree.reset()
        self.root_state = state.copy()
        self.reused = int(self.tree.N[0])
        return kept

    @staticmethod
    def _continues(old: GameState, new: GameState) -> bool:
        n = len(old.history)
        return (old.size == new.size and old.komi == new.komi and old.rules == new.rules
                and old._setup == new._setup and len(new.history) >= n and new.history[:n] == old.history)

    # --- the loop ---------------------------------------------------------------------------------------

    def run(self, visits: int | None = None, seconds: float | None = None,
            stop: Callable[[], bool] | None = None, on_batch: Callable[[], None] | None = None) -> int:
        """Search until the root has ``visits`` visits, ``seconds`` have passed or ``stop()`` is true (checked
        between batches; at least one batch runs when the root is not expanded). Returns the playouts done."""
        if self.root_state is None:
            raise RuntimeError("set_position() first")
        t0 = time.perf_counter()
        net0 = self.evaluator.seconds
        done = 0
        target = visits if visits is not None else MAX_VISITS
        while True:
            root_n = int(self.tree.N[0])
            if self.tree.status[0] != T.UNEXPANDED:
                if root_n >= target or not self._room(min(self.cfg.batch, target - root_n)):
                    break
                if seconds is not None and time.perf_counter() - t0 >= seconds:
                    break
                if stop is not None and stop():
                    break
            want = min(self.cfg.batch, max(1, target - root_n))
            try:
                got = self._batch(want)
            except BaseException:
                self.clear_tree()  # leaves left pending would block every later walk
                raise
            if got == 0:
                break
            done += got
            if on_batch is not None:
                on_batch()
            if self.tree.status[0] == T.TERMINAL:
                break
        self.playouts = done
        self.seconds = time.perf_counter() - t0
        self.net_seconds = self.evaluator.seconds - net0
        return done

    def _room(self, leaves: int) -> bool:
        """Room in the tree for ``leaves`` more expansions, folding the least visited ones when the tree would
        pass ``max_nodes`` rows (down to half of it, so that folds are rare). False only when even that cannot
        make room (``max_nodes`` smaller than a few expansions): the search has reached its limit."""
        need = leaves * (self.root_state.pass_point + 1)
        if self.tree.size + need <= self.cfg.max_nodes:
            return True
        self.tree.prune(min(self.cfg.max_nodes // 2, self.cfg.max_nodes - need))
        self.folds += 1
        return self.tree.size + need <= self.cfg.max_nodes

    def _batch(self, want: int) -> int:
        tree, cfg = self.tree, self.cfg
        done = 0
        leaves: list[tuple[int, np.ndarray, GameState]] = []
        for _ in range(want):
            if self.path.shape[0] < tree.size + 1:
                self.path = np.zeros(2 * tree.capacity + 1, dtype=np.int64)
            code, length = T.select(*tree.stats(), cfg.c_puct, cfg.fpu, self.path)
            if code == T.TERMINAL_LEAF:
                done += 1
                continue
            if code == T.COLLISION:
                break
            path = self.path[:length].copy()
            node = int(path[-1])
            state = self.root_state.copy()
            for m in tree.move[path[1:]]:
                state.play(int(m))
            if state.passes >= 2:  # the game is over: exact value for the player who moved into the leaf
                score = state.score_area()  # black's view
                mover_in = 3 - state.to_play
                v = 0.0 if score == 0 else (1.0 if (score > 0) == (mover_in == 1) else -1.0)
                tree.status[node] = T.TERMINAL
                tree.TV[node] = v
                tree.backup(path, v)
                done += 1
                continue
            leaves.append((node, path, state))
        if not leaves:
            return done
        probs, values = self.evaluator([s for _, _, s in leaves])
        for (node, path, state), p, v in zip(leaves, probs, values, strict=True):
            moves = np.append(sensible_moves(state), state.pass_point).astype(np.int32)
            pri = p[moves]
            if state.passes == 1:
                pri[-1] = max(pri[-1], cfg.pass_prior * max(pri.sum(), 1e-12))
            total = pri.sum()
            pri = pri / total if total > 0 and np.isfinite(total) else np.full(moves.size, 1.0 / moves.size)
            tree.expand(node, moves, pri, float(v))
            tree.backup(path, -float(v))
            done += 1
        return done

    # --- results ----------------------------------------------------------------------------------------

    @property
    def root_visits(self) -> int:
        return int(self.tree.N[0])

    def root_value(self) -> float:
        """The search's value of the root for its player to move (−1..1)."""
        n = self.tree.N[0]
        return float(-self.tree.W[0] / n) if n > 0 else 0.0

    def pv(self, node: int, limit: int = 30) -> list[int]:
        """Moves from ``node`` on, following the most visited child."""
        tree = self.tree
        out = [int(tree.move[node])]
        while len(out) < limit and tree.status[node] == T.EXPANDED:
            kids = tree.children(node)
            best = kids[np.argmax(tree.N[kids])]
            if tree.N[best] <= 0:
                break
            node = int(best)
            out.append(int(tree.move[node]))
        return out

    def lower_bounds(self, kids: np.ndarray) -> np.ndarray:
        """The lower confidence bound of each root child's value (the root mover's view, −1..1): mean −
        t(N−1) · sqrt(variance / N); −inf below 2 visits."""
        tree = self.tree
        n = tree.N[kids]
        out = np.full(kids.size, -np.inf)
        for i in np.flatnonzero(n >= 2):
            c, k = kids[i], n[i]
            mean = tree.W[c] / k
            var = max(0.0, (tree.W2[c] - k * mean * mean) / (k - 1))
            out[i] = mean - t_quantile(int(k) - 1) * math.sqrt(var / k)
        return out

    def infos(self, min_moves: int = 0, max_moves: int | None = None, pv_limit: int = 30) -> list[MoveInfo]:
        """Root children ordered best first (visits, then value, then prior; with ``lcb``, the children with enough
        visits for it come first, by their lower bound: module docstring): the visited ones, and unvisited ones
        by prior up to ``min_moves``; at most ``max_moves``. The first is the move played at temperature 0."""
        tree = self.tree
        kids = tree.children(0)
        if kids.size == 0:
            return []
        n = tree.N[kids]
        q = np.where(n > 0, tree.W[kids] / np.maximum(n, 1), 0.0)
        keys = [-tree.P[kids], -q, -n]
        if self.cfg.lcb > 0:
            able = (n > 2) & (n > self.cfg.lcb * n.max())
            bound = np.zeros(kids.size)
            bound[able] = self.lower_bounds(kids[able])
            keys += [-bound, ~able]
        order = np.lexsort(keys)
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

    def choose(self, temperature: float, rng: np.random.Generator) -> int:
        """The move to play: the first of :meth:`infos` at temperature 0 (most visits, or the best lower
        confidence bound with ``lcb``), else sampled ∝ N^(1/T)."""
        infos = [i for i in self.infos() if i.visits > 0]
        if not infos:
            kids = self.tree.children(0)
            return int(self.tree.move[kids[np.argmax(self.tree.P[kids])]]) if kids.size else \
                self.root_state.pass_point
        if temperature <= 0 or len(infos) == 1:
            return infos[0].move
        n = np.array([i.visits for i in infos], dtype=np.float64)
        w = np.exp((np.log(n) - np.log(n.max())) / temperature)
        return infos[int(rng.choice(len(infos), p=w / w.sum()))].move


class SearchPlayer:
    """A :class:`~gotk.play.players.Player` that searches: ``choose(state)`` runs the search for the
    configured visits / seconds / clock budget and plays its choice, or resigns (see :class:`SearchConfig`)."""

    def __init__(self, agent, value_agent=None, config: SearchConfig | None = None, name: str | None = None,
                 evaluator=None) -> None:
        from gotk.search.clock import Clock
        from gotk.search.evaluate import NetEvaluator

        self.cfg = (config or SearchConfig()).validate()
        self.agent = agent
        self.value_agent = value_agent
        self.evaluator = evaluator or NetEvaluator(agent, value_agent, symmetries=self.cfg.symmetries,
                                                   seed=self.cfg.seed)
        self.search = Search(self.evaluator, self.cfg)
        self.rng = np.random.default_rng(None if self.cfg.seed is None else self.cfg.seed + 1)
        self.clock = Clock()
        self.has_value = True
        limit = f"{self.cfg.visits}v" if self.cfg.seconds is None else f"{self.cfg.seconds:g}s"
        self.name = name or f"gotk-{getattr(agent, 'name', 'agent')}-puct{limit}"
        self.low_value_streak = 0
        self.last_value: float | None = None
        from gotk.nets.agent import value_head_warning

        # one line when the leaf values come from a head no better than the komi/handicap baseline, else None
        leaf = value_agent or agent
        self.warning = value_head_warning(leaf) if isinstance(getattr(leaf, "meta", None), dict) else None

    @property
    def board_size(self) -> int | None:
        return getattr(self.agent, "board_size", None)

    def reset(self) -> None:
        """A new game: fresh tree, resignation streak and clock (random streams continue)."""
        self.search.clear()
        self.low_value_streak = 0
        self.last_value = None
        self.clock.reset()

    def policy(self, state: GameState) -> np.ndarray:
        return self.agent.policy(state)

    def value(self, state: GameState) -> float:
        return float((self.value_agent or self.agent).value(state))

    def budget(self, state: GameState) -> float | None:
        """Seconds for this move: ``--seconds`` and the clock's budget, the smaller."""
        moves_to_go = max(0.0, (0.75 * state.size * state.size - state.move_number) / 2)
        clock = self.clock.budget(state.to_play, moves_to_go)
        caps = [c for c in (self.cfg.seconds, clock) if c is not None]
        return min(caps) if caps else None

    def think(self, state: GameState, stop: Callable[[], bool] | None = None,
              on_batch: Callable[[], None] | None = None) -> None:
        """Search ``state`` for this move's visits / time (the tree of earlier moves is reused)."""
        self.search.set_position(state)
        seconds = self.budget(state)
        visits = self.cfg.visits if self.cfg.visits > 1 else (None if seconds is not None else 1)
        self.search.run(visits=visits, seconds=seconds, stop=stop, on_batch=on_batch)

    def decide(self, state: GameState) -> int:
        """The move after :meth:`think` (or :data:`RESIGN`), resignation streak updated."""
        infos = self.search.infos()
        best_q = infos[0].q if infos and infos[0].visits > 0 else self.search.root_value()
        self.last_value = best_q
        thr = self.cfg.resign_threshold
        if thr is not None:
            self.low_value_streak = self.low_value_streak + 1 if best_q < thr else 0
            if self.low_value_streak >= self.cfg.resign_moves and state.move_number >= self.cfg.resign_min_move:
                return RESIGN
        return self.search.choose(self.cfg.temperature, self.rng)

    def choose(self, state: GameState, stop: Callable[[], bool] | None = None,
               on_batch: Callable[[], None] | None = None) -> int:
        t0 = time.perf_counter()
        self.think(state, stop, on_batch)
        move = self.decide(state)
        self.clock.used(state.to_play, time.perf_counter() - t0)
        return move


__all__ = ["MAX_VISITS", "MoveInfo", "Search", "SearchConfig", "SearchPlayer", "t_quantile"]
