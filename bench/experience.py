"""Experience speed: policy games recorded move by move (``gotk selfplay --experience``, ``gotk rl``'s actors), the
share of their time spent inside the network (goal: ≥ 80% at a mean batch of ≥ 32, 19x19, one torch thread) and
moves per second, beside the same games played one at a time (a network call a move, as the book's policy agent
makes).

The network is an agent file (default: the shipped ``kgs``, the SL policy AlphaGo's RL policy starts from); games
play to the end or ``--max-moves``, moves drawn as the learners draw them (temperature 1, probabilities clipped at
1e-5, 1% random moves).

    python bench/experience.py                              # kgs, 19x19, 64 games together, one thread
    python bench/experience.py --games 128 --json out.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import format_table, machine_info, write_json

GOAL_INSIDE = 0.80


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agent", default="kgs", help="The acting network [kgs].")
    ap.add_argument("--games", type=int, default=64, help="Games played together (the batch; it shrinks as games "
                    "end) [64].")
    ap.add_argument("--single-games", type=int, default=2, help="Games played one at a time [2].")
    ap.add_argument("--max-moves", type=int, default=200, help="Moves per game at most [200].")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads [1: one actor's].")
    ap.add_argument("--json", dest="json_path", help="Also write the results here.")
    args = ap.parse_args(argv)

    import torch

    from gotk.nets import load_agent
    from gotk.selfplay.config import SelfPlayConfig
    from gotk.selfplay.games import SelfPlayBatch

    torch.set_num_threads(args.threads)
    agent = load_agent(args.agent)
    size = agent.board_size

    def play(games: int, first: int) -> dict:
        cfg = SelfPlayConfig.make(size=size, policy_only=True, experience=True, clip=1e-5, random_moves=0.01,
                                  max_moves=args.max_moves)
        batch = SelfPlayBatch(agent, cfg, [(first + i, 0) for i in range(games)], seed=0)
        t = time.perf_counter()
        out = batch.run()
        wall = time.perf_counter() - t
        moves = sum(len(g.label) for g in out)
        return {"games": games, "moves": moves, "seconds": round(wall, 2), "moves_per_s": round(moves / wall, 1),
                "mean_batch": round(batch.evaluations / max(batch.calls, 1), 1),
                "inside_share": round(batch.net_seconds / wall, 4)}

    play(2, 10_000)  # warm up: compiled kernels, torch's first calls
    batched = play(args.games, 0)
    single = [play(1, 100 + i) for i in range(args.single_games)]
    one = {"games": len(single), "moves": sum(r["moves"] for r in single),
           "seconds": round(sum(r["seconds"] for r in single), 2)}
    one.update(moves_per_s=round(one["moves"] / one["seconds"], 1), mean_batch=1.0,
               inside_share=round(sum(r["inside_share"] * r["seconds"] for r in single) / one["seconds"], 4))
    rows = [{"mode": "batched", **batched}, {"mode": "one game at a time", **one}]
    for r in rows:
        r["inside"] = f"{100 * r['inside_share']:.1f}%"
    print(f"{args.agent} ({size}x{size}), {args.threads} torch thread(s)")
    print(format_table(rows, [("mode", "mode"), ("games", "games"), ("moves", "moves"), ("moves_per_s", "moves/s"),
                              ("mean_batch", "mean batch"), ("inside", "in the network")]))
    ok = batched["inside_share"] >= GOAL_INSIDE and batched["mean_batch"] >= 32
    print(f"batched: {100 * batched['inside_share']:.1f}% of the time in the network at a mean batch of "
          f"{batched['mean_batch']} (goal >= {100 * GOAL_INSIDE:.0f}% at >= 32): {'met' if ok else 'not met'}; "
          f"{batched['moves_per_s'] / one['moves_per_s']:.1f}x the moves/s of one game at a time")
    if args.json_path:
        write_json({"machine": machine_info(), "agent": args.agent, "threads": args.threads, "batched": batched,
                    "one_at_a_time": one}, args.json_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
