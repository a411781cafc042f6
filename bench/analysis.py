"""``gotk analysis`` throughput: a 19×19 game analysed at ``--visits`` visits per position, its queries sent as one
batch against the same queries sent one at a time (goal: batch ≥ 1.5× the positions per second, on 2 cores).

The game is the first one of at least ``--positions`` moves in the built-in 2017-02 KGS archive. Its queries are
KaTrain's: one query per turn, holding the game's moves up to that turn (``analyzeTurns`` that turn), with
``includeOwnership``, ``includeMovesOwnership`` and ``includePolicy`` on, komi 6.5, Japanese rules, as KaTrain sends
them when it analyses a loaded game. Each mode runs the real command (``gotk analysis --agent AGENT --seed 1``) as a
fresh process, timed from its first query to its last final answer (the start-up, the agent's load, is outside:
a ``query_version`` is answered first). *One at a time*: each query is written after the previous one's final
answer arrived; *one batch*: all are written at once, and the engine searches ``--max-active`` positions together,
their leaves in one network call. Rounds alternate the two modes; the figure is the median of the rounds. The
engine's peak RSS (VmHWM) is reported for each.

    python bench/analysis.py                          # 200 positions x 100 visits, 2 rounds, the shipped kgs
    python bench/analysis.py --positions 50 --visits 50 --rounds 1 --json out.json

``--flood N``: then N queries of the whole game (one turn each, as above, 1 visit) written at once with the queue at
its default limit; the engine's peak RSS while they wait and are served, and the seconds to serve them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import REPO_ROOT, format_table, machine_info, write_json

ARCHIVE = REPO_ROOT / "gotk" / "data" / "KGS-2017_02-19-525-.tar.bz2"


def game_moves(min_moves: int) -> list[list[str]]:
    """The first game of the built-in archive with at least ``min_moves`` moves, as ``[["B", "Q16"], ...]``."""
    from gotk import coords
    from gotk.sgf.reader import iter_sgf
    from gotk.sources.archives import SgfSource, iter_sources

    for item in iter_sources([ARCHIVE]):
        if not isinstance(item, SgfSource):
            continue
        for rec in iter_sgf(item.data, item.archive, item.member):
            if getattr(rec, "size", 19) != 19 or rec.handicap or len(rec.moves) < min_moves:
                continue
            return [["B" if c == 1 else "W", coords.to_gtp(p, 19)] for c, p in rec.moves]
    sys.exit(f"error: no game of {min_moves} moves in {ARCHIVE}")


def queries(moves: list[list[str]], positions: int, visits: int) -> list[dict]:
    return [{"id": f"t{n}", "moves": moves[:n], "analyzeTurns": [n], "maxVisits": visits, "komi": 6.5,
             "rules": "japanese", "boardXSize": 19, "boardYSize": 19, "includeOwnership": True,
             "includeMovesOwnership": True, "includePolicy": True, "initialStones": [],
             "overrideSettings": {"reportAnalysisWinratesAs": "BLACK", "wideRootNoise": 0.0}}
            for n in range(positions)]


def peak_rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def run_mode(agent: str, qs: list[dict], batch: bool, extra: list[str]) -> dict:
    cmd = [sys.executable, "-m", "gotk", "analysis", "--agent", agent, "--seed", "1", *extra]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, bufsize=1)

    def send(obj: dict) -> None:
        proc.stdin.write(json.dumps(obj) + "\n")
        proc.stdin.flush()

    def final() -> dict:
        while True:
            line = proc.stdout.readline()
            if not line:
                raise SystemExit(f"error: gotk analysis ended early (exit {proc.wait()})")
            a = json.loads(line)
            if "error" in a:
                raise SystemExit(f"error: gotk analysis answered {a}")
            if "turnNumber" in a and not a.get("isDuringSearch"):
                return a

    send({"id": "v", "action": "query_version"})
    json.loads(proc.stdout.readline())
    t0 = time.perf_counter()
    visits = 0
    if batch:
        for q in qs:
            send(q)
        for _ in qs:
            visits += final()["rootInfo"]["visits"]
    else:
        for q in qs:
            send(q)
            visits += final()["rootInfo"]["visits"]
    seconds = time.perf_counter() - t0
    rss = peak_rss_mb(proc.pid)
    proc.stdin.close()
    proc.wait(timeout=60)
    return {"mode": "one batch" if batch else "one at a time", "positions": len(qs), "seconds": seconds,
            "positions_per_s": len(qs) / seconds, "visits": visits, "peak_rss_mb": rss}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agent", default="kgs")
    ap.add_argument("--positions", type=int, default=200)
    ap.add_argument("--visits", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-active", type=int, default=None, help="gotk analysis --max-active (its default)")
    ap.add_argument("--flood", type=int, default=0, help="then N one-visit queries of the whole game at once")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    info = machine_info()
    qs = queries(game_moves(args.positions), args.positions, args.visits)
    extra = [] if args.max_active is None else ["--max-active", str(args.max_active)]
    runs = []
    for r in range(args.rounds):
        for batch in ((True, False) if r % 2 == 0 else (False, True)):
            res = run_mode(args.agent, qs, batch, extra)
            res["round"] = r + 1
            runs.append(res)
            print(f"round {r + 1} {res['mode']:<13} {res['seconds']:7.1f} s  {res['positions_per_s']:6.2f} "
                  f"positions/s  peak RSS {res['peak_rss_mb']} MB", flush=True)
    med = {m: statistics.median(x["positions_per_s"] for x in runs if x["mode"] == m)
           for m in ("one batch", "one at a time")}
    ratio = med["one batch"] / med["one at a time"]
    rows = [{"mode": m, "positions_per_s": v} for m, v in med.items()]
    print(format_table(rows, [("mode", "mode"), ("positions_per_s", "positions/s (median)")]))
    print(f"one batch / one at a time: {ratio:.2f}x (goal >= 1.5x)")
    out = {"machine": info, "args": vars(args), "runs": runs, "median_positions_per_s": med, "ratio": ratio}
    if args.flood:
        moves = game_moves(args.positions)
        flood = [{**queries(moves, 1, 1)[0], "id": f"f{i}", "moves": moves, "analyzeTurns": [len(moves)]}
                 for i in range(args.flood)]
        res = run_mode(args.agent, flood, True, extra)
        out["flood"] = res
        print(f"flood: {args.flood} queries of {len(moves)} moves served in {res['seconds']:.1f} s, peak RSS "
              f"{res['peak_rss_mb']} MB")
    write_json(out, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
