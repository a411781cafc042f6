"""A player that searches: :class:`SearchPlayer` runs the one search (:mod:`gotk.search.core`) for each move's
visits, seconds or clock budget and plays its choice, or resigns.

The move played is the search's final choice (:func:`gotk.search.choice.choose`): at ``temperature`` 0 the
most visited root child, or with ``lcb`` > 0 the move whose value has the best lower confidence bound among those
with more than ``lcb`` times the most visits (and more than 2; Leela Zero 0.17's rule, :mod:`gotk.search.lcb`), or
with a Gumbel root Gumbel's choice; above 0, one sampled with probability ∝ ``N^(1/T)``. Resignation is the choice
module's rule too (:class:`gotk.search.choice.Resignation`). The tree is kept between
moves: the next search starts from the subtree of the moves played since (ours and the opponent's), when the new
position continues the old one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from gotk.game.moves import sensible_moves
from gotk.game.state import GameState
from gotk.nets.agent import value_head_warning
from gotk.search import choice as C
from gotk.search.choice import RESIGN
from gotk.search.clock import Clock
from gotk.search.config import SearchConfig
from gotk.search.core import Search
from gotk.search.rollouts import make_evaluator


class SearchPlayer:
    """A player that searches: ``choose(state)`` runs the search for the
    configured visits / seconds / clock budget and plays its choice, or resigns (see :class:`SearchConfig`)."""

    def __init__(self, agent, value_agent=None, config: SearchConfig | None = None, name: str | None = None,
                 evaluator=None, rollout_policy=None, board_size: int | None = None) -> None:
        self.cfg = (config or SearchConfig()).validate()
        if agent is None:  # Monte Carlo tree search without a network: rollouts value every leaf
            self.cfg = replace(self.cfg, leaf_lambda=1.0)
        self.agent = agent
        self.value_agent = value_agent
        self.rollout_policy = rollout_policy
        # board_size: a search without a network on that size only (None: any size; a rollout policy's own)
        self.evaluator = evaluator or make_evaluator(agent, value_agent, self.cfg, board_size=board_size,
                                                     rollout_policy=rollout_policy)
        self.rng = np.random.default_rng(None if self.cfg.seed is None else self.cfg.seed + 1)
        self.search = Search(self.evaluator, self.cfg, rng=self.rng)
        self.clock = Clock()
        self.has_value = True
        limit = f"{self.cfg.visits}v" if self.cfg.seconds is None else f"{self.cfg.seconds:g}s"
        mix = f"-lambda{self.cfg.leaf_lambda:g}" if agent is not None and self.cfg.leaf_lambda > 0 else ""
        patterns = f"-{rollout_policy.name}" if rollout_policy is not None else ""
        self.name = name or (f"gotk-{agent.name}-{self.cfg.search}{limit}{mix}{patterns}" if agent is not None
                             else f"gotk-mcts-{limit}{patterns}")
        self.resignation = C.Resignation(self.cfg.resign_threshold, self.cfg.resign_moves, self.cfg.resign_min_move)
        self.last_value: float | None = None
        # one line when the leaf values come from a head no better than the komi/handicap baseline, else None
        self.warning = value_head_warning(value_agent or agent) if agent is not None and self.cfg.leaf_lambda < 1 \
            else None

    @property
    def board_size(self) -> int | None:
        if self.agent is not None:
            return self.agent.board_size
        pol = self.rollout_policy
        return pol.board_size if pol is not None and not pol.any_size else None

    def reset(self) -> None:
        """A new game: fresh tree, resignation streak and clock (random streams continue)."""
        self.search.clear()
        self.resignation.reset()
        self.last_value = None
        self.clock.reset()

    def policy(self, state: GameState) -> np.ndarray:
        """The network's policy; without one, the rollout policy's, else uniform over the sensible moves (pass when
        none is left)."""
        if self.agent is None and self.rollout_policy is not None:
            return self.rollout_policy.at_size(state.size).probabilities(state)
        if self.agent is None:
            probs = np.zeros(state.size * state.size + 1)
            moves = sensible_moves(state)
            probs[moves if moves.size else state.pass_point] = 1.0 / max(1, moves.size)
            return probs
        return self.agent.policy(state)

    def value(self, state: GameState) -> float:
        if self.agent is None or self.cfg.leaf_lambda >= 1:
            return float(self.search.evaluator.rollouts.value(state) if self.agent is not None
                         else self.evaluator.value(state))
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
        if self.resignation.update(best_q, state.move_number):
            return RESIGN
        return C.choose(self.search, self.cfg.temperature, self.rng)

    def choose(self, state: GameState, stop: Callable[[], bool] | None = None,
               on_batch: Callable[[], None] | None = None) -> int:
        t0 = time.perf_counter()
        self.think(state, stop, on_batch)
        move = self.decide(state)
        self.clock.used(state.to_play, time.perf_counter() - t0)
        return move


__all__ = ["SearchPlayer"]
