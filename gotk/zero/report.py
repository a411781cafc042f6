"""The report of a ``gotk zero`` run: ``report.json``, ``report.png`` and TensorBoard scalars, rebuilt from the
run's state and match reports after every generation (so they are current after a kill too)."""

from __future__ import annotations

import json
from pathlib import Path

from gotk.atomic import atomic_path


def generation_rows(state: dict, ratings: dict[str, dict]) -> list[dict]:
    """One row per finished generation: hours, self-play speed, losses, the new network's Elo and win rates."""
    rows = []
    for rec in state.get("generations", []):
        sp, tr, ev = rec["selfplay"], rec["train"], rec["eval"]
        secs = rec["seconds"]
        rating = ratings.get(rec["network"], {})
        rows.append({
            "generation": rec["generation"], "network": rec["network"], "hours": rec["hours_at_end"],
            "games": sp.get("games"), "positions": sp.get("positions"),
            "selfplay_positions_per_s": sp.get("positions_per_s"),
            "selfplay_outside_network_share": sp.get("outside_network_share"),
            "games_per_hour": round(sp["games"] / secs["selfplay"] * 3600, 1) if secs["selfplay"] > 0 else None,
            "false_resignation_rate": sp.get("false_resignation_rate"),
            "loss": tr.get("loss"), "policy_loss": tr.get("policy_soft_ce", tr.get("policy_loss")),
            "value_mse": tr.get("value_mse"), "ownership_loss": tr.get("ownership_loss"),
            "score_loss": tr.get("score_loss"),
            "elo": rating.get("elo"), "elo_ci95": rating.get("ci95"),
            **{k: v for k, v in ev.items()}, "promoted": rec["promoted"], "seconds": secs,
        })
    return rows


def network_rows(state: dict, ratings: dict[str, dict]) -> list[dict]:
    """One row per network the learner of a ``--loop actors`` run published: learning hours, games and rows so far,
    self-play speed over the learning time, samples trained per position, the training and fresh losses (the
    network before it, on the rows it had not seen), its drift from the run's first network on the probe set
    (``kl_start``, ``agree_start``: :func:`gotk.zero.learner.start_drift`), the network's Elo and win rates."""
    rows = []
    evals = state.get("evaluations", {})
    for rec in state.get("networks", []):
        tr, fresh = rec["train"], rec.get("fresh") or {}
        secs = rec["hours"] * 3600
        rating = ratings.get(rec["network"], {})
        rows.append({
            "generation": rec["version"] - 1, "network": rec["network"], "hours": rec["hours"],
            "model": rec.get("model"), "grown": "grown" in rec, "lr": rec.get("lr"),
            "games": rec["games"], "positions": rec["rows"], "steps": rec["steps_done"],
            "samples_per_position": rec["samples_per_position"],
            "selfplay_positions_per_s": round(rec["rows"] / secs, 2) if secs > 0 else None,
            "games_per_hour": round(rec["games"] / secs * 3600, 1) if secs > 0 else None,
            "loss": tr.get("loss"), "policy_loss": tr.get("policy_soft_ce", tr.get("policy_loss")),
            "value_mse": tr.get("value_mse"), "ownership_loss": tr.get("ownership_loss"),
            "score_loss": tr.get("score_loss"),
            "fresh_policy_loss": fresh.get("policy_soft_ce", fresh.get("policy_loss")),
            "fresh_value_mse": fresh.get("value_mse"),
            "fresh_positions": fresh.get("positions"),
            "kl_start": (rec.get("drift") or {}).get("kl_start"),
            "agree_start": (rec.get("drift") or {}).get("agree_start"),
            "heldout_top1": ((rec.get("drift") or {}).get("heldout") or {}).get("top1"),
            "heldout_value_mse": ((rec.get("drift") or {}).get("heldout") or {}).get("value_mse"),
            "elo": rating.get("elo"), "elo_ci95": rating.get("ci95"), **evals.get(rec["network"], {}),
            "round_s": rec.get("round_s"), "learner_peak_rss_mb": rec.get("learner_peak_rss_mb"),
            "actors_peak_rss_mb": rec.get("actors_peak_rss_mb"),
        })
    return rows


