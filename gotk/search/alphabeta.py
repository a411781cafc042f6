"""Minimax with alpha-beta pruning on the compiled engine (the book's chapter 4), and its player.

A negamax to a fixed ``depth`` over the moves that fill no own eye, compiled whole: each node plays its move with
the engine's recorded ``play`` and takes it back with ``undo`` (no position is copied), so the search runs at the
engine's speed. A leaf is valued by the book's evaluation, the **capture difference**: the stones on the board of
the player to move minus the opponent's (what the book's ``capture_diff`` counts), so the search reads captures and
the threats of them within its depth and nothing else. With no move left a side passes, and the position is valued
as it stands. Moves are tried in the order given (the policy's, when an agent gives one, which makes the cuts come
early), else in board order.
"""

from __future__ import annotations

import time

import numpy as np

from gotk.game import kernels as K
from gotk.game.rules import is_own_eye
from gotk.game.state import GameState, new_engine, position_arrays
from gotk.jit import kernel

INF = 1_000_000


@kernel
def _stones(board, color):
    own = 0
    other = 0
    for p in range(board.shape[0]):
        v = board[p]
        if v == color:
            own += 1
        elif v != 0:
            other += 1
    return own - other


@kernel
def negamax(e, depth, alpha, beta, color, allow_suicide, order, nodes):
    """The capture difference ``color`` can force in ``depth`` plies (its view), alpha-beta pruned; ``order``: the
    points in the order to try them; ``nodes[0]`` counts the nodes."""
    nodes[0] += 1
    board = e.board
    if depth == 0:
        return _stones(board, color)
    best = -INF
    moved = False
    for i in range(order.shape[0]):
        p = order[i]
        if board[p] != 0 or is_own_eye(board, e.nbr, e.diag, p, color):
            continue
        if K.play_recorded(e, p, color, allow_suicide) != K.OK:
            continue
        moved = True
        v = -negamax(e, depth - 1, -beta, -alpha, 3 - color, allow_suicide, order, nodes)
        K.undo(e)
        if v > best:
            best = v
        if best > alpha:
            alpha = best
        if alpha >= beta:
            break
    if not moved:
        return _stones(board, color)
    return best


@kernel
def _root(t, depth, color, allow_suicide, order, scores, nodes):
    e = K.Engine(*t)
    alpha = -INF
    best = -INF
    for i in range(order.shape[0]):
        p = order[i]
        scores[i] = -INF
        if e.board[p] != 0 or is_own_eye(e.board, e.nbr, e.diag, p, color):
            continue
        if K.play_recorded(e, p, color, allow_suicide) != K.OK:
            continue
        v = -negamax(e, depth - 1, -INF, -alpha, 3 - color, allow_suicide, order, nodes)
        K.undo(e)
        scores[i] = v
        if v > best:
            best = v
        if best > alpha:
            alpha = best
    return best


def alphabeta(state: GameState, depth: int, order: np.ndarray | None = None,
              rng: np.random.Generator | None = None) -> tuple[int, int, int]:
    """``(move, value, nodes)``: the move whose capture difference after ``depth`` plies is best for the player to
    move (among equals the first in ``order``, or with ``rng`` one drawn uniformly, as the book's agent does; pass
    when no move that fills no own eye is legal), that value, and the nodes searched."""
    if depth < 1:
        raise ValueError(f"--depth must be >= 1, not {depth}")
    n = state.size * state.size
    order = np.arange(n, dtype=np.int64) if order is None else np.asarray(order, dtype=np.int64)
    e = new_engine(state.size, tuple(a.copy() for a in position_arrays(state.e)),
                   log_entries=K.move_log_bound(n) * (depth + 1), log_moves=depth + 2)
    e.meta[[K.M_DEPTH, K.M_TOP]] = 0  # a fresh undo log: the game's moves before are not taken back here
    scores = np.full(order.shape[0], -INF, dtype=np.int64)
    nodes = np.zeros(1, dtype=np.int64)
    best = _root(tuple(e), depth, state.to_play, state.rules.suicide, order, scores, nodes)
    if best <= -INF:
        return state.pass_point, _stones_value(state), int(nodes[0])
    ties = np.flatnonzero(scores == best)
    i = int(ties[0] if rng is None else rng.choice(ties))
    return int(order[i]), int(best), int(nodes[0])


def _stones_value(state: GameState) -> int:
    return int(_stones(state.board, state.to_play))


class AlphaBetaPlayer:
    """Plays the alpha-beta search's move (module docstring) at ``depth`` plies; ``agent``: a network whose policy
    orders the moves (best first; else equally good moves are drawn with ``seed``). ``nodes_per_s`` is the last
    move's speed. It passes by the search (no move) or when the opponent has passed and passing wins by the final
    count."""

    def __init__(self, depth: int, agent=None, name: str | None = None, seed: int | None = None) -> None:
        if not 1 <= depth <= 12:
            raise ValueError(f"--depth must be from 1 to 12, not {depth}")
        self.depth = depth
        self.agent = agent
        self.name = name or f"gotk-alphabeta-d{depth}" + (f"-{agent.name}" if agent is not None else "")
        self.has_value = False
        self.search = None
        self.clock = None
        self.nodes_per_s = 0.0
        self.nodes = 0
        # without a policy to order them, equally good moves are drawn uniformly (the book's agent)
        self.rng = np.random.default_rng(seed) if agent is None else None

    @property
    def board_size(self) -> int | None:
        return self.agent.board_size if self.agent is not None else None

    def reset(self) -> None:
        """Nothing is kept between games."""

    def policy(self, state: GameState) -> np.ndarray:
        if self.agent is not None:
            return self.agent.policy(state)
        probs = np.zeros(state.size * state.size + 1)
        probs[state.legal_moves()] = 1.0
        return probs / probs.sum()

    def value(self, state: GameState) -> float:
        return float(np.tanh(_stones_value(state) / 10.0))

    def choose(self, state: GameState) -> int:
        from gotk.game.moves import passing_wins

        if state.passes >= 1 and passing_wins(state):
            return state.pass_point
        order = None
        if self.agent is not None:
            order = np.argsort(-self.agent.policy(state)[: state.size * state.size], kind="stable")
        t = time.perf_counter()
        move, _, nodes = alphabeta(state, self.depth, order, self.rng)
        self.nodes = nodes
        self.nodes_per_s = nodes / max(time.perf_counter() - t, 1e-9)
        return move


__all__ = ["AlphaBetaPlayer", "alphabeta", "negamax"]
