"""Training-step throughput per model: one forward + backward + SGD step on random 0/1
planes, batch 256 (``--batch``), 19x19, for the sevenplane (7) and alphago (48) input planes.

Reports per (model, planes): parameters, FLOPs per sample of a training step (forward + backward, counted
by ``torch.utils.flop_counter.FlopCounterMode``: convolutions and matrix products, 2 FLOPs per
multiply-add) and the measured CPU samples/s (best of ``--repeat`` timed steps after one warm-up step).
A GPU figure is not measured here; ``docs/scaling.md`` derives estimates from the FLOP counts.

Usage::

    python bench/train_step.py [--models small,medium,large,alphago,alphago_value,resnet] [--planes 7,48]
                               [--batch 256] [--repeat 3] [--threads N] [--json-out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from gotk.nets.networks import MODELS, build_model, count_parameters


def step_fn(model, x, y, v, opt):
    def step() -> None:
        p, val = model(x)
        loss = torch.zeros(())
        if p is not None:
            loss = loss + F.cross_entropy(p, y)
        if val is not None:
            loss = loss + F.mse_loss(val.reshape(-1), v)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step


def measure(name: str, planes: int, batch: int, repeat: int) -> dict:
    torch.manual_seed(0)
    model = build_model(name, planes, 19)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    x = (torch.rand(batch, planes, 19, 19) < 0.3).float()
    y = torch.randint(0, 362, (batch,))
    v = torch.randint(0, 2, (batch,)).float() * 2 - 1
    step = step_fn(model, x, y, v, opt)
    with FlopCounterMode(display=False) as fc:
        step()  # also the warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    best = min(times)
    return {"model": name, "planes": planes, "batch": batch, "parameters": count_parameters(model),
            "train_gflop_per_sample": fc.get_total_flops() / batch / 1e9,
            "step_s_best": best, "step_s_all": times, "cpu_samples_per_s": batch / best}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--planes", default="7,48")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--json-out", default=None)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    info = {"torch": torch.__version__, "threads": torch.get_num_threads(), "nproc": os.cpu_count(),
            "cpu": platform.processor() or platform.machine(), "python": sys.version.split()[0],
            "loadavg_start": os.getloadavg()}
    rows = []
    for name in a.models.split(","):
        for planes in (int(p) for p in a.planes.split(",")):
            r = measure(name, planes, a.batch, a.repeat)
            rows.append(r)
            print(f"{name:14s} planes {planes:2d}  params {r['parameters']:>10,}  "
                  f"train GFLOP/sample {r['train_gflop_per_sample']:8.3f}  step {r['step_s_best']:7.3f} s  "
                  f"CPU {r['cpu_samples_per_s']:9.1f} samples/s", flush=True)
    info["loadavg_end"] = os.getloadavg()
    out = {"machine": info, "results": rows}
    print(json.dumps(info))
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
