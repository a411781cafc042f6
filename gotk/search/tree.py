"""The search tree as flat arrays, with its select / expand / backup loop compiled by numba.

Node ``i`` is a row of every array. Children of a node are contiguous rows ``first[i] .. first[i]+nchild[i]-1``,
allocated together when the node is expanded. Statistics are kept from the view of the player who
*moved into* the node (the player to move at its parent), so a parent picks the child with the highest
``Q = W / N``. The root's own ``W`` is therefore from the view of the root's opponent.

* ``N`` real visits, ``W`` summed values (−1..1), ``W2`` summed squared values (the spread of a move's values,
  for the lower confidence bound of :meth:`gotk.search.puct.Search.choose`), ``VL`` virtual visits in flight
  (each counted as a loss for the player choosing it, so that a batch spreads out over the tree), ``P`` prior,
  ``move`` the move (flat index, pass = size²) that leads into the node, ``status``: :data:`UNEXPANDED`, :data:`PENDING`
  (waiting for the network), :data:`EXPANDED`, :data:`TERMINAL` (game over: ``TV`` is its exact value).

PUCT (AlphaGo Zero): ``Q(c) + c_puct · P(c) · sqrt(N_parent) / (1 + N(c))``, where a child not yet
visited takes the first-play-urgency value ``Q_parent − fpu · sqrt(Σ P of visited children)``
(Leela Zero's reduction; ``Q_parent`` is the parent's own running value for the player to move there).
"""

from __future__ import annotations

import numpy as np

from gotk.jit import compiled, kernel

UNEXPANDED = 0
PENDING = 1
EXPANDED = 2
TERMINAL = 3

# select() outcome codes
LEAF = 0  # an unexpanded node: evaluate it
TERMINAL_LEAF = 1  # a finished game: backed up already inside select()
COLLISION = 2  # a node already waiting for the network: virtual loss undone, stop filling the batch


@kernel
def select(first, nchild, N, W, W2, VL, P, status, TV, c_puct, fpu, path):
    """Walk from the root (node 0) to a leaf by PUCT, adding a virtual visit to every node on the way.

    Writes the nodes of the path into ``path`` (root first) and returns ``(code, length)``. A terminal
    leaf is backed up at once (its exact value); a collision with a pending leaf undoes the walk.
    """
    node = 0
    depth = 0
    path[0] = 0
    VL[0] += 1
    while status[node] == EXPANDED:
        n_par = N[node] + VL[node]
        q_par = -W[node] / N[node] if N[node] > 0 else 0.0
        seen_p = 0.0
        f0 = first[node]
        k = nchild[node]
        for j in range(k):
            if N[f0 + j] + VL[f0 + j] > 0:
                seen_p += P[f0 + j]
        fpu_q = q_par - fpu * np.sqrt(seen_p)
        sq = np.sqrt(max(n_par, 1.0))
        best = -1
        best_s = -1e300
        for j in range(k):
            c = f0 + j
            n = N[c] + VL[c]
            q = (W[c] - VL[c]) / n if n > 0 else fpu_q
            s = q + c_puct * P[c] * sq / (1.0 + n)
            if s > best_s:
                best_s = s
                best = c
        node = best
        depth += 1
        path[depth] = node
        VL[node] += 1
    length = depth + 1
    if status[node] == TERMINAL:
        backup(N, W, W2, VL, path, length, TV[node])
        return TERMINAL_LEAF, length
    if status[node] == PENDING:
        for i in range(length):
            VL[path[i]] -= 1
        return COLLISION, length
    status[node] = PENDING
    return LEAF, length


@kernel
def backup(N, W, W2, VL, path, length, value):
    """Add ``value`` (the view of the player who moved into the leaf) along ``path``, flipping sides at every
    level, and remove the walk's virtual visits."""
    v = value
    for i in range(length - 1, -1, -1):
        node = path[i]
        N[node] += 1
        W[node] += v
        W2[node] += v * v
        VL[node] -= 1
        v = -v


