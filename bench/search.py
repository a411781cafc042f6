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

``--leelaz``: side by side with Leela Zero's engine on one thread. A random-weight ``leelaz`` agent (Leela Zero's
network, 6 blocks × 64 filters by default, ``leelazero`` planes, batch-norm statistics measured on real positions as
in ``bench/leelaz_check.py``) is exported with ``gotk agent export --format leela-zero``; on the same positions,
interleaved position by position, gotk's search (1 torch thread; its default batch and batch 1) and
``leelaz --cpu-only -t 1 --noponder --gtp --visits N --timemanage off`` (position set up with ``clear_board``,
``komi 7.5`` and ``play``, then ``genmove``) each search ``--visits`` root visits from scratch. leelaz's playouts
are read from its stderr line ``N visits, N nodes, N playouts, N n/s`` (UCTSearch::think); its time is the
``genmove`` round trip (wall) and the CPU time of the leelaz process over it (``/proc/PID/stat``); gotk's is the
``Search.run`` wall time and this process's CPU time. Ratios gotk / leelaz; goal gotk ≥ 2× at its default batch.

    python bench/search.py --leelaz --visits 400 --positions 8
    python bench/search.py --leelaz --amp           # also gotk under bf16 autocast (Agent.amp; not bit-exact)

``--agent AGENT`` (with ``--leelaz``): a trained ``leelaz`` agent instead of the random one (``kgs-lz``: the shipped
agent). ``--games N``: then, in the same run, the playing strength on those weights: N games (19×19, komi 7.5,
colours alternating) of gotk's search (its defaults, ``--visits`` playouts a move, resignation on) against
``leelaz --cpu-only -g -t 1 --noponder --visits N --timemanage off`` (it resigns at its default threshold), both on
one thread; the JSON (rewritten after every game) holds ``gotk match --json``'s report under ``match``, which
``gotk elo`` reads once extracted.

    python bench/search.py --leelaz --agent kgs-lz --visits 100 --games 40 --json lz100.json --sgf-out lz100
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
GOAL_VS_LEELAZ = 2.0


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
    ap.add_argument("--leelaz", nargs="?", const="", metavar="EXE",
                    help="Compare with Leela Zero's engine (default executable: on PATH or /usr/games/leelaz).")
    ap.add_argument("--amp", action="store_true",
                    help="With --leelaz: also gotk's search with bf16 autocast (Agent.amp) at the default batch.")
    ap.add_argument("--net", default="6x64", help="With --leelaz: the random leelaz network BLOCKSxFILTERS [6x64].")
    ap.add_argument("--games", type=int, default=0,
                    help="With --leelaz: then play this many games of gotk's search against leelaz [0].")
    ap.add_argument("--seed", type=int, default=1, help="With --games: seed of gotk's search and of leelaz [1].")
    ap.add_argument("--sgf-out", type=Path, help="With --games: folder for the games' SGF records.")
    ap.add_argument("--c-puct", type=float, help="With --games: gotk's PUCT constant [the agent's own, else the "
                    "search's default].")
    ap.add_argument("--fpu", type=float, help="With --games: gotk's first-play-urgency reduction [the agent's "
                    "own, else the default].")
    ap.add_argument("--lcb", type=float, help="With --games: gotk's lower-confidence-bound move choice (0: most "
                    "visits) [the agent's own, else the default].")
    args = ap.parse_args(argv)
    if args.pin_cpu is not None:
        pin_to_cpu(args.pin_cpu)
    if args.leelaz is not None:
        return leelaz_main(args)

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


def _proc_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (``/proc/PID/stat``, clock ticks)."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _leelaz_genmove(lz, state, timeout: float = 600.0) -> dict:
    """Set up ``state`` in ``lz`` (a :class:`gotk.export.leelaz_check.Leelaz`) and time one ``genmove``."""
    import queue
    import re

    from gotk import coords

    lz.command("clear_board")
    lz.command("komi 7.5")
    for color, point in state.history:
        lz.play("bw"[color - 1], "pass" if point == state.size ** 2 else coords.to_gtp(point, state.size))
    lz._stderr_lines()  # drop what came before
    pid = lz.proc.pid
    c0 = _proc_cpu_seconds(pid)
    t = time.perf_counter()
    lz.command(f"genmove {'bw'[state.to_play - 1]}")
    wall = time.perf_counter() - t
    cpu = _proc_cpu_seconds(pid) - c0
    pat = re.compile(r"^(\d+) visits, (\d+) nodes, (\d+) playouts, (\d+) n/s")
    while True:
        try:
            line = lz._err.get(timeout=timeout)
        except queue.Empty as e:
            raise RuntimeError("leelaz printed no search statistics") from e
        if line is None:
            raise RuntimeError("leelaz exited")
        m = pat.match(line)
        if m:
            visits, nodes, playouts, nps = (int(g) for g in m.groups())
            return {"visits": visits, "playouts": playouts, "nps": nps, "wall": wall, "cpu": cpu}


