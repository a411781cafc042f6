"""The dataset folder's manifest (``manifest.json``) and games table (``games.parquet``).

``manifest.json`` is written last (temp + rename): its presence means the dataset is complete. It
holds no timestamps or run timings, so the same sources and options give the same bytes; timings
go to ``run-report.json`` beside it, which is outside the determinism claim.
"""

from __future__ import annotations

import json
import os

import pyarrow as pa

from gotk.hashing import sha256_bytes, sha256_stream
from gotk.shards.format import SCHEMA_VERSION
from gotk.storage import Storage, is_url, join

MANIFEST_NAME = "manifest.json"
GAMES_NAME = "games.parquet"
RUN_REPORT_NAME = "run-report.json"
WORK_NAME = ".work"
FORMAT = "gotk-shards"

_STR, _I16, _I32, _F64, _BOOL = pa.string(), pa.int16(), pa.int32(), pa.float64(), pa.bool_()
#: ``games.parquet`` (schema version 2): normalised metadata (gotk.sgf.metadata) beside the raw values.
GAMES_SCHEMA = pa.schema([
    pa.field("game_id", _STR, nullable=False),
    ("archive", _STR), ("member", _STR), ("black", _STR), ("white", _STR),
    ("black_rank", _I16), ("white_rank", _I16), ("black_rank_raw", _STR), ("white_rank_raw", _STR),
    ("black_is_bot", _BOOL), ("white_is_bot", _BOOL),
    ("komi", _F64), ("komi_raw", _STR), ("handicap", pa.int32()),
    ("result", _STR), ("winner", _STR), ("end", _STR),
    ("date", _STR), ("year", _I16), ("date_raw", _STR), ("rules", _STR), ("rules_raw", _STR), ("source", _STR),
    ("time_system", _STR), ("time_main_s", _F64), ("time_periods", _I32), ("time_period_s", _F64),
    ("time_stones", _I32), ("time_raw", _STR), ("warnings", _STR),
    ("num_moves", pa.int32()), ("positions", pa.int32()), ("partial", _STR),
    pa.field("split", _STR, nullable=False),
])
#: Columns a ``--where`` expression may name while encoding (``split`` is decided after the filters).
ENCODE_WHERE_COLUMNS = [n for n in GAMES_SCHEMA.names if n != "split"]
GAMES_ROW_GROUP_ROWS = 65536


def dataset_manifest(encoder_desc: dict, options: dict, games: dict, games_info: dict, splits: dict[str, dict],
                     row_group_rows: int, sources: list | None = None, sources_skipped: list | None = None,
                     inputs_skipped: dict | None = None, targets: list[str] | tuple[str, ...] | None = None,
                     generator: dict | None = None, experience: dict | None = None) -> dict:
    """The ``manifest.json`` object of a dataset folder (the one layout ``gotk encode`` and
    :func:`gotk.shards.assemble.assemble_dataset` write): ``splits`` maps each split to its ``games``, ``rows``,
    ``bytes`` and ``shards``; ``games_info`` is the games table's ``rows``, ``bytes`` and ``sha256``; the totals are
    computed here. ``targets`` (self-play target columns), ``experience`` (the experience columns' description,
    :mod:`gotk.shards.experience_column`) and ``generator`` are written when given."""
    from gotk import __version__

    total_rows = sum(s["rows"] for s in splits.values())
    total_bytes = sum(s["bytes"] for s in splits.values())
    manifest = {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "gotk_version": __version__,
        "encoder": encoder_desc,
        "options": options,
        "sources": sources or [],
        "sources_skipped": sources_skipped or [],
        "inputs_skipped": inputs_skipped or {},
        "games": games,
        "games_file": {"file": GAMES_NAME, "rows": games_info["rows"], "bytes": games_info["bytes"],
                       "sha256": games_info["sha256"]},
        "splits": splits,
        "rows": total_rows,
        "bytes": total_bytes,
        "bytes_per_position": round(total_bytes / total_rows, 3) if total_rows else 0.0,
        "row_group_rows": row_group_rows,
    }
    if targets is not None:
        manifest["targets"] = list(targets)
    if experience is not None:
        manifest["experience"] = experience
    if generator is not None:
        manifest["generator"] = generator
    return manifest


