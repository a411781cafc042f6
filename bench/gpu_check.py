"""The GPU check: one command that, on a machine with one H100/H200-class GPU, encodes the KGS archives, trains
recipe (b) of ``docs/recipes.md`` for a few minutes, evaluates it on the held-out 2017-03 games, reports the
training throughput against the GPU's peak bf16 FLOP/s and measures self-play positions/s on the GPU.

On the GPU machine (16 cores, Python with torch, numba, pyarrow, typer; no network), from the repository root,
with ``../shared/kgs`` beside the checkout (else ``shared/kgs`` inside it, or ``--kgs DIR``)::

    python bench/gpu_check.py --out $OUT          # every step: give the call a timeout of several minutes

It writes into ``--out`` (default ``$OUT`` when set, else ``gpu-check/``): ``gpu_check.json`` (the report,
rewritten after every step, so a run cut short still leaves the finished steps), ``agent.gotk`` (the agent it
trained) and ``train-metrics.jsonl`` (the training log). The encoded data and the run folder stay in ``--work``
(default ``runs/gpu-check``; a rerun reuses a complete encoded folder).

Steps, each timed and each a key of ``steps`` in the report (a failing step records its error and the next
step still runs; the exit status is 1 when any step failed):

1. ``encode``: the archives of recipe (b) (all of ``--kgs`` but 2017-02, ``bench/train.py``'s selection) with
   its encoder, split train/val by game, the ``--test-from`` archives (2017-03) wholly to ``test``, with every
   core (``--encode-workers``, default ``os.cpu_count()``);
2. ``train``: ``gotk train`` with recipe (b)'s settings (``bench.train.GPU_RECIPE``: resnet 10x128, batch
   1024, SGD 0.2, bf16, channels-last, ``torch.compile`` inductor) for ``--train-minutes`` (5);
3. ``evaluate``: top-1/top-5 of the trained agent on the ``test`` split (bf16 autocast);
4. ``throughput``: steady-state training samples/s, FLOPs per sample and the share of the GPU's peak dense
   bf16 FLOP/s (``bench.train.throughput``, :mod:`gotk.train.flops`);
5. ``selfplay``: batched self-play (:class:`gotk.selfplay.games.SelfPlayBatch`) on 9x9 with a random ``zero``
   network (6x64, then 10x128 while the budget allows), ``--selfplay-games`` games together, 64 simulations, every
   move a full search, the agent on the GPU with bf16 autocast: positions/s, network evaluations/s, the mean
   batch and the share of the time spent outside the network. A short probe first measures one move's cost,
   and a run is shortened (fewer moves per game, said in the report) so that it fits ``--selfplay-seconds``.
6. ``selfplay_workers`` (only when named in ``--steps``: about 2 more minutes): ``gotk selfplay --device`` through
   its command line with the last self-play model, one process and then ``--selfplay-workers`` (8) processes
   sharing the GPU, each playing ``--selfplay-games`` games together for ``--workers-moves`` (16) moves.
7. ``gnugo`` (only when named in ``--steps``): the trained agent against GNU Go level 10, ``gotk match``
   processes of one game each on the host's cores for ``--match-minutes`` (4); the finished games' wins, Wilson
   interval and colours, and ``gnugo-match.json`` for ``gotk elo``.

``--head both`` (with ``--value-weight``, ``--positions-per-game`` and ``--encoder-option player_plane=true``)
trains both heads; the evaluate step then adds the test value MSE and the komi/handicap baseline.

``--tiny`` runs the same code on CPU in under a minute (a few built-in games, a 1x8 resnet for a few steps,
4 self-play games): a check that the script works, not a result. ``tests/test_gpu_check.py`` runs it.

Packages: encoding and evaluation read SGF through sgfmill; where ``import sgfmill`` fails, pure-Python wheels
in ``.whl/`` (``*-none-any.whl``) are put on the path (and on ``PYTHONPATH`` for the child processes). The
self-play step needs no sgfmill.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import traceback
import zipfile
from pathlib import Path
from types import SimpleNamespace

REPO_ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # run as a script: make ``bench`` and ``gotk`` importable
    sys.path.insert(0, str(REPO_ROOT))

STEPS = ("encode", "train", "evaluate", "throughput", "selfplay", "selfplay_workers", "gnugo")
DEFAULT_STEPS = STEPS[:5]  # selfplay_workers and gnugo are asked for by name (--steps): minutes each
# gotk match's search for the gnugo step: the constants measured best for the shipped agents (docs/recipes.md)
MATCH_SEARCH = ["--batch", "1", "--c-puct", "1.6", "--fpu", "0.5", "--lcb", "0.1"]
REPORT_NAME = "gpu_check.json"
TINY_GAMES = (8, 3)  # tiny mode without --kgs: train/val games from the built-in 2017-01, test games from 2017-02


# --- environment ---------------------------------------------------------------------------------


def ensure_sgfmill(wheels: Path = REPO_ROOT / ".whl") -> str:
    """Where ``sgfmill`` comes from: its installed location, a vendored wheel put on the path, or why it is missing."""
    try:
        import sgfmill

        return str(Path(sgfmill.__file__).parent)
    except ImportError:
        pass
    added = [str(w) for w in sorted(wheels.glob("*-none-any.whl"))] if wheels.is_dir() else []
    if added:
        sys.path.extend(added)
        os.environ["PYTHONPATH"] = os.pathsep.join([*added, *filter(None, [os.environ.get("PYTHONPATH")])])
    try:
        import sgfmill

        return f"vendored: {sgfmill.__file__}"
    except ImportError as e:
        return f"missing ({e}): encode and evaluate need it (put sgfmill-*-none-any.whl in .whl/)"


def environment(device: str) -> dict:
    import platform

    info: dict = {"python": platform.python_version(), "cpu_count": os.cpu_count(), "device": device,
                  "date_utc": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "sgfmill": ensure_sgfmill()}
    for name in ("torch", "numba", "numpy", "pyarrow"):
        try:
            info[name] = __import__(name).__version__
        except Exception as e:  # noqa: BLE001 - a report, not a requirement
            info[name] = f"missing: {e}"
    try:
        import torch

        if device.startswith("cuda") and torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(torch.device(device))
            info["cuda"] = torch.version.cuda
    except Exception as e:  # noqa: BLE001
        info["gpu"] = f"error: {e}"
    return info


# --- the steps -----------------------------------------------------------------------------------


def tiny_kgs(folder: Path) -> Path:
    """A tiny KGS folder from the built-in archives: ``tiny-train.zip`` (2017-01) and ``tiny-test.zip`` (2017-02)."""
    from gotk.data import DATA_DIR
    from gotk.sources.archives import SgfSource, iter_sources

    folder.mkdir(parents=True, exist_ok=True)
    for (name, month), count in zip((("tiny-train", "2017_01"), ("tiny-test", "2017_02")), TINY_GAMES, strict=True):
        target = folder / f"{name}.zip"
        if target.is_file():
            continue
        archive = next(DATA_DIR.glob(f"KGS-{month}-*.tar.bz2"))
        items = []
        for s in iter_sources([archive]):
            if isinstance(s, SgfSource):
                items.append(s)
                if len(items) == count:
                    break
        with zipfile.ZipFile(target.with_suffix(".part"), "w") as zf:
            for s in items:
                zf.writestr(s.member, s.data)
        target.with_suffix(".part").replace(target)
    return folder


def step_encode(args, ctx: dict) -> dict:
    from bench import train as bench_train
    from bench._common import kgs_dir
    from gotk.jobs.encode import EncodeOptions, encode_dataset

    if args.kgs is not None:
        folder = args.kgs
    elif args.tiny:
        folder = tiny_kgs(args.work / "tiny-kgs")
    else:
        folder = kgs_dir()
        if not folder.is_dir() and (REPO_ROOT / "shared" / "kgs").is_dir():  # a copy inside the checkout
            folder = REPO_ROOT / "shared" / "kgs"
    archives = bench_train.sources(False, folder)
    if not archives:
        raise FileNotFoundError(f"no archives in {folder}")
    test_from = [args.test_from] if args.test_from else [bench_train.TEST_GLOB if not (args.tiny and args.kgs is None)
                                                         else "*tiny-test*"]
    tag = "".join(f"-{k}={v}" for k, v in sorted(args.encoder_options.items()))
    data = args.work / f"data-{args.encoder}{tag}{'-tiny' if args.tiny else ''}"
    opts = EncodeOptions(encoder=args.encoder, encoder_options=args.encoder_options, split=bench_train.SPLIT,
                         test_from=test_from)
    workers = args.encode_workers or os.cpu_count() or 1
    m = encode_dataset([str(p) for p in archives], data, opts, workers=workers, resume=True, progress=False)
    ctx["data"] = data
    run = m.get("run", {})
    splits = {k: {"games": v["games"], "rows": v["rows"]} for k, v in m["splits"].items()}
    if not splits.get("test", {}).get("rows"):
        raise RuntimeError(f"no test rows: no archive of {folder} matches --test-from {test_from}")
    return {"kgs": str(folder), "archives": [p.name for p in archives], "test_from": test_from,
            "encoder": args.encoder, "encoder_options": args.encoder_options,
            "workers": workers, "data": str(data), "splits": splits, "rows": m["rows"],
            "already_complete": bool(run.get("already_complete")), "encode_wall_s": run.get("wall_s"),
            "positions_per_s": run.get("positions_per_s"), "games_per_s": run.get("games_per_s")}


def recipe(args) -> SimpleNamespace:
    """Recipe (b)'s settings (``bench.train.GPU_RECIPE``), with the tiny mode's and the command line's overrides."""
    from bench.train import GPU_RECIPE

    r = dict(GPU_RECIPE, threads=args.threads)
    if args.tiny:
        r.update(blocks=1, filters=8, batch_size=16, workers=0, compile="eager", warmup_steps=2)
    r["device"] = args.device
    for key in ("blocks", "filters", "batch_size", "workers", "compile"):
        if getattr(args, key) is not None:
            r[key] = getattr(args, key)
    return SimpleNamespace(**r)


