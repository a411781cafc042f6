"""Export benchmark: ``gotk export --format leela-zero`` beside ``gotk encode`` on the same archive.

Both end to end in this process (``gotk.export.run.export`` and ``gotk.jobs.encode.encode_dataset``:
archive reading, parsing, game ids, dedupe, replay, writing, manifest), on one real KGS archive, one
worker, alternating so that the shared host's speed changes hit both alike; best of ``--repeat``. For
the export, each ``--compress-level`` given (Leela Zero's own ``dump_supervised`` writes level 9). The
ratio column is positions/s of the export over that of encode (``--encoder``, default sevenplane) in
the same run. Numba compile / cache-load time is excluded by a small warm-up of each first.

Peer: Leela Zero's own ``dump_supervised`` (leelaz 0.17, Debian ``leela-zero``; skipped when
``/usr/games/leelaz`` is absent) on the same games as one SGF collection file, in one ``leelaz --cpu-only``
process with a tiny generated weights file (``dump_supervised`` never evaluates it). Timed: the whole
process (its start-up included, small beside an archive's games); positions from its "Dumped N training positions" line.

``--katago`` adds ``gotk export --format katago`` without and with ``--metadata`` (KataGo's human-SL
``metadataInputNC``), alternating like the rest, and prints the speed of the second over the first.

Usage::

    python bench/export.py [ARCHIVE] [--levels 6,9] [--encoder sevenplane] [--repeat 2] [--katago] [--json-out FILE]

Default input: ``KGS-2017_02-19-525-.tar.gz`` from ``../shared/kgs``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import format_table, kgs_dir, machine_info, python_loop_seconds, write_json  # noqa: E402


def _export(src: Path, out: Path, level: int) -> dict:
    from gotk.export.run import ExportOptions, export

    t = time.perf_counter()
    m = export([src], out, ExportOptions(format="leela-zero", compress_level=level), workers=1, progress=False)
    wall = time.perf_counter() - t
    return {"tool": f"gotk export leela-zero (gzip {level})", "positions": m["positions"], "wall_s": round(wall, 3),
            "positions_per_s": round(m["positions"] / wall, 1), "bytes": m["bytes"],
            "bytes_per_position": round(m["bytes"] / m["positions"], 1), "games": m["games"]["kept"]}


def _export_katago(src: Path, out: Path, metadata: bool) -> dict:
    from gotk.export.run import ExportOptions, export

    t = time.perf_counter()
    m = export([src], out, ExportOptions(format="katago", metadata=metadata), workers=1, progress=False)
    wall = time.perf_counter() - t
    return {"tool": "gotk export katago" + (" --metadata" if metadata else ""), "positions": m["positions"],
            "wall_s": round(wall, 3), "positions_per_s": round(m["positions"] / wall, 1), "bytes": m["bytes"],
            "bytes_per_position": round(m["bytes"] / m["positions"], 1), "games": m["games"]["kept"]}


def _encode(src: Path, out: Path, encoder: str) -> dict:
    from gotk.jobs.encode import EncodeOptions, encode_dataset

    t = time.perf_counter()
    m = encode_dataset([src], out, EncodeOptions(encoder=encoder), workers=1, progress=False)
    wall = time.perf_counter() - t
    return {"tool": f"gotk encode {encoder}", "positions": m["rows"], "wall_s": round(wall, 3),
            "positions_per_s": round(m["rows"] / wall, 1), "bytes": m["bytes"],
            "bytes_per_position": round(m["bytes"] / m["rows"], 1), "games": m["games"]["kept"]}


LEELAZ = Path("/usr/games/leelaz")


def _leelaz(src: Path, tmp: Path) -> dict | None:
    import re
    import subprocess

    from gotk.sources.archives import SgfSource, iter_sources

    if not LEELAZ.exists():
        return None
    weights = tmp / "tiny.txt"
    if not weights.exists():  # one residual block of 8 channels, near-zero weights (leelaz needs a network)
        c = 8
        sizes = [18 * c * 9, c, c, c] + [c * c * 9, c, c, c] * 2 + [c * 2, 2, 2, 2, 2 * 361 * 362, 362]
        sizes += [c, 1, 1, 1, 361 * 256, 256, 256, 1]
        ones = {3, 7, 11, 15, 19, 25}  # batch-norm variances
        weights.write_text("1\n" + "".join(" ".join(["1" if i in ones else "0.01"] * n) + "\n"
                                           for i, n in enumerate(sizes)))
    collection = tmp / "all.sgf"
    with open(collection, "wb") as f:
        for s in iter_sources([src]):
            if isinstance(s, SgfSource):
                f.write(s.data.strip() + b"\n")
    t = time.perf_counter()
    p = subprocess.run([str(LEELAZ), "-g", "--cpu-only", "-w", str(weights), "--noponder", "-t", "1"],
                       input=f"dump_supervised {collection} {tmp / 'lzpeer'}\nquit\n", text=True,
                       capture_output=True, cwd=tmp)
    wall = time.perf_counter() - t
    m = re.search(r"Dumped (\d+) training positions", p.stdout + p.stderr)
    if not m:
        print(f"leelaz gave no count (exit {p.returncode})", file=sys.stderr)
        return None
    n = int(m.group(1))
    size = sum(f.stat().st_size for f in tmp.glob("lzpeer.*.gz"))
    for f in tmp.glob("lzpeer.*.gz"):
        f.unlink()
    return {"tool": "leelaz 0.17 dump_supervised (gzip 9)", "positions": n, "wall_s": round(wall, 3),
            "positions_per_s": round(n / wall, 1), "bytes": size, "bytes_per_position": round(size / n, 1),
            "games": None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("archive", nargs="?", default=None)
    ap.add_argument("--levels", default="6,9", help="gzip levels for the Leela Zero chunks")
    ap.add_argument("--encoder", default="sevenplane")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--katago", action="store_true", help="also the KataGo export, without and with --metadata")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)
    src = Path(args.archive) if args.archive else kgs_dir() / "KGS-2017_02-19-525-.tar.gz"
    if not src.exists():
        sys.exit(f"error: {src} is missing (the shared KGS archives sit in ../shared/kgs)")
    levels = [int(x) for x in args.levels.split(",") if x.strip()]
    report: dict = {"machine": machine_info(), "input": str(src), "runs": []}
    with tempfile.TemporaryDirectory(prefix="gotk-bench-export-") as td:
        tmp = Path(td)
        sample = tmp / "warm.sgf"
        sample.write_text("(;GM[1]SZ[19]RE[B+R];B[pd];W[dp];B[pp];W[dd])")
        _export(sample, tmp / "w1", 6)
        _encode(sample, tmp / "w2", args.encoder)
        if args.katago:
            _export_katago(sample, tmp / "w3", True)
        best: dict[str, dict] = {}
        for i in range(args.repeat):
            jobs = [("encode", lambda o: _encode(src, o, args.encoder))]
            jobs += [(f"lz{lv}", lambda o, lv=lv: _export(src, o, lv)) for lv in levels]
            jobs += [("leelaz", lambda o: _leelaz(src, tmp))]
            if args.katago:
                jobs += [("katago", lambda o: _export_katago(src, o, False)),
                         ("katago-meta", lambda o: _export_katago(src, o, True))]
            for name, job in jobs:
                out = tmp / f"{name}-{i}"
                r = job(out)
                if r is None:
                    continue
                if out.exists():
                    shutil.rmtree(out)
                print(f"{r['tool']}: {r['positions']:,} positions in {r['wall_s']:.2f} s = "
                      f"{r['positions_per_s']:,.0f}/s", file=sys.stderr)
                report["runs"].append(r)
                if name not in best or r["wall_s"] < best[name]["wall_s"]:
                    best[name] = r
    report["machine"]["python_loop_s_at_end"] = python_loop_seconds()
    base = best["encode"]["positions_per_s"]
    rows = [{**r, "vs_encode": round(r["positions_per_s"] / base, 2)} for r in best.values()]
    report["table"] = rows
    if "katago" in best and "katago-meta" in best:
        report["metadata_speed_ratio"] = round(best["katago-meta"]["positions_per_s"]
                                               / best["katago"]["positions_per_s"], 3)
        print(f"katago export with --metadata: {report['metadata_speed_ratio']:.3f} x the speed without",
              file=sys.stderr)
    print(write_json(report, args.json_out))
    print(format_table(rows, [("tool", "run"), ("games", "games"), ("positions", "positions"), ("wall_s", "wall s"),
                              ("positions_per_s", "pos/s"), ("vs_encode", "× encode"),
                              ("bytes_per_position", "bytes/pos")]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