def leelaz_main(args) -> int:
    """``--leelaz``: gotk's search and Leela Zero's on the same positions, interleaved (see the module text)."""
    import os

    for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    import subprocess

    import torch

    from bench.agent import positions
    from bench.leelaz_check import load_records, random_agent
    from gotk.data import HELDOUT_ARCHIVE
    from gotk.export.leelaz_check import Leelaz, find_leelaz
    from gotk.export.leelaz_weights import export_agent_weights
    from gotk.nets import load_agent
    from gotk.nets.agent_file import resolve_agent
    from gotk.search import NetEvaluator, Search, SearchConfig

    exe = args.leelaz or find_leelaz()
    if exe is None:
        sys.exit("error: leelaz not found (Debian: apt-get install leela-zero)")
    torch.set_num_threads(args.threads)
    default_batch = SearchConfig().batch
    batches = [default_batch] + [int(b) for b in args.batches.split(",") if int(b) != default_batch]
    if args.batches == "1,8,32":  # the default: the default batch and batch 1 only
        batches = [default_batch, 1]
    states = positions(args.positions, args.stride)
    with tempfile.TemporaryDirectory() as tmp:
        if args.agent is not None:
            path = resolve_agent(args.agent)
            meta = load_agent(path).meta
            hp = meta["model"]["hparams"]
            label = f"{args.agent}: leelaz {hp.get('blocks')}x{hp.get('filters')} (leelazero planes), 19x19"
        else:
            path = random_agent(Path(tmp) / "lz.gotk", args.net, load_records(Path(HELDOUT_ARCHIVE), 10)[::-1])
            label = f"random leelaz {args.net} (leelazero planes), 19x19"
        weights = Path(tmp) / "w.txt.gz"
        export_agent_weights(path, weights)
        agent = load_agent(path)
        version = subprocess.run([exe, "--help"], capture_output=True, text=True).stdout.splitlines()[0]
        version = version.split("  ")[0].strip()  # "Leela Zero 0.17"
        with Leelaz(weights, exe, limits=("--visits", str(args.visits), "--timemanage", "off")) as lz:
            lz.command("name")
            startup = [ln for ln in lz._stderr_lines() if "BLAS" in ln or "Winograd" in ln or "CPU" in ln]
            # warm up both: numba kernels, torch's first calls, leelaz's first search
            warm = Search(NetEvaluator(agent, seed=0), SearchConfig(visits=32, batch=default_batch))
            warm.set_position(states[0])
            warm.run(visits=32)
            _leelaz_genmove(lz, states[0])
            engines = [("gotk", b) for b in batches]
            agents = {"gotk": agent}
            if args.amp:  # the same network under bf16 autocast (Agent.amp), at the default batch
                agents["gotk bf16"] = load_agent(path)
                agents["gotk bf16"].amp = True
                engines.append(("gotk bf16", default_batch))
            ev = {key: NetEvaluator(agents[key[0]], seed=0) for key in engines}
            acc = {key: {"playouts": 0, "wall": 0.0, "cpu": 0.0, "net": 0.0} for key in engines}
            acc[("leelaz", 1)] = {"playouts": 0, "wall": 0.0, "cpu": 0.0, "elapsed": 0.0}
            for i, state in enumerate(states):
                order = engines + [("leelaz", 1)]
                k = i % len(order)
                for engine, b in order[k:] + order[:k]:  # rotate who goes first, position by position
                    a = acc[(engine, b)]
                    if engine == "leelaz":
                        r = _leelaz_genmove(lz, state)
                        a["playouts"] += r["playouts"]
                        a["wall"] += r["wall"]
                        a["cpu"] += r["cpu"]
                        a["elapsed"] += r["playouts"] / max(r["nps"], 1)
                        continue
                    search = Search(ev[(engine, b)], SearchConfig(visits=args.visits, batch=b))
                    search.set_position(state)
                    c = time.process_time()
                    t = time.perf_counter()
                    a["playouts"] += search.run(visits=args.visits)
                    a["wall"] += time.perf_counter() - t
                    a["cpu"] += time.process_time() - c
                    a["net"] += search.net_seconds
        rows = speed_rows(acc, default_batch)
        cols = [("engine", "engine"), ("playouts", "playouts"), ("playouts_per_s", "playouts/s (wall)"),
                ("playouts_per_cpu_s", "playouts/CPU s"), ("vs_leelaz_wall", "/ leelaz (wall)"),
                ("vs_leelaz_cpu", "/ leelaz (CPU)"), ("own_nps", "leelaz's own n/s"),
                ("outside_share", "outside network"), ("goal", "goal"), ("ok", "ok")]
        print(format_table(rows, cols))
        info = machine_info()
        print(f"\n{label}; {len(states)} positions × {args.visits} visits, interleaved; gotk: torch "
              f"{torch.__version__}, {args.threads} thread(s); {version} (--cpu-only -t 1; "
              f"{'; '.join(startup) or 'no BLAS line'}); {info['cpu_model']}, load {info['loadavg_at_start']}")
        report = {"machine": info, "threads": args.threads, "model": label, "visits": args.visits,
                  "positions": len(states), "leelaz": exe, "leelaz_version": version, "leelaz_startup": startup,
                  "results": rows}
        if args.json_path:
            write_json(report, args.json_path)
        if args.games:
            play_leelaz(args, exe, path, weights, report)
    return 0


