"""The search tree as flat arrays, :class:`Nodes`, with its compiled operations: walk (select), expand, backup,
and the copies that re-root and prune it.

Node ``i`` is a row of every array. Children of a node are contiguous rows ``first[i] .. first[i]+nchild[i]-1``,
allocated together when the node is expanded. Statistics are kept from the view of the player who
*moved into* the node (the player to move at its parent), so a parent picks the child with the highest
``Q = W / N``. The root's own ``W`` is therefore from the view of the root's opponent.

* ``N`` real visits, ``W`` summed values (−1..1), ``W2`` summed squared values (the spread of a move's values,
  for the lower confidence bound of :mod:`gotk.search.choice`), ``VL`` virtual visits in flight (each counted as
  a loss for the player choosing it, so that several walks of one tree spread out), ``P`` prior, ``move`` the move
  (flat index, pass = size²) that leads into the node, ``status``: :data:`UNEXPANDED`, :data:`PENDING` (waiting
  for the network), :data:`EXPANDED`, :data:`TERMINAL` (game over: ``TV`` is its exact value), ``RV`` an
  expanded node's own network value (the view of its player to move; Gumbel's completed Q reads it).

A walk (:func:`walk`) descends from a start node by one of two interior rules, chosen by a code:

* :data:`PUCT` (AlphaGo Zero): ``Q(c) + c_puct · P(c) · sqrt(N_parent) / (1 + N(c))``, where a child not yet
  visited takes the first-play-urgency value ``Q_parent − fpu · sqrt(Σ P of visited children)`` (Leela Zero's
  reduction; ``Q_parent`` is the parent's own running value for the player to move there);
* :data:`GUMBEL` (Gumbel AlphaZero's interior rule): ``argmax π'(a) − N(a) / (1 + ΣN)``, ``π'`` the improved
  policy of :mod:`gotk.search.gumbel`.

Both count a walk's virtual visits as visits (and, for values, as losses), so one rule serves one walk in flight
and a batch of them alike; with one walk in flight no child carries a virtual visit and the rules are exact.

Python calls these operations with the tree's arrays as a plain tuple (:attr:`Tree.arrays`), and each entry
rebuilds the :class:`Nodes` in compiled code: numba types a named-tuple argument from Python with no fast path,
a plain tuple of arrays on its fast path (as :class:`gotk.game.state.GameState` does with its ``Engine``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from gotk.jit import compiled, internal_kernel, kernel

UNEXPANDED = 0
PENDING = 1
EXPANDED = 2
TERMINAL = 3

# walk() outcome codes
LEAF = 0  # an unexpanded node: evaluate it
TERMINAL_LEAF = 1  # a finished game: backed up already inside walk()
COLLISION = 2  # a node already waiting for the network: virtual visits undone, stop filling the batch

# interior rules
PUCT = 0
GUMBEL = 1

TINY = 1e-30


class Nodes(NamedTuple):
    """The arrays of a tree (see the module docstring); numba passes it as one value."""

    parent: np.ndarray
    move: np.ndarray
    first: np.ndarray
    nchild: np.ndarray
    N: np.ndarray
    W: np.ndarray
    W2: np.ndarray
    VL: np.ndarray
    P: np.ndarray
    status: np.ndarray
    TV: np.ndarray
    RV: np.ndarray


DTYPES = {"parent": np.int32, "move": np.int32, "first": np.int32, "nchild": np.int32, "N": np.float64,
          "W": np.float64, "W2": np.float64, "VL": np.float64, "P": np.float64, "status": np.int8, "TV": np.float64,
          "RV": np.float64}


def new_nodes(capacity: int) -> Nodes:
    """Zeroed arrays of ``capacity`` rows."""
    return Nodes(*(np.zeros(capacity, dtype=DTYPES[name]) for name in Nodes._fields))


# --- Gumbel's completed Q and improved policy (the rules themselves: gotk.search.gumbel) -------------------------

@internal_kernel
def completed_q(t, node, out):
    """Fill ``out[:k]`` with the completed Q of ``node``'s ``k`` children (:mod:`gotk.search.gumbel`); returns the
    largest child visit count. A walk's virtual visits count as visits that lost."""
    f0 = t.first[node]
    k = t.nchild[node]
    total_n = 0.0
    sum_p = 0.0
    weighted = 0.0
    max_n = 0.0
    for j in range(k):
        c = f0 + j
        n = t.N[c] + t.VL[c]
        if n > 0:
            p = max(t.P[c], TINY)
            total_n += n
            sum_p += p
            weighted += p * (t.W[c] - t.VL[c]) / n
            if n > max_n:
                max_n = n
    vmix = t.RV[node]
    if total_n > 0:
        vmix = (t.RV[node] + total_n * weighted / sum_p) / (total_n + 1.0)
    for j in range(k):
        c = f0 + j
        n = t.N[c] + t.VL[c]
        out[j] = (t.W[c] - t.VL[c]) / n if n > 0 else vmix
    return max_n


