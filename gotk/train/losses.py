"""The loss terms of ``gotk train``, one batch at a time: what the network's outputs are compared with and how
the terms are weighted (:class:`gotk.train.trainer.Trainer` owns the forward pass, the optimiser and DDP).

* **Policy.** On human games, the cross-entropy against the move played. On data with self-play targets
  (``docs/shards.md``, "Self-play target columns"), the cross-entropy ``-sum(pi * log_softmax(logits))`` against
  the search's policy, averaged with the rows' ``weight`` (rows of weight 0 add no policy loss); top-1/top-5
  still count the move played.
* **Value.** ``value_weight`` times the squared error against the outcome, averaged over the rows whose outcome is
  known (value 0 — draw, void or unknown result — is left out). With ``value_mix`` m > 0 on self-play data the target
  is ``(1 - m) * outcome + m * root_value``, the search's value of the position mixed in (KataGo's short-term value
  targets in one term): less noise than a result decided many moves later. The logged ``value_mse`` stays the error
  against the outcome, so runs with and without the mix compare.
* **Ownership and score** (models with ``has_aux``, on self-play data): ``ownership`` (default 1.5 / size²) times
  the sum over the points of the binary cross-entropy between ``(1 + predicted) / 2`` and ``(1 + target) / 2``, and
  ``score`` (default 0.0015) times the Huber loss (delta :data:`SCORE_HUBER_DELTA` = 12 points) of the score in
  points, both weighted by the rows' ``aux_weight`` and averaged over them (rows of aux weight 0, from games that
  resigned or stopped at the move cap, add nothing: their last board is not settled; KataGo weighs these terms
  by its ``target_weight_ownership`` the same way, though it sums over the whole batch). These are KataGo's
  per-row weights (``python/katago/train/metrics_pytorch.py``): its ownership term is 1.5 times the *mean* over
  the board's points, which is 1.5 / size² times the sum; its scalar score-mean term is 0.0015 x Huber(12) in
  points. (KataGo's 0.02 weighs its score *belief distribution*, a cross-entropy over score buckets that gotk's
  models do not have.)

Under another **objective** (``--objective``: policy gradient, actor–critic, Q-learning on data with the
experience columns; :mod:`gotk.train.objectives` has their maths) :func:`batch_losses` applies that objective's
terms instead, each averaged over the batch's rows; the stats keep their meaning (the policy's cross-entropy and
top-1/top-5 against the move played, the value's squared error against the return over every row).

Under DDP every term is also returned *scaled* so that DDP's gradient average is the mean over all the rows of
all ranks (``share``: this step's ``[rows, value rows, policy weight, aux weight]`` summed over ranks).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from gotk.train import objectives as O

STATS = ("rows", "policy_loss_sum", "top1", "top5", "value_se", "value_rows", "soft_policy_ce_sum", "policy_weight",
         "ownership_loss_sum", "ownership_rows", "score_loss_sum", "score_rows")
"""The per-batch stats vector of :func:`batch_losses`, in order (the last six are zero without self-play
targets)."""


SCORE_HUBER_DELTA = 12.0
"""The score's Huber delta in points (KataGo's, on every board size): quadratic within 12 points, linear beyond, so
that a lopsided game's score does not dominate the gradient."""
DEFAULT_SCORE_WEIGHT = 0.0015
"""KataGo's weight of the scalar score-mean term."""
DEFAULT_OWNERSHIP_WEIGHT = 1.5
"""KataGo's weight of the ownership term per row, as a mean over the points (gotk sums them: 1.5 / size²)."""


