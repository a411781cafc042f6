"""Gumbel AlphaZero's root rules (Danihelka, Schrittwieser, Silver, Hubert: *Policy improvement by planning with
Gumbel*, ICLR 2022) over the search tree of :mod:`gotk.search.tree`, whose ``RV`` holds the network's raw value
of each expanded node for the player to move there.

* **Completed Q.** A node's children get ``q(a) = W/N`` (the node's mover's view) when visited, else the node's
  *mixed value* ``v_mix = (v̂ + ΣN · Σ_visited π(a) q(a) / Σ_visited π(a)) / (1 + ΣN)`` (``v̂`` the raw value,
  ``π`` the priors) (:func:`gotk.search.tree.completed_q`).
* **σ.** ``σ(q) = (c_visit + max_b N(b)) · c_scale · q̂``, where ``q̂ = (q + 1) / 2`` maps the values' known range
  −1..1 onto 0..1 (the paper's normalisation to [0, 1]; a min-max rescale over the children would blow a
  difference of 0.01 between two moves up to the whole scale).
* **Improved policy** ``π' = softmax(log π + σ(completed q))``: the training target, and the interior rule
  (:data:`gotk.search.tree.GUMBEL`), where the child maximising ``π'(a) − N(a) / (1 + ΣN)`` is visited.
* **Root.** ``m`` moves are sampled without replacement by Gumbel-top-k (the largest ``g(a) + log π(a)``,
  ``g`` i.i.d. Gumbel), and sequential halving spends the budget on them: :func:`considered_visits` gives, for
  each simulation, how many visits the candidate to visit next must have, and among those the one with the
  largest ``g + log π + σ(q)`` is visited (:func:`root_pick`). The move played is the same argmax among the
  most-visited ones. Visits are counted from the search's start (``base``: the visits a reused tree brought),
  so a reused subtree's statistics sharpen ``q`` while the halving runs over the new simulations.

The schedule is mctx's ``get_sequence_of_considered_visits``, read from google-deepmind/mctx (Apache-2.0).
"""

from __future__ import annotations

import math

import numpy as np

from gotk.jit import kernel
from gotk.search.tree import Nodes, improved_logits, improved_logits_of


def considered_visits(max_considered: int, simulations: int) -> np.ndarray:
    """Sequential halving's schedule: entry ``k`` is the visit count the candidate of simulation ``k`` has
    (the first ``m`` simulations visit ``m`` candidates once each, and so on, halving the candidates in each
    phase down to 2, each phase spending about ``simulations / (log2 m · candidates)`` visits on each)."""
    if max_considered <= 1:
        return np.arange(simulations, dtype=np.int64)
    log2max = int(math.ceil(math.log2(max_considered)))
    seq: list[int] = []
    visits = [0] * max_considered
    considered = max_considered
    while len(seq) < simulations:
        extra = max(1, int(simulations / (log2max * considered)))
        for _ in range(extra):
            seq.extend(visits[:considered])
            for i in range(considered):
                visits[i] += 1
        considered = max(2, considered // 2)
    return np.array(seq[:simulations], dtype=np.int64)


@kernel
def root_pick(a, gumbel, base, c_visit, c_scale, visits, scratch):
    """The root child to visit: among those with exactly ``visits`` visits since the search began (``N + VL −
    base``; ``-1``: the most visited ones), the largest ``g + log π + σ(q)``. Returns the child's row (−1 when none
    qualifies). ``a``: the tree's arrays as a plain tuple (:attr:`gotk.search.tree.Tree.arrays`)."""
    t = Nodes(*a)
    improved_logits(t, 0, c_visit, c_scale, scratch)
    f0 = t.first[0]
    k = t.nchild[0]
    want = float(visits)
    if visits < 0:
        for j in range(k):
            n = t.N[f0 + j] + t.VL[f0 + j] - base[j]
            if n > want:
                want = n
    best = -1
    best_s = -np.inf
    for j in range(k):
        if t.N[f0 + j] + t.VL[f0 + j] - base[j] == want:
            s = gumbel[j] + scratch[j]
            if s > best_s:
                best_s = s
                best = f0 + j
    return best


def improved_policy(a: tuple, c_visit: float, c_scale: float, scratch: np.ndarray) -> np.ndarray:
    """π' over the root's children (in child order) of the tree whose arrays are ``a`` (a plain tuple,
    :attr:`gotk.search.tree.Tree.arrays`)."""
    k = int(Nodes(*a).nchild[0])
    improved_logits_of(a, 0, c_visit, c_scale, scratch)
    x = scratch[:k] - scratch[:k].max()
    w = np.exp(x)
    return w / w.sum()


__all__ = ["considered_visits", "improved_policy", "root_pick"]
