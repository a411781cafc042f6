"""Training benchmark / recipe (issue: streaming dataloader, gotk train and gotk eval): the best
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

Usage::

    python bench/train.py [--budget-minutes 30] [--encoder alphago] [--model resnet --blocks 4 --filters 48]
                          [--threads 2] [--work DIR] [--json-out FILE] [--smoke]
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


def sources(smoke: bool) -> list[Path]:
    folder = kgs_dir()
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
             "--split", "train=0.98,val=0.02", "--test-from", TEST_GLOB, "--workers", str(args.encode_workers),
             "--resume")
        print(f"encoded in {time.perf_counter() - t0:.0f} s", flush=True)
    return json.loads((data / "manifest.json").read_text())


def model_args(args) -> list[str]:
    out = ["--model", args.model, "--batch-size", str(args.batch_size), "--optimizer", args.optimizer,
           "--threads", str(args.threads), "--workers", str(args.workers), "--device", args.device,
           "--weight-decay", str(args.weight_decay), "--no-progress"]
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget-minutes", type=float, default=30.0, help="Wall-clock training budget.")
    ap.add_argument("--encoder", default="alphago")
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
    args = ap.parse_args()

    tag = f"{args.encoder}{'-smoke' if args.smoke else ''}"
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    data = work / f"data-{tag}"
    manifest = encode(args, data)
    steps_per_s = calibrate(args, data, work)
    steps = max(1, int(args.budget_minutes * 60 * steps_per_s * 0.97))  # 3%: validation, checkpoints, startup
    print(f"calibration: {steps_per_s * args.batch_size:.0f} samples/s → {steps} steps in "
          f"{args.budget_minutes:g} min", flush=True)
    run = work / f"run-{tag}-{args.model}-{int(time.time())}"
    t0 = time.perf_counter()
    gotk("train", "--data", str(data), "--out", str(run), *model_args(args), "--max-steps", str(steps),
         "--log-every", "200", "--checkpoint-every", "5000", "--max-val-positions", "20000")
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
        "calibrated_samples_per_s": round(steps_per_s * args.batch_size, 1),
        "steps": steps,
        "samples_seen": steps * args.batch_size,
        "train_wall_s": round(train_s, 1),
        "run": str(run),
        "test": {k: report.get(k) for k in ("positions", "top1", "top5", "nll", "by_phase", "baselines")},
    }
    print(write_json(out, args.json_out))
    print(f"\n{'SMOKE RUN — ' if args.smoke else ''}test (2017-03) top-1 {100 * report['top1']:.2f}%  "
          f"top-5 {100 * report['top5']:.2f}%  after {train_s / 60:.1f} min of training ({steps} steps)")


if __name__ == "__main__":
    main()
