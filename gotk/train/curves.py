"""``curves.png``: training and validation curves of a run, drawn from its ``metrics.jsonl``."""

from __future__ import annotations

import os
from pathlib import Path

from gotk.train.metrics import read_records


def plot_curves(run_dir: str | os.PathLike) -> Path | None:
    """Draw ``curves.png`` (loss, top-1, value MSE by step; validation per epoch) from ``metrics.jsonl``."""
    run_dir = Path(run_dir)
    recs = read_records(run_dir)
    if not recs:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [r for r in recs if r.get("kind") == "step"]
    epochs = [r for r in recs if r.get("kind") == "epoch"]
    panels = [("loss", "loss"), ("top1", "top-1 accuracy"), ("value_mse", "value MSE")]
    panels = [(k, t) for k, t in panels if any(k in r for r in steps) or any(f"val_{k}" in r for r in epochs)]
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(5 * max(1, len(panels)), 3.6), squeeze=False)
    for ax, (key, title) in zip(axes[0], panels, strict=False):
        xs = [r["step"] for r in steps if key in r]
        if xs:
            ax.plot(xs, [r[key] for r in steps if key in r], label="train", lw=1)
        ve = [r for r in epochs if f"val_{key}" in r and r[f"val_{key}"] is not None]
        if ve:
            ax.plot([r["step"] for r in ve], [r[f"val_{key}"] for r in ve], "o-", label="val")
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    out = run_dir / "curves.png"
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def plot_calibration(report: dict, path: str | os.PathLike) -> Path | None:
    """Draw the calibration of an evaluation report (``gotk eval`` of an agent with a value head): observed
    win rate against predicted win probability per bin, the diagonal for reference, rows per bin below."""
    rows = [r for r in report.get("calibration") or [] if r["positions"]]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, hist) = plt.subplots(2, 1, figsize=(5, 6), gridspec_kw={"height_ratios": [3, 1]}, sharex=True)
    ax.plot([0, 1], [0, 1], color="grey", lw=1, ls="--", label="perfect calibration")
    ax.plot([r["predicted"] for r in rows], [r["observed"] for r in rows], "o-", label="value head")
    ax.set_ylabel("observed win rate")
    ece = report.get("calibration_ece")
    ax.set_title(f"value calibration (MSE {report.get('value_mse', float('nan')):.3f}"
                 + (f", ECE {ece:.3f})" if ece is not None else ")"))
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left")
    centres = [(float(r["bin"].split("-")[0]) + float(r["bin"].split("-")[1])) / 2 for r in rows]
    hist.bar(centres, [r["positions"] for r in rows], width=0.09)
    hist.set_xlabel("predicted win probability of the player to move")
    hist.set_ylabel("positions")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out
