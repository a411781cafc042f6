"""Cold-start benchmark: what a fresh install pays for numba compilation on its first command.

Each command runs twice as a fresh ``python -m gotk`` process with the same brand-new, empty
``NUMBA_CACHE_DIR``: the first run compiles every kernel it uses (cold), the second loads them from
that cache (warm). ``compile s`` = cold wall - warm wall: the part of the first run that a warm cache
saves; ``compile CPU s`` the same in CPU seconds of the command and its worker processes (steadier
than wall time on a shared host). ``kernels`` = compiled specialisations written to the cache (its
``.nbc`` files).

Commands: ``gotk replay ONE.sgf`` (the first game of the 2017-02 KGS archive) and
``gotk encode SMALL.zip -e ENC -o OUT --workers W --no-progress`` for each encoder, on the first
``--games`` games of that archive. Usage::

    python bench/coldstart.py [--encoders oneplane,sevenplane,simple,alphago] [--workers 1,2] [--games 12]
                              [--repeat 1] [--baseline OTHER_CHECKOUT] [--json-out FILE]

``--baseline`` runs each command with another checkout (e.g. ``git worktree add /tmp/base main``) just
before this one, for a before/after comparison in one run. ``--compile-helper 0,1`` measures this
checkout without and with the helper process that compiles the encoder during the scan (a row each; the
default, ``auto``, starts it only when the load average leaves a CPU idle).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import REPO_ROOT, format_table, kgs_dir, machine_info, write_json  # noqa: E402

ARCHIVE = "KGS-2017_02-19-525-.tar.gz"
GOALS = {"replay": 5.0, "encode alphago": 12.0}  # seconds of compile on a quiet host


def first_games(n: int) -> list[tuple[str, bytes]]:
    import tarfile

    path = kgs_dir() / ARCHIVE
    if not path.is_file():
        sys.exit(f"error: {path} is missing (../shared/kgs beside the checkout, or set GOTK_KGS)")
    out = []
    with tarfile.open(path) as tf:
        for m in tf:
            if m.isfile() and m.name.endswith(".sgf"):
                out.append((Path(m.name).name, tf.extractfile(m).read()))
                if len(out) == n:
                    break
    return out


def run_once(args: list[str], cache: Path, tmp: Path, repo: Path = REPO_ROOT,
             helper: str = "auto") -> tuple[float, float]:
    """``(wall, CPU)`` seconds of ``python -m gotk ARGS`` with ``NUMBA_CACHE_DIR=cache``, its worker
    processes included in the CPU time (raises if it fails)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(repo), "GOTK_COMPILE_HELPER": helper}
    env.pop("NUMBA_DISABLE_JIT", None)
    for p in tmp.glob("out-*"):
        shutil.rmtree(p, ignore_errors=True)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "gotk", *args], env=env, capture_output=True, text=True, cwd=tmp)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"gotk {' '.join(args)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def measure(name: str, args: list[str], tmp: Path, repeat: int, repo: Path = REPO_ROOT, label: str = "this",
            helper: str = "auto") -> dict:
    """Cold and warm runs in a fresh cache, ``repeat`` times; the run with the least compile time."""
    best = None
    for _ in range(repeat):
        cache = Path(tempfile.mkdtemp(prefix="numba-cache-", dir=tmp))
        cold, cold_cpu = run_once(args, cache, tmp, repo, helper)
        kernels = sum(1 for _ in cache.rglob("*.nbc"))
        warm, warm_cpu = run_once(args, cache, tmp, repo, helper)
        shutil.rmtree(cache, ignore_errors=True)
        r = {"checkout": label, "command": name, "cold_s": round(cold, 3), "warm_s": round(warm, 3),
             "compile_s": round(cold - warm, 3),
             "cold_cpu_s": round(cold_cpu, 3), "warm_cpu_s": round(warm_cpu, 3),
             "compile_cpu_s": round(cold_cpu - warm_cpu, 3), "kernels": kernels,
             "load_1m": round(os.getloadavg()[0], 2)}
        if best is None or r["compile_s"] < best["compile_s"]:
            best = r
    goal = GOALS.get(name.split(" -j")[0])
    best["goal_s"] = goal
    best["status"] = "" if goal is None else ("PASS" if best["compile_s"] <= goal else "FAIL")
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--encoders", default="oneplane,sevenplane,simple,alphago")
    ap.add_argument("--workers", default="1", help="comma-separated --workers values for gotk encode")
    ap.add_argument("--games", type=int, default=12, help="games in the encode input")
    ap.add_argument("--repeat", type=int, default=1, help="cold/warm pairs per command (least compile kept)")
    ap.add_argument("--baseline", default=None, help="another gotk checkout, measured before this one per command")
    ap.add_argument("--compile-helper", default="auto",
                    help="comma-separated GOTK_COMPILE_HELPER values (auto, 0, 1) for this checkout, a row each "
                         "(gotk.jobs.precompile: a first encode compiles its encoder in a helper process)")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)
    modes = [m for m in args.compile_helper.split(",") if m]
    checkouts = [(f"this (helper {m})" if len(modes) > 1 else "this", REPO_ROOT, m) for m in modes]
    if args.baseline:
        checkouts.insert(0, ("baseline", Path(args.baseline).resolve(), "auto"))
    encoders = [e for e in args.encoders.split(",") if e]
    workers = [int(w) for w in args.workers.split(",") if w]
    command = " ".join(["python bench/coldstart.py", *(argv if argv is not None else sys.argv[1:])])
    report: dict = {"benchmark": "coldstart", "command": command, "machine": machine_info(), "results": []}
    with tempfile.TemporaryDirectory(prefix="gotk-coldstart-") as td:
        tmp = Path(td)
        games = first_games(max(1, args.games))
        one = tmp / "one.sgf"
        one.write_bytes(games[0][1])
        small = tmp / "small.zip"
        with zipfile.ZipFile(small, "w") as zf:
            for name, data in games:
                zf.writestr(name, data)
        jobs = [("replay", ["replay", str(one)])]
        for enc in encoders:
            for w in workers:
                name = f"encode {enc}" + (f" -j{w}" if w != 1 else "")
                jobs.append((name, ["encode", str(small), "-e", enc, "-o", str(tmp / f"out-{enc}"), "--workers", str(w),
                                    "--no-progress"]))
        for (name, cmd), (label, repo, mode) in ((j, c) for j in jobs for c in checkouts):
            r = measure(name, cmd, tmp, args.repeat, repo, label, mode)
            report["results"].append(r)
            print(f"[{label}] {name}: cold {r['cold_s']:.2f} s, warm {r['warm_s']:.2f} s, "
                  f"compile {r['compile_s']:.2f} s (CPU {r['compile_cpu_s']:.2f} s), {r['kernels']} kernels",
                  file=sys.stderr, flush=True)
    report["machine"]["loadavg_at_end"] = os.getloadavg()
    print(write_json(report, args.json_out))
    print(format_table(report["results"], [("checkout", "checkout"), ("command", "command"), ("cold_s", "cold s"),
                                           ("warm_s", "warm s"),
                                           ("compile_s", "compile s"), ("compile_cpu_s", "compile CPU s"),
                                           ("kernels", "kernels"), ("goal_s", "goal s"),
                                           ("status", "status"), ("load_1m", "load (1 min)")]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
