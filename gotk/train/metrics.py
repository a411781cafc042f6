"""The run's metrics log (``metrics.jsonl``: one JSON object per logged step, epoch and validation), the same
numbers as TensorBoard event files beside it (:class:`EventLog`, ``tensorboard --logdir RUN``) and the running
sums they are computed from."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from gotk.atomic import write_text_atomic

METRICS = "metrics.jsonl"
# order of the per-step stats a training step returns and the window/epoch sums accumulate
# (the last six: the losses of the self-play targets, zero on data without them)
STAT_FIELDS = ("rows", "policy_loss_sum", "top1", "top5", "value_se", "value_rows", "loss", "steps",
               "policy_soft_ce_sum", "policy_weight", "ownership_loss_sum", "ownership_rows", "score_loss_sum",
               "score_rows")


def summarise(s: list[float], seconds: float | None) -> dict:
    """Window/epoch sums (:data:`STAT_FIELDS`; the first eight alone are accepted too) → means: positions, loss,
    policy_loss (cross-entropy against the move played), top1, top5, value_mse, samples_per_s; on data with
    self-play targets also policy_soft_ce (the cross-entropy against the search's policy, weighted by the rows'
    ``weight``), ownership_loss and score_loss (per unit of the rows' ``aux_weight``, times their weights: the
    terms added to the loss)."""
    rows, ploss, top1, top5, vse, vrows, loss_sum, steps = s[:8]
    soft, wsum, own, own_rows, score, score_rows = (list(s[8:14]) + [0.0] * 6)[:6]
    out: dict = {"positions": int(rows), "loss": loss_sum / steps if steps else None}
    if rows and (ploss or top1 or top5):
        out.update(policy_loss=ploss / rows, top1=top1 / rows, top5=top5 / rows)
    if vrows:
        out["value_mse"] = vse / vrows
    if wsum:
        out["policy_soft_ce"] = soft / wsum
    if own_rows:
        out["ownership_loss"] = own / own_rows
    if score_rows:
        out["score_loss"] = score / score_rows
    if seconds:
        out["samples_per_s"] = rows / seconds
    return out


def append_record(run_dir: str | os.PathLike, record: dict) -> None:
    """Append one record (floats rounded to 6 digits) to the run's ``metrics.jsonl``."""
    rec = {k: (round(v, 6) if isinstance(v, float) else v) for k, v in record.items()}
    with open(Path(run_dir) / METRICS, "a") as f:
        f.write(json.dumps(rec) + "\n")


def trim_after(run_dir: str | os.PathLike, step: int) -> None:
    """On resume, drop the records logged after ``step`` (the checkpoint's): they will be logged again."""
    p = Path(run_dir) / METRICS
    if not p.exists():
        return
    keep = []
    for line in p.read_text().splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if rec.get("step", 0) <= step:
            keep.append(line)
    write_text_atomic(p, "".join(x + "\n" for x in keep))


def read_records(run_dir: str | os.PathLike) -> list[dict]:
    """Every record of the run's ``metrics.jsonl`` (empty when there is none)."""
    p = Path(run_dir) / METRICS
    if not p.exists():
        return []
    return [json.loads(x) for x in p.read_text().splitlines() if x.strip()]


TENSORBOARD_MISSING = "the tensorboard package is not installed: pip install 'gotk[tensorboard]'"
# metrics.jsonl keys written as TensorBoard scalars: a step record's under train/, an epoch record's val_* under val/
STEP_SCALARS = ("loss", "policy_loss", "top1", "top5", "value_mse", "policy_soft_ce", "ownership_loss", "score_loss",
                "samples_per_s", "lr")
EPOCH_SCALARS = ("top1", "top5", "nll", "value_mse", "value_sign_accuracy", "komi_handicap_mse", "calibration_ece",
                 "policy_soft_ce", "ownership_loss", "score_loss", "seconds")


def tensorboard_available() -> bool:
    """Whether ``torch.utils.tensorboard`` can write event files (it needs the ``tensorboard`` package)."""
    try:
        from torch.utils.tensorboard import SummaryWriter  # noqa: F401
    except ImportError:
        return False
    return True


class EventLog:
    """TensorBoard event files in the run folder, written through ``torch.utils.tensorboard`` (the format's own
    maintained writer): the scalars of every ``metrics.jsonl`` record, by step. ``resume_step``: events logged
    after it by the interrupted run are purged, as :func:`trim_after` drops its records."""

    def __init__(self, run_dir: str | os.PathLike, resume_step: int | None = None) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(run_dir), purge_step=resume_step or None, flush_secs=30)

    def add(self, record: dict) -> None:
        if record.get("kind") == "step":
            keys = [(f"train/{k}", k) for k in STEP_SCALARS]
        elif record.get("kind") == "epoch":
            keys = [(f"val/{k}", f"val_{k}") for k in EPOCH_SCALARS] + [("train/epoch_loss", "train_loss")]
        else:
            return
        for tag, key in keys:
            v = record.get(key)
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
                self.writer.add_scalar(tag, float(v), int(record["step"]))

    def close(self) -> None:
        self.writer.close()