def run_logged(cmd: list[str], tail: int = 40) -> None:
    """Run ``cmd`` from the repository root, echoing its output; raises with the output's end when it fails."""
    print("+ " + " ".join(cmd), flush=True)
    last: collections.deque[str] = collections.deque(maxlen=tail)
    with subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          bufsize=1) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            last.append(line)
        rc = proc.wait()
    if rc != 0:
        raise RuntimeError(f"exit status {rc}; output's end:\n{''.join(last)[-3000:]}")


def step_train(args, ctx: dict) -> dict:
    from bench import train as bench_train

    if "data" not in ctx:
        raise RuntimeError("no encoded data (the encode step failed)")
    r = recipe(args)
    run = args.work / f"run-{int(time.time())}"
    cmd = [sys.executable, "-m", "gotk", "train", "--data", str(ctx["data"]), "--out", str(run),
           *bench_train.model_args(r), "--max-minutes", f"{args.train_minutes:g}",
           "--log-every", str(args.log_every), "--checkpoint-every", "5000",
           "--max-val-positions", str(args.max_val_positions), "--warmup-steps", str(r.warmup_steps)]
    if args.train_steps:
        cmd += ["--max-steps", str(args.train_steps)]
    if args.head:
        cmd += ["--head", args.head]
    if args.value_weight is not None:
        cmd += ["--value-weight", f"{args.value_weight:g}"]
    if args.positions_per_game is not None:
        cmd += ["--positions-per-game", str(args.positions_per_game)]
    t = time.perf_counter()
    run_logged(cmd)
    wall = time.perf_counter() - t
    ctx["run"] = run
    shutil.copyfile(run / "agent.gotk", args.out / "agent.gotk")
    shutil.copyfile(run / "metrics.jsonl", args.out / "train-metrics.jsonl")
    ctx["agent"] = args.out / "agent.gotk"
    recs = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [x for x in recs if x.get("kind") == "step"]
    epochs = [x for x in recs if x.get("kind") == "epoch"]
    last = epochs[-1] if epochs else {}
    heads = {"head": args.head, "value_weight": args.value_weight, "positions_per_game": args.positions_per_game}
    return {"settings": {**vars(r), **heads}, "train_minutes": args.train_minutes, "wall_s": round(wall, 1),
            "steps": steps[-1]["step"] if steps else None,
            "samples_seen": steps[-1]["step"] * r.batch_size if steps else None,
            "val_top1": last.get("val_top1"), "val_top5": last.get("val_top5"),
            "val_value_mse": last.get("val_value_mse"), "run": str(run),
            "agent": str(ctx["agent"])}


