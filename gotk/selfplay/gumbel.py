"""Gumbel AlphaZero's search rules (Danihelka, Schrittwieser, Silver, Hubert: *Policy improvement by planning
with Gumbel*, ICLR 2022), over the flat search tree of :mod:`gotk.search.tree`, whose ``RV`` holds the
network's raw value of each expanded node for the player to move there.

* **Completed Q.** A node's children get ``q(a) = W/N`` (the node's mover's view) when visited, else the node's
  *mixed value* ``v_mix = (v̂ + ΣN · Σ_visited π(a) q(a) / Σ_visited π(a)) / (1 + ΣN)`` (``v̂`` the raw value,
  ``π`` the priors).
* **σ.** ``σ(q) = (c_visit + max_b N(b)) · c_scale · q̂``, where ``q̂ = (q + 1) / 2`` maps the values' known range
  −1..1 onto 0..1 (the paper's normalisation to [0, 1]; a min-max rescale over the children would blow a
  difference of 0.01 between two moves up to the whole scale).
* **Improved policy** ``π' = softmax(log π + σ(completed q))``: the training target, and the rule below the root,
  where the child maximising ``π'(a) − N(a) / (1 + ΣN)`` is visited (the visits then follow ``π'``).
* **Root.** ``m`` moves are sampled without replacement by Gumbel-top-k (the largest ``g(a) + log π(a)``,
  ``g`` i.i.d. Gumbel), and sequential halving spends the budget on them: :func:`considered_visits` gives, for
  each simulation, how many visits the candidate to visit next must have, and among those the one with the
  largest ``g + log π + σ(q)`` is visited. The move played is the same argmax among the most-visited ones.

The schedule is mctx's ``get_sequence_of_considered_visits``, read from google-deepmind/mctx (Apache-2.0).
"""

from __future__ import annotations

import math

import numpy as np

from gotk.jit import kernel
from gotk.search import tree as T

TINY = 1e-30
EXPANDED = T.EXPANDED


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
def completed_q(node, first, nchild, N, W, P, RV, out):
    """Fill ``out[:k]`` with the completed Q of ``node``'s ``k`` children (module docstring); returns the
    largest child visit count."""
    f0 = first[node]
    k = nchild[node]
    total_n = 0.0
    sum_p = 0.0
    weighted = 0.0
    max_n = 0.0
    for j in range(k):
        c = f0 + j
        if N[c] > 0:
            p = max(P[c], TINY)
            total_n += N[c]
            sum_p += p
            weighted += p * W[c] / N[c]
            if N[c] > max_n:
                max_n = N[c]
    vmix = RV[node]
    if total_n > 0:
        vmix = (RV[node] + total_n * weighted / sum_p) / (total_n + 1.0)
    for j in range(k):
        c = f0 + j
        out[j] = W[c] / N[c] if N[c] > 0 else vmix
    return max_n


@kernel
def improved_logits(node, first, nchild, N, W, P, RV, c_visit, c_scale, out):
    """``out[:k] = log π + σ(completed q)`` for ``node``'s children (π' is their softmax)."""
    max_n = completed_q(node, first, nchild, N, W, P, RV, out)
    f0 = first[node]
    scale = (c_visit + max_n) * c_scale
    for j in range(nchild[node]):
        out[j] = math.log(max(P[f0 + j], TINY)) + scale * (out[j] + 1.0) * 0.5


@kernel
def root_pick(first, nchild, N, W, P, RV, gumbel, c_visit, c_scale, visits, scratch):
    """The root child to visit: among those with exactly ``visits`` visits (``-1``: the most visited ones),
    the largest ``g + log π + σ(q)``. Returns the child's row (−1 when none qualifies)."""
    improved_logits(0, first, nchild, N, W, P, RV, c_visit, c_scale, scratch)
    f0 = first[0]
    k = nchild[0]
    want = visits
    if want < 0:
        for j in range(k):
            if N[f0 + j] > want:
                want = N[f0 + j]
    best = -1
    best_s = -np.inf
    for j in range(k):
        if N[f0 + j] == want:
            s = gumbel[j] + scratch[j]
            if s > best_s:
                best_s = s
                best = f0 + j
    return best


@kernel
def descend(start, first, nchild, N, W, P, RV, status, c_visit, c_scale, scratch, path):
    """Walk from root child ``start`` to a leaf by the interior rule (``argmax π'(a) − N(a) / (1 + ΣN)``);
    writes ``path`` (the root, ``start``, ...) and returns its length. Virtual visits are not used: a game's
    tree has one walk in flight at a time."""
    path[0] = 0
    path[1] = start
    length = 2
    node = start
    while status[node] == EXPANDED:
        improved_logits(node, first, nchild, N, W, P, RV, c_visit, c_scale, scratch)
        f0 = first[node]
        k = nchild[node]
        top = -np.inf
        total_n = 0.0
        for j in range(k):
            if scratch[j] > top:
                top = scratch[j]
            total_n += N[f0 + j]
        z = 0.0
        for j in range(k):
            scratch[j] = math.exp(scratch[j] - top)
            z += scratch[j]
        best = f0
        best_s = -np.inf
        for j in range(k):
            s = scratch[j] / z - N[f0 + j] / (1.0 + total_n)
            if s > best_s:
                best_s = s
                best = f0 + j
        node = best
        path[length] = node
        length += 1
    return length


@kernel
def backup_path(N, W, W2, path, length, value):
    """Add ``value`` (the view of the player who moved into the leaf) along ``path``, flipping sides at each
    level (as :func:`gotk.search.tree.backup`, without virtual visits)."""
    v = value
    for i in range(length - 1, -1, -1):
        node = path[i]
        N[node] += 1
        W[node] += v
        W2[node] += v * v
        v = -v


def improved_policy(tree, c_visit: float, c_scale: float, scratch: np.ndarray) -> np.ndarray:
    """π' over the root's children (in child order)."""
    k = int(tree.nchild[0])
    improved_logits(0, tree.first, tree.nchild, tree.N, tree.W, tree.P, tree.RV, c_visit, c_scale, scratch)
    x = scratch[:k] - scratch[:k].max()
    w = np.exp(x)
    return w / w.sum()


__all__ = ["backup_path", "completed_q", "considered_visits", "descend", "improved_logits",
           "improved_policy", "root_pick"]