@internal_kernel
def improved_logits(t, node, c_visit, c_scale, out):
    """``out[:k] = log π + σ(completed q)`` for ``node``'s children (π' is their softmax)."""
    max_n = completed_q(t, node, out)
    f0 = t.first[node]
    scale = (c_visit + max_n) * c_scale
    for j in range(t.nchild[node]):
        out[j] = math.log(max(t.P[f0 + j], TINY)) + scale * (out[j] + 1.0) * 0.5


# --- the walk ---------------------------------------------------------------------------------------------------

@internal_kernel
def _puct_child(t, node, c_puct, fpu):
    n_par = t.N[node] + t.VL[node]
    q_par = -t.W[node] / t.N[node] if t.N[node] > 0 else 0.0
    seen_p = 0.0
    f0 = t.first[node]
    k = t.nchild[node]
    for j in range(k):
        if t.N[f0 + j] + t.VL[f0 + j] > 0:
            seen_p += t.P[f0 + j]
    fpu_q = q_par - fpu * np.sqrt(seen_p)
    sq = np.sqrt(max(n_par, 1.0))
    best = -1
    best_s = -1e300
    for j in range(k):
        c = f0 + j
        n = t.N[c] + t.VL[c]
        q = (t.W[c] - t.VL[c]) / n if n > 0 else fpu_q
        s = q + c_puct * t.P[c] * sq / (1.0 + n)
        if s > best_s:
            best_s = s
            best = c
    return best


@internal_kernel
def _gumbel_child(t, node, c_visit, c_scale, scratch):
    improved_logits(t, node, c_visit, c_scale, scratch)
    f0 = t.first[node]
    k = t.nchild[node]
    top = -np.inf
    total_n = 0.0
    for j in range(k):
        if scratch[j] > top:
            top = scratch[j]
        total_n += t.N[f0 + j] + t.VL[f0 + j]
    z = 0.0
    for j in range(k):
        scratch[j] = math.exp(scratch[j] - top)
        z += scratch[j]
    best = f0
    best_s = -np.inf
    for j in range(k):
        s = scratch[j] / z - (t.N[f0 + j] + t.VL[f0 + j]) / (1.0 + total_n)
        if s > best_s:
            best_s = s
            best = f0 + j
    return best


@internal_kernel
def walk_nodes(t, start, rule, c_puct, fpu, c_visit, c_scale, scratch, path):
    """Walk from the root to a leaf, adding a virtual visit to every node on the way: to ``start`` (the root, or a
    root child the root rule picked), then by the interior ``rule`` (:data:`PUCT` or :data:`GUMBEL`).

    Writes the nodes of the path into ``path`` (root first) and returns ``(code, length)``. A terminal
    leaf is backed up at once (its exact value); a collision with a pending leaf undoes the walk."""
    path[0] = 0
    t.VL[0] += 1
    depth = 0
    node = 0
    if start != 0:
        node = start
        depth = 1
        path[1] = node
        t.VL[node] += 1
    while t.status[node] == EXPANDED:
        if rule == GUMBEL:
            node = _gumbel_child(t, node, c_visit, c_scale, scratch)
        else:
            node = _puct_child(t, node, c_puct, fpu)
        depth += 1
        path[depth] = node
        t.VL[node] += 1
    length = depth + 1
    if t.status[node] == TERMINAL:
        backup_nodes(t, path, length, t.TV[node])
        return TERMINAL_LEAF, length
    if t.status[node] == PENDING:
        for i in range(length):
            t.VL[path[i]] -= 1
        return COLLISION, length
    t.status[node] = PENDING
    return LEAF, length


@internal_kernel
def backup_nodes(t, path, length, value):
    """Add ``value`` (the view of the player who moved into the leaf) along ``path``, flipping sides at every
    level, and remove the walk's virtual visits."""
    v = value
    for i in range(length - 1, -1, -1):
        node = path[i]
        t.N[node] += 1
        t.W[node] += v
        t.W2[node] += v * v
        t.VL[node] -= 1
        v = -v


