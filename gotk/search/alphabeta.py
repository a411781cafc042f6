"""Minimax with alpha-beta pruning on the compiled engine (the book's chapter 4), and its player.

A negamax to a fixed ``depth`` over the moves that fill no own eye, compiled whole: each node plays its move with
the engine's recorded ``play`` and takes it back with ``undo`` (no position is copied), so the search runs at the
engine's speed. A leaf is valued by the book's evaluation, the **capture difference**: the stones on the board of
the player to move minus the opponent's (what the book's ``capture_diff`` counts), so the search reads captures and
the threats of them within its depth and nothing else. With no move left a side passes, and the position is valued
as it stands. Moves are tried in the order given (the policy's, when an agent gives one, which makes the cuts come
early), else in board order.

**Valued by a network** (:func:`alphabeta_net`): the same negamax with a value network's value (the mover's view,
−1..1) at the leaves in place of the capture difference, moves ordered at every node by an ordering network's
policy when one is given (its priors of that node). It runs in Python on the state's own play/undo, and the
network is called once per node above the leaves for its order and once per leaf parent for all of that node's
children together (a batch; no cut inside it, the cuts happen above), so its cost is the network's. ``width``
keeps the moves each node's order ranks first: the selective search that a policy makes practical on 19×19.
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


class NetLeaves:
    """A value network's values for positions, deterministic (no symmetry): the leaves of :func:`alphabeta_net`.
    ``evals`` counts the positions it valued."""

    def __init__(self, agent) -> None:
        self.agent = agent
        self.evals = 0

    def row(self, state) -> tuple[np.ndarray, np.ndarray | None]:
        """The planes (and global inputs) of ``state`` as it stands now."""
        return self.agent.encoder.encode(state), self.agent.global_inputs(state)

    def values(self, rows: list) -> np.ndarray:
        """Values (each position's mover's view) of rows made by :meth:`row`."""
        feats = np.stack([r[0] for r in rows])
        glob = np.stack([r[1] for r in rows]) if rows[0][1] is not None else None
        _, v = self.agent.predict(feats, glob)
        self.evals += len(rows)
        return np.asarray(v, dtype=np.float64).reshape(-1)


def _ordered(state: GameState, order_agent, width: int | None) -> np.ndarray:
    from gotk.game.moves import sensible_moves

    moves = sensible_moves(state)
    if order_agent is not None and moves.size > 1:
        moves = moves[np.argsort(-order_agent.policy(state)[moves], kind="stable")]
    return moves[:width] if width else moves


def _children(state: GameState, moves: np.ndarray, leaves: NetLeaves) -> np.ndarray:
    """Each move's value for the player to move now: minus its position's value (the opponent's view)."""
    rows = []
    for m in moves.tolist():
        state.play(m)
        rows.append(leaves.row(state))
        state.undo()
    return -leaves.values(rows)


def _net_negamax(state: GameState, depth: int, alpha: float, beta: float, leaves: NetLeaves, order_agent,
                 width: int | None, nodes: list) -> float:
    nodes[0] += 1
    moves = _ordered(state, order_agent, width)
    if moves.size == 0:
        return float(leaves.values([leaves.row(state)])[0])
    if depth == 1:
        nodes[0] += moves.size
        return float(_children(state, moves, leaves).max())
    best = -np.inf
    for m in moves.tolist():
        state.play(m)
        v = -_net_negamax(state, depth - 1, -beta, -alpha, leaves, order_agent, width, nodes)
        state.undo()
        best = max(best, v)
        alpha = max(alpha, best)
        if alpha >= beta:
            break
    return best


def alphabeta_net(state: GameState, depth: int, leaves: NetLeaves, order_agent=None, width: int | None = None,
                  rng: np.random.Generator | None = None) -> tuple[int, float, int]:
    """``(move, value, nodes)`` of the negamax valued by ``leaves`` (module docstring) from ``state`` (left as it
    was): the best move for the player to move (among exactly equal values the first in the order, or one drawn
    with ``rng``; pass when no move that fills no own eye is legal), its value (the mover's view) and the nodes
    searched (the leaves included)."""
    if depth < 1:
        raise ValueError(f"--depth must be >= 1, not {depth}")
    state = state.copy()
    nodes = [1]
    moves = _ordered(state, order_agent, width)
    if moves.size == 0:
        return state.pass_point, float(leaves.values([leaves.row(state)])[0]), 1
    if depth == 1:
        nodes[0] += moves.size
        scores = _children(state, moves, leaves)
    else:
        scores = np.full(moves.size, -np.inf)
        alpha = -np.inf
        for i, m in enumerate(moves.tolist()):
            state.play(m)
            scores[i] = -_net_negamax(state, depth - 1, -np.inf, -alpha, leaves, order_agent, width, nodes)
            state.undo()
            alpha = max(alpha, scores[i])
    best = scores.max()
    ties = np.flatnonzero(scores == best)
    i = int(ties[0] if rng is None else rng.choice(ties))
    return int(moves[i]), float(best), nodes[0]


class AlphaBetaPlayer:
    """Plays the alpha-beta search's move (module docstring) at ``depth`` plies; ``agent``: a network whose policy
    orders the moves (best first; else equally good moves are drawn with ``seed``); ``value_agent``: a network
    whose value head values the leaves in place of the capture difference; ``width``: each node tries only the
    moves its order ranks first (needs an order). ``nodes_per_s`` is the last move's speed, and ``log`` (when set:
    ``gotk gtp`` sets it to a stderr line) gets one line a move with the nodes and their speed. It passes by the
    search (no move) or when the opponent has passed and passing wins by the final count."""

    def __init__(self, depth: int, agent=None, name: str | None = None, seed: int | None = None,
                 value_agent=None, width: int | None = None) -> None:
        if not 1 <= depth <= 12:
            raise ValueError(f"--depth must be from 1 to 12, not {depth}")
        if width is not None and width < 1:
            raise ValueError(f"--width must be >= 1, not {width}")
        if width is not None and agent is None:
            raise ValueError("--width keeps the moves a policy ranks first: give --order-agent FILE (a policy head)")
        if agent is not None and not agent.has_policy:
            raise ValueError("the ordering agent has no policy head")
        if value_agent is not None and not value_agent.has_value:
            raise ValueError("the value agent has no value head")
        for a in (agent, value_agent):
            if a is not None and a.num_metadata:
                raise ValueError("an agent conditioned on metadata (trained with --metadata) plays its policy alone")
        if agent is not None and value_agent is not None and agent.board_size != value_agent.board_size:
            raise ValueError(f"the value agent plays {value_agent.board_size}x{value_agent.board_size}, the ordering "
                             f"agent {agent.board_size}x{agent.board_size}")
        self.depth = depth
        self.agent = agent
        self.value_agent = value_agent
        self.width = width
        self.leaves = NetLeaves(value_agent) if value_agent is not None else None
        self.name = name or f"gotk-alphabeta-d{depth}" + "".join(
            f"-{a.name}" for a in (agent, value_agent) if a is not None)
        self.has_value = value_agent is not None
        self.search = None
        self.clock = None
        self.nodes_per_s = 0.0
        self.nodes = 0
        self.log = None
        # without a policy to order them, equally good moves are drawn uniformly (the book's agent)
        self.rng = np.random.default_rng(seed) if agent is None else None

    @property
    def board_size(self) -> int | None:
        a = self.agent if self.agent is not None else self.value_agent
        return a.board_size if a is not None else None

    def reset(self) -> None:
        """Nothing is kept between games."""

    def policy(self, state: GameState) -> np.ndarray:
        if self.agent is not None:
            return self.agent.policy(state)
        probs = np.zeros(state.size * state.size + 1)
        probs[state.legal_moves()] = 1.0
        return probs / probs.sum()

    def value(self, state: GameState) -> float:
        if self.value_agent is not None:
            return self.value_agent.value(state)
        return float(np.tanh(_stones_value(state) / 10.0))

    def choose(self, state: GameState) -> int:
        from gotk.game.moves import passing_wins

        if state.passes >= 1 and passing_wins(state):
            return state.pass_point
        if self.board_size not in (None, state.size):
            raise ValueError(f"the agent plays {self.board_size}x{self.board_size}, the game is "
                             f"{state.size}x{state.size}")
        t = time.perf_counter()
        if self.leaves is not None:
            move, _, nodes = alphabeta_net(state, self.depth, self.leaves, self.agent, self.width, self.rng)
        else:
            order = None
            if self.agent is not None:
                order = np.argsort(-self.agent.policy(state)[: state.size * state.size], kind="stable")
                order = order[: self.width] if self.width else order
            move, _, nodes = alphabeta(state, self.depth, order, self.rng)
        seconds = max(time.perf_counter() - t, 1e-9)
        self.nodes = nodes
        self.nodes_per_s = nodes / seconds
        if self.log is not None:
            evals = f", {self.leaves.evals} network values so far" if self.leaves is not None else ""
            self.log(f"alphabeta depth {self.depth}: {nodes:,} nodes in {seconds:.3f} s, {self.nodes_per_s:,.0f} "
                     f"nodes/s{evals}")
        return move


__all__ = ["AlphaBetaPlayer", "NetLeaves", "alphabeta", "alphabeta_net", "negamax"]
