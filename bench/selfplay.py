"""Self-play speed on CPU: recorded positions per second on 9x9 with a 6x64 network, at 16 and 64 simulations,
and the share of the time spent outside the network (goal: ≤ 20 %).

Side by side in one run: gotk's batched self-play (``--games`` games played together, one network call per step
for all of them) and the same games one at a time (a network call per simulation, as the book's ``dlgo.zero``
agent makes). Every move is a full search here (``full_fraction`` 1), so a position is one move searched with
the given simulations. The network is the ``zero`` model with random weights (trained ones cost the same),
saved as an agent package and loaded back.

    python bench/selfplay.py                          # 2 torch threads, 16 games, 16 and 64 simulations
    python bench/selfplay.py --bf16 --json out.json   # bf16 autocast in the network (AVX512-BF16 / AMX CPUs)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import format_table, machine_info, write_json

GOAL_OUTSIDE = 0.20


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--games", type=int, default=16, help="Games played together (the batch) [16].")
    ap.add_argument("--single-games", type=int, default=2, help="Games played one at a time, for the comparison [2].")
    ap.add_argument("--simulations", default="16,64", help="Simulations per move [16,64].")
    ap.add_argument("--size", type=int, default=9)
    ap.add_argument("--model", default="zero")
    ap.add_argument("--blocks", type=int, default=6)
    ap.add_argument("--filters", type=int, default=64)
    ap.add_argument("--max-moves", type=int, default=60, help="Moves per game (a fixed length keeps runs "
                    "comparable) [60].")
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads [2].")
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast in the network.")
    ap.add_argument("--json", dest="json_path", help="Also write the results here.")
    args = ap.parse_args(argv)

    import torch

    from gotk.nets import load_agent
    from gotk.selfplay.config import SelfPlayConfig
    from gotk.selfplay.games import SelfPlayBatch
    from gotk.selfplay.run import new_agent

    torch.set_num_threads(args.threads)
    tmp = tempfile.TemporaryDirectory()
    path = new_agent(Path(tmp.name) / "net.gotk", args.size, args.model, "simple", 0, blocks=args.blocks,
                     filters=args.filters)
    agent = load_agent(path)
    agent.amp = args.bf16
    label = f"{args.model} {args.blocks}x{args.filters}, simple planes, {args.size}x{args.size}" + \
        (", bf16" if args.bf16 else ", fp32")

    def play(games: int, sims: int) -> dict:
        cfg = SelfPlayConfig.make(size=args.size, visits=sims, fast_visits=sims, full_fraction=1.0,
                             max_moves=args.max_moves, resign_threshold=None)
        batch = SelfPlayBatch(agent, cfg, [(i, 0) for i in range(games)], seed=0)
        t = time.perf_counter()
        out = batch.run()
        wall = time.perf_counter() - t
        positions = sum(len(g.label) for g in out)
        return {"positions": positions, "seconds": round(wall, 2), "positions_per_s": round(positions / wall, 1),
                "evaluations_per_s": round(batch.evaluations / wall, 0),
                "mean_batch": round(batch.evaluations / max(batch.calls, 1), 1),
                "outside_share": round(1 - batch.net_seconds / wall, 4)}

    play(2, 4)  # warm up: numba kernels, torch's first calls
    rows = []
    for sims in [int(s) for s in args.simulations.split(",")]:
        for mode, games in (("batched", args.games), ("one game at a time", 1)):
            if mode == "batched":
                r = play(games, sims)
            else:  # several games one after the other, summed
                parts = [play(1, sims) for _ in range(args.single_games)]
                pos = sum(p["positions"] for p in parts)
                secs = sum(p["seconds"] for p in parts)
                r = {"positions": pos, "seconds": round(secs, 2), "positions_per_s": round(pos / secs, 1),
                     "evaluations_per_s": round(sum(p["evaluations_per_s"] * p["seconds"] for p in parts) / secs),
                     "mean_batch": 1.0,
                     "outside_share": round(sum(p["outside_share"] * p["seconds"] for p in parts) / secs, 4)}
            r = {"simulations": sims, "mode": mode, **r}
            if mode == "batched":
                r["goal"] = f"outside <= {GOAL_OUTSIDE:.0%}"
                r["ok"] = "yes" if r["outside_share"] <= GOAL_OUTSIDE else "NO"
            rows.append(r)
            print(f"{sims} sims, {mode}: {r['positions_per_s']} positions/s, outside {r['outside_share']:.1%}",
                  file=sys.stderr)
        single = rows[-1]["positions_per_s"]
        rows[-2]["speedup"] = round(rows[-2]["positions_per_s"] / single, 1) if single else None
    tmp.cleanup()
    cols = [("simulations", "sims"), ("mode", "mode"), ("positions", "positions"), ("seconds", "s"),
            ("positions_per_s", "positions/s"), ("evaluations_per_s", "evals/s"), ("mean_batch", "batch"),
            ("outside_share", "outside"), ("speedup", "× one at a time"), ("goal", "goal"), ("ok", "ok")]
    print(format_table(rows, cols))
    info = machine_info()
    print(f"\n{label}; {args.games} games together, {args.max_moves} moves each; torch {torch.__version__}, "
          f"{args.threads} thread(s); {info['cpu_model']}, load {info['loadavg_at_start']}")
    if args.json_path:
        write_json({"machine": info, "threads": args.threads, "model": label, "results": rows}, args.json_path)
    return 0 if all(r.get("ok", "yes") == "yes" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