@internal_kernel
def expand_nodes(t, node, start, moves, priors):
    """Give ``node`` the children ``moves`` with ``priors`` at rows ``start ..``; returns the next free row."""
    k = moves.shape[0]
    t.first[node] = start
    t.nchild[node] = k
    for j in range(k):
        c = start + j
        t.parent[c] = node
        t.move[c] = moves[j]
        t.first[c] = -1
        t.nchild[c] = 0
        t.N[c] = 0
        t.W[c] = 0.0
        t.W2[c] = 0.0
        t.VL[c] = 0
        t.P[c] = priors[j]
        t.status[c] = UNEXPANDED
        t.TV[c] = 0.0
        t.RV[c] = 0.0
    t.status[node] = EXPANDED
    return start + k


# --- the entries Python calls, on the arrays as a plain tuple (module docstring) ----------------------------------

@kernel
def walk(a, start, rule, c_puct, fpu, c_visit, c_scale, scratch, path):
    """:func:`walk_nodes` on ``Nodes(*a)``."""
    return walk_nodes(Nodes(*a), start, rule, c_puct, fpu, c_visit, c_scale, scratch, path)


@kernel
def backup(a, path, length, value):
    """:func:`backup_nodes` on ``Nodes(*a)``."""
    backup_nodes(Nodes(*a), path, length, value)


@kernel
def expand(a, node, start, moves, priors):
    """:func:`expand_nodes` on ``Nodes(*a)``."""
    return expand_nodes(Nodes(*a), node, start, moves, priors)


@kernel
def completed_q_of(a, node, out):
    """:func:`completed_q` on ``Nodes(*a)``."""
    return completed_q(Nodes(*a), node, out)


@kernel
def improved_logits_of(a, node, c_visit, c_scale, out):
    """:func:`improved_logits` on ``Nodes(*a)``."""
    improved_logits(Nodes(*a), node, c_visit, c_scale, out)


# --- copies -----------------------------------------------------------------------------------------------------

@compiled
def extract_subtree(a, new_root, fold_at_most, b):
    """Copy the subtree under ``new_root`` into ``out`` (breadth first, the new root at row 0, children kept
    contiguous); returns the number of rows written. Pending nodes become unexpanded.

    An expanded node other than ``new_root`` with at most ``fold_at_most`` visits is *folded*: copied as an
    unexpanded node that keeps its ``N``, ``W`` and ``W2``, without its children (−1: nothing is folded). A walk that
    reaches a folded node evaluates and expands it again, as a fresh leaf whose statistics carry on."""
    t = Nodes(*a)
    out = Nodes(*b)
    queue = np.empty(out.parent.shape[0], dtype=np.int64)  # old index of each new row
    queue[0] = new_root
    out.parent[0] = -1
    count = 1
    head = 0
    while head < count:
        old = queue[head]
        new = head
        out.move[new] = t.move[old]
        out.N[new] = t.N[old]
        out.W[new] = t.W[old]
        out.W2[new] = t.W2[old]
        out.VL[new] = 0
        out.P[new] = t.P[old]
        out.TV[new] = t.TV[old]
        out.RV[new] = t.RV[old]
        st = t.status[old]
        if st == EXPANDED and old != new_root and t.N[old] <= fold_at_most:
            st = UNEXPANDED
        out.status[new] = UNEXPANDED if st == PENDING else st
        if st == EXPANDED:
            k = t.nchild[old]
            out.first[new] = count
            out.nchild[new] = k
            f0 = t.first[old]
            for j in range(k):
                queue[count + j] = f0 + j
                out.parent[count + j] = new
            count += k
        else:
            out.first[new] = -1
            out.nchild[new] = 0
        head += 1
    return count


@compiled
def subtree_size(a, root):
    """Rows under (and including) ``root``."""
    t = Nodes(*a)
    stack = np.empty(t.first.shape[0], dtype=np.int64)
    stack[0] = root
    top = 1
    total = 0
    while top > 0:
        top -= 1
        node = stack[top]
        total += 1
        if t.status[node] == EXPANDED:
            f0 = t.first[node]
            for j in range(t.nchild[node]):
                stack[top] = f0 + j
                top += 1
    return total


