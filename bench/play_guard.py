"""The play side's guard for a restructuring, side by side with another commit: the same moves for fixed seeds in
GTP, matches and self-play (self-play's training rows equal row for row), and the same speed (playouts/s of
``bench/search.py``, self-play positions/s) within a tolerance.

A git worktree of ``--before`` (default ``HEAD``) is made beside this checkout's tree (the "after"), and every
command below runs under both trees with this interpreter (``PYTHONPATH`` set to the tree), one torch thread:

* self-play, 9x9, ``--seed`` fixed: Gumbel (the default), PUCT, and policy-only games; every shard column of
  every chunk and every SGF's moves compared;
* a match of ``--agent`` (a 9x9 network with a value head) searching ``--visits`` with PUCT and the LCB choice
  against itself searching with Gumbel, over GTP (``gotk match --sgf-out``), and one of its raw policy sampled at
  temperature 1 against itself at temperature 0.5: the games' moves compared;
* GTP: ``genmove`` for both colours over 30 moves from a fixed script, searching and playing the policy.

Speed: ``bench/search.py --batches 8`` (playouts/s) and a self-play run (positions/s), before and after in turn,
``--rounds`` times each, pinned to one core; the medians' ratio after / before is reported.

    python bench/play_guard.py --agent runs/x/networks/net-012.gotk --json guard.json
    python bench/play_guard.py --agent A --before 5751ea3 --skip-speed
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GTP_SCRIPT = ["boardsize 9", "clear_board", "komi 7.5"] + [f"genmove {c}" for _ in range(15) for c in "bw"] + ["quit"]


def run(tree: Path, args: list[str], cwd: Path, stdin: str | None = None, cpu: int | None = None) -> str:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "gotk", *args] if args[0] != "bench" else [sys.executable, str(tree / args[1]),
                                                                           *args[2:]]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu), *cmd]
    out = subprocess.run(cmd, cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise SystemExit(f"{tree.name}: {' '.join(args)} failed ({out.returncode}): {out.stderr.strip()[-800:]}")
    return out.stdout


def sgf_moves(folder: Path) -> dict[str, list[str]]:
    """Each SGF file's moves (``;B[xx]`` / ``;W[xx]`` in order), by file name."""
    return {p.name: re.findall(r";([BW])\[([a-z]{0,2})\]", p.read_text()) for p in sorted(folder.rglob("*.sgf"))}


def shard_rows(folder: Path) -> dict[str, object]:
    """Every chunk's table, as Python lists per column, by chunk name."""
    import pyarrow.parquet as pq

    return {p.name: pq.read_table(p).to_pydict() for p in sorted((folder / "chunks").glob("*.parquet"))}


SELFPLAY = {  # the encoder named: the guard compares behaviour, not the commands' defaults
    "gumbel": ["--games", "12", "--visits", "16", "--fast-visits", "4", "--encoder", "relative"],
    "puct": ["--games", "12", "--visits", "16", "--fast-visits", "4", "--search", "puct", "--encoder", "relative"],
    "policy-only": ["--games", "24", "--policy-only", "--encoder", "relative"],
}


def moves_guard(trees: dict[str, Path], agent: Path, work: Path, visits: int, seed: int) -> dict:
    """The fixed-seed runs under both trees; {check: equal?} plus a few counts."""
    out: dict[str, object] = {}
    got: dict[str, dict] = {name: {} for name in trees}
    for name, tree in trees.items():
        w = work / name
        w.mkdir(parents=True, exist_ok=True)
        for kind, extra in SELFPLAY.items():
            run(tree, ["selfplay", "--init", "random", "--size", "9", "--threads", "1", "--seed", str(seed),
                       "--chunk-games", "6", "--out", str(w / f"sp-{kind}"), *extra], w)
            got[name][f"selfplay {kind}: moves"] = sgf_moves(w / f"sp-{kind}" / "sgf")
            got[name][f"selfplay {kind}: rows"] = shard_rows(w / f"sp-{kind}")
        opp = f"{sys.executable} -m gotk gtp --agent {agent} --visits {visits} --search gumbel --seed {seed + 1} " \
              f"--threads 1"
        run(tree, ["match", "--agent", str(agent), "--visits", str(visits), "--search", "puct", "--lcb", "0.1",
                   "--threads", "1", "--seed", str(seed), "--games", "4", "--size", "9", "--opponent", opp,
                   "--sgf-out", str(w / "match-search")], w)
        got[name]["match search: moves"] = sgf_moves(w / "match-search")
        opp = f"{sys.executable} -m gotk gtp --agent {agent} --visits 0 --temperature 0.5 --seed {seed + 1} " \
              f"--threads 1"
        run(tree, ["match", "--agent", str(agent), "--visits", "0", "--temperature", "1", "--threads", "1",
                   "--seed", str(seed), "--games", "4", "--size", "9", "--max-moves", "160", "--opponent", opp,
                   "--sgf-out", str(w / "match-policy")], w)
        got[name]["match policy: moves"] = sgf_moves(w / "match-policy")
        script = "\n".join(GTP_SCRIPT) + "\n"
        got[name]["gtp search"] = run(tree, ["gtp", "--agent", str(agent), "--visits", str(visits), "--seed",
                                             str(seed), "--threads", "1"], w, stdin=script)
        got[name]["gtp policy"] = run(tree, ["gtp", "--agent", str(agent), "--visits", "0", "--temperature", "1",
                                             "--seed", str(seed), "--threads", "1"], w, stdin=script)
    before, after = got["before"], got["after"]
    for key in before:
        out[key] = before[key] == after[key]
    out["selfplay games"] = sum(len(before[f"selfplay {k}: moves"]) for k in SELFPLAY)
    out["selfplay rows"] = sum(len(t["label"]) for k in SELFPLAY for t in before[f"selfplay {k}: rows"].values())
    out["match games"] = len(before["match search: moves"]) + len(before["match policy: moves"])
    return out


