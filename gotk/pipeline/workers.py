"""The two work units of ``gotk encode``: pure top-level functions ``(unit spec, options) → result``.

Both write their output files themselves (atomically: ``.tmp`` + rename) and return small picklable
dicts, so the same functions run in-process (``--workers 1``), in a process pool, or under any other
executor (e.g. Dask ``client.submit(scan_unit, spec, options)``) given a shared file system.

* :func:`scan_unit` — a chunk of SGF inputs (bytes in memory) → parse, hash (``game_id``), filter,
  replay to count the rows each game yields → ``WORK/scan/unit-NNNNN.parquet``: one row per
  candidate game (metadata + the compact record: setup stones, colours, points), with the unit's
  counts (games read, skip reasons) in the file metadata.
* :func:`encode_shard` — a shard plan (a list of pieces: unit, game, row range) → replay + encode
  every piece with the encoder, pack, write ``OUT/<split>/part-NNNNN.parquet``; a done-record in
  ``WORK/shards/`` marks it finished for ``--resume``.

``work_dir``/``out_dir`` may be fsspec URLs (``options["storage_options"]`` go to fsspec): then every
file goes through :mod:`gotk.pipeline.storage`; local paths keep plain files + ``os.replace``.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gotk.errors import GotkError
from gotk.pipeline import shards as S
from gotk.pipeline.atomic import temp_path, write_text_atomic
from gotk.pipeline.gameid import game_id
from gotk.pipeline.splits import passes_min_rank
from gotk.pipeline.storage import Storage, join
from gotk.sgftools.record import GameRecord, Result

UNIT_META_KEY = b"gotk_unit"

SCAN_SCHEMA = pa.schema([
    ("game_id", pa.string()), ("path", pa.string()), ("archive", pa.string()), ("member", pa.string()),
    ("black", pa.string()), ("white", pa.string()), ("black_rank", pa.string()), ("white_rank", pa.string()),
    ("komi", pa.float64()), ("handicap", pa.int32()), ("result", pa.string()), ("winner", pa.string()),
    ("date", pa.string()), ("rules", pa.string()), ("num_moves", pa.int32()), ("rows", pa.int32()),
    ("partial", pa.string()), ("size", pa.int16()), ("first_player", pa.int8()),
    ("setup_black", pa.binary()), ("setup_white", pa.binary()), ("setup_empty", pa.binary()),
    ("colors", pa.binary()), ("points", pa.binary()),
])


@dataclass
class ScanUnit:
    """A chunk of SGF inputs: ``items`` are ``(path, archive, member, data)`` in source order
    (``path`` is the archive or ``.sgf`` file on disk, ``archive`` its file name); ``digest``
    identifies the inputs and scan options (reuse on ``--resume`` only when it matches)."""

    unit_id: int
    items: list[tuple[str, str, str, bytes]] = field(default_factory=list)
    digest: str = ""


def unit_digest(items: list[tuple[str, str, str, bytes]], scan_options: dict) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(json.dumps(scan_options_key(scan_options), sort_keys=True).encode())
    for path, archive, member, data in items:
        h.update(f"{path}\0{archive}\0{member}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def scan_options_key(options: dict) -> dict:
    """The scan options that change a unit's result (not paths of the run)."""
    keys = ("board_size", "min_rank", "no_handicap", "include_passes", "skip_first", "drop_partial")
    return {k: options.get(k) for k in keys}


def storage_of(options: dict) -> Storage:
    """The storage of a run's output (``out_dir`` or ``work_dir``: a local path or an fsspec URL)."""
    return Storage.for_url(options.get("out_dir") or options["work_dir"], options.get("storage_options"))


def scan_path(work_dir: str | os.PathLike, unit_id: int) -> Path | str:
    return join(work_dir, "scan", f"unit-{unit_id:05d}.parquet")


def read_scan_stats(path: str | os.PathLike, storage: Storage | None = None) -> dict | None:
    """The stats stored in a finished scan file, or None when missing or unreadable."""
    try:
        meta = (pq.read_schema(path) if storage is None else storage.read_schema(path)).metadata or {}
        return json.loads(meta[UNIT_META_KEY])
    except (OSError, KeyError, ValueError, pa.ArrowInvalid):
        return None


