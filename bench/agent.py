"""Move-choice latency of playing agents on CPU (target: ≤ 20 ms per move for the default model).

Times, over real positions (every ``--stride``-th position of games from the built-in 2017-02 KGS
sample, 19x19):

* ``agent``: :meth:`PolicyPlayer.choose` (encode + network + sensible-move mask + choice) of the
  default ``gotk train`` model (``resnet``, 6 blocks × 64 filters, policy head, ``sevenplane``),
  saved as a real agent package and loaded back with ``load_agent``; untrained weights cost the same
  as trained ones. ``--agent FILE`` times a trained package (e.g. ``RUNDIR/agent.gotk``) as well;
* its parts: ``encode`` and the network forward pass (``predict``) alone;
* ``random``: :meth:`RandomPlayer.choose`;
* ``gtp round trip``: ``play`` + ``genmove`` through a ``gotk gtp`` subprocess (random engine, and
  the agent engine), measured from this process — what ``gotk match`` pays per move pair.

    python bench/agent.py                    # 1 torch thread, the default model
    python bench/agent.py --agent runs/x/agent.gotk --threads 2 --json out.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import format_table, machine_info, pin_to_cpu, write_json

TARGET_MS = 20.0


def positions(n: int, stride: int) -> list:
    """Up to ``n`` real 19x19 positions (no handicap) from the built-in sample archive."""
    from gotk.data import HELDOUT_ARCHIVE
    from gotk.game.state import GameState
    from gotk.sgf.reader import read_sgf
    from gotk.sources.archives import SgfSource, iter_sources

    out = []
    for src in iter_sources([HELDOUT_ARCHIVE]):
        if not isinstance(src, SgfSource):
            continue
        try:
            rec = read_sgf(src.data, src.archive, src.member)[0]
        except Exception:  # noqa: BLE001 - skip unreadable records
            continue
        if rec.size != 19 or rec.handicap or rec.setup_black or rec.num_moves < 50:
            continue
        state = GameState.new(19, komi=7.5)
        try:
            for i, (color, point) in enumerate(rec.moves):
                if i % stride == 0:
                    out.append(state.copy())
                    if len(out) >= n:
                        return out
                state.to_play = color
                state.play(point)
        except Exception:  # noqa: BLE001
            continue
    return out


def timed(fn, items: list, warmup: int = 3) -> dict:
    """Per-call milliseconds of ``fn(item)`` over ``items`` (after ``warmup`` calls)."""
    for it in items[:warmup]:
        fn(it)
    ms = []
    for it in items:
        t = time.perf_counter()
        fn(it)
        ms.append((time.perf_counter() - t) * 1000)
    ms.sort()
    return {"calls": len(ms), "mean_ms": statistics.fmean(ms), "median_ms": ms[len(ms) // 2],
            "p90_ms": ms[int(len(ms) * 0.9)], "max_ms": ms[-1]}


def gtp_round_trip(engine_args: list[str], moves: int) -> dict:
    """Per-move-pair milliseconds of ``play`` + ``genmove`` against a ``gotk gtp`` subprocess (19x19)."""
    from gotk import coords
    from gotk.game.state import GameState
    from gotk.play.gtp_client import GtpClient
    from gotk.play.players import RandomPlayer

    client = GtpClient([sys.executable, "-m", "gotk", "gtp", *engine_args], timeout=120)
    try:
        client.send("boardsize 19")
        client.send("clear_board")
        me = RandomPlayer(seed=0)
        state = GameState(19)
        ms = []
        for i in range(moves + 2):  # the first two pairs warm the engine up (compilation, first forward)
            if state.passes >= 2:
                break
            mv = me.choose(state)
            state.play(mv)
            t = time.perf_counter()
            client.send(f"play {'BW'[2 - state.to_play]} {coords.to_gtp(mv, 19)}")
            answer = client.send(f"genmove {'BW'[state.to_play - 1]}")
            if i >= 2:
                ms.append((time.perf_counter() - t) * 1000)
            if answer == "resign":
                break
            state.play(coords.from_gtp(answer, 19))
        ms.sort()
        return {"calls": len(ms), "mean_ms": statistics.fmean(ms), "median_ms": ms[len(ms) // 2],
                "p90_ms": ms[int(len(ms) * 0.9)], "max_ms": ms[-1]}
    finally:
        client.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agent", type=Path, help="Also time this agent package (e.g. RUNDIR/agent.gotk).")
    ap.add_argument("--positions", type=int, default=200, help="Positions to time [200].")
    ap.add_argument("--stride", type=int, default=7, help="Take every N-th position of each game [7].")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads [1].")
    ap.add_argument("--gtp-moves", type=int, default=60, help="Move pairs of the GTP round trip [60]; 0 skips it.")
    ap.add_argument("--pin-cpu", type=int, help="Pin this process to one CPU.")
    ap.add_argument("--json", dest="json_path", help="Also write the results here.")
    args = ap.parse_args(argv)
    if args.pin_cpu is not None:
        pin_to_cpu(args.pin_cpu)

    import torch

    from gotk.encoders import get_encoder
    from gotk.nets import build_model, load_agent, save_agent
    from gotk.play.players import PolicyPlayer, RandomPlayer

    torch.set_num_threads(args.threads)
    states = positions(args.positions, args.stride)
    rows = []

    def add(name: str, stats: dict, target: float | None = None) -> None:
        row = {"what": name, **{k: round(v, 3) if isinstance(v, float) else v for k, v in stats.items()}}
        if target is not None:
            row["target_ms"] = target
            row["ok"] = "yes" if stats["median_ms"] <= target else "NO"
        rows.append(row)

    tmp = tempfile.TemporaryDirectory()
    agents: list[tuple[str, Path]] = []
    enc = get_encoder("sevenplane", 19)
    model = build_model("resnet", enc.num_planes, 19)
    default_path = save_agent(Path(tmp.name) / "default.gotk", model, "resnet", {"blocks": 6, "filters": 64},
                              enc.describe())
    agents.append(("default resnet 6x64 sevenplane", default_path))
    if args.agent is not None:
        if args.agent.is_file():
            agents.append((f"agent {args.agent}", args.agent))
        else:
            print(f"note: {args.agent} does not exist (produce one with `gotk train --out RUNDIR`); timing only the "
                  "default model", file=sys.stderr)

    for label, path in agents:
        agent = load_agent(path)
        if agent.board_size != 19:
            print(f"note: {label} plays {agent.board_size}x{agent.board_size}; skipped (positions are 19x19)",
                  file=sys.stderr)
            continue
        player = PolicyPlayer(agent)
        feats = [agent.encoder.encode(s)[None] for s in states]
        add(f"{label}: choose", timed(player.choose, states), TARGET_MS)
        add(f"{label}: encode", timed(agent.encoder.encode, states))
        add(f"{label}: predict", timed(agent.predict, feats))
    rnd = RandomPlayer(seed=0)
    add("random: choose", timed(rnd.choose, states))
    if args.gtp_moves > 0:
        add("gtp round trip (random engine)", gtp_round_trip(["--random", "--seed", "0"], args.gtp_moves))
        add("gtp round trip (default agent engine)",
            gtp_round_trip(["--agent", str(default_path), "--threads", str(args.threads)], args.gtp_moves))
    tmp.cleanup()

    cols = [("what", "what"), ("calls", "calls"), ("median_ms", "median ms"), ("mean_ms", "mean ms"),
            ("p90_ms", "p90 ms"), ("max_ms", "max ms"), ("target_ms", "target ms"), ("ok", "ok")]
    print(format_table(rows, cols))
    info = machine_info()
    print(f"\n{len(states)} positions; torch {torch.__version__}, {args.threads} thread(s); {info['cpu_model']}, "
          f"load {info['loadavg_at_start']}")
    if args.json_path:
        write_json({"machine": info, "threads": args.threads, "positions": len(states), "results": rows},
                   args.json_path)
    return 0 if all(r.get("ok", "yes") == "yes" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