def speed_guard(trees: dict[str, Path], work: Path, rounds: int, cpu: int, seed: int) -> dict:
    """Playouts/s and self-play positions/s, before and after in turn on core ``cpu``; medians and ratios."""
    runs: dict[str, dict[str, list[float]]] = {n: {"playouts_per_s": [], "selfplay_positions_per_s": []}
                                               for n in trees}
    for r in range(-1, rounds):  # round -1 warms each tree's compiled cache and is not counted
        for name, tree in trees.items():
            w = work / f"speed-{name}-{r}"
            w.mkdir(parents=True, exist_ok=True)
            run(tree, ["bench", "bench/search.py", "--batches", "8", "--positions", "8", "--visits", "200",
                       "--json", str(w / "search.json")], w, cpu=cpu)
            res = json.loads((w / "search.json").read_text())
            row = next(x for x in res["results"] if x["batch"] == 8)
            run(tree, ["selfplay", "--init", "random", "--size", "9", "--games", "24", "--chunk-games", "24",
                       "--visits", "32", "--fast-visits", "8", "--threads", "1", "--seed", str(seed), "--encoder",
                       "relative", "--out", str(w / "sp")], w, cpu=cpu)
            rep = json.loads((w / "sp" / "report.json").read_text())
            if r >= 0:
                runs[name]["playouts_per_s"].append(float(row["playouts_per_s"]))
                runs[name]["selfplay_positions_per_s"].append(float(rep["positions"]) / float(rep["play_seconds"]))
    out: dict[str, object] = {"runs": runs}
    for key in ("playouts_per_s", "selfplay_positions_per_s"):
        b, a = statistics.median(runs["before"][key]), statistics.median(runs["after"][key])
        out[key] = {"before": round(b, 2), "after": round(a, 2), "ratio": round(a / b, 4)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agent", type=Path, required=True, help="A 9x9 agent with policy and value heads.")
    ap.add_argument("--before", default="HEAD", help="The commit compared with this checkout's tree [HEAD].")
    ap.add_argument("--visits", type=int, default=24, help="Search visits of the match and GTP checks [24].")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3, help="Speed runs per tree [3].")
    ap.add_argument("--cpu", type=int, default=0, help="The core the speed runs are pinned to [0].")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--skip-moves", action="store_true")
    ap.add_argument("--json", dest="json_path", type=Path)
    args = ap.parse_args()
    if not args.agent.is_file():
        raise SystemExit(f"--agent {args.agent}: no such file")
    with tempfile.TemporaryDirectory(prefix="gotk-guard-") as tmp:
        work = Path(tmp)
        before = work / "tree-before"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(before), args.before],
                       check=True, capture_output=True)
        try:
            trees = {"before": before, "after": REPO}
            commit = subprocess.run(["git", "-C", str(before), "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True).stdout.strip()
            report: dict[str, object] = {"before": commit, "after": "working tree",
                                         "load_average": os.getloadavg()}
            if not args.skip_moves:
                report["moves"] = moves_guard(trees, args.agent.resolve(), work, args.visits, args.seed)
                print(json.dumps(report["moves"], indent=1), flush=True)
            if not args.skip_speed:
                report["speed"] = speed_guard(trees, work, args.rounds, args.cpu, args.seed)
                print(json.dumps({k: v for k, v in report["speed"].items() if k != "runs"}, indent=1))
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(before)],
                           capture_output=True)
    if args.json_path:
        args.json_path.write_text(json.dumps(report, indent=1) + "\n")
    bad = [k for k, v in report.get("moves", {}).items() if v is False]
    if bad:
        raise SystemExit(f"moves differ: {', '.join(bad)}")


if __name__ == "__main__":
    main()