def write_json_atomic(path: str | os.PathLike, obj: dict, storage: Storage | None = None) -> None:
    """Write ``obj`` as indented JSON (keys in insertion order, which is deterministic), atomically
    through ``storage`` (default: the storage of ``path``)."""
    st = storage if storage is not None else Storage.for_url(path)
    st.write_text_atomic(path, json.dumps(obj, indent=2) + "\n")


def load_manifest(folder: str | os.PathLike, storage_options: dict | None = None) -> dict:
    """The manifest of a dataset folder (a path or an fsspec URL); ValueError with a clear message if
    there is none (:class:`~gotk.storage.StorageError` when a URL's store is unusable)."""
    st = Storage.for_url(folder, storage_options)
    if is_url(folder):
        folder = str(folder).rstrip("/")
    path = join(folder, MANIFEST_NAME)
    if not st.isfile(path):
        hint = " (an unfinished run: rerun gotk encode with --resume)" if st.exists(join(folder, WORK_NAME)) else ""
        raise ValueError(f"{folder} is not a gotk dataset folder: no {MANIFEST_NAME}{hint}; "
                         "make one with `gotk encode`")
    return check_manifest(json.loads(st.read_text(path)), str(path))


def read_manifest(folder: str | os.PathLike, storage_options: dict | None = None) -> tuple[dict, str]:
    """``(manifest, sha256 of its bytes)``: :func:`load_manifest` plus the digest that identifies the exact
    dataset a network was trained on."""
    st = Storage.for_url(folder, storage_options)
    m = load_manifest(folder, storage_options)
    raw = st.read_bytes(join(str(folder).rstrip("/") if is_url(folder) else folder, MANIFEST_NAME))
    return m, sha256_bytes(raw)


def read_games(folder: str | os.PathLike, storage_options: dict | None = None,
               columns: list[str] | None = None, where=None) -> pa.Table:
    """The dataset's games table (``games.parquet``; only ``columns`` when given, only the rows a
    :class:`gotk.shards.where.Where` keeps when ``where`` is given), local or at a URL. The manifest is
    checked first, so a dataset of an older schema gets the re-encode message."""
    import pyarrow.parquet as pq

    load_manifest(folder, storage_options)
    st = Storage.for_url(folder, storage_options)
    path = join(str(folder).rstrip("/") if is_url(folder) else folder, GAMES_NAME)
    if not st.isfile(path):
        raise ValueError(f"{folder} has no {GAMES_NAME}: not a complete gotk dataset")
    src = st.open_input(path)
    try:
        table = pq.read_table(src, columns=columns, page_checksum_verification=True)
    finally:
        if not isinstance(src, str):
            src.close()
    return where.filter_table(table) if where is not None else table


def check_manifest(m: dict, where: str = MANIFEST_NAME) -> dict:
    """``m`` itself when it is a gotk shards manifest of the schema version this gotk reads; else ValueError."""
    if m.get("format") != FORMAT:
        raise ValueError(f"{where} is not a gotk shards manifest")
    if m.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"{where} has schema_version {m.get('schema_version')}; this gotk reads version "
                         f"{SCHEMA_VERSION} (re-encode the dataset with this gotk)")
    return m