def play_leelaz(args, exe: str, agent: Path, weights: Path, report: dict) -> None:
    """``--games``: gotk's search against leelaz on the same weights at equal visits (see the module text)."""
    from gotk.play.factory import make_search_player
    from gotk.play.match import Match, MatchConfig, match_report
    from gotk.play.results import summarize
    from gotk.search import SearchConfig

    tuned = {k: v for k, v in (("c_puct", args.c_puct), ("fpu", args.fpu), ("lcb", args.lcb)) if v is not None}
    config = SearchConfig(visits=args.visits, seed=args.seed, **tuned)
    player = make_search_player(str(agent), config, None, args.threads, keep=set(tuned))
    used = player.search.cfg  # the agent's own constants where --c-puct / --fpu were not given
    report["search_config"] = {"visits": used.visits, "batch": used.batch, "c_puct": used.c_puct, "fpu": used.fpu,
                               "lcb": used.lcb}
    argv = [exe, "--cpu-only", "-g", "-t", "1", "--noponder", "-w", str(weights), "--visits", str(args.visits),
            "--timemanage", "off", "-s", str(args.seed)]
    name, lz_name = f"gotk-search-{args.visits}", f"leelaz-{args.visits}"
    results = []
    print(f"\n{'game':>4}  {'gotk':<5}  {'result':<8}  {'moves':>5}  {'reason':<22}  {'sec':>6}", flush=True)

    def on_game(r) -> None:
        results.append(r)
        print(f"{r.game:>4}  {r.agent_colour:<5}  {r.result:<8}  {r.moves:>5}  {r.reason:<22}  {r.seconds:>6.1f}",
              flush=True)
        report["match"] = match_report(match, results, agent=name, opponent=lz_name)
        if args.json_path:
            write_json(report, args.json_path)

    cfg = MatchConfig(size=19, komi=7.5, games=args.games, max_moves=400, timeout=600, sgf_out=args.sgf_out)
    match = Match(player, argv, cfg, on_game=on_game)
    match.run()
    s = summarize(results)
    print(f"{name} vs {lz_name} on the same weights: {s.wins} wins, {s.losses} losses"
          + (f", {s.draws} draws" if s.draws else "") + f" of {s.games}; win rate {s.win_rate:.3f} "
          f"(95% Wilson {s.ci95[0]:.3f}-{s.ci95[1]:.3f}); goal >= 0.45")


def speed_rows(acc: dict, default_batch: int) -> list[dict]:
    """The speed table's rows: each engine's playouts/s (wall and CPU) and its ratio to leelaz's."""
    lza = acc[("leelaz", 1)]
    tick = 0.01  # /proc/PID/stat counts CPU time in clock ticks: a tiny search may count none
    lz_wall, lz_cpu = lza["playouts"] / lza["wall"], lza["playouts"] / max(lza["cpu"], tick)
    rows = []
    for (engine, b), a in acc.items():
        wall, cpu = a["playouts"] / a["wall"], a["playouts"] / max(a["cpu"], tick)
        row = {"engine": engine if engine == "leelaz" else f"{engine} batch {b}", "playouts": a["playouts"],
               "playouts_per_s": round(wall, 1), "playouts_per_cpu_s": round(cpu, 1),
               "vs_leelaz_wall": round(wall / lz_wall, 2), "vs_leelaz_cpu": round(cpu / lz_cpu, 2)}
        if engine == "leelaz":
            row["own_nps"] = round(a["playouts"] / a["elapsed"], 1)
        else:
            row["outside_share"] = round((a["wall"] - a["net"]) / a["wall"], 3)
        if engine == "gotk" and b == default_batch:
            row["goal"] = f">= {GOAL_VS_LEELAZ:g}x"
            row["ok"] = "yes" if min(row["vs_leelaz_wall"], row["vs_leelaz_cpu"]) >= GOAL_VS_LEELAZ else "NO"
        rows.append(row)
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
