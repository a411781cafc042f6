"""The validation pass of a training run: the metrics of the validation split (:class:`Validation`), within
the share of a ``--max-minutes`` budget that one validation may take, and the score that picks the best agent."""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from gotk.datasets import ShardDataset
from gotk.train.evaluate import Metrics
from gotk.train.losses import LossWeights, aux_sums, aux_weights, soft_policy_sums

VAL_SHARE = 0.1  # of a --max-minutes budget: the most one validation may take


def val_score(val: dict) -> float | None:
    """Higher is better: val top-1 for policy models, minus value MSE for value-only models."""
    if val.get("top1") is not None:
        return val["top1"]
    if val.get("value_mse") is not None:
        return -val["value_mse"]
    return None


class Validation:
    """Validates ``model`` on ``ds`` (this rank's share under DDP, ``rank`` of ``world``), at most
    ``max_positions`` rows in all, in ``autocast``; ``baseline`` (the komi/handicap value baseline, or None) is
    scored beside the value head, ``all_reduce`` sums a tensor over ranks. With a time budget (``budget_s``) a
    validation stops after :data:`VAL_SHARE` of it, and every later one scores as many rows (:attr:`cap`), so
    their scores compare."""

    def __init__(self, ds: ShardDataset, model: torch.nn.Module, device: torch.device, loss_weights: LossWeights,
                 baseline, autocast: Callable, all_reduce: Callable[[torch.Tensor], torch.Tensor], rank: int,
                 world: int, max_positions: int | None, budget_s: float | None) -> None:
        self.ds, self.model, self.device, self.loss_weights = ds, model, device, loss_weights
        self.baseline, self.autocast, self.all_reduce = baseline, autocast, all_reduce
        self.rank, self.world, self.max_positions, self.budget_s = rank, world, max_positions, budget_s
        self.targets = bool(ds.index.targets)  # the data has the self-play target columns
        self.cap: int | None = None  # rows of a validation the budget cut short: later ones use as many

    def deadline(self, t_budget: float) -> float | None:
        """``perf_counter`` time by which a validation starting now stops: :data:`VAL_SHARE` of the budget that
        started at ``t_budget``, and never past its end (None without ``--max-minutes``)."""
        if self.budget_s is None:
            return None
        now = time.perf_counter()
        return min(now + VAL_SHARE * self.budget_s, t_budget + self.budget_s)

    def quota(self) -> int | None:
        """This rank's share of ``max_positions``: ranks fill it in rank order, so the total is
        ``min(max_positions, validation rows)`` whatever the world size."""
        limit = self.max_positions
        if limit is None or self.world == 1:
            return limit
        idx = self.ds.index
        rows = [sum(rg.rows for rg in idx.slot_row_groups(0, 0, False, r, self.world, 0, 1))
                for r in range(self.world)]
        return max(0, min(rows[self.rank], limit - sum(rows[:self.rank])))

    @torch.no_grad()
    def run(self, t_budget: float) -> dict:
        """Metrics on the validation split (policy: top1/top5/nll; value: mse/sign accuracy; on data with
        self-play targets also policy_soft_ce, and ownership_loss and score_loss for a model with those outputs,
        as the training metrics define them). The model is left in eval mode."""
        model = self.model
        model.eval()
        m = Metrics(model.num_moves)
        limit = self.quota()
        if self.cap is not None:
            limit = self.cap if limit is None else min(limit, self.cap)
        deadline = self.deadline(t_budget)
        cut = False
        aux = model.has_aux
        # soft CE, policy weights, ownership, score, aux weights
        sums = torch.zeros(5, dtype=torch.float64, device=self.device)
        for b in self.ds:
            if deadline is not None and m.rows > 0 and time.perf_counter() >= deadline:
                cut = True  # the budget's share is spent: the rows so far are this validation
                break
            x = b["features"]
            glob = b["globals"] if model.num_globals else None
            meta = b["metadata"] if model.num_metadata else None
            if limit is not None:
                room = limit - m.rows
                if room <= 0:
                    break
                x = x[:room]
                glob = glob[:room] if glob is not None else None
                meta = meta[:room] if meta is not None else None
            n = x.shape[0]
            glob = glob.to(self.device) if glob is not None else None
            meta = meta.to(self.device) if meta is not None else None
            with self.autocast():
                if aux:
                    p, v, own, score = model(x.to(self.device), aux="logits", glob=glob, meta=meta)
                else:
                    p, v = model(x.to(self.device), glob=glob, meta=meta)
            if self.targets and p is not None:
                sums[0:2] += torch.stack(soft_policy_sums(p.float(), b))
            if self.targets and aux and own is not None:
                sums[2:4] += torch.stack(aux_sums(own, score, b, self.loss_weights))
                sums[4] += aux_weights(b, n, self.device).sum()
            logp = torch.log_softmax(p.float(), 1).cpu().numpy() if p is not None else None
            base = (self.baseline.predict(b["game_index"][:n].numpy(), b["to_play"][:n].numpy())
                    if self.baseline is not None and v is not None else None)
            m.update(b["label"][:n].numpy(), b["move_number"][:n].numpy(), logp,
                     v.float().cpu().numpy() if v is not None else None, b["value"][:n].numpy(), None, base)
        if cut and self.cap is None:
            self.cap = m.rows  # later validations score the same rows, so their scores compare
        m.all_reduce()
        m.has_policy, m.has_value = model.has_policy, model.has_value  # a rank may have had no rows
        s = m.summary()
        s.pop("baselines", None)
        s.pop("calibration", None)  # the table goes to gotk eval; the log keeps calibration_ece
        if self.targets:
            sums = self.all_reduce(sums).tolist()
            if sums[1]:
                s["policy_soft_ce"] = sums[0] / sums[1]
            if sums[4]:
                s["ownership_loss"] = sums[2] / sums[4]
                s["score_loss"] = sums[3] / sums[4]
        return s
