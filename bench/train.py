"""Training benchmark / recipe (streaming dataloader, ``gotk train`` and ``gotk eval``): the best
move-prediction accuracy reachable in a fixed wall-clock training budget, measured on held-out games.

Protocol (see ``docs/recipes.md``):

1. encode ``../shared/kgs`` once with ``gotk encode``: the 2001–2006 and 2017-01 archives are split by game
   into ``train`` (98%) and ``val`` (2%); the 2017-03 archive goes wholly to ``test`` (``--test-from``);
   2017-02 is left out. The folder is reused (``--resume``) when it is already complete;
2. calibrate: a short training run measures this machine's samples/s for the chosen model;
3. train for ``--budget-minutes`` of steps (steps = budget × measured steps/s; cosine schedule over them);
4. ``gotk eval`` the packaged agent on the ``test`` split (2017-03) and report top-1/top-5 beside the
   baselines, with the wall-clock training time actually spent.

``--smoke`` runs the same pipeline on 2017-01 (train/val) and 2017-03 (test) only, with a small budget:
a check that everything runs, not a result.

``--gpu`` is recipe (b) of ``docs/recipes.md`` in one command: ``--device cuda``, resnet 10x128, batch 1024,
SGD 0.2 with 500 warm-up steps, 8 loader workers, bf16 autocast, channels-last and ``torch.compile``
(inductor). Every run also reports its training throughput: steady-state samples/s (the median logged window,
the first one, which holds start-up and compilation, left out), the model's training FLOPs per position
(:mod:`gotk.train.flops`: conv + linear FLOPs of a forward pass x3), the achieved TFLOP/s and, on a GPU listed
in ``gotk.train.flops.PEAK_BF16_TFLOPS`` (H100, H200, A100, ...), the share of its peak dense bf16 FLOP/s.
``--data DIR`` uses an encoded folder as is (``train``, ``test`` and optionally ``val`` splits) instead of
encoding ``../shared/kgs``; ``--steps N`` trains N steps instead of calibrating a wall-clock budget.

Usage::

    python bench/train.py [--budget-minutes 30] [--encoder alphago] [--model resnet --blocks 4 --filters 48]
                          [--threads 2] [--work DIR] [--json-out FILE] [--smoke]
    python bench/train.py --gpu [--budget-minutes 30] [--json-out FILE]       # recipe (b) on a CUDA GPU
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import REPO_ROOT, default_kgs_archives, kgs_dir, machine_info, write_json  # noqa: E402

TEST_GLOB = "*2017_03*"
ENCODER = "alphago"  # the encoder of recipes (a) and (b)
SPLIT = "train=0.98,val=0.02"
LEFT_OUT = "2017_02"  # the suggested validation month: not used for training nor for the reported test


def gotk(*args: str, capture: bool = False) -> subprocess.CompletedProcess:
    """Run ``python -m gotk ARGS``; exits with the command's status when it fails."""
    cmd = [sys.executable, "-m", "gotk", *args]
    print("+ gotk " + " ".join(args), flush=True)
    res = subprocess.run(cmd, cwd=REPO_ROOT, text=True, capture_output=capture)
    if res.returncode != 0:
        if capture:
            sys.stderr.write(res.stdout + res.stderr)
        sys.exit(f"error: gotk {args[0]} failed with status {res.returncode}")
    return res


def sources(smoke: bool, folder: Path | None = None) -> list[Path]:
    """The archives of ``folder`` (default :func:`kgs_dir`) the recipes encode: all but 2017-02 (``--smoke``:
    2017-01 and 2017-03 only)."""
    folder = kgs_dir() if folder is None else folder
    if not folder.is_dir():
        sys.exit(f"error: the KGS sample is missing: {folder} (set GOTK_KGS)")
    archives = [p for p in default_kgs_archives(folder) if LEFT_OUT not in p.name]
    if smoke:
        archives = [p for p in archives if "2017_01" in p.name or "2017_03" in p.name]
    return archives


def encode(args, data: Path) -> dict:
    if not (data / "manifest.json").is_file():
        t0 = time.perf_counter()
        gotk("encode", *map(str, sources(args.smoke)), "--encoder", args.encoder, "--out", str(data),
             "--split", SPLIT, "--test-from", TEST_GLOB, "--workers", str(args.encode_workers),
             "--resume")
        print(f"encoded in {time.perf_counter() - t0:.0f} s", flush=True)
    return json.loads((data / "manifest.json").read_text())


