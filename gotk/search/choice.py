"""Which move to play: one place for every player (GTP, analysis, matches, self-play, ``gotk serve``, the zero
loop's evaluations), as KataGo keeps its final choice in ``searchresults.cpp``.

* :func:`ranking` orders a search's root children best first: the root rule's own choice first (Gumbel's), or with
  ``lcb`` > 0 the children with more than ``lcb`` times the most visits (and more than 2) by the lower confidence
  bound of their value (Leela Zero 0.17's rule, :mod:`gotk.search.lcb`), then by visits, value and prior; a pass
  that ends the game as a loss (:meth:`~gotk.search.core.Search.losing_passes`) after every other child.
* :func:`choose` is a search's move: the first of the ranking at temperature 0, else one sampled ∝ ``N^(1/T)``
  among the visited children; never a losing pass while another visited move is left (:func:`play_on`).
* :func:`sample` is the one temperature sampler (∝ ``w^(1/T)``), for visits, search targets and policies alike.
* :func:`policy_choice` is a policy player's move among the sensible moves, with its pass rules; :func:`settled`
  is the one that ends a game between policy players as a search's pass would.
* :class:`Resignation` is the one resignation rule: resign when a value stays below a threshold at a number of
  consecutive own moves, from a move number on. A player that resigns answers :data:`RESIGN`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from gotk.game.moves import passing_wins, sensible_moves
from gotk.game.state import GameState
from gotk.search.config import SearchConfig
from gotk.search.roots import RootRule
from gotk.search.tree import Tree

RESIGN = -1  # what a player's ``choose`` returns to resign


class Searched(Protocol):
    """What the final choice reads of a finished search (:class:`gotk.search.core.Search`)."""

    tree: Tree
    cfg: SearchConfig
    root: RootRule
    root_state: GameState | None

    def final_row(self) -> int: ...

    def losing_passes(self, kids: np.ndarray) -> np.ndarray: ...

    def lower_bounds(self, kids: np.ndarray) -> np.ndarray: ...


def sample(weights: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
    """An index drawn with probability ∝ ``weights ** (1 / temperature)`` (``temperature`` > 0; weights ≥ 0,
    at least one positive)."""
    w = np.asarray(weights, dtype=np.float64)
    if temperature != 1.0:
        with np.errstate(divide="ignore"):
            logits = np.where(w > 0, np.log(w) / temperature, -np.inf)
        w = np.exp(logits - logits.max())
    return int(rng.choice(w.size, p=w / w.sum()))


def behaviour(weights: np.ndarray, temperature: float = 1.0, clip: float = 0.0,
              random_share: float = 0.0) -> np.ndarray:
    """The distribution a policy player learning from its games samples from (the book's chapter 10): ``weights``
    (≥ 0, one positive) sharpened by ``1 / temperature`` and normalised (``temperature`` 0: all on the most
    probable move, so that the random share makes it ε-greedy), each probability clipped to
    ``[clip, 1 − clip]`` and normalised again (no move certain, none impossible), then mixed with the uniform
    distribution, ``(1 − random_share) · q + random_share / n`` (a share of random moves). Its entries are the
    probabilities that experience records for the moves played."""
    w = np.asarray(weights, dtype=np.float64)
    if temperature <= 0:  # greedy: the most probable move (with a random share: epsilon-greedy)
        w = (np.arange(w.size) == int(np.argmax(w))).astype(np.float64)
    elif temperature != 1.0:
        with np.errstate(divide="ignore"):
            logits = np.where(w > 0, np.log(w) / temperature, -np.inf)
        w = np.exp(logits - logits.max())
    q = w / w.sum()
    if clip > 0:
        q = np.clip(q, clip, 1.0 - clip)
        q /= q.sum()
    if random_share > 0:
        q = (1.0 - random_share) * q + random_share / q.size
    return q


def play_on(weights: np.ndarray, losing: np.ndarray) -> np.ndarray:
    """``weights`` with the losing passes (``losing``, a bool per entry) at 0, unless nothing else has weight:
    playing on is never worse than a certain loss, and a few visits may not have told the two apart."""
    kept = np.where(losing, 0.0, weights)
    return kept if kept.sum() > 0 else weights


def ranking(search: Searched) -> tuple[np.ndarray, np.ndarray]:
    """The root's children (tree rows) and the order of their indices, best first (module docstring)."""
    tree, cfg = search.tree, search.cfg
    kids = tree.children(0)
    if kids.size == 0:
        return kids, np.zeros(0, dtype=np.int64)
    n = tree.N[kids]
    q = np.where(n > 0, tree.W[kids] / np.maximum(n, 1), 0.0)
    keys = [-tree.P[kids], -q, -n]
    if search.root.chooses:
        keys.append(kids != search.final_row())
    elif cfg.lcb > 0:
        able = (n > 2) & (n > cfg.lcb * n.max())
        bound = np.zeros(kids.size)
        bound[able] = search.lower_bounds(kids[able])
        keys += [-bound, ~able]
    keys.append(search.losing_passes(kids))
    return kids, np.lexsort(keys)


def choose(search: Searched, temperature: float, rng: np.random.Generator) -> int:
    """The move a finished search plays (module docstring); with no visited child, the most probable one (pass
    when the root has no children)."""
    tree = search.tree
    kids, order = ranking(search)
    visited = []
    for i in order:  # the ranking's visited children, up to the first unvisited one
        if tree.N[kids[i]] <= 0:
            break
        visited.append(int(i))
    if not visited:
        return int(tree.move[kids[np.argmax(tree.P[kids])]]) if kids.size else search.root_state.pass_point
    losing = search.losing_passes(kids[visited])
    if losing.any() and not losing.all():
        visited = [i for i, lose in zip(visited, losing, strict=True) if not lose]
    if temperature <= 0 or len(visited) == 1:
        return int(tree.move[kids[visited[0]]])
    pick = sample(tree.N[kids[visited]], temperature, rng)
    return int(tree.move[kids[visited[pick]]])


def policy_choice(state: GameState, policy: Callable[[GameState], np.ndarray], temperature: float,
                  rng: np.random.Generator, pass_threshold: float,
                  value: Callable[[GameState], float] | None = None) -> int:
    """A policy player's move. It passes when no sensible move is left, when passing now wins
    (:func:`gotk.game.moves.passing_wins`), when no sensible move has probability ``pass_threshold`` in
    ``policy(state)`` (asked only when a move is to be chosen), or when the game is settled (:func:`settled`: the
    policy's own pass is at least as probable as any sensible move, and the final count agrees); else it plays the
    most probable sensible move at ``temperature`` 0, or one sampled ∝ ``p^(1/T)``. The passes draw no random
    number: a seed gives the same moves up to the first pass."""
    moves = sensible_moves(state)
    if moves.size == 0 or passing_wins(state):
        return state.pass_point
    probs = np.asarray(policy(state), dtype=np.float64)
    p = probs[moves]
    if not np.isfinite(p).all() or p.max() < pass_threshold:
        return state.pass_point
    if settled(state, float(probs[state.pass_point]), float(p.max()), value):
        return state.pass_point
    if temperature == 0:
        return int(moves[int(np.argmax(p))])
    return int(moves[sample(p, temperature, rng)])


def settled(state: GameState, pass_prob: float, best_move_prob: float,
            value: Callable[[GameState], float] | None = None) -> bool:
    """A policy player's view that the game is over, as a search decides a pass (its value of the pass against the
    final count). All of: the policy's pass (``pass_prob``) is at least as probable as its most probable sensible
    move; the game is past its first size²/2 moves (self-play's first resignation move: no opening or middle game
    is settled, however a weak network's policy looks); the boundaries are closed, that is the opponent has just
    passed or, by the count of the position as it stands (:meth:`GameState.ownership_final`, no one passing), no
    empty point is left to neither side; and the final count with the mover as the passer (its homeless stones
    removed: the count least in its favour) gives the mover at least what its ``value`` head expects: a win where
    the value is above 0 (a game the network thinks won is not passed away while the count, with dead stones still
    on the board, says otherwise), anything where it is not. Without a value head the count must not lose."""
    if pass_prob < best_move_prob or state.move_number < state.size * state.size // 2:
        return False
    if state.passes == 0:  # the boundaries, by the count with no one's homeless stones removed
        owner = state.ownership_final(passer=0)[1]
        if bool(np.any((owner == 0) & (state.board == 0))):
            return False
    score = state.score_final(passer=state.to_play)  # Black's view; the mover's homeless stones removed
    mine = score if state.to_play == 1 else -score
    if value is not None and value(state) <= 0:
        return True
    return mine > 0 if value is not None else mine >= 0


@dataclass
class Resignation:
    """Resign when the value (the mover's view, −1..1) has been below ``threshold`` at ``moves`` consecutive own
    moves, at move ``min_move`` or later; ``threshold`` None never resigns. One per player and game."""

    threshold: float | None
    moves: int = 3
    min_move: int = 0
    streak: int = 0

    def reset(self) -> None:
        self.streak = 0

    def update(self, value: float, move_number: int) -> bool:
        """Count this move's ``value``; True when the player resigns now."""
        if self.threshold is None:
            return False
        self.streak = self.streak + 1 if value < self.threshold else 0
        return self.streak >= self.moves and move_number >= self.min_move


__all__ = ["RESIGN", "Resignation", "Searched", "behaviour", "choose", "play_on", "policy_choice", "ranking", "sample",
           "settled"]