def _u16(values) -> bytes:
    return np.asarray(values, dtype="<u2").tobytes()


def _kept_rows(rec: GameRecord, played: int, include_passes: bool, skip_first: int) -> int:
    """Rows the encoder yields for ``played`` replayed moves (the same rule as the game loops)."""
    pts = rec.points[:played]
    keep = np.arange(played) >= skip_first
    if not include_passes:
        keep &= pts != rec.size * rec.size
    return int(np.count_nonzero(keep))


def scan_unit(unit: ScanUnit, options: dict) -> dict:
    """Parse, identify, filter and count one chunk of inputs; write its scan file; return its stats.

    ``options``: ``work_dir``, ``board_size``, ``min_rank`` (int or None, see
    :func:`gotk.pipeline.splits.rank_value`), ``no_handicap``, ``include_passes``, ``skip_first``,
    ``drop_partial``.
    """
    from gotk.game.replay import replay
    from gotk.sgftools.reader import iter_sgf

    size = int(options["board_size"])
    include_passes = bool(options["include_passes"])
    skip_first = int(options["skip_first"])
    min_rank = options.get("min_rank")
    t_parse = t_replay = 0.0
    t0 = time.perf_counter()
    skipped: Counter = Counter()
    partial: Counter = Counter()
    examples: dict[str, str] = {}
    games_read = 0
    cols: dict[str, list] = {name: [] for name in SCAN_SCHEMA.names}

    def skip(reason: str, where: str, message: str = "") -> None:
        skipped[reason] += 1
        examples.setdefault(reason, f"{where}: {message}" if message else where)

    for path, archive, member, data in unit.items:
        where = f"{archive}:{member}" if member else archive
        t = time.perf_counter()
        try:
            records = list(iter_sgf(data, archive, member))
        except GotkError as e:
            t_parse += time.perf_counter() - t
            games_read += 1
            skip(e.reason, where, str(e))
            continue
        t_parse += time.perf_counter() - t
        for rec in records:
            games_read += 1
            if isinstance(rec, GotkError):
                skip(rec.reason, where, str(rec))
                continue
            if rec.size != size:
                skip("bad_size", where, f"board {rec.size}x{rec.size}, expected {size}x{size}")
                continue
            if options.get("no_handicap") and (rec.handicap >= 2 or rec.setup_black or rec.setup_white):
                skip("filtered_handicap", where, f"handicap {rec.handicap}")
                continue
            if not passes_min_rank(rec.black_rank, rec.white_rank, min_rank):
                skip("filtered_rank", where, f"{rec.black_rank or '?'} vs {rec.white_rank or '?'}")
                continue
            t = time.perf_counter()
            try:
                out = replay(rec, min_moves=0, keep_history=False)
            except GotkError as e:
                t_replay += time.perf_counter() - t
                skip(e.reason, where, str(e))
                continue
            t_replay += time.perf_counter() - t
            rows = _kept_rows(rec, out.moves_played, include_passes, skip_first)
            err = out.error
            if err is not None and options.get("drop_partial"):
                skip(err.reason, where, str(err))
                continue
            if rows == 0:
                skip(err.reason if err is not None else "too_short", where,
                     str(err) if err is not None else f"{rec.num_moves} moves, no position kept")
                continue
            if err is not None:
                partial[err.reason] += 1
                examples.setdefault(f"partial:{err.reason}", f"{where}: {err}")
            res: Result = rec.result
            for key, value in (
                ("game_id", game_id(rec)), ("path", path), ("archive", archive), ("member", member),
                ("black", rec.black), ("white", rec.white), ("black_rank", rec.black_rank),
                ("white_rank", rec.white_rank), ("komi", float(rec.komi)), ("handicap", int(rec.handicap)),
                ("result", str(res)), ("winner", res.winner), ("date", rec.date), ("rules", rec.rules),
                ("num_moves", rec.num_moves), ("rows", rows), ("partial", err.reason if err is not None else None),
                ("size", rec.size), ("first_player", int(rec.first_player or 0)),
                ("setup_black", _u16(rec.setup_black)), ("setup_white", _u16(rec.setup_white)),
                ("setup_empty", _u16(rec.setup_empty)), ("colors", np.asarray(rec.colors, dtype="u1").tobytes()),
                ("points", _u16(rec.points)),
            ):
                cols[key].append(value)

    stats = {
        "unit_id": unit.unit_id,
        "digest": unit.digest,
        "games_read": games_read,
        "candidates": len(cols["game_id"]),
        "skipped": dict(sorted(skipped.items())),
        "partial": dict(sorted(partial.items())),
        "examples": dict(sorted(examples.items())),
    }
    table = pa.Table.from_pydict(cols, schema=SCAN_SCHEMA)
    table = table.replace_schema_metadata({UNIT_META_KEY: json.dumps(stats, sort_keys=True).encode()})
    out_path = scan_path(options["work_dir"], unit.unit_id)
    st = storage_of(options)
    if st.is_local:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = temp_path(out_path)
        pq.write_table(table, tmp, compression="zstd", compression_level=1)
        os.replace(tmp, out_path)
    else:
        with st.open_write_atomic(out_path) as f:
            pq.write_table(table, f.sink, compression="zstd", compression_level=1)
    total = time.perf_counter() - t0
    stats["timing"] = {"parse_s": t_parse, "replay_s": t_replay, "other_s": total - t_parse - t_replay,
                       "scan_other_s": total - t_parse - t_replay}
    return stats


