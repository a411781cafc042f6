"""Leaf evaluation for the search: one batched call gives priors and values for many positions.

The search's seam (as mctx's ``recurrent_fn``): an **evaluator** gives room for a batch of leaves
(:meth:`leaves`, a :class:`Leaves`), is handed each leaf position while the search stands on it (:meth:`write`:
the position is the search's own, played to the leaf and taken back after), and evaluates the batch
(:meth:`evaluate_leaves` → priors ``(rows, size²+1)`` and values ``(rows,)``, the mover's view). What a leaf is
made into — planes and global inputs for a network, playouts for rollouts (:mod:`gotk.search.rollouts`), both for
AlphaGo's mix — is the evaluator's business, not the tree's.

:class:`NetEvaluator` wraps a policy agent and the agent giving values (the same file with ``head=both``,
or a separate value agent with the same encoder and board size). Each position is evaluated under a
random board symmetry (AlphaGo Zero): its planes are transformed, and the policy is mapped back.
``seconds`` accumulates the time spent in the network calls (the speed benchmark's "inside" share).

An agent whose model takes global inputs (komi and side to move, :mod:`gotk.encoders.global_inputs`) gets them
beside the planes: :meth:`NetEvaluator.global_rows` computes them from the states (their komi and colour to move),
and no symmetry changes them. :attr:`NetEvaluator.num_globals` says whether a caller must supply them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from gotk.datasets.symmetry import NUM_SYMMETRIES, apply_symmetries_, label_permutations
from gotk.encoders import global_inputs as GI
from gotk.search.config import SearchSetupError


def _encoder_key(agent) -> tuple:
    enc = agent.meta.get("encoder", {})
    return enc.get("name"), enc.get("version"), enc.get("num_planes"), repr(sorted((enc.get("options") or {}).items()))


def check_agents(agent, value_agent=None, need_value: bool = True) -> None:
    """Raise :class:`SearchSetupError` when ``agent`` (+ ``value_agent``) cannot give priors (and values, unless
    ``need_value`` is false: a player of the policy alone)."""
    if not agent.has_policy:
        raise SearchSetupError("the agent has no policy head: search needs priors from a policy")
    if any(a.num_metadata for a in (agent, value_agent) if a is not None):
        raise SearchSetupError("an agent conditioned on metadata (trained with --metadata) plays its policy alone, "
                               "as a profile: --profile NAME without --visits/--seconds (docs/human.md)")
    if value_agent is None:
        if not need_value:
            return
        if not agent.has_value:
            raise SearchSetupError("search needs a value head: this agent is policy-only (train it with --head both, "
                                   "or give --value-agent FILE); --visits 0 plays the policy alone")
        return
    if not value_agent.has_value:
        raise SearchSetupError("the value agent has no value head")
    if value_agent.board_size != agent.board_size:
        raise SearchSetupError(f"the value agent plays {value_agent.board_size}x{value_agent.board_size}, the "
                               f"policy agent {agent.board_size}x{agent.board_size}")
    if _encoder_key(value_agent) != _encoder_key(agent):
        a, b = _encoder_key(agent), _encoder_key(value_agent)
        raise SearchSetupError(f"the value agent's encoder ({b[0]} v{b[1]}, {b[2]} planes, options {b[3]}) differs "
                               f"from the policy agent's ({a[0]} v{a[1]}, {a[2]} planes, options {a[3]})")


@dataclass
class Leaves:
    """Room for one batch of leaves, one row each: what their evaluator makes of them."""

    feats: np.ndarray | None = None  # (rows, C, H, W): a network's planes
    glob: np.ndarray | None = None  # (rows, G): its global inputs, when it takes them
    values: np.ndarray | None = None  # (rows,): the rollouts' values, the mover's view
    states: list | None = None  # the leaf positions (copies), for evaluators that play from them (rollouts)


class NetEvaluator:
    """Priors over ``size*size+1`` moves and values (mover's view, −1..1) for a batch of states."""

    def __init__(self, agent, value_agent=None, symmetries: bool = True, seed=None,
                 need_value: bool = True) -> None:
        check_agents(agent, value_agent, need_value)
        self.agent = agent
        self.value_agent = value_agent
        self.board_size = agent.board_size
        self.encoder = agent.encoder
        self.symmetries = symmetries
        self.rng = np.random.default_rng(seed)
        self.perms = label_permutations(self.board_size)
        #: the global inputs either agent takes (0: none): callers give ``glob`` rows of this width
        self.num_globals = max(agent.num_globals, value_agent.num_globals if value_agent is not None else 0)
        self.seconds = 0.0  # time inside the network calls
        self.calls = 0
        self.positions = 0

    def reseed(self, seed: int | None) -> None:
        self.rng = np.random.default_rng(seed)

    def encode(self, states) -> tuple[np.ndarray, np.ndarray]:
        """Planes ``(B, C, H, W)`` of the states, each under a random symmetry, and the symmetries."""
        feats = np.stack([self.encoder.encode(s) for s in states])
        if self.symmetries:
            syms = self.rng.integers(0, NUM_SYMMETRIES, size=len(states))
            apply_symmetries_(feats, syms)
        else:
            syms = np.zeros(len(states), dtype=np.int64)
        return np.ascontiguousarray(feats), syms

    def global_rows(self, states) -> np.ndarray | None:
        """The global inputs ``(B, G)`` of the states (their komi and colour to move), or None when no agent takes
        them."""
        if not self.num_globals:
            return None
        return np.stack([GI.for_state(s) for s in states]) if len(states) else np.zeros((0, GI.size()), np.float32)

    def run(self, feats: np.ndarray, syms: np.ndarray, glob: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Network outputs for encoded planes (and their global inputs ``glob``, where an agent takes them):
        probabilities ``(B, size²+1)`` in board orientation, values ``(B,)``."""
        if self.num_globals and glob is None:
            raise ValueError("the agent takes global inputs (komi, side to move): give glob rows beside the planes")
        t = time.perf_counter()
        logp, val = self.agent.predict(feats, glob)
        if self.value_agent is not None:
            _, val = self.value_agent.predict(feats, glob)
        self.seconds += time.perf_counter() - t
        self.calls += 1
        self.positions += feats.shape[0]
        probs = np.exp(logp.astype(np.float64))
        # the net saw point perm[s][p] where the board has p: read it back
        probs = np.take_along_axis(probs, self.perms[syms], axis=1)
        values = np.zeros(feats.shape[0]) if val is None else np.asarray(val, dtype=np.float64).reshape(-1)
        return probs, values

    # --- the search's seam ---------------------------------------------------------------------------------

    def leaves(self, rows: int) -> Leaves:
        """Room for ``rows`` leaves: their planes, and global inputs where an agent takes them."""
        enc = self.encoder
        return Leaves(np.zeros((rows, *enc.shape), dtype=enc.np_dtype),
                      np.zeros((rows, GI.size()), dtype=np.float32) if self.num_globals else None)

    def write(self, leaves: Leaves, row: int, state) -> None:
        """The leaf ``state``'s planes (and global inputs) into row ``row``."""
        leaves.feats[row] = self.encoder.encode(state)
        if leaves.glob is not None:
            leaves.glob[row] = GI.for_state(state)

    def evaluate_leaves(self, leaves: Leaves, rows: int,
                        syms: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The first ``rows`` leaves, each under a random symmetry (drawn here, or ``syms`` given)."""
        return self.evaluate(leaves.feats[:rows], None if leaves.glob is None else leaves.glob[:rows], syms)

    def evaluate(self, feats: np.ndarray, glob: np.ndarray | None = None,
                 syms: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Network outputs for planes ``(B, C, H, W)`` in board orientation (and their global inputs ``glob``
        ``(B, G)``, needed when :attr:`num_globals`), each evaluated under a random symmetry (drawn from this
        evaluator's generator unless ``syms`` gives them; ``feats`` is left as it is; the global inputs are the
        same under every symmetry)."""
        x = feats.copy()
        if not self.symmetries:
            syms = np.zeros(x.shape[0], dtype=np.int64)
        else:
            if syms is None:
                syms = self.rng.integers(0, NUM_SYMMETRIES, size=x.shape[0])
            apply_symmetries_(x, syms)
        return self.run(x, syms, glob)

    def __call__(self, states) -> tuple[np.ndarray, np.ndarray]:
        return self.run(*self.encode(states), self.global_rows(states))


__all__ = ["Leaves", "NetEvaluator", "SearchSetupError", "check_agents"]
