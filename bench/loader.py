"""Streaming loader throughput (samples/s) against a load-everything-into-memory baseline.

Makes ``sevenplane`` and ``alphago`` datasets with the real ``gotk encode`` (default: the built-in
2017-02 KGS sample; ``--kgs`` for the 2017 months in ``../shared/kgs``; or ``--sources``), cached in
``--work``, then times one pass over the split for each DataLoader ``num_workers`` in ``--workers``
(``ShardDataset``, batch 256, ``symmetries="random"``, default shuffle buffer), and the baseline:
``pq.read_table`` + decode every row + random-permutation batches with the same symmetries.

    python bench/loader.py                  # built-in sample, workers 0 1 2
    python bench/loader.py --kgs --json out.json
    python bench/loader.py --kgs --encoders alphago --workers 0 --positions-per-game 8   # value training's cap

Samples/s are wall-clock over a whole epoch including DataLoader start-up (a fresh DataLoader per epoch),
the best of ``--repeat``; samples/CPU-s divide by the CPU time of the main process and its DataLoader
workers (what a busy machine does not distort); "main CPU ms/batch" is what the training process itself
pays per batch. The baseline's rates exclude its load time, shown apart.
An encoder that is not available (``alphago`` until it lands) is skipped with a printed note.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench._common import format_table, kgs_dir, machine_info, pin_to_cpu, write_json

ENCODERS = ("sevenplane", "alphago")
TARGETS = {"sevenplane": 100_000, "alphago": 30_000}  # samples/s on one core (num_workers=0)


def default_sources(use_kgs: bool) -> list[Path]:
    if use_kgs:
        folder = kgs_dir()
        found = sorted(p for p in folder.glob("KGS-2017_*-19-*-.tar.gz")) if folder.is_dir() else []
        if not found:
            sys.exit(f"error: no 2017 archives in {folder} (set GOTK_KGS or pass --sources)")
        return found
    from gotk.data import HELDOUT_ARCHIVE

    return [HELDOUT_ARCHIVE]


def make_dataset(encoder: str, sources: list[Path], work: Path, workers: int) -> Path | None:
    """``work/<encoder>-<sources>``, encoded once with ``gotk encode`` (split ``train=1.0``); None if the
    encoder is not available here."""
    from gotk.encoders.registry import list_encoders

    if encoder not in list_encoders():
        print(f"note: encoder {encoder!r} is not available in this checkout; skipped", file=sys.stderr)
        return None
    tag = re.sub(r"[^A-Za-z0-9_.-]+", "_", "+".join(p.name for p in sources))[:80]
    out = work / f"{encoder}-{tag}"
    if (out / "manifest.json").is_file():
        return out
    from gotk.jobs.encode import EncodeOptions, encode_dataset

    t0 = time.perf_counter()
    m = encode_dataset(sources, out, EncodeOptions(encoder=encoder, split="train=1.0"), workers=workers,
                       progress=False)
    print(f"encoded {encoder}: {m['rows']:,} rows in {time.perf_counter() - t0:.1f} s -> {out}", file=sys.stderr)
    return out


def time_loader(path: Path, num_workers: int, batch_size: int, epoch: int, per_game: int | None = None) -> dict:
    from torch.utils.data import DataLoader

    from gotk.datasets import Sampling, ShardDataset

    ds = ShardDataset(path, "train", sampling=Sampling(batch_size=batch_size, symmetries="random"), epoch=epoch,
                      num_workers=num_workers, max_positions_per_game=per_game)
    loader = DataLoader(ds, batch_size=None, num_workers=num_workers)
    rows = batches = 0
    children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    c0 = time.process_time()
    t0 = time.perf_counter()
    for b in loader:
        rows += b["features"].shape[0]
        batches += 1
    del loader  # workers exit and are reaped: their CPU time shows in RUSAGE_CHILDREN
    wall = time.perf_counter() - t0
    children1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    main_cpu = time.process_time() - c0
    cpu = main_cpu + (children1.ru_utime + children1.ru_stime - children0.ru_utime - children0.ru_stime)
    assert batches == len(ds) and (rows == ds.num_rows if per_game is None else 0 < rows <= ds.num_rows), \
        (rows, ds.num_rows, batches, len(ds))
    return {"rows": rows, "rows_read_per_sample": ds.num_rows / rows, "wall_s": wall, "samples_per_s": rows / wall,
            "cpu_s": cpu, "samples_per_cpu_s": rows / cpu,
            "main_cpu_ms_per_batch": main_cpu / batches * 1e3}


def time_baseline(path: Path, batch_size: int, seed: int = 0) -> dict:
    """Everything in memory: read all shards, decode all features, then random batches + symmetries."""
    from gotk.datasets import SplitIndex
    from gotk.datasets.symmetry import apply_symmetries_, transform_labels
    from gotk.shards.format import decode_features

    index = SplitIndex(path, "train")
    t0 = time.perf_counter()
    table = pa.concat_tables([pq.read_table(f, columns=["features", "label", "value", "move_number"])
                              for f in index.files])
    feats = decode_features(table, index.encoder)
    labels = table.column("label").to_numpy()
    values = table.column("value").to_numpy().astype(np.float32)
    t_load = time.perf_counter() - t0
    rng = np.random.default_rng(seed)
    c1 = time.process_time()
    t1 = time.perf_counter()
    perm = rng.permutation(len(labels))
    rows = 0
    for lo in range(0, len(perm), batch_size):
        idx = perm[lo:lo + batch_size]
        syms = rng.integers(0, 8, size=len(idx))
        apply_symmetries_(feats[idx], syms)
        transform_labels(labels[idx], syms, index.board_size)
        _ = values[idx]
        rows += len(idx)
    t_epoch = time.perf_counter() - t1
    cpu = time.process_time() - c1
    return {"rows": rows, "load_s": t_load, "epoch_s": t_epoch, "samples_per_s": rows / t_epoch,
            "samples_per_cpu_s": rows / cpu,
            "samples_per_s_incl_load": rows / (t_load + t_epoch), "memory_bytes": int(feats.nbytes)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sources", nargs="*", help="SGF archives/folders to encode (default: built-in 2017-02 sample)")
    ap.add_argument("--kgs", action="store_true", help="use the 2017 archives of ../shared/kgs")
    ap.add_argument("--encoders", nargs="*", default=list(ENCODERS))
    ap.add_argument("--workers", nargs="*", type=int, default=[0, 1, 2], help="DataLoader num_workers values")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=2, help="epochs timed per setting (best reported)")
    ap.add_argument("--work", default="/tmp/gotk-bench-loader", help="where the encoded datasets are cached")
    ap.add_argument("--encode-workers", type=int, default=2)
    ap.add_argument("--pin-cpu", type=int, default=None, help="pin to this CPU (DataLoader workers inherit it)")
    ap.add_argument("--positions-per-game", nargs="*", type=int, default=[],
                    help="also time epochs capped at K positions a game (value training's sampling, gotk train "
                    "--positions-per-game): every row is still read, fewer are kept")
    ap.add_argument("--json", default=None, help="also write the JSON report here")
    args = ap.parse_args(argv)
    if args.pin_cpu is not None:
        pin_to_cpu(args.pin_cpu)
    sources = [Path(s) for s in args.sources] if args.sources else default_sources(args.kgs)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)

    results = []
    for enc in args.encoders:
        path = make_dataset(enc, sources, work, args.encode_workers)
        if path is None:
            continue
        meta = json.loads((path / "manifest.json").read_text())
        bytes_per_row = pq.ParquetFile(next((path / "train").glob("*.parquet"))).schema_arrow.field(
            "features").type.byte_width
        for k, cap in [(k, None) for k in args.workers] + [(k, c) for c in args.positions_per_game
                                                           for k in args.workers]:
            runs = [time_loader(path, k, args.batch_size, epoch=e, per_game=cap) for e in range(args.repeat)]
            best = max(runs, key=lambda r: r["samples_per_s"])
            results.append({"encoder": enc, "loader": f"ShardDataset workers={k}"
                            + (f", {cap} a game" if cap else ""), "num_workers": k, "positions_per_game": cap,
                            "rows_read_per_sample": best["rows_read_per_sample"],
                            "rows": best["rows"], "wall_s": best["wall_s"], "samples_per_s": best["samples_per_s"],
                            "samples_per_cpu_s": best["samples_per_cpu_s"],
                            "main_cpu_ms_per_batch": best["main_cpu_ms_per_batch"],
                            "target": TARGETS.get(enc) if k == 0 and not cap else None,
                            "meets_target": best["samples_per_s"] >= TARGETS[enc]
                            if k == 0 and enc in TARGETS and not cap else None,
                            "planes": meta["encoder"]["num_planes"], "bytes_per_row": bytes_per_row})
        base = max((time_baseline(path, args.batch_size, seed=e) for e in range(args.repeat)),
                   key=lambda r: r["samples_per_s"])
        results.append({"encoder": enc, "loader": "in-memory baseline", "rows": base["rows"],
                        "wall_s": base["epoch_s"], "samples_per_s": base["samples_per_s"],
                        "samples_per_cpu_s": base["samples_per_cpu_s"],
                        "load_s": base["load_s"], "samples_per_s_incl_load": base["samples_per_s_incl_load"],
                        "memory_mb": base["memory_bytes"] / 2**20, "planes": meta["encoder"]["num_planes"],
                        "bytes_per_row": bytes_per_row})

    report = {"benchmark": "loader", "sources": [str(s) for s in sources], "batch_size": args.batch_size,
              "symmetries": "random", "repeat": args.repeat, "pin_cpu": args.pin_cpu,
              "machine": machine_info(), "results": results}
    print(write_json(report, args.json))
    print()
    print(format_table(results, [("encoder", "encoder"), ("loader", "loader"), ("rows", "rows"),
                                 ("samples_per_s", "samples/s"), ("samples_per_cpu_s", "samples/CPU-s"),
                                 ("rows_read_per_sample", "rows read/sample"),
                                 ("main_cpu_ms_per_batch", "main CPU ms/batch"), ("wall_s", "epoch s"),
                                 ("load_s", "load s"),
                                 ("samples_per_s_incl_load", "samples/s incl. load"), ("memory_mb", "memory MiB"),
                                 ("target", "target (1 core)"), ("meets_target", "meets")]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