# --- encoding ---------------------------------------------------------------------------------

_ENCODERS: dict[str, object] = {}


def _encoder(options: dict):
    key = json.dumps([options["encoder"], options["board_size"], options.get("encoder_options") or {}],
                     sort_keys=True)
    enc = _ENCODERS.get(key)
    if enc is None:
        from gotk.encoders import get_encoder

        enc = get_encoder(options["encoder"], board_size=options["board_size"],
                          **(options.get("encoder_options") or {}))
        _ENCODERS[key] = enc
    return enc


def _record_from_row(row: dict) -> GameRecord:
    def u16(raw: bytes) -> tuple[int, ...]:
        return tuple(np.frombuffer(raw, dtype="<u2").astype(int).tolist())

    return GameRecord(
        size=int(row["size"]), komi=float(row["komi"]), handicap=int(row["handicap"]), rules=row["rules"] or "",
        setup_black=u16(row["setup_black"]), setup_white=u16(row["setup_white"]),
        setup_empty=u16(row["setup_empty"]),
        colors=np.frombuffer(row["colors"], dtype=np.uint8).astype(np.int8),
        points=np.frombuffer(row["points"], dtype="<u2").astype(np.int16),
        first_player=int(row["first_player"]) or None,
    )


_NEEDED = ["game_id", "winner", "rows", "size", "komi", "handicap", "rules", "first_player",
           "setup_black", "setup_white", "setup_empty", "colors", "points"]


def shard_done_path(work_dir: str | os.PathLike, split: str, index: int) -> Path | str:
    return join(work_dir, "shards", f"{split}-{index:05d}.json")


