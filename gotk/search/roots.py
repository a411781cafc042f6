"""The root rules the one search is composed of (as mctx composes ``muzero_policy`` and ``gumbel_muzero_policy``
from a root action selection and an interior one): where each walk starts, what the search's policy target is and
whether the rule makes the final choice itself.

A root rule is built once per :class:`~gotk.search.core.Search` (:func:`root_rule`) and keeps its own per-move
state: :meth:`~RootRule.start` draws it once the root's children are known (a move's search, or a reused tree's
first walk), and the other methods read it.

* :class:`PuctRoot`: AlphaZero's. Every walk starts at the root and follows the interior rule; a search that asks
  for noise gets Dirichlet noise mixed into the root's priors (``noise_fraction``, ``dirichlet_alpha``); the target
  is the visit shares; the final choice is the choice module's (most visits, or the lower confidence bound).
* :class:`GumbelRoot`: Gumbel AlphaZero's (:mod:`gotk.search.gumbel`). Gumbel-top-k picks the candidates,
  sequential halving decides which one each walk starts from, the target is the improved policy π', and the
  final choice is its own (the largest ``g + log π + σ(q)`` among the most visited since the search began).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from gotk.search import gumbel as G
from gotk.search import tree as T
from gotk.search.config import SearchConfig


class RootRule(Protocol):
    """What the search asks of its root rule."""

    #: True when :meth:`final` makes the final choice (else the choice module ranks the root's children itself)
    chooses: bool

    def start(self, tree: T.Tree, rng: np.random.Generator, size: int, target: int | None, noise: bool,
              scratch: np.ndarray) -> None:
        """The per-move draws, once the root (row 0 of ``tree``) is expanded: ``target`` is the root visits this
        move's search reaches (None: unbounded), ``noise`` whether this search explores (self-play's full
        searches), ``size`` the board's."""

    def child(self, tree: T.Tree, scratch: np.ndarray) -> int:
        """The row the next walk starts from: the root itself (0), or the root child the rule picks."""

    def final(self, tree: T.Tree, scratch: np.ndarray) -> int:
        """The root child (row) the rule plays, −1 when it leaves the choice to the choice module."""

    def target(self, tree: T.Tree, scratch: np.ndarray) -> np.ndarray:
        """The search's policy over the root's children (child order): the training target."""


class PuctRoot:
    """AlphaZero's root (module docstring)."""

    chooses = False

    def __init__(self, cfg: SearchConfig) -> None:
        self.cfg = cfg

    def start(self, tree: T.Tree, rng: np.random.Generator, size: int, target: int | None, noise: bool,
              scratch: np.ndarray) -> None:
        cfg = self.cfg
        if noise and cfg.noise_fraction > 0:
            kids = tree.children(0)
            draw = rng.dirichlet(np.full(kids.size, cfg.alpha(size)))
            tree.P[kids] = (1 - cfg.noise_fraction) * tree.P[kids] + cfg.noise_fraction * draw

    def child(self, tree: T.Tree, scratch: np.ndarray) -> int:
        return 0

    def final(self, tree: T.Tree, scratch: np.ndarray) -> int:
        return -1

    def target(self, tree: T.Tree, scratch: np.ndarray) -> np.ndarray:
        kids = tree.children(0)
        n = tree.N[kids]
        return n / n.sum() if n.sum() > 0 else tree.P[kids] / tree.P[kids].sum()


class GumbelRoot:
    """Gumbel AlphaZero's root (module docstring): its per-move state is the Gumbel draws, the halving schedule and
    the visits the root's children had when the move's search began (a reused subtree's)."""

    chooses = True

    def __init__(self, cfg: SearchConfig) -> None:
        self.cfg = cfg
        self.gumbel: np.ndarray | None = None
        self.schedule: np.ndarray | None = None
        self.base: np.ndarray | None = None  # root children's visits when the move's search began
        self.n_start = 0.0  # the root's visits then

    def start(self, tree: T.Tree, rng: np.random.Generator, size: int, target: int | None, noise: bool,
              scratch: np.ndarray) -> None:
        cfg = self.cfg
        kids = tree.children(0)
        k = kids.size
        if cfg.gumbel_scale > 0:
            self.gumbel = rng.gumbel(size=k) * cfg.gumbel_scale
        else:  # no noise: moves of equal prior are still taken in a random order, not the board's
            self.gumbel = rng.random(k) * 1e-9
        self.base = tree.N[kids].copy()
        self.n_start = float(tree.N[0])
        budget = cfg.visits if target is None else max(0, int(target - tree.N[0]))
        self.schedule = G.considered_visits(min(cfg.considered, k), budget)

    def child(self, tree: T.Tree, scratch: np.ndarray) -> int:
        cfg = self.cfg
        k = int(tree.N[0] + tree.VL[0] - self.n_start)
        visits = int(self.schedule[k]) if k < self.schedule.shape[0] else -1
        row = G.root_pick(tree.arrays, self.gumbel, self.base, cfg.c_visit, cfg.c_scale, visits, scratch)
        if row < 0:  # the schedule's visit count is gone (a terminal child's): the most visited
            row = G.root_pick(tree.arrays, self.gumbel, self.base, cfg.c_visit, cfg.c_scale, -1, scratch)
        return row

    def final(self, tree: T.Tree, scratch: np.ndarray) -> int:
        base = self.base if tree.N[0] > self.n_start else np.zeros_like(self.base)
        return int(G.root_pick(tree.arrays, self.gumbel, base, self.cfg.c_visit, self.cfg.c_scale, -1, scratch))

    def target(self, tree: T.Tree, scratch: np.ndarray) -> np.ndarray:
        return G.improved_policy(tree.arrays, self.cfg.c_visit, self.cfg.c_scale, scratch)


ROOT_RULES: dict[str, type[PuctRoot] | type[GumbelRoot]] = {"puct": PuctRoot, "gumbel": GumbelRoot}


def root_rule(cfg: SearchConfig) -> RootRule:
    """The root rule ``cfg.search`` names, built for ``cfg``."""
    return ROOT_RULES[cfg.search](cfg)


__all__ = ["ROOT_RULES", "GumbelRoot", "PuctRoot", "RootRule", "root_rule"]