def write_report(root: Path, state: dict, ratings: dict[str, dict], rows: list[dict] | None = None,
                 extra: dict | None = None) -> dict:
    """Write ``report.json`` (and the picture, and TensorBoard scalars when available); returns the report.
    ``rows``: one per network (default: the generations of a ``--loop generations`` run); ``extra``: further keys."""
    rows = generation_rows(state, ratings) if rows is None else rows
    report = {"format": "gotk-zero-report", "options": state.get("options"), "hours": round(
        state.get("elapsed_s", 0.0) / 3600, 4), "generations": rows, "best": state.get("best"),
        "ratings": sorted(ratings.values(), key=lambda r: -r.get("elo", 0.0)), "elo_anchor": "random = 0",
        **(extra or {})}
    with atomic_path(root / "report.json") as tmp:
        Path(tmp).write_text(json.dumps(report, indent=2) + "\n")
    if rows:
        plot(root / "report.png", rows, ratings)
        tensorboard(root / "tensorboard", rows)
    return report


def plot(path: Path, rows: list[dict], ratings: dict[str, dict]) -> None:
    """Four panels: Elo against hours (with the anchors' lines), losses, games per hour, positions per second."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    hours = [r["hours"] for r in rows]
    fig, ax = plt.subplots(2, 2, figsize=(11, 7.5), layout="constrained")
    a = ax[0][0]
    elo = [r["elo"] for r in rows]
    a.set_title("strength")
    if any(e is not None for e in elo):
        a.plot(hours, [e if e is not None else float("nan") for e in elo], "o-", label="network")
        anchor_lines(a, {name: r for name, r in ratings.items() if not name.startswith("net-")})
        a.set_xlabel("hours")
        a.set_ylabel("Elo (random = 0)")
    else:  # a run that played no evaluation games (--eval-games 0, or not yet): no axis to read a value off
        a.axis("off")
        a.text(0.5, 0.5, "no evaluation games yet\n(--eval-games 0, or gotk zero-eval RUN plays them)",
               ha="center", va="center", transform=a.transAxes, color="gray")
    a = ax[0][1]
    for key in ("policy_loss", "value_mse", "ownership_loss", "score_loss", "fresh_policy_loss", "fresh_value_mse"):
        ys = [r.get(key) for r in rows]
        if any(y is not None for y in ys):
            a.plot([r["generation"] for r in rows], [y if y is not None else float("nan") for y in ys], "o-",
                   label=key)
    a.set_xlabel("generation")
    a.set_title("losses (training: last logged step; fresh: unseen rows)")
    a.legend(fontsize=8)
    a = ax[1][0]
    a.plot(hours, [r["games_per_hour"] or float("nan") for r in rows], "o-")
    a.set_xlabel("hours")
    a.set_title("self-play games per hour")
    a = ax[1][1]
    a.plot(hours, [r["selfplay_positions_per_s"] or float("nan") for r in rows], "o-")
    a.set_xlabel("hours")
    a.set_title("self-play recorded positions per second")
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=90)
    plt.close(fig)


def anchor_lines(ax, anchors: dict[str, dict]) -> None:
    """A dashed line and a label for every anchor (random player, GNU Go level) at its Elo."""
    for name, r in anchors.items():
        ax.axhline(r["elo"], ls="--", lw=1, color="gray")
        # x in axes fractions: a label at a data x the Elo points do not span would push the layout off
        ax.text(0.0, r["elo"], f" {name}", va="bottom", fontsize=8, color="gray", transform=ax.get_yaxis_transform())


def tensorboard(folder: Path, rows: list[dict]) -> None:
    """Scalars per generation under ``zero/`` (written anew each time: the folder holds one event file)."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # tensorboard not installed: the JSON and the picture say the same
        return
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
    w = SummaryWriter(str(folder))
    try:
        for r in rows:
            step = r["generation"]
            for key in ("elo", "loss", "policy_loss", "value_mse", "ownership_loss", "score_loss", "games_per_hour",
                        "selfplay_positions_per_s", "vs_random", "hours"):
                if isinstance(r.get(key), (int, float)):
                    w.add_scalar(f"zero/{key}", r[key], step)
    finally:
        w.close()


__all__ = ["anchor_lines", "generation_rows", "network_rows", "plot", "tensorboard", "write_report"]