def step_evaluate(args, ctx: dict) -> dict:
    from gotk.nets.agent import load_agent
    from gotk.train.evaluate import evaluate

    if "agent" not in ctx:
        raise RuntimeError("no trained agent (the train step failed)")
    agent = load_agent(ctx["agent"], device=args.device)
    agent.amp = recipe(args).amp
    r = evaluate(agent, ctx["data"], "test", max_positions=args.eval_positions, batch_size=args.eval_batch)
    if not r.get("positions"):
        raise RuntimeError("the test split has no positions")
    out = {"split": "test", "amp": agent.amp, **{k: r.get(k) for k in ("positions", "top1", "top5", "nll")},
           "eval_seconds": r.get("seconds"),
           "positions_per_s": round(r["positions"] / r["seconds"], 1) if r.get("seconds") else None}
    if agent.has_value:  # the value head against the komi/handicap baseline, on the games with a result
        base = r.get("baselines", {}).get("value", {}).get("komi_handicap", {})
        late = r.get("by_phase", {}).get("151+", {})
        out.update({k: r.get(k) for k in ("value_positions", "value_mse", "value_sign_accuracy")},
                   komi_handicap_mse=base.get("value_mse"), value_mse_after_150=late.get("value_mse"))
    return out


def step_throughput(args, ctx: dict) -> dict:
    from bench import train as bench_train

    if "run" not in ctx:
        raise RuntimeError("no training run (the train step failed)")
    return bench_train.throughput(ctx["run"], args.device)


