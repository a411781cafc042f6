"""Interleaved cold-start A/B of two gotk checkouts: compile CPU seconds of one command.

In each round, for each checkout in turn: ``python -m gotk ARGS`` with a brand-new empty
``NUMBA_CACHE_DIR`` (cold), then again with that cache (warm); the round's figure is cold − warm CPU
seconds (user + system of the process and its children). Alternating the checkouts in every round
keeps the host's drift (a shared host's speed changes within minutes) out of the comparison, which best-of-N
runs of one checkout after the other (``bench/coldstart.py --baseline``) do not. ``OUT`` in the arguments is
replaced by a fresh output path. Usage::

    python bench/cold_ab.py [--rounds 4] CHECKOUT_A CHECKOUT_B -- replay one.sgf
    python bench/cold_ab.py A B -- encode small.zip -e oneplane -o OUT --workers 1 --no-progress
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def cpu_seconds(checkout: Path, args: list[str], cache: Path, out: Path) -> float:
    """CPU seconds of ``python -m gotk ARGS`` run in ``checkout`` with numba's cache in ``cache``."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(checkout))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "gotk", *[a.replace("OUT", str(out)) for a in args]], cwd=checkout,
                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        sys.exit("usage: cold_ab.py [--rounds N] CHECKOUT_A CHECKOUT_B -- GOTK_ARGS...")
    cut = argv.index("--")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkouts", nargs="+", type=Path)
    ap.add_argument("--rounds", type=int, default=4)
    opts = ap.parse_args(argv[:cut])
    args = argv[cut + 1:]
    checkouts = [c.resolve() for c in opts.checkouts]
    compile_s: dict[Path, list[float]] = {c: [] for c in checkouts}
    for r in range(opts.rounds):
        for c in checkouts:
            with tempfile.TemporaryDirectory(prefix="gotk-cold-ab-") as td:
                cache, out = Path(td) / "cache", Path(td) / "out"
                cold = cpu_seconds(c, args, cache, out)
                shutil.rmtree(out, ignore_errors=True)
                warm = cpu_seconds(c, args, cache, out)
            compile_s[c].append(cold - warm)
            print(f"round {r + 1} {c}: cold {cold:.2f} s, warm {warm:.2f} s, compile {cold - warm:.2f} s CPU",
                  flush=True)
    print("| checkout | compile CPU s (median) | min | rounds |")
    print("|---|--:|--:|--|")
    for c in checkouts:
        v = compile_s[c]
        print(f"| {c} | {statistics.median(v):.2f} | {min(v):.2f} | {', '.join(f'{x:.2f}' for x in v)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