@dataclass(frozen=True)
class LossWeights:
    """The weight of each term beside the policy's, and the board size."""

    value: float
    ownership: float
    score: float
    board_size: int
    value_mix: float = 0.0  # the root value's share of the value target on self-play data
    objective: str = "supervised"  # gotk.train.objectives.OBJECTIVES
    entropy: float = O.DEFAULT_ENTROPY_WEIGHT  # actor-critic: the entropy bonus's weight
    baseline: str = "none"  # policy gradient: gotk.train.objectives.BASELINES
    ratio_clip: float = 0.0  # policy gradient and actor-critic: PPO's clip of π / μ (0: none)

    @classmethod
    def of(cls, cfg, board_size: int) -> LossWeights:
        """The weights of a :class:`gotk.train.config.TrainConfig` (``None``: the defaults above)."""
        own = cfg.ownership_weight if cfg.ownership_weight is not None \
            else DEFAULT_OWNERSHIP_WEIGHT / (board_size * board_size)
        score = cfg.score_weight if cfg.score_weight is not None else DEFAULT_SCORE_WEIGHT
        return cls(float(cfg.value_weight), float(own), float(score), int(board_size), float(cfg.value_mix),
                   cfg.objective, float(cfg.entropy_weight), cfg.baseline, float(cfg.ratio_clip))

    @classmethod
    def default(cls, board_size: int, aux: bool = True, objective: str = "supervised",
                entropy: float = O.DEFAULT_ENTROPY_WEIGHT, baseline: str = "none",
                ratio_clip: float = 0.0) -> LossWeights:
        """The defaults on ``board_size`` boards (value weight 1, KataGo's ownership and score weights; ``aux``
        False: those two at 0) under ``objective``, what losses measured outside a training run use."""
        own = DEFAULT_OWNERSHIP_WEIGHT / (board_size * board_size) if aux else 0.0
        return cls(1.0, own, DEFAULT_SCORE_WEIGHT if aux else 0.0, int(board_size), 0.0, objective, entropy, baseline,
                   ratio_clip)


def soft_policy_sums(p: torch.Tensor, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """``(sum of weight * cross-entropy against the search's policy, sum of weights)`` over the rows of ``p``
    (policy logits, float32; ``batch`` may have more rows)."""
    n, dev = p.shape[0], p.device
    pi = batch["policy"][:n].to(dev, non_blocking=True).float()
    w = batch["weight"][:n].to(dev, non_blocking=True).float()
    ce_rows = -(pi * torch.log_softmax(p, 1)).sum(1)
    return (w * ce_rows).sum(), w.sum()


def aux_weights(batch: dict, n: int, device: torch.device) -> torch.Tensor:
    """The ``aux_weight`` of the first ``n`` rows of ``batch`` (float32; ones when the batch has none)."""
    if "aux_weight" not in batch:
        return torch.ones(n, device=device)
    return batch["aux_weight"][:n].to(device, non_blocking=True).float()


def aux_sums(own: torch.Tensor, score: torch.Tensor, batch: dict,
             weights: LossWeights) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ownership loss, score loss)`` summed over the rows of ``own`` (ownership logits, before the tanh) and
    ``score``, each row times its ``aux_weight`` (:func:`aux_weights`), each term times its weight."""
    n, dev = own.shape[0], own.device
    aux = aux_weights(batch, n, dev)
    # (1 + tanh(z)) / 2 = sigmoid(2z): the cross-entropy on the logits 2z, stable where tanh saturates
    target = (1.0 + batch["ownership"][:n].to(dev, non_blocking=True).float()) / 2.0
    bce = F.binary_cross_entropy_with_logits(2.0 * own.float(), target, reduction="none").sum((1, 2))
    hub = F.huber_loss(score.float(), batch["score"][:n].to(dev, non_blocking=True).float(),
                       delta=SCORE_HUBER_DELTA, reduction="none")
    return weights.ownership * (aux * bce).sum(), weights.score * (aux * hub).sum()


def batch_losses(p: torch.Tensor | None, v: torch.Tensor | None, own: torch.Tensor | None,
                 score: torch.Tensor | None, y: torch.Tensor, batch: dict, weights: LossWeights, world: int = 1,
                 share: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(loss, scaled loss, stats)`` of one batch from the network's outputs (policy logits, value, ownership
    logits and score; None where the model has no such output) and the labels ``y``; ``stats`` as
    :data:`STATS`. ``scaled`` is zero unless ``share`` is given (DDP)."""
    if O.objective(weights.objective).experience:
        return experience_losses(p, v, y, batch, weights, world, share)
    dev = y.device
    stats = torch.zeros(len(STATS), device=dev)
    stats[0] = y.shape[0]
    loss = torch.zeros((), device=dev)
    scaled = torch.zeros((), device=dev)
    if p is not None:
        p = p.float()
        if "policy" in batch:  # the search's policy, each row weighted by its weight
            wce, wsum = soft_policy_sums(p, batch)
            loss = loss + torch.where(wsum > 0, wce / wsum.clamp(min=1e-12), torch.zeros_like(wce))
            if share is not None:
                scaled = scaled + torch.where(share[2] > 0, wce * world / share[2].clamp(min=1e-12),
                                              torch.zeros_like(wce))
            with torch.no_grad():
                ce = F.cross_entropy(p, y)
            stats[6] = wce.detach()
            stats[7] = wsum
        else:
            ce = F.cross_entropy(p, y)
            loss = loss + ce
            if share is not None:
                scaled = scaled + ce * (world * y.shape[0] / share[0].clamp(min=1.0))
        with torch.no_grad():
            top5 = p.topk(min(5, p.shape[1]), dim=1).indices
            stats[1] = ce.detach() * y.shape[0]
            stats[2] = (top5[:, 0] == y).sum()
            stats[3] = (top5 == y[:, None]).any(dim=1).sum()
    if v is not None:
        t = batch["value"].to(dev, non_blocking=True).float()
        known = (t != 0).float()
        se = (v.float() - t) ** 2 * known
        nk = known.sum()
        target_se = se
        if weights.value_mix and "root_value" in batch:  # the loss against the mixed target, the stats the result's
            root = batch["root_value"][:t.shape[0]].to(dev, non_blocking=True).float()
            mixed = (1.0 - weights.value_mix) * t + weights.value_mix * root
            target_se = (v.float() - mixed) ** 2 * known
        loss = loss + weights.value * target_se.sum() / nk.clamp(min=1.0)
        if share is not None:
            scaled = scaled + weights.value * world * target_se.sum() / share[1].clamp(min=1.0)
        stats[4] = se.sum().detach()
        stats[5] = nk
    if own is not None and score is not None:
        if "ownership" in batch:  # averaged over the rows' aux weights (rows of weight 0 add nothing)
            aux = aux_weights(batch, y.shape[0], dev).sum()
            own_sum, score_sum = aux_sums(own, score, batch, weights)
            terms = own_sum + score_sum
            loss = loss + torch.where(aux > 0, terms / aux.clamp(min=1e-12), torch.zeros_like(terms))
            if share is not None:
                scaled = scaled + torch.where(share[3] > 0, terms * world / share[3].clamp(min=1e-12),
                                              torch.zeros_like(terms))
            stats[8] = own_sum.detach()
            stats[9] = aux
            stats[10] = score_sum.detach()
            stats[11] = aux
        else:  # no targets: the outputs join the graph with zero weight (DDP expects every parameter used)
            zero = 0.0 * (own.float().sum() + score.float().sum())
            loss = loss + zero
            scaled = scaled + zero
    return loss, scaled, stats