def step_selfplay(args, ctx: dict) -> dict:
    import torch

    from gotk.nets.agent import load_agent
    from gotk.selfplay.config import SelfPlayConfig
    from gotk.selfplay.games import SelfPlayBatch
    from gotk.selfplay.run import new_agent

    threads = torch.get_num_threads()
    if args.threads:
        torch.set_num_threads(args.threads)
    amp = recipe(args).amp
    runs, skipped = [], []

    def play(agent, games: int, moves: int) -> tuple[dict, float]:
        cfg = SelfPlayConfig.make(size=9, visits=args.simulations, fast_visits=args.simulations, full_fraction=1.0,
                             max_moves=moves, resign_threshold=None)
        batch = SelfPlayBatch(agent, cfg, [(i, 0) for i in range(games)], seed=0)
        if agent.device.type == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        out = batch.run()
        wall = time.perf_counter() - t
        positions = sum(len(g.label) for g in out)
        return {"games": games, "simulations": args.simulations, "max_moves": moves, "positions": positions,
                "seconds": round(wall, 3), "positions_per_s": round(positions / wall, 1),
                "evaluations": batch.evaluations, "evaluations_per_s": round(batch.evaluations / wall, 1),
                "calls": batch.calls, "mean_batch": round(batch.evaluations / max(batch.calls, 1), 1),
                "net_seconds": round(batch.net_seconds, 3),
                "outside_network_share": round(1 - batch.net_seconds / wall, 4)}, wall

    try:
        for spec in args.selfplay_models.split(","):
            blocks, filters = (int(x) for x in spec.lower().split("x"))
            left = ctx["deadline"] - time.perf_counter()
            if runs and left < 20:
                skipped.append({"model": spec, "why": f"the budget is spent ({left:.0f} s left)"})
                continue
            path = new_agent(args.work / f"zero-{blocks}x{filters}.gotk", 9, "zero", "simple", 0, blocks=blocks,
                             filters=filters)
            agent = load_agent(path, device=args.device)
            agent.amp = amp
            play(agent, min(8, args.selfplay_games), 2)  # warm-up: numba kernels, cuDNN, the first calls
            probe_moves = 2
            probe, probe_s = play(agent, args.selfplay_games, probe_moves)
            per_move = probe_s / probe_moves
            budget = min(args.selfplay_seconds, max(5.0, left - 10))
            moves = max(probe_moves, min(args.max_moves, int(budget / per_move)))
            res, _ = play(agent, args.selfplay_games, moves)
            res.update(model=f"zero {blocks}x{filters}", board=9, amp=amp, device=str(agent.device),
                       shortened=moves < args.max_moves, probe_seconds_per_move=round(per_move, 4))
            runs.append(res)
            print(f"self-play {spec}: {res['positions_per_s']:,.0f} positions/s, {res['evaluations_per_s']:,.0f} "
                  f"evaluations/s, mean batch {res['mean_batch']}, outside the network "
                  f"{res['outside_network_share']:.1%} ({moves} moves x {args.selfplay_games} games)", flush=True)
            del agent
            if args.device.startswith("cuda"):
                torch.cuda.empty_cache()
    finally:
        torch.set_num_threads(threads)
    return {"runs": runs, "skipped": skipped}