@kernel
def expand(node, start, moves, priors, parent, move, first, nchild, N, W, W2, VL, P, status, TV):
    """Give ``node`` the children ``moves`` with ``priors`` at rows ``start ..``; returns the next free row."""
    k = moves.shape[0]
    first[node] = start
    nchild[node] = k
    for j in range(k):
        c = start + j
        parent[c] = node
        move[c] = moves[j]
        first[c] = -1
        nchild[c] = 0
        N[c] = 0
        W[c] = 0.0
        W2[c] = 0.0
        VL[c] = 0
        P[c] = priors[j]
        status[c] = UNEXPANDED
        TV[c] = 0.0
    status[node] = EXPANDED
    return start + k


@compiled
def extract_subtree(new_root, fold_at_most, parent, move, first, nchild, N, W, W2, VL, P, status, TV, RV, out_parent,
                    out_move, out_first, out_nchild, out_N, out_W, out_W2, out_VL, out_P, out_status, out_TV, out_RV):
    """Copy the subtree under ``new_root`` into the ``out_*`` arrays (breadth first, the new root at row 0,
    children kept contiguous); returns the number of rows written. Pending nodes become unexpanded.

    An expanded node other than ``new_root`` with at most ``fold_at_most`` visits is *folded*: copied as an
    unexpanded node that keeps its ``N``, ``W`` and ``W2``, without its children (−1: nothing is folded). A walk that
    reaches a folded node evaluates and expands it again, as a fresh leaf whose statistics carry on."""
    queue = np.empty(out_parent.shape[0], dtype=np.int64)  # old index of each new row
    queue[0] = new_root
    out_parent[0] = -1
    count = 1
    head = 0
    while head < count:
        old = queue[head]
        new = head
        out_move[new] = move[old]
        out_N[new] = N[old]
        out_W[new] = W[old]
        out_W2[new] = W2[old]
        out_VL[new] = 0
        out_P[new] = P[old]
        out_TV[new] = TV[old]
        out_RV[new] = RV[old]
        st = status[old]
        if st == EXPANDED and old != new_root and N[old] <= fold_at_most:
            st = UNEXPANDED
        out_status[new] = UNEXPANDED if st == PENDING else st
        if st == EXPANDED:
            k = nchild[old]
            out_first[new] = count
            out_nchild[new] = k
            f0 = first[old]
            for j in range(k):
                queue[count + j] = f0 + j
                out_parent[count + j] = new
            count += k
        else:
            out_first[new] = -1
            out_nchild[new] = 0
        head += 1
    return count


@compiled
def subtree_size(root, first, nchild, status):
    """Rows under (and including) ``root``."""
    stack = np.empty(first.shape[0], dtype=np.int64)
    stack[0] = root
    top = 1
    total = 0
    while top > 0:
        top -= 1
        node = stack[top]
        total += 1
        if status[node] == EXPANDED:
            f0 = first[node]
            for j in range(nchild[node]):
                stack[top] = f0 + j
                top += 1
    return total


