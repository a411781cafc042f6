"""The compiled SGF scan of two checkouts, alternated in one process: compile and speed.

``gotk/sgf/fast.py`` of each checkout is loaded as its own module (a fresh copy per round, so numba
compiles ``_scan`` afresh, with its cache in a new empty folder). Each round times, for each
checkout in turn, the first call (numba's compile, CPU seconds); then both scans run over every game
of the 2017-01 and 2017-02 KGS archives (best of ``--repeat``, MB/s), and the move counts must agree.
numba's one-time set-up is paid before the first round by a warm-up compile, so the rounds compare
the scans alone. Usage::

    python bench/scan_compile.py --baseline OTHER_CHECKOUT [--rounds 4] [--repeat 9] [--json-out FILE]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import sys
import tarfile
import tempfile
import time
from pathlib import Path

os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="gotk-scan-compile-")

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from bench._common import REPO_ROOT, format_table, kgs_dir, machine_info, write_json  # noqa: E402

ARCHIVES = ("KGS-2017_01-19-733-.tar.gz", "KGS-2017_02-19-525-.tar.gz")


def load_copy(checkout: Path, folder: Path, tag: str):
    """A fresh module from ``checkout``'s ``gotk/sgf/fast.py`` (its own file: its own numba cache entry)."""
    path = folder / f"scan_{tag}.py"
    shutil.copy(checkout / "gotk" / "sgf" / "fast.py", path)
    spec = importlib.util.spec_from_file_location(f"scan_{tag}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def games() -> list[np.ndarray]:
    out = []
    for name in ARCHIVES:
        path = kgs_dir() / name
        if not path.is_file():
            sys.exit(f"error: {path} is missing (../shared/kgs beside the checkout, or set GOTK_KGS)")
        with tarfile.open(path) as tf:
            for m in tf:
                if m.isfile() and m.name.endswith(".sgf"):
                    out.append(np.frombuffer(tf.extractfile(m).read(), dtype=np.uint8))
    return out


def scan_all(module, datas: list[np.ndarray]) -> int:
    outputs = module._outputs(1, 1, 1)
    moves = 0
    for buf in datas:
        if module._scan(buf, *outputs) == 0:
            moves += int(outputs[4][2])
    return moves


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", required=True, help="the other gotk checkout")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=9, help="timed scans of the sample per side (best kept)")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)
    sides = {"baseline": Path(args.baseline).resolve(), "this": REPO_ROOT}
    datas = games()
    nbytes = sum(len(b) for b in datas)
    compile_s: dict[str, list[float]] = {k: [] for k in sides}
    with tempfile.TemporaryDirectory(prefix="gotk-scan-src-") as td:
        folder = Path(td)
        warm = load_copy(REPO_ROOT, folder, "warmup")  # numba's one-time set-up, outside the rounds
        scan_all(warm, datas[:1])
        modules = {}
        for r in range(args.rounds):
            for side, checkout in sides.items():
                module = load_copy(checkout, folder, f"{side}{r}")
                outputs = module._outputs(1, 1, 1)
                t0 = time.process_time()
                module._scan(datas[0], *outputs)
                compile_s[side].append(time.process_time() - t0)
                modules[side] = module
        best = {k: float("inf") for k in sides}
        moves = {}
        for _ in range(args.repeat):
            for side, module in modules.items():
                t0 = time.perf_counter()
                moves[side] = scan_all(module, datas)
                best[side] = min(best[side], time.perf_counter() - t0)
    if moves["baseline"] != moves["this"]:
        sys.exit(f"error: the scans disagree: {moves}")
    rows = [{"checkout": side, "compile_cpu_s_median": round(statistics.median(v), 3),
             "compile_cpu_s_min": round(min(v), 3), "per_round": ", ".join(f"{x:.2f}" for x in v),
             "scan_mb_per_s": round(nbytes / best[side] / 1e6, 1), "moves": moves[side]}
            for side, v in compile_s.items()]
    command = " ".join(["python bench/scan_compile.py", *(argv or sys.argv[1:])])
    report = {"benchmark": "scan_compile", "command": command,
              "machine": machine_info(), "games": len(datas), "bytes": nbytes, "results": rows,
              "compile_ratio_median": round(rows[1]["compile_cpu_s_median"] / rows[0]["compile_cpu_s_median"], 3),
              "speed_ratio": round(rows[1]["scan_mb_per_s"] / rows[0]["scan_mb_per_s"], 3)}
    print(write_json(report, args.json_out))
    print(format_table(rows, [("checkout", "checkout"), ("compile_cpu_s_median", "compile CPU s (median)"),
                              ("compile_cpu_s_min", "min"), ("per_round", "per round"),
                              ("scan_mb_per_s", "scan MB/s"), ("moves", "moves")]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