class Tree:
    """Growable :class:`Nodes`; row 0 is the root. The arrays are also reachable by name (``tree.N``).

    ``parent``, ``move``, ``first``, ``nchild``, ``N``, ``W``, ``W2``, ``VL``, ``P``, ``status``, ``TV``, ``RV``:
    the arrays of :attr:`nodes`."""

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = max(16, int(capacity))
        self.nodes = new_nodes(self.capacity)
        self.size = 0
        self.reset()

    @property
    def nodes(self) -> Nodes:
        return self._nodes

    @nodes.setter
    def nodes(self, nodes: Nodes) -> None:
        self._nodes = nodes
        self.arrays = tuple(nodes)  # the same arrays, for the compiled entries (module docstring)
        self.__dict__.update(nodes._asdict())  # and by name: tree.N is tree.nodes.N

    def reset(self) -> None:
        """One unexpanded root."""
        t = self.nodes
        t.parent[0] = -1
        t.move[0] = -1
        t.first[0] = -1
        t.nchild[0] = 0
        t.N[0] = t.W[0] = t.W2[0] = t.VL[0] = 0.0
        t.P[0] = 1.0
        t.status[0] = UNEXPANDED
        t.TV[0] = t.RV[0] = 0.0
        self.size = 1

    def ensure(self, extra: int) -> None:
        """Room for ``extra`` more rows (the arrays double as needed)."""
        need = self.size + extra
        if need <= self.capacity:
            return
        cap = self.capacity
        while cap < need:
            cap *= 2
        grown = new_nodes(cap)
        for old, new in zip(self.nodes, grown, strict=True):
            new[: self.size] = old[: self.size]
        self.nodes = grown
        self.capacity = cap

    def expand(self, node: int, moves: np.ndarray, priors: np.ndarray, value: float) -> None:
        """Give ``node`` the children ``moves`` (int32) with ``priors``, and record its network ``value``."""
        if self.size + moves.size > self.capacity:
            self.ensure(moves.size)
        self.size = expand(self.arrays, node, self.size, moves, priors)
        self.RV[node] = value

    def backup(self, path: np.ndarray, value: float) -> None:
        """Back ``value`` (the view of the player who moved into the path's last node) up the whole ``path``."""
        backup(self.arrays, path, path.shape[0], value)

    def children(self, node: int = 0) -> np.ndarray:
        f = int(self.nodes.first[node])
        return np.arange(f, f + int(self.nodes.nchild[node])) if f >= 0 else np.empty(0, dtype=np.int64)

    def subtree_size(self, node: int = 0) -> int:
        return int(subtree_size(self.arrays, node))

    def reroot(self, node: int) -> None:
        """Make ``node`` the root, keeping its subtree and dropping the rest."""
        if node == 0:
            return
        self._copy_out(node, -1.0, self.subtree_size(node))

    def prune(self, max_rows: int) -> bool:
        """Fold the least visited expansions (see :func:`extract_subtree`) so that at most ``max_rows`` rows remain:
        the expanded nodes are kept by visits, most first, while their children fit (a node's visits are never
        more than its parent's, so the kept ones form a tree under the root). The root stays expanded; every
        node's ``N`` and ``W`` are kept, so the root's statistics and its children's are unchanged. False when
        nothing can be folded (the root's children alone are more than ``max_rows``). Call it between batches
        (no pending node)."""
        t = self.nodes
        expanded = np.flatnonzero(t.status[1: self.size] == EXPANDED) + 1
        if expanded.size == 0:
            return False
        visits = t.N[expanded]
        order = np.argsort(-visits, kind="stable")
        rows = 1 + int(t.nchild[0]) + np.cumsum(t.nchild[expanded[order]])
        fits = int(np.searchsorted(rows, max_rows, side="right"))  # the first `fits` in that order fit
        if fits >= expanded.size:
            return False
        fold_at_most = float(visits[order[fits]])  # ties with the first that does not fit are folded too
        before = self.size
        self._copy_out(0, fold_at_most, self.subtree_size(0))
        return self.size < before

    def _copy_out(self, node: int, fold_at_most: float, bound: int) -> None:
        out = new_nodes(self.capacity)
        count = extract_subtree(self.arrays, node, fold_at_most, tuple(out))
        assert count <= bound
        self.nodes = out
        self.size = int(count)
        out.parent[0] = -1
        out.P[0] = 1.0


__all__ = ["COLLISION", "EXPANDED", "GUMBEL", "LEAF", "Nodes", "PENDING", "PUCT", "TERMINAL", "TERMINAL_LEAF",
           "UNEXPANDED", "Tree", "backup", "backup_nodes", "completed_q", "completed_q_of", "expand", "expand_nodes",
           "extract_subtree", "improved_logits", "improved_logits_of", "new_nodes", "subtree_size", "walk",
           "walk_nodes"]
