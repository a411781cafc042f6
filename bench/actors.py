"""Self-play actors on CPU: games per hour of one actor, of two (one process per core, one torch thread each, the
``gotk zero`` default), and of one process with two torch threads (the generation loop's self-play), in one run.
Goal: two actors ≥ 1.8x one actor on a quiet 2-core host.

Each configuration is the real command, ``gotk selfplay --init random --size 9 --encoder relative --visits 32
--fast-visits 8`` with ``--games 2G --chunk-games G`` (so two chunks: one after the other for one process, side by
side for two), timed from the start of its run to its report (``wall_s``), after one untimed warm-up run (numba's
cache). The host's calibration command of the zero loop's budget (``--games 24 --chunk-games 24 --threads 2
--seed 1``, its second run) is timed too, so the figures can be scaled between hosts.

    python bench/actors.py                    # G = 24
    python bench/actors.py --games 16 --json out.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import format_table, machine_info, write_json

GOAL = 1.8
BASE = ["--init", "random", "--size", "9", "--encoder", "relative", "--visits", "32", "--fast-visits", "8"]


def _selfplay(out: Path, *args: str) -> dict:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "gotk", "selfplay", *BASE, "--out", str(out), *args],
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    report = json.loads((out / "report.json").read_text())
    return {"command_s": round(wall, 2), "wall_s": report["wall_s"], "games": report["games"],
            "positions": report["positions"],
            "games_per_hour": round(report["games"] / report["wall_s"] * 3600, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--games", type=int, default=24, help="Games per chunk G [24].")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", dest="json_path", help="Also write the results here.")
    args = ap.parse_args(argv)
    g = args.games
    info = machine_info()
    configs = {
        "one actor (1 process, 1 thread)": ["--workers", "1", "--threads", "1"],
        "two actors (2 processes, 1 thread each)": ["--workers", "2", "--threads", "1"],
        "one process, 2 threads": ["--workers", "1", "--threads", "2"],
    }
    results: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        _selfplay(tmp / "warm", "--games", "4", "--chunk-games", "4", "--seed", str(args.seed))
        for i, (name, extra) in enumerate(configs.items()):
            results[name] = _selfplay(tmp / f"c{i}", "--games", str(2 * g), "--chunk-games", str(g), "--seed",
                                      str(args.seed), *extra)
        _selfplay(tmp / "cal1", "--games", "24", "--chunk-games", "24", "--threads", "2", "--seed", "1")
        cal = _selfplay(tmp / "cal2", "--games", "24", "--chunk-games", "24", "--threads", "2", "--seed", "1")
    one = results["one actor (1 process, 1 thread)"]["games_per_hour"]
    two = results["two actors (2 processes, 1 thread each)"]["games_per_hour"] / one
    out = {"machine": info, "games_per_chunk": g, "results": results, "two_actors_ratio": round(two, 3),
           "goal": GOAL, "calibration_command": cal}
    if args.json_path:
        write_json(out, args.json_path)
    rows = [{"name": name, **r, "ratio": round(r["games_per_hour"] / one, 3)} for name, r in results.items()]
    print(format_table(rows, [("name", "configuration"), ("games", "games"), ("wall_s", "wall s"),
                              ("games_per_hour", "games/h"), ("ratio", "x one actor")]))
    print(f"two actors / one actor: {two:.2f} (goal >= {GOAL})")
    print(f"calibration command (24 games, 2 threads, second run): {cal['command_s']} s command, "
          f"{cal['wall_s']} s in the run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
