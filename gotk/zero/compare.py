"""Several ``gotk zero`` runs on one Elo scale, with their curves on one picture (``gotk zero-compare``).

Each run rates its networks on its own scale (the random player at 0). Two runs' scales meet in the players they
share: the random player and the GNU Go levels every run plays as anchors, and any head-to-head match between
their networks (``gotk match --json`` reports given beside the runs). One Bradley–Terry fit over all of it
(:func:`gotk.play.elo.fit`, the random player at 0) puts every network of every run on one scale; a run's
networks are named ``LABEL:net-NNN`` there, so runs with the same generation numbers stay apart.
"""

from __future__ import annotations

import json
from pathlib import Path

from gotk.atomic import atomic_path
from gotk.errors import GotkError
from gotk.play.elo import fit, read_match_reports
from gotk.zero.evaluation import RANDOM_NAME
from gotk.zero.options import net_name
from gotk.zero.report import anchor_lines


class CompareError(GotkError):
    """Runs that cannot be compared (``bad_runs``): a folder that is not a run, labels that clash."""

    def __init__(self, message: str) -> None:
        super().__init__("bad_runs", message)


def _run_rows(run: Path) -> list[dict]:
    try:
        report = json.loads((run / "report.json").read_text())
        rows = report["generations"]
        return [{"generation": r["generation"], "network": r["network"], "hours": r["hours"]} for r in rows]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise CompareError(f"{run}: not a `gotk zero` run (report.json: {type(e).__name__}: {e})") from None


def compare_runs(runs: list[Path], labels: list[str] | None = None, matches: list[Path] | None = None,
                 rename: dict[str, str] | None = None, prior_games: float = 2.0) -> dict:
    """Every rated network of ``runs`` on one scale: ``{"anchor", "games", "runs": [{"label", "path", "points":
    [{"generation", "network", "name", "hours", "elo", "ci95"}]}], "anchors": [...], "ratings": [...]}``.
    ``labels`` name the runs (default: their folders' names); ``matches`` are further reports (head-to-head games
    between runs' networks), whose player names ``rename`` maps to ``LABEL:net-NNN`` names.
    Raises :class:`CompareError` or :class:`~gotk.play.elo.EloError` (one line) for input it cannot use."""
    runs = [Path(r) for r in runs]
    if not runs:
        raise CompareError("give at least one run folder")
    labels = list(labels) if labels else [r.resolve().name for r in runs]
    if len(labels) != len(runs):
        raise CompareError(f"{len(labels)} labels for {len(runs)} runs: give one --label per run, or none")
    if len(set(labels)) != len(labels):
        raise CompareError(f"two runs share a label ({', '.join(labels)}): name them with --label")
    per_run = [_run_rows(r) for r in runs]  # every folder is checked before any report is read
    games: list[tuple] = []
    for run, label, rows in zip(runs, labels, per_run, strict=True):
        # every network a run's reports can name: the first (random or given) and one per generation
        names = {net_name(k): f"{label}:{net_name(k)}" for k in range(len(rows) + 1)}
        reports = sorted(run.glob("gen-*/eval/*.json")) + sorted(run.glob("eval/*/*.json"))  # either loop's
        games += read_match_reports(reports, names)
    if matches:
        games += read_match_reports(list(matches), rename or {})
    if not games:
        raise CompareError("no decided game in these runs' match reports (were they run with --eval-games 0?)")
    ratings = {r.name: r.as_dict() for r in fit(games, RANDOM_NAME, 0.0, prior_games)}
    out_runs = []
    for run, label, rows in zip(runs, labels, per_run, strict=True):
        points = []
        for row in rows:
            name = f"{label}:{row['network']}"
            if name in ratings:
                points.append({**row, "name": name, "elo": ratings[name]["elo"], "ci95": ratings[name]["ci95"]})
        out_runs.append({"label": label, "path": str(run), "points": points})
    ranked = sorted(ratings.values(), key=lambda r: -r["elo"])
    # the players no run owns: the random player, the GNU Go levels, a --match opponent left unrenamed
    anchors = [r for r in ranked if not any(r["name"].startswith(f"{label}:") for label in labels)]
    return {"anchor": f"{RANDOM_NAME} = 0", "games": len(games), "prior_games": prior_games, "runs": out_runs,
            "anchors": anchors, "ratings": ranked}


def plot_compare(path: Path, result: dict) -> None:
    """Elo against hours, one line per run with its 95% intervals, the shared anchors as dashed lines."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, a = plt.subplots(figsize=(8, 5), layout="constrained")
    for run in result["runs"]:
        pts = run["points"]
        a.errorbar([p["hours"] for p in pts], [p["elo"] for p in pts], yerr=[p["ci95"] for p in pts], fmt="o-",
                   capsize=3, label=run["label"])
    anchor_lines(a, {r["name"]: r for r in result["anchors"]})
    a.set_xlabel("hours")
    a.set_ylabel(f"Elo ({result['anchor']}), 95% intervals")
    a.set_title("strength against the time spent")
    a.legend(fontsize=8)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=90)
    plt.close(fig)


__all__ = ["CompareError", "compare_runs", "plot_compare"]
