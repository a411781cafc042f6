"""PUCT search speed on CPU: playouts per second of the default model at batch 1 / 8 / 32, and the share of
the search's time spent outside network inference (goal: ≤ 20 % at batch 8).

The model is the default ``gotk train`` network (``resnet`` 6 blocks × 64 filters, ``sevenplane``) with both
heads (search needs values), saved as a real agent package and loaded back; untrained weights cost the
same as trained ones. Positions are real 19x19 positions from the built-in 2017-02 KGS sample (every
``--stride``-th move). For each batch size, a fresh search of ``--visits`` playouts runs on each position.
"Inside the network" is :meth:`Agent.predict` (torch forward, log-softmax, copy out); everything else —
tree walks (numba), replaying the path, sensible-move masks, encoding, symmetries, expansion, backup — is
"outside".

    python bench/search.py                        # 1 torch thread, 8 positions × 200 visits
    python bench/search.py --threads 2 --json out.json
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import format_table, machine_info, pin_to_cpu, write_json

GOAL_OUTSIDE = 0.20


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--positions", type=int, default=8, help="Positions searched per batch size [8].")
    ap.add_argument("--stride", type=int, default=23, help="Take every N-th position of each game [23].")
    ap.add_argument("--visits", type=int, default=200, help="Playouts per search [200].")
    ap.add_argument("--batches", default="1,8,32", help="Batch sizes [1,8,32].")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads [1].")
    ap.add_argument("--agent", type=Path, help="Time this agent package (needs a value head) instead of the default.")
    ap.add_argument("--pin-cpu", type=int, help="Pin this process to one CPU.")
    ap.add_argument("--json", dest="json_path", help="Also write the results here.")
    args = ap.parse_args(argv)
    if args.pin_cpu is not None:
        pin_to_cpu(args.pin_cpu)

    import torch

    from bench.agent import positions
    from gotk.encoders import get_encoder
    from gotk.nets import build_model, load_agent, save_agent
    from gotk.search import NetEvaluator, Search, SearchConfig

    torch.set_num_threads(args.threads)
    tmp = tempfile.TemporaryDirectory()
    if args.agent is not None:
        path, label = args.agent, str(args.agent)
    else:
        enc = get_encoder("sevenplane", 19)
        torch.manual_seed(0)
        model = build_model("resnet", enc.num_planes, 19, head="both")
        path = save_agent(Path(tmp.name) / "default.gotk", model, "resnet", {"blocks": 6, "filters": 64},
                          enc.describe())
        label = "resnet 6x64 sevenplane, head both"
    agent = load_agent(path)
    states = positions(args.positions, args.stride)
    # warm up: numba kernels (cached on disk) and torch's first calls
    warm = Search(NetEvaluator(agent, seed=0), SearchConfig(visits=32, batch=8))
    warm.set_position(states[0])
    warm.run(visits=32)

    rows = []
    for batch in [int(b) for b in args.batches.split(",")]:
        ev = NetEvaluator(agent, seed=0)
        total = net = 0.0
        playouts = calls = 0
        for state in states:
            search = Search(ev, SearchConfig(visits=args.visits, batch=batch))
            search.set_position(state)
            c0 = ev.calls
            t = time.perf_counter()
            playouts += search.run(visits=args.visits)
            total += time.perf_counter() - t
            net += search.net_seconds
            calls += ev.calls - c0
        outside = (total - net) / total
        row = {"batch": batch, "searches": len(states), "playouts": playouts, "net_calls": calls,
               "mean_batch": round(playouts / max(calls, 1), 2), "playouts_per_s": round(playouts / total, 1),
               "ms_per_playout": round(1000 * total / playouts, 3),
               "outside_ms_per_playout": round(1000 * (total - net) / playouts, 3),
               "outside_share": round(outside, 4)}
        if batch == 8:
            row["goal"] = f"<= {GOAL_OUTSIDE:.0%}"
            row["ok"] = "yes" if outside <= GOAL_OUTSIDE else "NO"
        rows.append(row)
        print(f"batch {batch}: {row['playouts_per_s']} playouts/s, outside network {outside:.1%}", file=sys.stderr)
    tmp.cleanup()

    cols = [("batch", "batch"), ("playouts", "playouts"), ("mean_batch", "mean leaves/call"),
            ("playouts_per_s", "playouts/s"), ("ms_per_playout", "ms/playout"),
            ("outside_ms_per_playout", "outside ms/playout"), ("outside_share", "outside share"), ("goal", "goal"),
            ("ok", "ok")]
    print(format_table(rows, cols))
    info = machine_info()
    print(f"\n{label}; {len(states)} positions × {args.visits} visits; torch {torch.__version__}, {args.threads} "
          f"thread(s); {info['cpu_model']}, load {info['loadavg_at_start']}")
    if args.json_path:
        write_json({"machine": info, "threads": args.threads, "model": label, "visits": args.visits,
                    "positions": len(states), "results": rows}, args.json_path)
    return 0 if all(r.get("ok", "yes") == "yes" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