class Tree:
    """Growable flat arrays of nodes; row 0 is the root. ``RV`` is an expanded node's own network value (from the
    view of its player to move), which the search that expanded it records."""

    FIELDS = (("parent", np.int32), ("move", np.int32), ("first", np.int32), ("nchild", np.int32),
              ("N", np.float64), ("W", np.float64), ("W2", np.float64), ("VL", np.float64), ("P", np.float64),
              ("status", np.int8), ("TV", np.float64), ("RV", np.float64))

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = max(16, int(capacity))
        for name, dt in self.FIELDS:
            setattr(self, name, np.zeros(self.capacity, dtype=dt))
        self.size = 0
        self.reset()

    def reset(self) -> None:
        """One unexpanded root."""
        self.parent[0] = -1
        self.move[0] = -1
        self.first[0] = -1
        self.nchild[0] = 0
        self.N[0] = self.W[0] = self.W2[0] = self.VL[0] = 0.0
        self.P[0] = 1.0
        self.status[0] = UNEXPANDED
        self.TV[0] = self.RV[0] = 0.0
        self.size = 1

    def ensure(self, extra: int) -> None:
        """Room for ``extra`` more rows (the arrays double as needed)."""
        need = self.size + extra
        if need <= self.capacity:
            return
        cap = self.capacity
        while cap < need:
            cap *= 2
        for name, dt in self.FIELDS:
            old = getattr(self, name)
            new = np.zeros(cap, dtype=dt)
            new[: self.size] = old[: self.size]
            setattr(self, name, new)
        self.capacity = cap

    def stats(self):
        """The arrays ``select`` needs, in its argument order."""
        return self.first, self.nchild, self.N, self.W, self.W2, self.VL, self.P, self.status, self.TV

    def expand(self, node: int, moves: np.ndarray, priors: np.ndarray, value: float) -> None:
        """Give ``node`` the children ``moves`` (int32) with ``priors``, and record its network ``value``."""
        self.ensure(moves.size)
        self.size = expand(node, self.size, moves, priors, self.parent, self.move, self.first, self.nchild, self.N,
                           self.W, self.W2, self.VL, self.P, self.status, self.TV)
        self.RV[node] = value

    def backup(self, path: np.ndarray, value: float) -> None:
        """Back ``value`` (the view of the player who moved into the path's last node) up the whole ``path``."""
        backup(self.N, self.W, self.W2, self.VL, path, path.shape[0], value)

    def children(self, node: int = 0) -> np.ndarray:
        f = int(self.first[node])
        return np.arange(f, f + int(self.nchild[node])) if f >= 0 else np.empty(0, dtype=np.int64)

    def reroot(self, node: int) -> None:
        """Make ``node`` the root, keeping its subtree and dropping the rest."""
        if node == 0:
            return
        n = int(subtree_size(node, self.first, self.nchild, self.status))
        self._copy_out(node, -1.0, n)

    def prune(self, max_rows: int) -> bool:
        """Fold the least visited expansions (see :func:`extract_subtree`) so that at most ``max_rows`` rows remain:
        the expanded nodes are kept by visits, most first, while their children fit (a node's visits are never
        more than its parent's, so the kept ones form a tree under the root). The root stays expanded; every
        node's ``N`` and ``W`` are kept, so the root's statistics and its children's are unchanged. False when
        nothing can be folded (the root's children alone are more than ``max_rows``). Call it between batches
        (no pending node)."""
        size = self.size
        expanded = np.flatnonzero(self.status[1:size] == EXPANDED) + 1
        if expanded.size == 0:
            return False
        visits = self.N[expanded]
        order = np.argsort(-visits, kind="stable")
        rows = 1 + int(self.nchild[0]) + np.cumsum(self.nchild[expanded[order]])
        fits = int(np.searchsorted(rows, max_rows, side="right"))  # the first `fits` in that order fit
        if fits >= expanded.size:
            return False
        fold_at_most = float(visits[order[fits]])  # ties with the first that does not fit are folded too
        n = int(subtree_size(0, self.first, self.nchild, self.status))
        before = self.size
        self._copy_out(0, fold_at_most, n)
        return self.size < before

    def _copy_out(self, node: int, fold_at_most: float, bound: int) -> None:
        cap = max(self.capacity, 16)
        out = {name: np.zeros(cap, dtype=dt) for name, dt in self.FIELDS}
        count = extract_subtree(node, fold_at_most, self.parent, self.move, self.first, self.nchild, self.N, self.W,
                                self.W2, self.VL, self.P, self.status, self.TV, self.RV, out["parent"], out["move"],
                                out["first"], out["nchild"], out["N"], out["W"], out["W2"], out["VL"], out["P"],
                                out["status"], out["TV"], out["RV"])
        assert count <= bound
        for name, _ in self.FIELDS:
            setattr(self, name, out[name])
        self.size = int(count)
        self.parent[0] = -1
        self.P[0] = 1.0


__all__ = ["COLLISION", "EXPANDED", "LEAF", "PENDING", "TERMINAL", "TERMINAL_LEAF", "UNEXPANDED", "Tree",
           "backup", "expand", "extract_subtree", "select", "subtree_size"]