GPU_RECIPE = {"device": "cuda", "model": "resnet", "blocks": 10, "filters": 128, "batch_size": 1024,
              "optimizer": "sgd", "lr": 0.2, "momentum": 0.9, "weight_decay": 1e-4, "warmup_steps": 500,
              "workers": 8, "amp": True, "channels_last": True, "compile": "inductor"}


def model_args(args) -> list[str]:
    out = ["--model", args.model, "--batch-size", str(args.batch_size), "--optimizer", args.optimizer,
           "--threads", str(args.threads), "--workers", str(args.workers), "--device", args.device,
           "--weight-decay", str(args.weight_decay), "--momentum", str(args.momentum), "--no-progress"]
    if args.channels_last is not None:
        out += ["--channels-last" if args.channels_last else "--no-channels-last"]
    if args.compile:
        out += ["--compile", args.compile]
    if args.lr is not None:
        out += ["--lr", str(args.lr)]
    if args.blocks is not None:
        out += ["--blocks", str(args.blocks)]
    if args.filters is not None:
        out += ["--filters", str(args.filters)]
    if args.amp:
        out += ["--amp"]
    return out


def calibrate(args, data: Path, work: Path) -> float:
    """Steady-state steps/s of the configured model on this machine (the first logged window is dropped)."""
    run = work / "calibration"
    if run.exists():
        import shutil

        shutil.rmtree(run)
    n = args.calibration_steps
    gotk("train", "--data", str(data), "--out", str(run), *model_args(args), "--max-steps", str(n),
         "--log-every", str(max(1, n // 5)), "--max-val-positions", "256", "--schedule", "none")
    recs = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    rates = [r["samples_per_s"] for r in recs if r.get("kind") == "step" and r.get("samples_per_s")][1:]
    if not rates:
        sys.exit("error: calibration logged no throughput")
    return sorted(rates)[len(rates) // 2] / args.batch_size


def throughput(run: Path, device: str) -> dict:
    """Steady-state samples/s of a finished run (median of its logged windows but the first: start-up and
    compilation) and what that is in FLOP/s and as a share of the device's peak (:mod:`gotk.train.flops`)."""
    import torch

    from bench._common import cpu_model
    from gotk.nets.networks import build_model
    from gotk.train.flops import peak_report, train_flops_per_sample

    conf = json.loads((run / "config.json").read_text())
    recs = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    rates = [r["samples_per_s"] for r in recs if r.get("kind") == "step" and r.get("samples_per_s")]
    steady = rates[1:] or rates
    if not steady:
        sys.exit(f"error: {run} logged no throughput (fewer steps than --log-every?)")
    rate = sorted(steady)[len(steady) // 2]
    shape = tuple(int(x) for x in conf["data"]["encoder"]["shape"])
    m = conf["model"]
    model = build_model(m["name"], shape[0], shape[1], head=m["head"], **m["hparams"])
    flops = train_flops_per_sample(model, shape)
    dev = conf["device"]
    name = torch.cuda.get_device_name(torch.device(dev)) if dev.startswith("cuda") else f"cpu: {cpu_model()}"
    return {**peak_report(rate, flops, name), "device": dev, "amp": conf.get("amp"),
            "amp_dtype": conf.get("amp_dtype"), "channels_last": conf.get("channels_last"),
            "compile": conf["config"].get("compile"), "windows": len(rates)}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget-minutes", type=float, default=30.0, help="Wall-clock training budget.")
    ap.add_argument("--encoder", default=ENCODER)
    ap.add_argument("--model", default="resnet")
    ap.add_argument("--blocks", type=int, default=4)
    ap.add_argument("--filters", type=int, default=48)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--optimizer", default="adam")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--weight-decay", type=float, default=1e-5)
    ap.add_argument("--threads", type=int, default=2, help="torch threads (use 1 on a shared machine).")
    ap.add_argument("--workers", type=int, default=0, help="DataLoader workers.")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--amp", action=argparse.BooleanOptionalAction, default=True,
                    help="bf16 autocast (fast on CPUs with AVX512-BF16/AMX, and on GPUs).")
    ap.add_argument("--calibration-steps", type=int, default=60)
    ap.add_argument("--encode-workers", type=int, default=0, help="gotk encode --workers (0: all cores).")
    ap.add_argument("--work", type=Path, default=REPO_ROOT / "runs" / "bench-train",
                    help="Data and run folders (runs/ is git-ignored).")
    ap.add_argument("--json-out", type=Path)
    ap.add_argument("--smoke", action="store_true", help="2017-01 → 2017-03 only, a few minutes: a check, "
                    "not a result.")
    ap.add_argument("--momentum", type=float, default=0.9, help="SGD momentum.")
    ap.add_argument("--warmup-steps", type=int, default=0)
    ap.add_argument("--channels-last", action=argparse.BooleanOptionalAction, default=None,
                    help="NHWC weights and inputs (default: gotk train's: on with CUDA).")
    ap.add_argument("--compile", default=None, metavar="BACKEND",
                    help="torch.compile backend of the training step (inductor; default: off).")
    ap.add_argument("--gpu", action="store_true", help="Recipe (b): " + ", ".join(f"--{k.replace('_', '-')} {v}"
                    for k, v in GPU_RECIPE.items()) + " (options given override).")
    ap.add_argument("--data", type=Path, help="An encoded folder to use as is (train, test, optional val splits).")
    ap.add_argument("--steps", type=int, help="Train this many steps (no calibration).")
    ap.add_argument("--log-every", type=int, default=200)
    argv = sys.argv[1:] if argv is None else argv
    if "--gpu" in argv:
        ap.set_defaults(**GPU_RECIPE)
    args = ap.parse_args(argv)

    tag = f"{args.encoder}{'-smoke' if args.smoke else ''}"
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    if args.data is not None:
        data = args.data
        if not (data / "manifest.json").is_file():
            sys.exit(f"error: {data} has no manifest.json (make it with gotk encode)")
        manifest = json.loads((data / "manifest.json").read_text())
        tag = data.name
    else:
        data = work / f"data-{tag}"
        manifest = encode(args, data)
    steps_per_s = None
    if args.steps is not None:
        steps = args.steps
    else:
        steps_per_s = calibrate(args, data, work)
        steps = max(1, int(args.budget_minutes * 60 * steps_per_s * 0.97))  # 3%: validation, checkpoints, startup
        print(f"calibration: {steps_per_s * args.batch_size:.0f} samples/s → {steps} steps in "
              f"{args.budget_minutes:g} min", flush=True)
    run = work / f"run-{tag}-{args.model}-{int(time.time())}"
    t0 = time.perf_counter()
    gotk("train", "--data", str(data), "--out", str(run), *model_args(args), "--max-steps", str(steps),
         "--log-every", str(args.log_every), "--checkpoint-every", "5000", "--max-val-positions", "20000",
         "--warmup-steps", str(args.warmup_steps))
    train_s = time.perf_counter() - t0
    res = gotk("eval", "--agent", str(run / "agent.gotk"), "--data", str(data), "--split", "test", "--json",
               "--threads", str(args.threads), "--device", args.device, *(["--amp"] if args.amp else []),
               capture=True)
    report = json.loads(res.stdout)
    out = {
        "benchmark": "train",
        "smoke": args.smoke,
        "machine": machine_info(),
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "data": {"encoder": manifest["encoder"]["name"], "train_rows": manifest["splits"]["train"]["rows"],
                 "test_rows": manifest["splits"]["test"]["rows"], "path": str(data)},
        "calibrated_samples_per_s": None if steps_per_s is None else round(steps_per_s * args.batch_size, 1),
        "steps": steps,
        "samples_seen": steps * args.batch_size,
        "train_wall_s": round(train_s, 1),
        "run": str(run),
        "throughput": throughput(run, args.device),
        "test": {k: report.get(k) for k in ("positions", "top1", "top5", "nll", "by_phase", "baselines")},
    }
    print(write_json(out, args.json_out))
    tp = out["throughput"]
    share = "n/a (device not in the peak table)" if tp["peak_share"] is None else f"{100 * tp['peak_share']:.1f}%"
    print(f"\n{'SMOKE RUN — ' if args.smoke else ''}test top-1 {100 * report['top1']:.2f}%  "
          f"top-5 {100 * report['top5']:.2f}%  after {train_s / 60:.1f} min of training ({steps} steps)\n"
          f"throughput on {tp['device_name']}: {tp['samples_per_s']:,.0f} samples/s x "
          f"{tp['train_flops_per_sample'] / 1e9:.3f} GFLOP = {tp['achieved_tflops']:.3f} TFLOP/s; share of the "
          f"peak bf16 FLOP/s: {share}")
    return out


if __name__ == "__main__":
    main()
