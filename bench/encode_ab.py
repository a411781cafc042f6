"""``gotk encode`` on one worker, this checkout against a baseline checkout, in interleaved rounds.

The target: ``gotk encode --encoder oneplane`` end to end ≥ 4× the code before the compiled SGF reader
(commit 0c20437), on one worker. On a shared host whose speed drifts during a run (the same command can run
slower from one minute to the next), one timing of each side is not a ratio. Each round runs each
checkout's own ``bench/encode.py`` (``--workers 1 --dlgo-games 0 --no-rss``, best of ``--repeat``) as a fresh
process, baseline then this checkout, so both sides of a round see the same host. Reported: positions/s and
the stage split of every run, the ratio per round, their median and the best over the best.

Usage::

    git archive 0c20437 | (mkdir -p BASE_CHECKOUT && tar -x -C BASE_CHECKOUT)
    python bench/encode_ab.py --baseline BASE_CHECKOUT [--encoder oneplane] [--rounds 3] [--repeat 3]
                              [ARCHIVES...] [--json-out FILE]

Default input: ``KGS-2017_01-19-733-.tar.gz`` and ``KGS-2017_02-19-525-.tar.gz`` from ``../shared/kgs``
(both checkouts read the same files).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import REPO_ROOT, format_table, kgs_dir, machine_info, write_json  # noqa: E402

GOAL = {"oneplane": 4.0}  # x the code before the compiled SGF reader (0c20437), one worker


def run_side(checkout: Path, encoder: str, repeat: int, paths: list[str], tmp: Path) -> dict:
    """One ``bench/encode.py`` run of ``checkout`` (a fresh process); its one-worker result."""
    out = tmp / "side.json"
    env = {**os.environ, "GOTK_KGS": str(kgs_dir()), "PYTHONPATH": str(checkout)}
    cmd = [sys.executable, "bench/encode.py", *paths, "--encoders", encoder, "--workers", "1", "--dlgo-games", "0",
           "--no-rss", "--repeat", str(repeat), "--json-out", str(out)]
    proc = subprocess.run(cmd, cwd=checkout, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{checkout}: bench/encode.py exited {proc.returncode}: {proc.stderr[-2000:]}")
    g = json.loads(out.read_text())["gotk"][0]
    return {"positions": g["positions"], "pos_s": g["positions_per_s"], "wall_s": g["wall_s"], "cpu_s": g["cpu_s"],
            "stage_s": g.get("stage_s", {})}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", help="archives (default: 2017-01 and 2017-02 .tar.gz from ../shared/kgs)")
    ap.add_argument("--baseline", required=True, help="the other gotk checkout (its own bench/encode.py is run)")
    ap.add_argument("--encoder", default="oneplane")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3, help="runs per side and round (best wall time kept)")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)
    baseline = Path(args.baseline).resolve()
    if not (baseline / "bench" / "encode.py").is_file():
        sys.exit(f"error: {baseline} has no bench/encode.py")
    paths = [str(Path(p).resolve()) for p in args.paths] or [
        str(kgs_dir() / n) for n in ("KGS-2017_01-19-733-.tar.gz", "KGS-2017_02-19-525-.tar.gz")]
    missing = [p for p in paths if not Path(p).is_file()]
    if missing:
        sys.exit(f"error: missing input(s): {', '.join(missing)} (../shared/kgs beside the checkout, or GOTK_KGS)")
    command = " ".join(["python bench/encode_ab.py", *(argv if argv is not None else sys.argv[1:])])
    report: dict = {"benchmark": "encode_ab", "command": command, "machine": machine_info(), "encoder": args.encoder,
                    "baseline": str(baseline), "inputs": paths, "rounds": []}
    with tempfile.TemporaryDirectory(prefix="gotk-encode-ab-") as td:
        for i in range(args.rounds):
            base = run_side(baseline, args.encoder, args.repeat, paths, Path(td))
            this = run_side(REPO_ROOT, args.encoder, args.repeat, paths, Path(td))
            if base["positions"] != this["positions"]:
                sys.exit(f"error: the checkouts encoded different row counts: {base['positions']} vs "
                         f"{this['positions']}")
            r = {"round": i + 1, "baseline_pos_s": base["pos_s"], "this_pos_s": this["pos_s"],
                 "ratio": round(this["pos_s"] / base["pos_s"], 2), "baseline": base, "this": this,
                 "load_1m": round(os.getloadavg()[0], 2)}
            report["rounds"].append(r)
            print(f"round {i + 1}: baseline {base['pos_s']:,.0f} pos/s, this {this['pos_s']:,.0f} pos/s, "
                  f"x{r['ratio']}", file=sys.stderr, flush=True)
    rounds = report["rounds"]
    median = statistics.median(r["ratio"] for r in rounds)
    best = max(r["this_pos_s"] for r in rounds) / max(r["baseline_pos_s"] for r in rounds)
    goal = GOAL.get(args.encoder)
    report["summary"] = {"positions": rounds[0]["this"]["positions"], "median_ratio": round(median, 2),
                         "best_over_best": round(best, 2), "goal": goal,
                         "met": None if goal is None else bool(median >= goal)}
    report["machine"]["loadavg_at_end"] = os.getloadavg()
    print(write_json(report, args.json_out))
    print(format_table(rounds, [("round", "round"), ("baseline_pos_s", "baseline pos/s"), ("this_pos_s", "this pos/s"),
                                ("ratio", "×"), ("load_1m", "load (1 min)")]))
    s = report["summary"]
    verdict = "" if goal is None else f" (goal x{goal:g}: {'MET' if s['met'] else 'NOT MET'})"
    print(f"\n{args.encoder}, {s['positions']:,} positions, one worker: median x{s['median_ratio']}, best over best "
          f"x{s['best_over_best']}{verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
