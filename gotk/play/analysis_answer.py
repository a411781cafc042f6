"""The pieces of an analysis answer in KataGo's layouts (``gotk analysis``, :mod:`gotk.play.analysis_engine`): the
policy and ownership arrays, the position hashes, and the documented estimates given for a network without score or
ownership heads (never a missing key: KaTrain reads a score for every move)."""

from __future__ import annotations

import hashlib
import math

import numpy as np

from gotk import coords
from gotk.datasets.symmetry import NUM_SYMMETRIES
from gotk.game.state import BLACK, GameState


def score_scale(size: int) -> float:
    """Points per unit of ``atanh(value)`` in the score estimate of a network without a score head."""
    return size * size / 40.0


def score_stdev(size: int) -> float:
    """The ``scoreStdev`` given for every move: a fixed spread (``size²/12`` points), not a measurement."""
    return size * size / 12.0


def score_estimate(value: float, size: int) -> float:
    """The score lead implied by a value (−1..1, the same side's view) for a network without a score head."""
    v = min(0.995, max(-0.995, value))
    return score_scale(size) * math.atanh(v)


#: the influence estimate's reach (Manhattan distance) and its decay per step
_REACH, _DECAY = 4, 0.5


def ownership_estimate(state: GameState) -> np.ndarray:
    """Ownership ``(size²,)`` in −1..1 (Black +1) for a network without an ownership head: every stone its own
    colour's; an empty point ``tanh`` of the stones' influence around it (each stone ``0.5^d`` at Manhattan distance
    ``d`` ≤ 4, Black positive). No stone is judged dead. Cheap, and what ownership-based choices need: a move that
    claims an area changes it."""
    size = state.size
    grid = np.asarray(state.grid())
    stones = np.where(grid == BLACK, 1.0, np.where(grid == 0, 0.0, -1.0))
    pad = np.pad(stones, _REACH)
    infl = np.zeros_like(stones)
    for dr in range(-_REACH, _REACH + 1):
        for dc in range(-_REACH, _REACH + 1):
            d = abs(dr) + abs(dc)
            if 0 < d <= _REACH:
                infl += _DECAY ** d * pad[_REACH + dr:_REACH + dr + size, _REACH + dc:_REACH + dc + size]
    own = np.where(grid == 0, np.tanh(infl), stones).reshape(-1)
    return own


def position_hashes(state: GameState) -> tuple[str, str]:
    """``(thisHash, symHash)``: 32 hex digits of the stones, the player to move and the ko point; the second the
    least over the board's 8 symmetries, so symmetric positions share it."""
    size = state.size
    board = np.asarray(state.grid(), dtype=np.int8).reshape(-1)
    ko = state.ko_point
    tail = bytes([state.to_play])

    def digest(b: np.ndarray, k: int | None) -> str:
        h = hashlib.blake2b(b.tobytes() + tail + (k if k is not None else -1).to_bytes(4, "little", signed=True),
                            digest_size=16)
        return h.hexdigest().upper()

    this = digest(board, ko)
    syms = []
    for s in range(NUM_SYMMETRIES):
        perm = coords.symmetry_permutation(size, s)
        moved = np.empty_like(board)
        moved[perm[: size * size]] = board
        syms.append(digest(moved, None if ko is None else int(perm[ko])))
    return this, min(syms)


def policy_list(state: GameState, probs: np.ndarray) -> list[float]:
    """A policy in KataGo's layout: row-major from the top left, pass last, renormalised over the legal moves and
    −1 on the illegal ones."""
    legal = np.zeros(probs.shape[0], dtype=bool)
    legal[state.legal_moves()] = True
    p = np.where(legal, probs, 0.0)
    total = p.sum()
    p = p / total if total > 0 else legal / max(1, legal.sum())
    return [round(float(v), 7) if ok else -1 for v, ok in zip(p, legal, strict=True)]


def ownership_list(root: GameState, black: np.ndarray | None, move: int | None, sign: float) -> list[float]:
    """Ownership in KataGo's layout (row-major from the top left) as the answer's side sees it (``sign`` −1:
    White's): ``black`` (Black's view, from a network's head), else :func:`ownership_estimate` of ``root`` (after
    ``move`` when given)."""
    if black is None:
        black = ownership_estimate(root if move is None else root.copy().play(move))
    return [round(float(sign * v), 6) for v in black]


__all__ = ["ownership_estimate", "ownership_list", "policy_list", "position_hashes", "score_estimate", "score_scale",
           "score_stdev"]