def step_selfplay_workers(args, ctx: dict) -> dict:
    """``gotk selfplay`` through its command line on ``--device``: one process, then ``--selfplay-workers``
    processes sharing the device (each its own batch of ``--selfplay-games`` games), with the self-play step's
    last model and settings. A process walks its trees on one core, so several processes are how the host side
    keeps up with a GPU; the speeds are over each command's wall time, start-up included."""
    import torch

    spec = args.selfplay_models.split(",")[-1]
    blocks, filters = (int(x) for x in spec.lower().split("x"))
    cores = os.cpu_count() or 1
    runs = []
    warm = [sys.executable, "-m", "gotk", "selfplay", "--init", "random", "--model", "zero", "--blocks", "1",
            "--filters", "8", "--size", "9", "--games", "2", "--chunk-games", "2", "--visits", "2", "--fast-visits",
            "2", "--max-moves", "2", "--device", args.device, "--out", str(args.work / "selfplay-cli-warm")]
    shutil.rmtree(args.work / "selfplay-cli-warm", ignore_errors=True)
    subprocess.run(warm, cwd=REPO_ROOT, capture_output=True, timeout=600, check=True)  # numba's cache, not timed
    for workers in dict.fromkeys((1, args.selfplay_workers)):
        out = args.work / f"selfplay-cli-w{workers}"
        shutil.rmtree(out, ignore_errors=True)
        cmd = [sys.executable, "-m", "gotk", "selfplay", "--init", "random", "--model", "zero", "--blocks", str(blocks),
               "--filters", str(filters), "--size", "9", "--games", str(args.selfplay_games * workers),
               "--chunk-games", str(args.selfplay_games), "--workers", str(workers), "--visits",
               str(args.simulations), "--fast-visits", str(args.simulations), "--full-fraction", "1", "--no-resign",
               "--max-moves", str(args.workers_moves), "--device", args.device, "--threads",
               str(max(1, cores // workers)), "--out", str(out), "--seed", "0", "--json"]
        print("+ " + " ".join(cmd), flush=True)
        r = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
        sys.stdout.write(r.stderr[-2000:])
        if r.returncode != 0:
            raise RuntimeError(f"exit status {r.returncode}: {r.stderr[-3000:]}")
        rep = json.loads(r.stdout)
        run = {"workers": workers, "games": rep["games"], "moves_per_game": args.workers_moves,
               "positions": rep["positions"], "wall_s": rep["wall_s"], "positions_per_s": rep["positions_per_s"],
               "evaluations_per_s": rep["evaluations_per_s"], "outside_network_share": rep["outside_network_share"],
               "device": rep.get("device"), "model": f"zero {blocks}x{filters}"}
        runs.append(run)
        print(f"gotk selfplay --workers {workers}: {run['positions_per_s']:,.0f} positions/s, "
              f"{run['evaluations_per_s']:,.0f} evaluations/s over {run['wall_s']:.0f} s", flush=True)
    if args.device.startswith("cuda"):
        torch.cuda.empty_cache()
    speedup = runs[-1]["positions_per_s"] / runs[0]["positions_per_s"] if len(runs) > 1 else None
    return {"runs": runs, "speedup": round(speedup, 2) if speedup else None}


def gnugo_command(args) -> list[str]:
    """GNU Go's GTP command line: ``--gnugo``, else ``gnugo`` on the PATH, else Debian's ``/usr/games/gnugo``;
    raises when it does not start (a copied binary may need ``LD_LIBRARY_PATH`` for its libraries)."""
    engine = args.gnugo or shutil.which("gnugo") or "/usr/games/gnugo"
    try:
        r = subprocess.run([engine, "--version"], capture_output=True, text=True, timeout=30)
    except OSError as e:
        raise FileNotFoundError(f"GNU Go does not start ({engine}: {e}): give --gnugo PATH") from None
    if r.returncode != 0:
        raise RuntimeError(f"{engine} --version: exit status {r.returncode}: {(r.stderr or r.stdout)[-300:]}")
    return [engine, "--mode", "gtp", "--level", str(args.gnugo_level), "--chinese-rules"]


def step_gnugo(args, ctx: dict) -> dict:
    """The trained agent against GNU Go on the host's cores for ``--match-minutes``: ``gotk match`` processes of one
    game each (``--match-processes`` at a time, the agent's colour alternating from game to game), the agent on
    one CPU thread with bf16 autocast, searching ``--match-visits`` or ``--match-seconds`` a move (an agent
    without a value head plays its policy alone). A new game starts only while the time left exceeds the mean
    finished game's; games still running at the end are stopped and reported as ``cut``, not counted. The finished
    games also go to ``gnugo-match.json`` (a ``gotk match --json`` report that ``gotk elo`` reads) and their SGF
    records to ``gnugo-games/``."""
    from gotk.nets.agent import load_agent
    from gotk.play.results import GameResult, summarize

    if "agent" not in ctx:
        raise RuntimeError("no trained agent (the train step failed)")
    engine = gnugo_command(args)
    visits = args.match_visits if load_agent(ctx["agent"]).has_value else 0  # search needs a value head
    procs = args.match_processes or max(1, (os.cpu_count() or 2) - 2)
    games_dir = args.out / "gnugo-games"
    shutil.rmtree(games_dir, ignore_errors=True)
    games_dir.mkdir(parents=True)
    deadline = time.perf_counter() + args.match_minutes * 60
    running: dict[int, tuple[subprocess.Popen, float]] = {}
    results: list[GameResult] = []
    walls: dict[int, float] = {}
    failed: list[str] = []
    number = 0

    def launch() -> None:
        nonlocal number
        number += 1
        cmd = [sys.executable, "-m", "gotk", "match", "--agent", str(ctx["agent"]), "--opponent", shlex.join(engine),
               "--games", "1", "--agent-first", "black" if number % 2 else "white", "--size", "19", "--komi", "7.5",
               "--max-moves", str(args.match_max_moves), "--timeout", f"{args.match_timeout:g}", "--threads", "1",
               "--bf16", "--visits", str(visits), "--seed", str(number),
               "--sgf-out", str(games_dir / f"game-{number:03d}"), "--json"]
        if visits:
            cmd += [*MATCH_SEARCH, *(["--seconds", f"{args.match_seconds:g}"] if args.match_seconds else [])]
        proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)  # its own group: a cut game stops GNU Go with it
        running[number] = (proc, time.perf_counter())

    for _ in range(procs):
        launch()
    while running:
        time.sleep(0.2)
        now = time.perf_counter()
        for n, (proc, t) in list(running.items()):
            if proc.poll() is None:
                continue
            del running[n]
            out, err = proc.communicate()
            try:
                if proc.returncode != 0:
                    raise RuntimeError(f"exit status {proc.returncode}: {err.strip()[-300:]}")
                results.append(GameResult.from_dict({**json.loads(out)["per_game"][0], "game": n}))
            except (RuntimeError, ValueError, KeyError, IndexError, TypeError) as e:
                failed.append(f"game {n}: {e}")
                continue
            walls[n] = now - t
            if deadline - now > sum(walls.values()) / len(walls):
                launch()
        if now > deadline:
            for proc, _ in running.values():  # GNU Go too: in a final_score it would not read its stdin for minutes
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
            break
    if failed and not results:
        raise RuntimeError("; ".join(failed[:3]))
    results.sort(key=lambda r: r.game)
    summary = summarize(results).as_dict()
    report = {**summary, "agent": "gpu-check-agent", "opponent": f"gnugo-{args.gnugo_level}", "size": 19,
              "komi": 7.5, "per_game": [{**r.as_dict(), "wall_s": round(walls[r.game], 1)} for r in results]}
    (args.out / "gnugo-match.json").write_text(json.dumps(report, indent=1) + "\n")
    return {"opponent": shlex.join(engine), "processes": procs, "visits": visits,
            "seconds_per_move": args.match_seconds if visits else None,
            "search": " ".join(MATCH_SEARCH) if visits else "the policy alone (no value head)", **summary,
            "by_colour": {c: {"games": sum(r.agent_colour == c for r in results),
                              "wins": sum(r.agent_won and r.agent_colour == c for r in results)} for c in "BW"},
            "cut": len(running), "failed": failed,
            "mean_game_s": round(sum(walls.values()) / len(walls), 1) if walls else None,
            "mean_moves": round(sum(r.moves for r in results) / len(results), 1) if results else None,
            "report": str(args.out / "gnugo-match.json")}


STEP_FUNCS = {"encode": step_encode, "train": step_train, "evaluate": step_evaluate,
              "throughput": step_throughput, "selfplay": step_selfplay, "selfplay_workers": step_selfplay_workers,
              "gnugo": step_gnugo}


# --- driver --------------------------------------------------------------------------------------


def write_report(report: dict, out: Path) -> None:
    tmp = out / f"{REPORT_NAME}.part"
    tmp.write_text(json.dumps(report, indent=2, default=str) + "\n")
    tmp.replace(out / REPORT_NAME)


def summary(report: dict) -> str:
    s = report["steps"]
    lines = [f"GPU check ({'TINY, CPU check: not a result' if report['tiny'] else 'full'}) on "
             f"{report['environment'].get('gpu') or report['environment']['device']}: "
             f"{'all steps ok' if report['ok'] else 'FAILED: ' + ', '.join(k for k, v in s.items() if not v['ok'])}"]

    def line(name: str, text) -> None:
        e = s.get(name)
        if e is None:
            return
        if not e["ok"]:
            lines.append(f"  {name:<10} FAILED after {e['seconds']:.1f} s: {e['error'].splitlines()[0][:200]}")
        else:
            lines.append(f"  {name:<10} {e['seconds']:7.1f} s  {text(e)}")

    line("encode", lambda e: f"{e['rows']:,} positions ("
         + ", ".join(f"{k} {v['rows']:,}" for k, v in e["splits"].items()) + ")"
         + (", reused" if e["already_complete"] else f", {e['positions_per_s']:,.0f} positions/s"))
    line("train", lambda e: f"{e['steps']} steps in {e['wall_s']:.0f} s, val top-1 {e['val_top1']}")
    line("evaluate", lambda e: f"test top-1 {100 * e['top1']:.2f}%, top-5 {100 * e['top5']:.2f}% on "
         f"{e['positions']:,} positions"
         + (f"; value MSE {e['value_mse']:.4f} (komi/handicap {e['komi_handicap_mse']:.4f})"
            if e.get("value_mse") is not None and e.get("komi_handicap_mse") is not None else ""))
    line("throughput", lambda e: f"{e['samples_per_s']:,.0f} samples/s x {e['train_flops_per_sample'] / 1e9:.3f} "
         f"GFLOP = {e['achieved_tflops']:.3f} TFLOP/s; peak share "
         + ("n/a (device not in the peak table)" if e["peak_share"] is None else f"{100 * e['peak_share']:.2f}%"))
    line("selfplay", lambda e: "; ".join(f"{r['model']}: {r['positions_per_s']:,.0f} positions/s, "
                                         f"{r['evaluations_per_s']:,.0f} evals/s, batch {r['mean_batch']}, "
                                         f"outside {r['outside_network_share']:.0%}" for r in e["runs"])
         + "".join(f"; {x['model']} skipped" for x in e["skipped"]))
    line("selfplay_workers", lambda e: "; ".join(f"{r['workers']} process(es): {r['positions_per_s']:,.0f} positions/s"
                                                 for r in e["runs"])
         + (f" ({e['speedup']}x)" if e["speedup"] else ""))
    line("gnugo", lambda e: f"{e['wins']} wins of {e['games']} against {e['opponent']} (95% {e['ci95']}), "
         f"{e['cut']} cut, mean game {e['mean_game_s']} s")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=None, help="Report and agent folder (default: $OUT, else gpu-check/).")
    ap.add_argument("--work", type=Path, default=None, help="Encoded data and run folders (default: runs/gpu-check, "
                    "runs/gpu-check-tiny with --tiny).")
    ap.add_argument("--kgs", type=Path, default=None, help="KGS archive folder (default: ../shared/kgs; --tiny: a "
                    "few built-in games).")
    ap.add_argument("--test-from", default=None, help="Glob of the archives held out as test (default: *2017_03*).")
    ap.add_argument("--encoder", default=None, help="Encoder (default: recipe (b)'s, alphago).")
    ap.add_argument("--encode-workers", type=int, default=None, help="Encode processes (default: os.cpu_count()).")
    ap.add_argument("--device", default=None, help="cuda (default) or cpu (the default with --tiny).")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: 2; 1 with --tiny).")
    ap.add_argument("--train-minutes", type=float, default=None, help="Training budget (default: 5; --tiny: 0.5).")
    ap.add_argument("--train-steps", type=int, default=None, help="Also stop training after this many steps "
                    "(--tiny: 6).")
    ap.add_argument("--log-every", type=int, default=None, help="Training log window (default: 100; --tiny: 2).")
    ap.add_argument("--max-val-positions", type=int, default=20000)
    ap.add_argument("--blocks", type=int, default=None, help="Override recipe (b)'s resnet blocks.")
    ap.add_argument("--filters", type=int, default=None, help="Override recipe (b)'s resnet filters.")
    ap.add_argument("--batch-size", type=int, default=None, help="Override recipe (b)'s batch size.")
    ap.add_argument("--workers", type=int, default=None, help="Override recipe (b)'s loader workers.")
    ap.add_argument("--compile", default=None, help="Override recipe (b)'s torch.compile backend.")
    ap.add_argument("--eval-positions", type=int, default=None, help="Cap on evaluated test positions (default: all).")
    ap.add_argument("--eval-batch", type=int, default=None, help="Evaluation batch (default: 2048; --tiny: 256).")
    ap.add_argument("--selfplay-models", default=None, help="zero models BLOCKSxFILTERS, in order, while the budget "
                    "allows (default: 6x64,10x128; --tiny: 1x8).")
    ap.add_argument("--selfplay-games", type=int, default=None, help="Games played together (default: 256; --tiny: 4).")
    ap.add_argument("--simulations", type=int, default=None, help="Simulations per move (default: 64; --tiny: 4).")
    ap.add_argument("--max-moves", type=int, default=None, help="Moves per self-play game (default: 60; --tiny: 4).")
    ap.add_argument("--selfplay-seconds", type=float, default=None, help="Time per self-play model (default: 30).")
    ap.add_argument("--selfplay-workers", type=int, default=None, help="selfplay_workers: processes of the second "
                    "run (default: 8; --tiny: 2).")
    ap.add_argument("--workers-moves", type=int, default=None, help="selfplay_workers: moves per game (default: 16; "
                    "--tiny: 3).")
    ap.add_argument("--budget-minutes", type=float, default=None, help="The whole check's target (default: 8); the "
                    "self-play step stops starting models past it.")
    ap.add_argument("--steps", default=",".join(DEFAULT_STEPS), help=f"Steps to run, of {','.join(STEPS)} "
                    f"(default: {','.join(DEFAULT_STEPS)}).")
    ap.add_argument("--head", default=None, help="gotk train --head (default: recipe (b)'s policy head; both: "
                    "the evaluate step adds the test value MSE).")
    ap.add_argument("--value-weight", type=float, default=None, help="gotk train --value-weight.")
    ap.add_argument("--positions-per-game", type=int, default=None, help="gotk train --positions-per-game.")
    ap.add_argument("--encoder-option", action="append", default=[], metavar="KEY=VALUE",
                    help="Encoder option (repeatable), e.g. player_plane=true for a value head.")
    ap.add_argument("--gnugo", default=None, help="gnugo: GNU Go's binary (default: gnugo on the PATH, else "
                    "/usr/games/gnugo).")
    ap.add_argument("--gnugo-level", type=int, default=None, help="gnugo: GNU Go's level (default: 10; --tiny: 1).")
    ap.add_argument("--match-timeout", type=float, default=None, help="gnugo: seconds GNU Go may take a command "
                    "(default: 120; --tiny: 5, as its final_score of an unfinished 19x19 game takes minutes: gotk "
                    "scores the game then).")
    ap.add_argument("--match-processes", type=int, default=None, help="gnugo: games at a time (default: cores - 2).")
    ap.add_argument("--match-minutes", type=float, default=None, help="gnugo: the step's time (default: 4).")
    ap.add_argument("--match-visits", type=int, default=None, help="gnugo: the agent's visits a move (default: "
                    "800; 0: the policy alone).")
    ap.add_argument("--match-seconds", type=float, default=None, help="gnugo: the agent's seconds a move, whichever "
                    "of visits and seconds comes first (default: 1; 0: no limit).")
    ap.add_argument("--match-max-moves", type=int, default=None, help="gnugo: moves before a game is scored "
                    "(default: 400).")
    ap.add_argument("--tiny", action="store_true", help="A few games and steps on CPU: a check of the script.")
    args = ap.parse_args(argv)
    tiny = args.tiny
    defaults = {
        "device": "cpu" if tiny else None, "threads": 1 if tiny else 2, "train_minutes": 0.5 if tiny else 5.0,
        "train_steps": 6 if tiny else None, "log_every": 2 if tiny else 100, "eval_batch": 256 if tiny else 2048,
        "selfplay_models": "1x8" if tiny else "6x64,10x128", "selfplay_games": 4 if tiny else 256,
        "simulations": 4 if tiny else 64, "max_moves": 4 if tiny else 60, "selfplay_seconds": 10 if tiny else 30,
        "budget_minutes": 1.0 if tiny else 8.0, "selfplay_workers": 2 if tiny else 8,
        "workers_moves": 3 if tiny else 16, "match_processes": 2 if tiny else None,
        "match_minutes": 1.0 if tiny else 4.0, "match_visits": 2 if tiny else 800,
        "match_seconds": 0.0 if tiny else 1.0, "match_max_moves": 6 if tiny else 400,
        "gnugo_level": 1 if tiny else 10, "match_timeout": 5.0 if tiny else 120.0,
        "work": REPO_ROOT / "runs" / ("gpu-check-tiny" if tiny else "gpu-check"),
        "out": Path(os.environ["OUT"]) if os.environ.get("OUT") else Path("gpu-check"),
    }
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.device is None:
        from bench.train import GPU_RECIPE

        args.device = GPU_RECIPE["device"]
    if args.encoder is None:
        from bench.train import ENCODER

        args.encoder = ENCODER
    from typer import BadParameter

    from gotk.cli.common import parse_key_values

    try:
        args.encoder_options = parse_key_values(args.encoder_option)
    except BadParameter as e:
        ap.error(e.format_message())
    args.steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    unknown = [s for s in args.steps if s not in STEPS]
    if unknown:
        ap.error(f"unknown steps {unknown}: choose from {', '.join(STEPS)}")
    return args


