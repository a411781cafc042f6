"""Encode benchmark: archive bytes → finished Parquet shards.

For each encoder, ``gotk encode`` end to end (``gotk.jobs.encode.encode_dataset``: archive reading,
SGF parsing, game ids, dedupe, replay + encode, packing, zstd Parquet writing, manifest) on real KGS
archives, at each ``--workers`` count; positions/s, bytes on disk per position (shards only) and the
time split of the one-worker run:

* ``parse``: SGF bytes → records (``iter_sgf``);
* ``replay+encode``: the scan's replay (row counting) plus the encoder's compiled game loop;
* ``else``: everything else — archive reading, hashing, filters, scan files, packing, Parquet/zstd
  writing, sha256, manifest — i.e. wall time minus the two above.

``scaling`` is the wall-clock speed-up of the most workers over one; on a machine whose cores are
busy with other work it says little, so ``CPU eff.`` is also given: CPU seconds (parent + pool
workers) of the one-worker run / those of the many-worker run (1.0: the pool adds no work), and
the machine's own ceiling is measured first (``spin_scaling``: N pure-Python busy loops in N
processes vs one). ``peak RSS MiB``: one more run per encoder at the most workers, as a fresh
``gotk encode`` process (its run report's ``peak_rss_mib``: the larger of the parent and its
largest worker; target ≤ 1 GiB per worker whatever the input size; ``--no-rss`` skips it).

Each setting runs ``--repeat`` times (best wall time kept). Numba compile / cache-load time is
excluded: each encoder is warmed up in the parent first by a small encode (pool workers are forked
from it).

Peer: dlgo 0.2's ``GoDataProcessor.process_zip`` (dlgo/data/processor.py) on the first
``--dlgo-games`` games without setup stones of the first ``.tar.gz`` archive (dlgo's handicap
path crashes its alphago encoder), in a temp folder: it gunzips the archive to
disk, parses every selected game twice (counting, then encoding), replays on ``goboard_fast``,
encodes into a float64 array and ``np.save``s 1024-row chunks. Timed: that one call (not its
``consolidate_games``, which needs real keras). Its index/download/sampler steps are bypassed (no
network). keras and h5py are stubbed (dlgo imports them at module level; the timed path never uses them).

Usage::

    python bench/encode.py [ARCHIVES...] [--encoders oneplane,sevenplane,simple,alphago] [--workers 1,2]
                           [--dlgo-games 40] [--dlgo-alphago-games 2] [--json-out FILE]

Default input: ``KGS-2017_01-19-733-.tar.gz`` and ``KGS-2017_02-19-525-.tar.gz`` from ``../shared/kgs``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import types
from pathlib import Path

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (  # noqa: E402
    format_table,
    install_keras_stub,
    kgs_dir,
    machine_info,
    python_loop_seconds,
    rate,
    write_json,
)

DEFAULT_ARCHIVES = ("KGS-2017_01-19-733-.tar.gz", "KGS-2017_02-19-525-.tar.gz")
DLGO_ENCODERS = {"oneplane", "sevenplane", "simple", "alphago"}


def default_paths() -> list[Path]:
    folder = kgs_dir()
    paths = [folder / n for n in DEFAULT_ARCHIVES]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        sys.exit(f"error: the KGS sample is missing: {', '.join(missing)} (../shared/kgs beside the checkout; "
                 "set GOTK_KGS or pass archive paths)")
    return paths


def warm_up(encoder: str, tmp: Path) -> None:
    """Load/compile the numba code and first-use paths (pyarrow writers…) in this process: one
    small encode of 12 games of the built-in sample."""
    import zipfile

    from gotk.data import HELDOUT_ARCHIVE
    from gotk.jobs.encode import EncodeOptions, encode_dataset
    from gotk.sources.archives import SgfSource, iter_sources

    src = tmp / "warm.zip"
    if not src.exists():
        with zipfile.ZipFile(src, "w") as zf:
            for i, s in enumerate(x for x in iter_sources([HELDOUT_ARCHIVE]) if isinstance(x, SgfSource)):
                if i == 12:
                    break
                zf.writestr(s.member, s.data)
    out = tmp / "warm"
    shutil.rmtree(out, ignore_errors=True)
    encode_dataset([src], out, EncodeOptions(encoder=encoder), workers=1, progress=False)
    shutil.rmtree(out, ignore_errors=True)


def run_gotk(paths: list[Path], encoder: str, workers: int, tmp: Path, repeat: int = 1) -> dict:
    """``encode_dataset`` on ``paths``; the best (least wall time) of ``repeat`` runs."""
    from gotk.jobs.encode import EncodeOptions, encode_dataset

    out = tmp / f"gotk-{encoder}-w{workers}"
    best = None
    for _ in range(max(1, repeat)):
        shutil.rmtree(out, ignore_errors=True)
        c0 = os.times()
        t0 = time.perf_counter()
        m = encode_dataset([str(p) for p in paths], out, EncodeOptions(encoder=encoder), workers=workers,
                           progress=False)
        wall = time.perf_counter() - t0
        c1 = os.times()  # pool workers are joined by now, so their CPU time is in children_*
        cpu = sum(getattr(c1, k) - getattr(c0, k) for k in ("user", "system", "children_user", "children_system"))
        if best is None or wall < best[0]:
            best = (wall, m, cpu)
    wall, m, cpu = best
    run = m["run"]
    st = run["stage_s"]
    parse = st.get("parse_s", 0.0)
    replay_encode = st.get("replay_s", 0.0) + st.get("encode_s", 0.0)
    res = {
        "encoder": encoder, "workers": workers, "games": m["games"]["kept"], "positions": m["rows"],
        "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "loadavg_1m": round(os.getloadavg()[0], 2),
        "positions_per_s": round(rate(m["rows"], wall), 1),
        "bytes_per_position": round(m["bytes"] / m["rows"], 2) if m["rows"] else None,
        "shard_bytes": m["bytes"], "games_parquet_bytes": m["games_file"]["bytes"],
        "stage_s": st,
    }
    if workers == 1:
        res["split"] = {
            "parse": round(parse / wall, 3),
            "replay+encode": round(replay_encode / wall, 3),
            "else": round(max(0.0, wall - parse - replay_encode) / wall, 3),
        }
    shutil.rmtree(out, ignore_errors=True)
    return res


def run_rss(paths: list[Path], encoder: str, workers: int, tmp: Path) -> dict:
    """Peak resident memory of a fresh ``gotk encode`` process and of its largest worker (from its
    run report): a separate process, so nothing this benchmark loaded is counted."""
    import json
    import subprocess

    out = tmp / f"gotk-rss-{encoder}"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "gotk", "encode", *map(str, paths), "-e", encoder, "-o", str(out), "--no-progress",
           "--workers", str(workers), "--json"]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    rss = json.loads(res.stdout)["run"]["peak_rss_mib"]
    shutil.rmtree(out, ignore_errors=True)
    return {"encoder": encoder, "workers": workers, **rss}


def run_dlgo(archive: Path, encoder: str, games: int, tmp: Path) -> dict:
    """dlgo's GoDataProcessor.process_zip on the first ``games`` games of ``archive`` (a .tar.gz)."""
    install_keras_stub()
    sys.modules.setdefault("h5py", types.ModuleType("h5py"))  # dlgo.encoders.alphago → dlgo.kerasutil
    import tarfile

    from dlgo.data.processor import GoDataProcessor

    data = tmp / f"dlgo-{encoder}"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    shutil.copy(archive, data / archive.name)
    proc = GoDataProcessor(encoder=encoder, data_directory=str(data))
    # the first ``games`` games without setup stones: dlgo's handicap path crashes its alphago
    # encoder (it stores a tuple as ``last_move``), so every encoder gets the same even games
    game_list = []
    with tarfile.open(archive) as tf:
        names = tf.getnames()
        for i, name in enumerate(names[1:]):
            if name.endswith(".sgf") and b"AB[" not in tf.extractfile(name).read():
                game_list.append(i)
                if len(game_list) == games:
                    break
    t0 = time.perf_counter()
    proc.process_zip(archive.name, f"bench_{encoder}", game_list)
    wall = time.perf_counter() - t0
    with tarfile.open(data / archive.name[:-3]) as tf:  # count (untimed) what it encoded
        positions = proc.num_total_examples(tf, game_list, tf.getnames())
    npy = sum(f.stat().st_size for f in data.glob("*_features_*.npy"))
    saved_rows = (positions // 1024) * 1024
    shutil.rmtree(data, ignore_errors=True)
    return {"encoder": encoder, "games": games, "positions": positions, "wall_s": round(wall, 3),
            "positions_per_s": round(rate(positions, wall), 1),
            "bytes_per_position": round(npy / saved_rows, 1) if saved_rows else None}


def _spin(n: int) -> float:
    t = time.perf_counter()
    x = 0
    for i in range(n):
        x += i
    return time.perf_counter() - t


def machine_scaling(workers: int, n: int = 10_000_000) -> float:
    """Speed-up of ``workers`` processes over one on a pure-Python busy loop: the ceiling this machine
    allows right now (well under ``workers`` when other jobs hold the cores)."""
    from concurrent.futures import ProcessPoolExecutor

    one = min(_spin(n) for _ in range(2))
    with ProcessPoolExecutor(workers) as ex:
        ex.submit(int).result()
        t = time.perf_counter()
        list(ex.map(_spin, [n] * workers))
        many = time.perf_counter() - t
    return round(workers * one / many, 2)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", help="archives (default: 2017-01 and 2017-02 .tar.gz from ../shared/kgs)")
    ap.add_argument("--encoders", default="oneplane,sevenplane,simple,alphago")
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    ap.add_argument("--dlgo-games", type=int, default=40, help="games for dlgo (0: skip dlgo)")
    ap.add_argument("--dlgo-alphago-games", type=int, default=2, help="games for dlgo's (very slow) alphago")
    ap.add_argument("--repeat", type=int, default=2, help="gotk runs per setting (best wall time is kept)")
    ap.add_argument("--no-rss", action="store_true", help="skip the fresh-process peak-memory run")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)
    paths = [Path(p) for p in args.paths] if args.paths else default_paths()
    encoders = [e.strip() for e in args.encoders.split(",") if e.strip()]
    worker_counts = [int(w) for w in args.workers.split(",")]
    targz = next((p for p in paths if p.name.endswith(".tar.gz")), None)
    report: dict = {"machine": machine_info(), "inputs": [str(p) for p in paths], "gotk": [], "dlgo": [], "rss": []}
    print(f"machine check: a 10M-step Python loop takes {report['machine']['python_loop_s']} s on one core",
          file=sys.stderr)
    if max(worker_counts) > 1:
        report["machine"]["spin_scaling"] = {max(worker_counts): machine_scaling(max(worker_counts))}
        print(f"machine check: {max(worker_counts)} busy-loop processes run "
              f"{report['machine']['spin_scaling'][max(worker_counts)]}× faster than one", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="gotk-bench-encode-") as td:
        tmp = Path(td)
        for enc in encoders:
            t = time.perf_counter()
            warm_up(enc, tmp)
            print(f"[{enc}] warm-up (numba compile/cache load) {time.perf_counter() - t:.1f} s", file=sys.stderr)
            for w in worker_counts:
                r = run_gotk(paths, enc, w, tmp, args.repeat)
                report["gotk"].append(r)
                print(f"[{enc}] gotk workers={w}: {r['positions']:,} positions in {r['wall_s']:.1f} s = "
                      f"{r['positions_per_s']:,.0f}/s", file=sys.stderr)
            if not args.no_rss:
                m = run_rss(paths, enc, max(worker_counts), tmp)
                report["rss"].append(m)
                print(f"[{enc}] peak RSS, fresh process, workers={m['workers']}: parent {m['parent']:.0f} MiB, "
                      f"largest worker {m['worker']:.0f} MiB", file=sys.stderr)
            if args.dlgo_games and targz is not None and enc in DLGO_ENCODERS:
                n = args.dlgo_alphago_games if enc == "alphago" else args.dlgo_games
                try:
                    d = run_dlgo(targz, enc, n, tmp)
                except Exception as e:  # noqa: BLE001 - a peer failing is reported, not fatal
                    print(f"[{enc}] dlgo failed: {type(e).__name__}: {e}", file=sys.stderr)
                    continue
                report["dlgo"].append(d)
                print(f"[{enc}] dlgo: {d['positions']:,} positions in {d['wall_s']:.1f} s = "
                      f"{d['positions_per_s']:,.0f}/s", file=sys.stderr)
    report["machine"]["loadavg_at_end"] = os.getloadavg()
    report["machine"]["python_loop_s_at_end"] = python_loop_seconds()

    rows = []
    dl = {d["encoder"]: d for d in report["dlgo"]}
    mem = {m["encoder"]: m for m in report["rss"]}
    for enc in encoders:
        runs = {r["workers"]: r for r in report["gotk"] if r["encoder"] == enc}
        one = runs.get(min(runs))
        row = {"encoder": enc, "positions": one["positions"], "bytes_per_pos": one["bytes_per_position"]}
        for w, r in sorted(runs.items()):
            row[f"pos_s_w{w}"] = r["positions_per_s"]
        if len(runs) > 1:
            top = runs[max(runs)]
            row["scaling"] = round(top["positions_per_s"] / one["positions_per_s"], 2)
            # CPU seconds of the whole run (parent + workers): 1.0 = the pool adds no work, so on
            # idle cores the speed-up would approach workers × this
            row["cpu_efficiency"] = round(one["cpu_s"] / top["cpu_s"], 2)
        if "split" in one:
            row["parse_pct"] = round(100 * one["split"]["parse"], 1)
            row["replay_encode_pct"] = round(100 * one["split"]["replay+encode"], 1)
            row["else_pct"] = round(100 * one["split"]["else"], 1)
        if enc in mem:
            row["rss_mib"] = round(max(mem[enc]["worker"], mem[enc]["parent"]))
        if enc in dl:
            row["dlgo_pos_s"] = dl[enc]["positions_per_s"]
            row["x_dlgo_w1"] = round(one["positions_per_s"] / dl[enc]["positions_per_s"], 1)
        rows.append(row)
    report["table"] = rows
    report["targets"] = {
        "else_under_25pct": all(r.get("else_pct", 0) < 25 for r in rows),
        "at_least_20x_dlgo": all(r.get("x_dlgo_w1", 99) >= 20 for r in rows),
        "alphago_bytes_le_400": all(r["bytes_per_pos"] <= 400 for r in rows if r["encoder"] == "alphago"),
        "memory_per_process_le_1gib": all(r.get("rss_mib", 0) <= 1024 for r in rows),
    }
    print(write_json(report, args.json_out))
    cols = [("encoder", "encoder"), ("positions", "positions")]
    cols += [(f"pos_s_w{w}", f"pos/s {w}w") for w in worker_counts]
    cols += [("scaling", "scaling"), ("cpu_efficiency", "CPU eff."), ("parse_pct", "parse %"),
             ("replay_encode_pct", "replay+enc %"), ("else_pct", "else %"), ("bytes_per_pos", "bytes/pos"),
             ("rss_mib", "peak RSS MiB"),
             ("dlgo_pos_s", "dlgo pos/s"), ("x_dlgo_w1", "× dlgo (1w)")]
    print(format_table(rows, cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