def experience_losses(p: torch.Tensor | None, v: torch.Tensor | None, y: torch.Tensor, batch: dict,
                      weights: LossWeights, world: int = 1,
                      share: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`batch_losses` under an objective that learns from experience (``weights.objective``;
    :mod:`gotk.train.objectives`): its terms averaged over the rows (the batch's ``return``, ``play_value``; the
    action is the label ``y``), the stats as :data:`STATS` (cross-entropy and top-k against the actions, the value's
    squared error against the returns)."""
    dev = y.device
    n = y.shape[0]
    stats = torch.zeros(len(STATS), device=dev)
    stats[0] = n
    ret = batch["return"][:n].to(dev, non_blocking=True).float()
    mu = batch["play_prob"][:n].to(dev, non_blocking=True).float() if weights.ratio_clip > 0 else None
    choices = batch["choices"][:n].to(dev, non_blocking=True).bool() if "choices" in batch else None
    total = O.objective(weights.objective).terms(O.Terms(p, v, y, ret, batch, mu, choices), weights)
    loss = total / max(n, 1)
    scaled = total * world / share[0].clamp(min=1.0) if share is not None else torch.zeros((), device=dev)
    with torch.no_grad():
        pf = p.float()
        top5 = pf.topk(min(5, pf.shape[1]), dim=1).indices
        stats[1] = F.cross_entropy(pf, y, reduction="sum")
        stats[2] = (top5[:, 0] == y).sum()
        stats[3] = (top5 == y[:, None]).any(dim=1).sum()
        if v is not None:
            stats[4] = ((v.float().reshape(-1) - ret) ** 2).sum()
            stats[5] = n
    return loss, scaled, stats


__all__ = ["DEFAULT_OWNERSHIP_WEIGHT", "DEFAULT_SCORE_WEIGHT", "SCORE_HUBER_DELTA", "STATS", "LossWeights", "aux_sums",
           "aux_weights", "batch_losses", "experience_losses",
           "soft_policy_sums"]