def main(argv: list[str] | None = None) -> int:
    ensure_sgfmill()  # before bench/gotk imports that read SGF
    args = parse_args(argv)
    t0 = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    report: dict = {"benchmark": "gpu_check", "tiny": args.tiny, "settings": settings,
                    "environment": environment(args.device), "steps": {}, "ok": False}
    ctx: dict = {"deadline": t0 + args.budget_minutes * 60}
    write_report(report, args.out)
    for name in args.steps:
        print(f"\n== {name} ({time.perf_counter() - t0:.0f} s in)", flush=True)
        t = time.perf_counter()
        try:
            entry = {"ok": True, **STEP_FUNCS[name](args, ctx)}
        except (Exception, SystemExit) as e:  # noqa: BLE001 - every step is tried; the report says what failed
            traceback.print_exc()
            entry = {"ok": False, "error": f"{type(e).__name__}: {e}",
                     "traceback": traceback.format_exc(limit=6)[-4000:]}
        entry["seconds"] = round(time.perf_counter() - t, 2)
        report["steps"][name] = entry
        report["wall_s"] = round(time.perf_counter() - t0, 1)
        write_report(report, args.out)
    report["ok"] = all(e["ok"] for e in report["steps"].values())
    report["wall_s"] = round(time.perf_counter() - t0, 1)
    write_report(report, args.out)
    print("\n" + summary(report))
    print(f"report: {args.out / REPORT_NAME}")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
