"""Every ``--model`` side by side: the same data, the same number of steps, each model with the
optimizer and learning rate ``gotk train`` gives it by default; reports training loss and validation
top-1 after the fixed step count. A check that every model learns with its defaults, not a recipe.

Each run goes through ``gotk.train.trainer.train`` (the code behind ``gotk train``), one model at a time.

Usage::

    python bench/models.py --data DIR [--steps 300] [--batch-size 64] [--models small,medium,...]
                           [--hparam alphago.filters=64 ...] [--threads 1] [--work DIR] [--json-out FILE]

``--data`` is a ``gotk encode`` folder with ``train`` and ``val`` splits (e.g. the sevenplane encoding of the
built-in 2017-01 sample: ``gotk encode gotk/data/KGS-2017_01-19-733-.tar.bz2 -e sevenplane -o DIR``).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import REPO_ROOT, format_table, machine_info, write_json  # noqa: E402

UNIFORM_LOSS = math.log(362)  # cross-entropy of a uniform guess over 19x19 + pass


def parse_hparams(items: list[str]) -> dict[str, dict[str, int]]:
    """``["alphago.filters=64", ...]`` → ``{"alphago": {"filters": 64}}``."""
    out: dict[str, dict[str, int]] = {}
    for item in items:
        key, _, value = item.partition("=")
        model, _, name = key.partition(".")
        if not (model and name and value):
            raise SystemExit(f"error: --hparam wants MODEL.NAME=INT, not {item!r}")
        out.setdefault(model, {})[name] = int(value)
    return out


def run_model(name: str, hparams: dict, args, work: Path) -> dict:
    """Train ``name`` for ``args.steps`` steps with its default optimizer and learning rate; the row of the table."""
    from gotk.train.config import TrainConfig
    from gotk.train.trainer import train

    run = work / f"run-{name}"
    if run.exists():
        shutil.rmtree(run)
    # epochs unbounded: --steps ends the run (a value model sees 8 positions per game per epoch: short epochs)
    cfg = TrainConfig(data=str(args.data), out=str(run), model=name, hparams=hparams, max_steps=args.steps,
                      epochs=10**6, batch_size=args.batch_size, threads=args.threads, device="cpu", seed=args.seed,
                      log_every=args.log_every, checkpoint_every=10**9, max_val_positions=args.val_positions,
                      progress=False)
    t0 = time.perf_counter()
    result = train(cfg)
    wall = time.perf_counter() - t0
    conf = json.loads((run / "config.json").read_text())
    recs = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in recs if r["kind"] == "step"]
    val = result.get("val") or {}
    c = conf["config"]
    row = {
        "model": name, "hparams": conf["model"]["hparams"], "head": conf["model"]["head"],
        "parameters": conf["model"]["parameters"], "optimizer": c["optimizer"], "lr": c["lr"],
        "steps": result["step"], "batch_size": c["batch_size"],
        "first_loss": steps[0]["loss"] if steps else None, "last_loss": steps[-1]["loss"] if steps else None,
        "val_top1": val.get("top1"), "val_nll": val.get("nll"), "val_value_mse": val.get("value_mse"),
        "val_positions": val.get("positions"),
        "samples_per_s": round(sorted(r["samples_per_s"] for r in steps)[len(steps) // 2], 1) if steps else None,
        "wall_s": round(wall, 1),
    }
    print(json.dumps(row), flush=True)
    return row


def main(argv: list[str] | None = None) -> dict:
    from gotk.nets.networks import MODELS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--models", default=",".join(MODELS), help="Comma-separated (default: all).")
    ap.add_argument("--hparam", action="append", default=[], metavar="MODEL.NAME=INT",
                    help="A model hyper-parameter, e.g. alphago.filters=64 (repeatable).")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--log-every", type=int, default=50)
    ap.add_argument("--val-positions", type=int, default=2000, help="Validation positions (from the val split).")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", type=Path, default=REPO_ROOT / "runs" / "bench-models")
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args(argv)
    names = [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        raise SystemExit(f"error: unknown model(s) {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    hp = parse_hparams(args.hparam)
    args.work.mkdir(parents=True, exist_ok=True)
    info = machine_info()
    rows = [run_model(name, hp.get(name, {}), args, args.work) for name in names]
    out = {"benchmark": "models", "machine": info, "uniform_loss": round(UNIFORM_LOSS, 4),
           "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}, "models": rows}
    print(write_json(out, args.json_out))
    table = [{**r, "hparams": " ".join(f"{k}={v}" for k, v in r["hparams"].items()) or "—",
              "val_top1": None if r["val_top1"] is None else round(100 * r["val_top1"], 2)} for r in rows]
    print(f"\n{args.steps} steps of batch {args.batch_size} on {args.data} (ln 362 = {UNIFORM_LOSS:.3f}):\n")
    print(format_table(table, [("model", "model"), ("hparams", "hparams"), ("parameters", "params"),
                               ("optimizer", "optimizer"), ("lr", "lr"), ("first_loss", "loss (first window)"),
                               ("last_loss", "loss (last window)"), ("val_top1", "val top-1 %"),
                               ("val_value_mse", "val value MSE"), ("samples_per_s", "samples/s"),
                               ("wall_s", "wall s")]))
    return out


if __name__ == "__main__":
    main()
