"""The objectives ``gotk train --objective`` applies: what the network learns from a batch.

``supervised`` (the default) imitates: the policy's cross-entropy against the move played (or the search's
policy on self-play data) and the value's squared error against the game's result (:mod:`gotk.train.losses`).
The other three learn from **experience**, an agent's own games recorded with the experience columns
(:mod:`gotk.shards.experience_column`: the state ``s``, the action played ``a`` = ``label``, the return ``R``
from the mover's view, the acting network's value and the action's probability at play time). Each is a plain
function of the network's outputs for a batch, returning sums over its rows (the trainer divides by the rows of
the step, over every rank under DDP):

* ``policy-gradient`` (REINFORCE; the book's chapter 10, AlphaGo's RL policy):
  ``L = −Σ_i (R_i − b_i) · log π(a_i | s_i)``. Its gradient raises the log-probability of the moves of won games
  and lowers that of lost ones; ``b`` is the baseline (``none``: 0, as the book; ``mean``: the batch's mean
  return; ``play-value``: the acting network's value recorded at play time), which leaves the expected gradient
  unchanged and lowers its variance. Where the advantage is negative ``log π`` is floored at ``log 1e-7``
  (:data:`LOG_PROB_FLOOR`), no gradient below it: without a floor a lost game's move is pushed towards probability
  0 without end (the loss is unbounded below; measured: a 9×9 run's policy collapsed within minutes,
  docs/experiments.md). The book's Keras loss clips the predicted probabilities at its ``epsilon`` (1e-7) the same
  way, for both signs; gotk keeps raising a won game's move however improbable it was.
* **The ratio clip** (``ratio_clip`` ε, PPO's clipped surrogate; gotk's default 0.2 for both policy terms above,
  0 the book's plain gradient): each row's term becomes ``min(ρ · A, clip(ρ, 1 − ε, 1 + ε) · A)`` with
  ``ρ = π(a | s) / μ(a | s)``, ``μ`` the probability the move had when it was played (``play_prob``). At ``ρ`` = 1
  its gradient is the plain one; once the network has moved a row's move by more than ε from the policy that
  played it, in the direction the advantage asks, the row stops pushing (a won move above ``(1 + ε) μ``, a lost one
  below ``(1 − ε) μ``), and where the network moved it the other way the ``ρ`` weight corrects for the policy that
  played it. Without it the log-probabilities of lost games' moves fall without bound while those of won moves
  saturate near 1, and the policy runs away from the games it learns from (measured on 19×19 from ``kgs``:
  docs/experiments.md). ``π`` is normalised over the moves the player could choose (the rows' ``choices``:
  sensible moves; pass only at the end), as ``μ`` was, and seen under the symmetry the acting network saw, so
  that ``ρ`` = 1 for an unchanged network played without exploration (rows from shards without those columns: ``π``
  over every move).
* ``actor-critic`` (the book's chapter 12): ``L = −Σ_i A_i · log π(a_i | s_i) + c · Σ_i (V(s_i) − R_i)² −
  β · Σ_i H(π(· | s_i))`` with the advantage ``A_i = R_i − V(s_i)`` taken as a constant (no gradient flows
  through it into the value), ``c`` the value weight (the book: 0.5 beside the policy's 1.0) and ``β`` the
  entropy weight (``H(π) = −Σ_m π_m log π_m``; β > 0 keeps the policy from collapsing early).
* ``q-learning`` (the book's chapter 11, Monte Carlo targets): ``L = Σ_i (Q(s_i, a_i) − R_i)²``, a regression of
  the action value of the move played towards the return. Q has **an output per move**: the policy head's logits
  through a tanh, ``Q(s, m) = tanh(z_m)`` in −1..1 like a return. The book feeds the move to a two-input network
  and needs one forward pass per candidate move to play; an output per move values every move of a position in
  one pass (what DQN does), and keeps the models, encoders and exports unchanged. A Q agent plays ε-greedy over
  its sensible moves (``gotk gtp``/``gotk match --epsilon``); its ``policy`` is ``softmax(z)``, whose order is Q's.

:class:`Objective` carries everything an objective decides (the heads it needs and trains, whether it learns from
experience, its terms); :data:`OBJECTIVES` registers them by name, and the trainer, the losses and the loop's learner
ask the object, never the name. A new objective is one :class:`Objective` here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

#: the floor of the log-probability of the move played in the policy terms (Keras's epsilon, 1e-7, which the book's
#: categorical cross-entropy clips its predictions at)
LOG_PROB_FLOOR = math.log(1e-7)
DEFAULT_ENTROPY_WEIGHT = 0.01
#: PPO's clip of the ratio of a move's probability now to its probability at play time (0: the plain gradient)
DEFAULT_RATIO_CLIP = 0.2


def masked_log_softmax(logits: torch.Tensor, choices: torch.Tensor | None = None) -> torch.Tensor:
    """``log π`` per move, float32; with ``choices`` (bool, a row's moves its player could choose) normalised over
    those moves, as the behaviour policy ``μ`` was: the others get ``−inf`` and no gradient."""
    logits = logits.float()
    if choices is not None:
        logits = logits.masked_fill(~choices, float("-inf"))
    return torch.log_softmax(logits, 1)


def _log_prob(logits: torch.Tensor, action: torch.Tensor, choices: torch.Tensor | None = None) -> torch.Tensor:
    return masked_log_softmax(logits, choices).gather(1, action[:, None]).squeeze(1)


def policy_gradient_sum(logits: torch.Tensor, action: torch.Tensor, ret: torch.Tensor,
                        baseline: torch.Tensor | None = None, play_prob: torch.Tensor | None = None,
                        ratio_clip: float = 0.0, choices: torch.Tensor | None = None) -> torch.Tensor:
    """``−Σ (R − b) · log π(a | s)`` over the rows (module docstring); ``baseline`` ``b`` per row, or None (0).
    ``ratio_clip`` ε > 0 with ``play_prob`` (the move's probability at play time, ``μ``): the clipped surrogate
    ``−Σ min(ρ · A, clip(ρ, 1 − ε, 1 + ε) · A)``, ``ρ = π(a | s) / μ`` (module docstring). ``choices`` (bool
    ``(rows, moves)``): ``π`` is normalised over each row's choices, so that a step moves probability only among
    the moves the player could have played (a lost game's move gives its share to the other choices, never to an
    occupied point or an own eye)."""
    adv = (ret.float() if baseline is None else ret.float() - baseline.float()).detach()
    logp = _log_prob(logits, action, choices)
    if ratio_clip > 0:
        if play_prob is None:
            raise ValueError("a ratio clip needs the moves' probabilities at play time (the play_prob column)")
        ratio = torch.exp(logp - torch.log(play_prob.float().clamp(min=1e-12)))
        return -torch.minimum(ratio * adv, ratio.clamp(1.0 - ratio_clip, 1.0 + ratio_clip) * adv).sum()
    logp = torch.where(adv < 0, torch.clamp(logp, min=LOG_PROB_FLOOR), logp)  # lowered no further than the floor
    return -(adv * logp).sum()


def entropy_sum(logits: torch.Tensor, choices: torch.Tensor | None = None) -> torch.Tensor:
    """``Σ H(π(· | s))`` over the rows, ``H = −Σ_m π_m log π_m`` (nats), ``π`` over each row's ``choices`` when
    given."""
    logp = masked_log_softmax(logits, choices)
    p = logp.exp()
    if choices is not None:  # 0 · log 0 = 0, and no NaN in the gradient: the masked log-probabilities read as 0
        logp = torch.where(choices, logp, torch.zeros((), device=logp.device))
    return -(p * logp).sum()


def actor_critic_sums(logits: torch.Tensor, value: torch.Tensor, action: torch.Tensor, ret: torch.Tensor,
                      play_prob: torch.Tensor | None = None, ratio_clip: float = 0.0,
                      choices: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(policy term −Σ A · log π(a | s), value term Σ (V − R)², entropy Σ H(π))`` over the rows, ``A = R − V``
    with no gradient into ``V`` (module docstring), the policy term clipped as :func:`policy_gradient_sum`'s; the
    caller weighs them ``1``, ``c`` and ``−β``."""
    v = value.float().reshape(-1)
    r = ret.float()
    policy = policy_gradient_sum(logits, action, r, v.detach(), play_prob, ratio_clip, choices)
    return policy, ((v - r) ** 2).sum(), entropy_sum(logits, choices)


def kl_sum(logits: torch.Tensor, anchor_logits: torch.Tensor, choices: torch.Tensor | None = None) -> torch.Tensor:
    """``Σ_rows KL(π ‖ π_anchor)`` in nats, both policies over each row's ``choices`` when given: the penalty that
    keeps a learner near the network it started from (PPO's KL penalty, piKL's anchor); no gradient into the
    anchor."""
    logp = masked_log_softmax(logits, choices)
    loga = masked_log_softmax(anchor_logits.detach(), choices)
    diff = logp - loga
    if choices is not None:  # off the choices both are -inf: 0 · (−inf − −inf) reads as 0
        diff = torch.where(choices, diff, torch.zeros((), device=diff.device))
    return (logp.exp() * diff).sum()


def q_values(logits: torch.Tensor) -> torch.Tensor:
    """Q(s, m) for every move: ``tanh`` of the policy head's logits (module docstring)."""
    return torch.tanh(logits.float())


def q_learning_sum(logits: torch.Tensor, action: torch.Tensor, ret: torch.Tensor) -> torch.Tensor:
    """``Σ (Q(s, a) − R)²`` over the rows: the action played's value regressed towards the return."""
    q = q_values(logits).gather(1, action[:, None]).squeeze(1)
    return ((q - ret.float()) ** 2).sum()


#: The policy-gradient baselines ``b`` per row, by name (module docstring): ``(returns, batch, rows) -> b or None``
BASELINES: dict[str, Callable[[torch.Tensor, dict, int], torch.Tensor | None]] = {
    "none": lambda ret, batch, n: None,
    "mean": lambda ret, batch, n: ret.mean().expand(n),
    "play-value": lambda ret, batch, n: batch["play_value"][:n].to(ret.device, non_blocking=True).float(),
}


@dataclass(frozen=True)
class Terms:
    """What an objective's terms see of one batch: the network's policy logits ``p`` and value ``v`` (None where
    the model has none), the actions ``y`` (the labels), the returns, the batch's columns, the moves' probabilities
    at play time ``mu`` (None without a ratio clip) and the rows' ``choices`` (None in shards without them)."""

    p: torch.Tensor
    v: torch.Tensor | None
    y: torch.Tensor
    ret: torch.Tensor
    batch: dict
    mu: torch.Tensor | None
    choices: torch.Tensor | None


def _pg(t: Terms, w) -> torch.Tensor:
    base = BASELINES[w.baseline](t.ret, t.batch, t.y.shape[0])
    return policy_gradient_sum(t.p, t.y, t.ret, base, t.mu, w.ratio_clip, t.choices)


def _ac(t: Terms, w) -> torch.Tensor:
    pol, val, ent = actor_critic_sums(t.p, t.v, t.y, t.ret, t.mu, w.ratio_clip, t.choices)
    return pol + w.value * val - w.entropy * ent


def _q(t: Terms, w) -> torch.Tensor:
    return q_learning_sum(t.p, t.y, t.ret)


@dataclass(frozen=True)
class Objective:
    """What a network learns from a batch, and all that follows from it (module docstring).

    ``heads``: the heads the model must have; ``trains``: the heads stepped (None: every head the model has; the
    weights only another head uses are left as they are, not stepped, not decayed:
    :func:`gotk.train.setup.head_parameters`, so a policy-gradient run keeps the value head its start had, which
    its players resign and judge passes by); ``experience``: it learns from rows with the experience columns (an
    agent's own moves and results) and never caps a game's positions; ``fine_tunes``: it steps a start on that
    start's own games: its run keeps its last network rather than the best validated one, decays the weights
    decoupled from Adam's step, keeps batch norm's statistics (the start's positions, not its own games', set
    them) and starts from ``EXPERIENCE_LR``; ``terms``: the loss summed over a batch's rows (:class:`Terms`, the
    run's :class:`~gotk.train.losses.LossWeights`), None for imitation's terms
    (:func:`gotk.train.losses.batch_losses`: the move played, or the search's policy on searched games);
    ``policy_metric``: the figure that tells how well its policy fits rows it has not seen."""

    name: str
    heads: tuple[str, ...]
    trains: tuple[str, ...] | None
    experience: bool
    fine_tunes: bool
    terms: Callable[[Terms, object], torch.Tensor] | None
    policy_metric: str


#: Every objective by name (``gotk train --objective``)
OBJECTIVES: dict[str, Objective] = {o.name: o for o in (
    Objective("supervised", (), None, False, False, None, "policy_soft_ce"),
    # imitation of the search's policy on a start's own searched games (expert iteration): a fine-tuned start
    Objective("expert-iteration", ("policy", "value"), None, False, True, None, "policy_soft_ce"),
    Objective("policy-gradient", ("policy",), ("policy",), True, True, _pg, "policy_loss"),
    Objective("actor-critic", ("policy", "value"), ("policy", "value"), True, True, _ac, "policy_loss"),
    Objective("q-learning", ("policy",), ("policy",), True, True, _q, "policy_loss"),
)}


def objective(name: str | Objective) -> Objective:
    """The registered :class:`Objective` of ``name`` (an Objective is returned as it is); ValueError for another
    name."""
    if isinstance(name, Objective):
        return name
    if name not in OBJECTIVES:
        raise ValueError(f"--objective must be one of {', '.join(OBJECTIVES)}, not {name!r}")
    return OBJECTIVES[name]


__all__ = ["BASELINES", "DEFAULT_ENTROPY_WEIGHT", "DEFAULT_RATIO_CLIP", "LOG_PROB_FLOOR", "OBJECTIVES", "Objective",
           "Terms", "actor_critic_sums", "entropy_sum", "kl_sum", "masked_log_softmax", "objective",
           "policy_gradient_sum", "q_learning_sum", "q_values"]