def encode_shard(spec: dict, options: dict) -> dict:
    """Encode one final shard: ``spec`` = ``{"split", "index", "file" (relative to the output
    folder), "digest", "pieces": [[unit_id, game_index, row_lo, row_hi], ...]}``; ``options``:
    ``encoder``, ``encoder_options``, ``board_size``, ``include_passes``, ``skip_first``,
    ``work_dir``, ``out_dir``, ``row_group_rows``, ``zstd_level``. Returns the shard's entry
    (``file``, ``rows``, ``bytes``, ``sha256``) plus timings."""
    t0 = time.perf_counter()
    enc = _encoder(options)
    desc = enc.describe()
    schema = S.shard_schema(desc)
    dtype = desc["dtype"]
    include_passes = bool(options["include_passes"])
    skip_first = int(options["skip_first"])
    st = storage_of(options)
    out_path = join(options["out_dir"], spec["file"])
    writer = S.ShardWriter(out_path, schema, int(options.get("row_group_rows", S.ROW_GROUP_ROWS)),
                           int(options.get("zstd_level", S.ZSTD_LEVEL)), storage=st)
    t_encode = 0.0
    cache: dict[int, dict] = {}
    buf: dict[str, list] = {k: [] for k in ("gid", "move", "tp", "feat", "label", "value")}
    buffered = 0

    t_write = 0.0

    def flush() -> None:
        nonlocal buffered, t_write
        t = time.perf_counter()
        if buffered:
            writer.write(S.rows_table(schema, pa.concat_arrays(buf["gid"]), np.concatenate(buf["move"]),
                                      np.concatenate(buf["tp"]), np.concatenate(buf["feat"]),
                                      np.concatenate(buf["label"]), np.concatenate(buf["value"])))
        for v in buf.values():
            v.clear()
        buffered = 0
        t_write += time.perf_counter() - t

    try:
        for unit_id, game_index, lo, hi in spec["pieces"]:
            unit = cache.get(unit_id)
            if unit is None:
                cache.clear()  # pieces come in unit order: keep one unit's records at a time
                unit = st.read_table(scan_path(options["work_dir"], unit_id), columns=_NEEDED).to_pydict()
                cache[unit_id] = unit
            row = {k: unit[k][game_index] for k in _NEEDED}
            rec = _record_from_row(row)
            t = time.perf_counter()
            eg = enc.encode_game(rec, include_passes=include_passes, skip_first=skip_first)
            t_encode += time.perf_counter() - t
            if len(eg) != row["rows"]:
                raise RuntimeError(f"encoder {desc['name']} gave {len(eg)} rows for game {row['game_id']}, "
                                   f"the scan counted {row['rows']}")
            tp = eg.to_play[lo:hi]
            winner = row["winner"]
            if winner is None:
                values = np.zeros(hi - lo, dtype=np.int8)
            else:
                values = np.where(tp == (1 if winner == "b" else -1), 1, -1).astype(np.int8)
            buf["gid"].append(pa.repeat(pa.scalar(row["game_id"], pa.string()), hi - lo))
            buf["move"].append(eg.move_numbers[lo:hi])
            buf["tp"].append(tp)
            buf["feat"].append(S.pack_features(eg.features[lo:hi], dtype))
            buf["label"].append(eg.labels[lo:hi])
            buf["value"].append(values)
            buffered += hi - lo
            if buffered >= writer.row_group_rows:
                flush()
        flush()
        t = time.perf_counter()
        info = writer.close()
        t_write += time.perf_counter() - t
    except BaseException:
        writer.abort()
        raise
    entry = {"file": spec["file"], "rows": info["rows"], "bytes": info["bytes"], "sha256": info["sha256"]}
    done = shard_done_path(options["work_dir"], spec["split"], spec["index"])
    record = json.dumps({"digest": spec["digest"], **entry}, sort_keys=True)
    if st.is_local:
        done.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(done, record)
    else:
        st.write_text_atomic(done, record)
    total = time.perf_counter() - t0
    return {**entry, "timing": {"encode_s": t_encode, "other_s": total - t_encode,
                                "shard_write_s": t_write, "shard_rest_s": total - t_encode - t_write}}


def reuse_shard(spec: dict, options: dict) -> dict | None:
    """The entry of a shard finished by an earlier run with the same plan, or None."""
    st = storage_of(options)
    done = shard_done_path(options["work_dir"], spec["split"], spec["index"])
    try:
        rec = json.loads(st.read_text(done))
    except (OSError, ValueError):
        return None
    path = join(options["out_dir"], spec["file"])
    if rec.get("digest") != spec["digest"] or not st.isfile(path) or st.size(path) != rec.get("bytes"):
        return None
    return {k: rec[k] for k in ("file", "rows", "bytes", "sha256")}

