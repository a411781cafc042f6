"""The run's metrics log (``metrics.jsonl``: one JSON object per logged step, epoch and validation) and the
running sums it is computed from."""

from __future__ import annotations

import json
import os
from pathlib import Path

from gotk.atomic import write_text_atomic

METRICS = "metrics.jsonl"
# order of the per-step stats a training step returns and the window/epoch sums accumulate
STAT_FIELDS = ("rows", "policy_loss_sum", "top1", "top5", "value_se", "value_rows", "loss", "steps")


def summarise(s: list[float], seconds: float | None) -> dict:
    """Window/epoch sums (:data:`STAT_FIELDS`) → means: positions, loss, policy_loss, top1, top5, value_mse,
    samples_per_s."""
    rows, ploss, top1, top5, vse, vrows, loss_sum, steps = s
    out: dict = {"positions": int(rows), "loss": loss_sum / steps if steps else None}
    if rows and (ploss or top1 or top5):
        out.update(policy_loss=ploss / rows, top1=top1 / rows, top5=top5 / rows)
    if vrows:
        out["value_mse"] = vse / vrows
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