def verify_dataset(folder: str | os.PathLike, storage_options: dict | None = None,
                   manifest: dict | None = None) -> dict:
    """Check every file the manifest lists (``games.parquet`` and each shard) against it: present,
    same size, same sha256, same Parquet row count. Returns ``{"files": N, "bytes": B, "problems":
    [{"file", "problem"}, ...]}`` (no problems: the dataset is intact), e.g. after a copy or upload."""
    import pyarrow.parquet as pq

    st = Storage.for_url(folder, storage_options)
    if is_url(folder):
        folder = str(folder).rstrip("/")
    m = manifest if manifest is not None else load_manifest(folder, storage_options)
    entries = [(GAMES_NAME, m["games_file"])] + [(e["file"], e) for s in m["splits"].values() for e in s["shards"]]
    problems: list[dict] = []
    total = 0
    for rel, entry in entries:
        path = join(folder, rel)
        if not st.isfile(path):
            problems.append({"file": rel, "problem": "missing"})
            continue
        src = st.open_input(path)
        with open(src, "rb") if isinstance(src, str) else src as f:
            digest, size = sha256_stream(f)
        total += size
        if size != entry["bytes"]:
            problems.append({"file": rel, "problem": f"{size:,} bytes, the manifest says {entry['bytes']:,}"})
        elif digest != entry["sha256"]:
            problems.append({"file": rel, "problem": "sha256 differs from the manifest's (the file is damaged)"})
        else:
            src = st.open_input(path)
            try:
                rows = pq.read_metadata(src).num_rows
            finally:
                if not isinstance(src, str):
                    src.close()
            if rows != entry["rows"]:
                problems.append({"file": rel, "problem": f"{rows:,} rows, the manifest says {entry['rows']:,}"})
    return {"files": len(entries), "bytes": total, "problems": problems}


def summary_lines(m: dict) -> list[str]:
    """A human summary of a manifest (what ``gotk inspect`` prints)."""
    enc = m["encoder"]
    g = m["games"]
    lines = [
        f"gotk dataset (schema v{m['schema_version']}, gotk {m['gotk_version']})",
        f"encoder   {enc['name']} v{enc['version']}  planes {enc['num_planes']}  shape {tuple(enc['shape'])}  "
        f"dtype {enc['dtype']}",
        f"sources   {len(m['sources'])} files" + (f" ({len(m['sources_skipped'])} skipped)"
                                                  if m.get("sources_skipped") else ""),
        f"games     read {g['read']:,}  kept {g['kept']:,}  partial {g['partial']:,}  "
        f"skipped {sum(g['skipped'].values()):,}",
        *([f"targets   {', '.join(m['targets'])}"] if m.get("targets") else []),
        *([f"experience {', '.join(m['experience']['columns'])} (discount {m['experience']['discount']})"]
          if isinstance(m.get("experience"), dict) else []),
        *([f"made by   {m['generator'].get('name', '?')}"] if isinstance(m.get("generator"), dict) else []),
        "",
        f"{'split':<10} {'games':>9} {'rows':>12} {'shards':>7} {'bytes':>14} {'bytes/pos':>10}",
    ]
    for name, s in m["splits"].items():
        bpp = s["bytes"] / s["rows"] if s["rows"] else 0.0
        lines.append(f"{name:<10} {s['games']:>9,} {s['rows']:>12,} {len(s['shards']):>7} {s['bytes']:>14,} "
                     f"{bpp:>10.1f}")
    lines.append(f"{'total':<10} {g['kept']:>9,} {m['rows']:>12,} "
                 f"{sum(len(s['shards']) for s in m['splits'].values()):>7} {m['bytes']:>14,} "
                 f"{m['bytes_per_position']:>10.1f}")
    if g["skipped"]:
        lines += ["", "skipped games by reason:"]
        ex = g.get("examples", {})
        for reason, n in g["skipped"].items():
            lines.append(f"  {reason:<20} {n:>8,}   e.g. {ex.get(reason, '')}")
    if g.get("filtered_where"):
        lines += ["", "filtered out by --where, by the first term each game failed:"]
        for term, n in g["filtered_where"].items():
            lines.append(f"  {n:>8,}  {term}")
    if g.get("metadata_warnings"):
        lines += ["", "games kept with a warning (metadata read as null; charset_mismatch: a CA fallback) by reason:"]
        for reason, n in g["metadata_warnings"].items():
            lines.append(f"  {reason:<20} {n:>8,}")
    if g.get("partial_reasons"):
        lines += ["", "partial games (positions before the bad move kept) by reason:"]
        for reason, n in g["partial_reasons"].items():
            lines.append(f"  {reason:<20} {n:>8,}")
    if m.get("inputs_skipped"):
        lines += ["", "inputs skipped (not games) by reason:"]
        for reason, n in m["inputs_skipped"].items():
            lines.append(f"  {reason:<20} {n:>8,}")
    return lines
