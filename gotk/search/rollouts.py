"""Rollouts as the search's leaf evaluation: a leaf valued by playouts to the end (:mod:`gotk.game.playouts`), and
AlphaGo's mix of a value network with them. Both are evaluators of the search's seam (:mod:`gotk.search.evaluate`),
so the one search plays, analyses and self-plays with them as with a network.

* :class:`RolloutEvaluator`: ``playouts`` playouts from each leaf (a copy of the leaf kept when the search stands
  on it; the batch's playouts run together, on every core), uniform or drawn by a fast rollout policy
  (:mod:`gotk.train.rollout`); the leaf's value is the playouts' mean result for the player to move (+1 a win, −1 a
  loss, 0 a draw, by the area count of the finished playout, komi included); the priors are the rollout policy's
  (pattern priors), else uniform over the moves (the search keeps its candidates, the sensible moves, and
  renormalises). With no network at all this is Monte Carlo tree search as the engines before AlphaGo played
  (MoGo, Fuego, Pachi; the book's chapter 4).
* :class:`MixedEvaluator`: a network's priors, and the leaf value ``(1 − λ)·v(s) + λ·z`` of the value head ``v``
  and the rollouts' ``z`` (AlphaGo's leaf evaluation, λ = 0.5 in its paper).

:func:`make_evaluator` builds the one a search's settings name (``SearchConfig.leaf_lambda``, ``rollouts``), for
every player the factory builds.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from gotk.game.playouts import Playouts
from gotk.game.state import BLACK
from gotk.search.config import SearchConfig, SearchSetupError
from gotk.search.evaluate import Leaves, NetEvaluator


class RolloutEvaluator:
    """Leaves valued by ``playouts`` uniform playouts each (module docstring), the leaves of a batch shared among
    ``threads`` threads (the playouts release the GIL: one core each); ``seed`` makes them reproducible whatever
    the threads' timing (each thread plays a fixed share of the batch from its own seeded generator)."""

    symmetries = False
    num_globals = 0
    encoder = None

    def __init__(self, board_size: int | None = None, playouts: int = 1, seed: int | None = None,
                 threads: int | None = None, policy=None, priors: bool = True) -> None:
        if playouts < 1:
            raise SearchSetupError(f"--rollouts must be >= 1, not {playouts}")
        if policy is not None and not policy.any_size and board_size not in (None, policy.board_size):
            raise SearchSetupError(f"the rollout policy is for {policy.board_size}x{policy.board_size}, the search "
                                   f"for {board_size}x{board_size}")
        self.policy = policy  # a RolloutPolicy (gotk.train.rollout): the playouts' moves, and the priors
        self.pattern_priors = policy is not None and priors
        if policy is not None and not policy.any_size:
            board_size = policy.board_size
        self.board_size = board_size  # None: any size (playout engines per size met)
        self.playouts = playouts
        self.seed = seed
        self.threads = max(1, threads if threads is not None else min(2, os.cpu_count() or 1))
        self.engines: dict[tuple[int, int], Playouts] = {}
        self.pool: ThreadPoolExecutor | None = None
        self.seconds = 0.0  # time inside the playouts
        self.calls = 0
        self.positions = 0
        self.rollouts = 0

    def _engine(self, size: int, thread: int) -> Playouts:
        engine = self.engines.get((size, thread))
        if engine is None:
            seed = None if self.seed is None else self.seed + 1000 * thread + size
            engine = self.engines[(size, thread)] = Playouts(size, seed=seed, policy=self.policy_at(size))
        return engine

    def policy_at(self, size: int):
        """The rollout policy for ``size`` boards (None: uniform playouts)."""
        return None if self.policy is None else self.policy.at_size(size)

    def _check(self, state) -> None:
        if self.board_size is not None and state.size != self.board_size:
            raise ValueError(f"rollouts of {self.board_size}x{self.board_size} positions, not "
                             f"{state.size}x{state.size}")

    def _values(self, states: list, thread: int) -> list[float]:
        out = []
        for st in states:
            scores = self._engine(st.size, thread).run(st, self.playouts)
            black = float(np.mean(np.sign(scores)))
            out.append(black if st.to_play == BLACK else -black)
        return out

    def value(self, state) -> float:
        """The playouts' mean result from ``state`` for its player to move (−1..1)."""
        self._check(state)
        t = time.perf_counter()
        (v,) = self._values([state], 0)
        self.seconds += time.perf_counter() - t
        self.rollouts += self.playouts
        return v

    def estimate(self, state, n: int) -> tuple[float, np.ndarray]:
        """``n`` playouts from ``state``: their mean result for the player to move (−1..1) and their mean final
        ownership (Black +1, White −1; size²)."""
        self._check(state)
        engine = self._engine(state.size, 0)
        scores = engine.run(state, n)
        black = float(np.mean(np.sign(scores)))
        self.rollouts += n
        return (black if state.to_play == BLACK else -black), engine.ownership.copy()

    def leaves(self, rows: int) -> Leaves:
        return Leaves(values=np.zeros(rows, dtype=np.float64), states=[None] * rows)

    def write(self, leaves: Leaves, row: int, state) -> None:
        """Keep a copy of the leaf: its playouts run with the batch's (:meth:`evaluate_leaves`)."""
        self._check(state)
        leaves.states[row] = state.copy()

    def run_playouts(self, leaves: Leaves, rows: int) -> None:
        """The playouts of the first ``rows`` leaves into ``leaves.values``, on :attr:`threads` threads."""
        t = time.perf_counter()
        states = leaves.states[:rows]
        k = min(self.threads, rows)
        if k <= 1:
            values = self._values(states, 0)
        else:
            if self.pool is None:
                self.pool = ThreadPoolExecutor(self.threads, thread_name_prefix="gotk-rollouts")
            shares = [states[i::k] for i in range(k)]
            done = list(self.pool.map(self._values, shares, range(k)))
            values = [0.0] * rows
            for i, share in enumerate(done):
                values[i::k] = share
        leaves.values[:rows] = values
        self.seconds += time.perf_counter() - t
        self.rollouts += rows * self.playouts

    def evaluate_leaves(self, leaves: Leaves, rows: int,
                        syms: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        self.run_playouts(leaves, rows)
        self.calls += 1
        self.positions += rows
        size = leaves.states[0].size if rows else (self.board_size or 19)
        n = size * size + 1
        if self.pattern_priors:
            priors = np.stack([self.policy_at(st.size).probabilities(st) for st in leaves.states[:rows]]) if rows \
                else np.zeros((0, n))
        else:
            priors = np.full((rows, n), 1.0 / n)
        return priors, leaves.values[:rows].copy()


class MixedEvaluator:
    """A network's priors and AlphaGo's mixed leaf value ``(1 − λ)·v + λ·z`` (module docstring)."""

    def __init__(self, net: NetEvaluator, rollouts: RolloutEvaluator, lam: float) -> None:
        if not 0.0 <= lam <= 1.0:
            raise SearchSetupError(f"--lambda must be from 0 to 1, not {lam:g}")
        if rollouts.board_size not in (None, net.board_size):
            raise SearchSetupError(f"rollouts of {rollouts.board_size}x{rollouts.board_size} for a network of "
                                   f"{net.board_size}x{net.board_size}")
        self.net = net
        self.rollouts = rollouts
        self.lam = float(lam)
        self.background: ThreadPoolExecutor | None = None  # where a batch's playouts run beside the network
        # what callers read of a network evaluator
        self.agent, self.value_agent, self.encoder = net.agent, net.value_agent, net.encoder
        self.board_size, self.num_globals, self.symmetries = net.board_size, net.num_globals, net.symmetries

    @property
    def seconds(self) -> float:
        return self.net.seconds + self.rollouts.seconds

    @property
    def calls(self) -> int:
        return self.net.calls

    @property
    def positions(self) -> int:
        return self.net.positions

    def reseed(self, seed: int | None) -> None:
        self.net.reseed(seed)

    def run(self, *args, **kwargs):
        return self.net.run(*args, **kwargs)

    def leaves(self, rows: int) -> Leaves:
        out = self.net.leaves(rows)
        out.values, out.states = np.zeros(rows, dtype=np.float64), [None] * rows
        return out

    def write(self, leaves: Leaves, row: int, state) -> None:
        self.net.write(leaves, row, state)
        self.rollouts.write(leaves, row, state)

    def evaluate_leaves(self, leaves: Leaves, rows: int,
                        syms: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The network's priors and values and the rollouts' results of the same leaves, the playouts run while the
        network runs (both release the GIL: the playouts take the cores the network leaves idle)."""
        if self.background is None:
            self.background = ThreadPoolExecutor(1, thread_name_prefix="gotk-mixed")
        done = self.background.submit(self.rollouts.run_playouts, leaves, rows)
        probs, v = self.net.evaluate_leaves(leaves, rows, syms)
        done.result()
        return probs, (1.0 - self.lam) * v + self.lam * leaves.values[:rows]


def make_evaluator(agent, value_agent, config: SearchConfig, board_size: int | None = None, rollout_policy=None):
    """The evaluator a search's settings name: ``agent`` None → rollouts alone (on ``board_size``, None: any), with
    ``rollout_policy``'s priors and playouts when given (else uniform); ``config.leaf_lambda`` 0 → the network
    (:class:`NetEvaluator`); above 0 → AlphaGo's mix, its playouts by ``rollout_policy`` when given. Raises
    :class:`SearchSetupError` with a one-line reason (a rollout policy where no rollouts are played, or of
    another board size than the network's)."""
    cfg = config
    seed = cfg.seed
    if agent is None:
        return RolloutEvaluator(board_size, cfg.rollouts, None if seed is None else seed + 2, policy=rollout_policy)
    if rollout_policy is not None and cfg.leaf_lambda <= 0.0:
        raise SearchSetupError("--rollout-policy plays the rollouts of the leaf value: give --lambda above 0 (0.5 is "
                               "AlphaGo's)")
    if rollout_policy is not None and rollout_policy.board_size != agent.board_size:
        raise SearchSetupError(f"the rollout policy is for {rollout_policy.board_size}x{rollout_policy.board_size}, "
                               f"the agent for {agent.board_size}x{agent.board_size}")
    need_value = cfg.leaf_lambda < 1.0
    net = NetEvaluator(agent, value_agent, symmetries=cfg.symmetries, seed=seed, need_value=need_value)
    if cfg.leaf_lambda <= 0.0:
        return net
    return MixedEvaluator(net, RolloutEvaluator(agent.board_size, cfg.rollouts, None if seed is None else seed + 2,
                                                policy=rollout_policy, priors=False), cfg.leaf_lambda)


__all__ = ["MixedEvaluator", "RolloutEvaluator", "make_evaluator"]
