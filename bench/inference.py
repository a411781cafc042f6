"""What PyTorch offers for small-batch CPU inference of gotk's networks: CPU time per forward pass at batch 1 / 8 /
32 and the largest difference from eager float32, for each option.

Networks (random weights; batch-norm scales, shifts and running statistics made non-trivial by a calibration pass,
so that folding them is really tested): ``leelaz`` 6 blocks × 64 filters on 19×19 (18 ``leelazero`` planes) and
``zero`` 6 × 64 on 9×9 (11 planes). Inputs: random 0/1 planes (speed does not depend on values).

Options (each on the same model and inputs):

* ``eager``: the model in eval mode, float32 (the reference);
* ``channels_last``: model and input in ``torch.channels_last`` memory format;
* ``jit_freeze``: ``torch.jit.trace`` + ``torch.jit.freeze`` (constant folding, conv+bn folding, oneDNN fusions);
* ``jit_optimize``: the same + ``torch.jit.optimize_for_inference`` (oneDNN layouts);
* ``compile``: ``torch.compile`` (inductor; compile time reported, skipped when it fails here);
* ``bf16``: ``torch.autocast("cpu", dtype=torch.bfloat16)`` (``Agent.amp``);
* ``no_mkldnn``: ``torch.backends.mkldnn.enabled = False`` (PyTorch's own convolution kernels);
* ``bn_folded``: batch norm folded into the conv by hand (:func:`gotk.nets.fuse.fold_batch_norms`, i.e.
  ``torch.nn.utils.fusion.fuse_conv_bn_eval``);
* ``bn_folded_cl``: both of the above.

Time: ``time.process_time`` (CPU time of this process, 1 torch thread) of ``--calls`` forward passes, repeated
``--repeats`` times with the options interleaved (round robin, order rotated each repeat); the median per call.
Difference: max abs over the batch of the log-softmax policy and of the value, against eager float32.

    python bench/inference.py                       # both networks, batch 1,8,32
    python bench/inference.py --nets leelaz --batches 8 --json out.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import format_table, machine_info, write_json  # noqa: E402

NETS = {"leelaz": ("leelaz", 18, 19), "zero": ("zero", 11, 9)}
OPTIONS = ("eager", "channels_last", "jit_freeze", "jit_optimize", "compile", "bf16", "no_mkldnn", "bn_folded",
           "bn_folded_cl")
EXACT = 1e-4
FASTER = 1.3


def random_model(name: str, planes: int, size: int, seed: int = 0):
    """A ``name`` model (6 × 64) with random batch-norm parameters and running statistics from a calibration pass,
    and random output layers (the models start them at zero)."""
    import torch

    from gotk.nets import build_model

    torch.manual_seed(seed)
    model = build_model(name, planes, size, blocks=6, filters=64)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.weight.normal_(1.0, 0.3)
                m.bias.normal_(0.0, 0.3)
                m.momentum = None
                m.reset_running_stats()
        model.train()
        for _ in range(4):
            model((torch.rand(64, planes, size, size) < 0.3).float())
        model.eval()
        for m in model.modules():
            if isinstance(m, torch.nn.Linear | torch.nn.Conv2d) and not m.weight.abs().sum():
                m.weight.normal_(0.0, 0.1)
    return model


_COMPILED: dict = {}  # one torch.compile per model: a new batch size recompiles its graph, not the wrapper


def build_options(model, example, options):
    """``{option: (callable(x) -> (policy_logits, value), setup seconds)}`` for the options that work here."""
    import torch

    from gotk.nets.fuse import fold_batch_norms

    out, notes = {}, {}

    def two(f):
        return lambda x: tuple(f(x)[:2])

    for opt in options:
        t = time.perf_counter()
        try:
            if opt == "eager":
                fn = two(model)
            elif opt == "channels_last":
                cl = _copy(model).to(memory_format=torch.channels_last)
                fn = (lambda m: lambda x: m(x.contiguous(memory_format=torch.channels_last))[:2])(cl)
            elif opt in ("jit_freeze", "jit_optimize"):
                with torch.no_grad():
                    traced = torch.jit.trace(_two(_copy(model)).eval(), example, check_trace=False)
                    frozen = torch.jit.freeze(traced)
                    if opt == "jit_optimize":
                        frozen = torch.jit.optimize_for_inference(frozen)
                    for _ in range(3):  # the profiling executor specialises on the first calls
                        frozen(example)
                fn = frozen
            elif opt == "compile":
                if id(model) not in _COMPILED:
                    _COMPILED[id(model)] = torch.compile(_two(_copy(model)).eval(), backend="inductor", dynamic=False)
                compiled = _COMPILED[id(model)]
                with torch.no_grad():
                    compiled(example)
                fn = compiled
            elif opt == "bf16":
                fn = (lambda m: lambda x: _autocast(m, x))(model)
            elif opt == "no_mkldnn":
                fn = (lambda m: lambda x: _no_mkldnn(m, x))(model)
            elif opt == "bn_folded":
                fn = two(fold_batch_norms(model))
            elif opt == "bn_folded_cl":
                f = fold_batch_norms(model).to(memory_format=torch.channels_last)
                fn = (lambda m: lambda x: m(x.contiguous(memory_format=torch.channels_last))[:2])(f)
            else:
                raise ValueError(opt)
        except Exception as e:  # noqa: BLE001 - an option that does not work here is reported, not fatal
            notes[opt] = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
            continue
        out[opt] = (fn, time.perf_counter() - t)
    return out, notes


def _two(model):
    """A module returning only ``(policy_logits, value)`` (tracing and compiling want a fixed output)."""
    import torch

    class Two(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            p, v = self.m(x)[:2]
            return p, v

    return Two(model)


def _copy(model):
    import copy

    return copy.deepcopy(model).eval()


def _autocast(model, x):
    import torch

    with torch.autocast("cpu", dtype=torch.bfloat16):
        p, v = model(x)[:2]
    return p.float(), v.float()


def _no_mkldnn(model, x):
    import torch

    with torch.backends.mkldnn.flags(enabled=False):
        return model(x)[:2]


def outputs(fn, x):
    import torch

    with torch.no_grad():
        p, v = fn(x)
        return torch.log_softmax(p.float(), dim=1), v.float().reshape(-1)


def measure(net: str, batches: list[int], options: list[str], calls: int, repeats: int) -> tuple[list[dict], dict]:
    import torch

    name, planes, size = NETS[net]
    model = random_model(name, planes, size)
    rows, notes = [], {}
    for batch in batches:
        torch.manual_seed(batch)
        x = (torch.rand(batch, planes, size, size) < 0.3).float()
        built, why = build_options(model, x, options)
        notes.update({f"{net} b{batch} {k}": v for k, v in why.items()})
        ref_p, ref_v = outputs(built["eager"][0], x)
        diffs = {}
        for opt, (fn, _) in built.items():
            p, v = outputs(fn, x)
            diffs[opt] = (float((p - ref_p).abs().max()), float((v - ref_v).abs().max()))
        times: dict[str, list[float]] = {opt: [] for opt in built}
        order = list(built)
        with torch.no_grad():
            for opt in order:  # warm up
                for _ in range(2):
                    built[opt][0](x)
            for r in range(repeats):
                k = r % len(order)
                for opt in order[k:] + order[:k]:
                    fn = built[opt][0]
                    c = time.process_time()
                    for _ in range(calls):
                        fn(x)
                    times[opt].append((time.process_time() - c) / calls)
        base = statistics.median(times["eager"])
        for opt in order:
            ms = statistics.median(times[opt])
            dp, dv = diffs[opt]
            rows.append({"net": net, "batch": batch, "option": opt, "ms_per_call": round(1000 * ms, 3),
                         "us_per_position": round(1e6 * ms / batch, 1), "speedup": round(base / ms, 2),
                         "policy_diff": f"{dp:.1e}", "value_diff": f"{dv:.1e}",
                         "exact": "yes" if max(dp, dv) <= EXACT else "no",
                         "setup_s": round(built[opt][1], 2) if opt in ("compile", "jit_freeze", "jit_optimize")
                         else None})
        print(f"{net} batch {batch}: " + ", ".join(f"{r['option']} {r['speedup']}x" for r in rows[-len(order):]),
              file=sys.stderr)
    return rows, notes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nets", default="leelaz,zero", help="Networks: leelaz (19x19), zero (9x9) [leelaz,zero].")
    ap.add_argument("--batches", default="1,8,32", help="Batch sizes [1,8,32].")
    ap.add_argument("--options", default=",".join(OPTIONS), help=f"Options [{','.join(OPTIONS)}].")
    ap.add_argument("--calls", type=int, default=10, help="Forward passes per timing [10].")
    ap.add_argument("--repeats", type=int, default=5, help="Interleaved timings per option [5].")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads [1].")
    ap.add_argument("--json", dest="json_path", help="Also write the results here.")
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    options = [o for o in args.options.split(",") if o]
    if "eager" not in options:
        options.insert(0, "eager")
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        ap.error(f"unknown options {unknown}; choose from {', '.join(OPTIONS)}")
    batches = [int(b) for b in args.batches.split(",")]
    rows, notes = [], {}
    for net in args.nets.split(","):
        r, n = measure(net, batches, options, args.calls, args.repeats)
        rows += r
        notes.update(n)
    cols = [("net", "net"), ("batch", "batch"), ("option", "option"), ("ms_per_call", "CPU ms/call"),
            ("us_per_position", "CPU µs/position"), ("speedup", "vs eager"), ("policy_diff", "max |Δ log p|"),
            ("value_diff", "max |Δ v|"), ("exact", f"≤ {EXACT:g}"), ("setup_s", "setup s")]
    print(format_table(rows, cols))
    for k, v in notes.items():
        print(f"{k}: {v}")
    # an fp32 option exact and >= FASTER at batch 8 and 32 on every network measured
    verdict = []
    for opt in options:
        if opt in ("eager", "bf16"):
            continue
        sel = [r for r in rows if r["option"] == opt and r["batch"] in (8, 32)]
        if sel and all(r["exact"] == "yes" and r["speedup"] >= FASTER for r in sel):
            verdict.append(opt)
    info = machine_info()
    print(f"\n{args.threads} torch thread(s), torch {torch.__version__}, {args.repeats} × {args.calls} calls; "
          f"fp32 options exact and ≥ {FASTER}x at batch 8 and 32: {', '.join(verdict) or 'none'}; "
          f"{info['cpu_model']}, load {info['loadavg_at_start']}")
    if args.json_path:
        write_json({"machine": info, "threads": args.threads, "torch": torch.__version__, "results": rows,
                    "notes": notes, "exact_and_faster": verdict}, args.json_path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
