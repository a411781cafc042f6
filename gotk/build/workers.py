"""The two work units of ``gotk encode``: pure top-level functions ``(unit spec, options) → result``.

Both write their output files themselves (atomically: ``.tmp`` + rename) and return small picklable
dicts, so the same functions run in-process (``--workers 1``), in a process pool, or under any other
executor (e.g. Dask ``client.submit(scan_unit, spec, options)``) given a shared file system.

* :func:`scan_unit` — a chunk of SGF inputs (bytes in memory) → parse, hash (``game_id``), filter,
  replay to count the rows each game yields → ``WORK/scan/unit-NNNNN.arrow`` (an uncompressed
  Arrow IPC file: cheap to write and memory-mapped back): one row per candidate game (metadata +
  the compact record: setup stones, colours, points), with the unit's counts (games read, skip
  reasons) in the schema metadata. The table also comes back with the result (``"games"``), so
  the parent plans from it without reading the file.
* :func:`encode_shard` — a shard plan (a list of pieces: unit, game, row range) → replay + encode
  every piece with the encoder, pack, write ``OUT/<split>/part-NNNNN.parquet``; a done-record in
  ``WORK/shards/`` marks it finished for ``--resume``.

``work_dir``/``out_dir`` may be fsspec URLs (``options.storage_options`` go to fsspec): then every
file goes through :mod:`gotk.storage`; local paths keep plain files + ``os.replace``.
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

from gotk.build.splits import passes_min_rank
from gotk.encoders.base import kept_count
from gotk.errors import GotkError
from gotk.hashing import sha256_bytes, sha256_stream
from gotk.sgf.record import GameRecord, value_targets
from gotk.shards import format as S
from gotk.shards import manifest as M
from gotk.shards.gameid import game_id
from gotk.storage import Storage, join

UNIT_META_KEY = b"gotk_unit"
# version of the scan file layout (SCAN_SCHEMA + the stats under UNIT_META_KEY): part of every unit digest, so a
# resumed run never reuses a scan file written in another layout (it is redone instead)
SCAN_VERSION = 2
#: Games with more main-line moves are skipped as ``too_long`` (``gotk encode --max-moves``): real games
#: have a few hundred; a hostile file under the byte cap can hold over a million.
DEFAULT_MAX_MOVES = 10_000

#: One row per candidate game: ``path``, every games.parquet column but ``split``/``positions`` (see
#: gotk.shards.manifest.GAMES_SCHEMA), then ``rows`` and the compact record the encoder replays.
SCAN_SCHEMA = pa.schema(
    [("game_id", pa.string()), ("path", pa.string())]
    + [(f.name, f.type) for f in M.GAMES_SCHEMA if f.name not in ("game_id", "split", "positions")]
    + [("rows", pa.int32()), ("size", pa.int16()), ("first_player", pa.int8()),
       ("setup_black", pa.binary()), ("setup_white", pa.binary()), ("setup_empty", pa.binary()),
       ("colors", pa.binary()), ("points", pa.binary())])


@dataclass
class ScanUnit:
    """A chunk of SGF inputs: ``items`` are ``(path, archive, member, data)`` in source order
    (``path`` is the archive or ``.sgf`` file on disk, ``archive`` its file name); ``digest``
    identifies the inputs and scan options (reuse on ``--resume`` only when it matches)."""

    unit_id: int
    items: list[tuple[str, str, str, bytes]] = field(default_factory=list)
    digest: str = ""


@dataclass(frozen=True)
class ScanOptions:
    """What a scan worker needs: where to write (``work_dir``, a path or fsspec URL with
    ``storage_options``) and the options that decide which games are kept and how many rows each gives."""

    work_dir: str
    board_size: int = 19
    min_rank: int | None = None  # see gotk.build.splits.rank_value
    no_handicap: bool = False
    include_passes: bool = False
    skip_first: int = 0
    drop_partial: bool = False
    where: str | None = None  # a gotk.build.filters expression over the games table
    bot_patterns: tuple[str, ...] | None = None  # gotk.sgf.metadata.BotList patterns (None: the default list)
    max_moves: int = DEFAULT_MAX_MOVES
    storage_options: dict | None = None

    def key(self) -> dict:
        """The options that change a unit's result (not the paths of the run)."""
        return {k: getattr(self, k) for k in ("board_size", "min_rank", "no_handicap", "include_passes",
                                               "skip_first", "drop_partial", "where", "bot_patterns", "max_moves")}

    def storage(self) -> Storage:
        return Storage.for_url(self.work_dir, self.storage_options)


@dataclass(frozen=True)
class ShardOptions:
    """What a shard worker needs: the encoder, the row rule, and where to read scans / write shards."""

    encoder: str
    work_dir: str
    out_dir: str
    encoder_options: dict = field(default_factory=dict)
    board_size: int = 19
    include_passes: bool = False
    skip_first: int = 0
    row_group_rows: int = S.ROW_GROUP_ROWS
    zstd_level: int = S.ZSTD_LEVEL
    storage_options: dict | None = None

    def storage(self) -> Storage:
        return Storage.for_url(self.out_dir, self.storage_options)


def unit_digest(items: list[tuple[str, str, str, bytes]], scan_options: ScanOptions) -> str:
    """Identity of a unit's inputs and the scan options that shape its result (reuse on ``--resume``)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(json.dumps([SCAN_VERSION, scan_options.key()], sort_keys=True).encode())
    for path, archive, member, data in items:
        h.update(f"{path}\0{archive}\0{member}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def scan_path(work_dir: str | os.PathLike, unit_id: int) -> Path | str:
    return join(work_dir, "scan", f"unit-{unit_id:05d}.arrow")


def scan_sum_path(work_dir: str | os.PathLike, unit_id: int) -> Path | str:
    """The sha256 of a finished scan file, written after it: ``--resume`` reuses a scan only when it matches."""
    return join(work_dir, "scan", f"unit-{unit_id:05d}.sha256")


def scan_intact(work_dir: str | os.PathLike, unit_id: int, storage: Storage) -> bool:
    """Whether the scan file of ``unit_id`` is whole: its bytes hash to the sum written beside it."""
    try:
        expected = storage.read_text(scan_sum_path(work_dir, unit_id)).strip()
        return sha256_bytes(storage.read_bytes(scan_path(work_dir, unit_id))) == expected
    except (OSError, ValueError):
        return False


def _open_scan(path: str | os.PathLike, storage: Storage | None) -> pa.ipc.RecordBatchFileReader:
    if storage is None or storage.is_local:
        return pa.ipc.open_file(pa.memory_map(str(path)))
    return pa.ipc.open_file(pa.py_buffer(storage.read_bytes(path)))


def read_scan_table(path: str | os.PathLike, storage: Storage | None = None) -> pa.Table:
    """A finished scan file's table (local files are memory-mapped, not copied)."""
    return _open_scan(path, storage).read_all()


def read_scan_stats(path: str | os.PathLike, storage: Storage | None = None) -> dict | None:
    """The stats stored in a finished scan file, or None when missing or unreadable."""
    try:
        meta = _open_scan(path, storage).schema.metadata or {}
        return json.loads(meta[UNIT_META_KEY])
    except (OSError, KeyError, ValueError, pa.ArrowInvalid):
        return None


def peak_rss_mib() -> float:
    """This process's peak resident set size so far, in MiB (reported by every work unit, so a run
    can show that memory per worker stays bounded).

    Linux: ``VmHWM`` of ``/proc/self/status``, the high-water mark of this process's own memory
    (``ru_maxrss`` would also count the process that spawned it: it survives ``exec``); elsewhere
    ``ru_maxrss``."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)  # kB
    except (OSError, ValueError, IndexError):
        pass
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1 << 20 if sys.platform == "darwin" else 1 << 10), 1)


def _u16(values) -> bytes:
    return np.asarray(values, dtype="<u2").tobytes()


def _kept_rows(rec: GameRecord, played: int, include_passes: bool, skip_first: int) -> int:
    """Rows the encoder yields for ``played`` replayed moves (:func:`gotk.encoders.base.kept_count`)."""
    return kept_count(rec.points[:played], rec.size, include_passes, skip_first)


_WHERE_AFTER_REPLAY = {"positions", "partial"}  # columns known only once the game is replayed


def _where(text: str | None):
    from gotk.build.filters import compile_where

    return compile_where(text, M.ENCODE_WHERE_COLUMNS) if text else None


def scan_unit(unit: ScanUnit, options: ScanOptions) -> dict:
    """Parse, identify, filter and count one chunk of inputs; write its scan file; return its stats."""
    from gotk.game.replay import replay
    from gotk.sgf.metadata import BotList, default_bots, normalise_record
    from gotk.sgf.reader import iter_sgf

    where = _where(options.where)
    where_late = where is not None and bool(where.used_columns() & _WHERE_AFTER_REPLAY)
    bots = default_bots() if options.bot_patterns is None else BotList(list(options.bot_patterns))
    warnings: Counter = Counter()
    filtered_where: Counter = Counter()

    size = options.board_size
    include_passes = options.include_passes
    skip_first = options.skip_first
    min_rank = options.min_rank
    t_parse = t_replay = 0.0
    t0 = time.perf_counter()
    skipped: Counter = Counter()
    partial: Counter = Counter()
    examples: dict[str, str] = {}
    games_read = 0
    reader: Counter = Counter()  # inputs / games per SGF reader path (compiled or sgfmill)
    cols: dict[str, list] = {name: [] for name in SCAN_SCHEMA.names}

    def skip(reason: str, where: str, message: str = "") -> None:
        skipped[reason] += 1
        examples.setdefault(reason, f"{where}: {message}" if message else where)

    for path, archive, member, data in unit.items:
        place = f"{archive}:{member}" if member else archive
        t = time.perf_counter()
        try:
            records = list(iter_sgf(data, archive, member, counts=reader))
        except GotkError as e:
            t_parse += time.perf_counter() - t
            games_read += 1
            skip(e.reason, place, str(e))
            continue
        t_parse += time.perf_counter() - t
        for rec in records:
            games_read += 1
            if isinstance(rec, GotkError):
                skip(rec.reason, place, str(rec))
                continue
            meta = normalise_record(rec, bots)
            if rec.warnings:  # the reader's fallbacks (charset_mismatch) join the metadata warnings
                meta["warnings"] = ",".join(sorted({*(meta["warnings"] or "").split(","), *rec.warnings} - {""}))
                examples.setdefault(f"warning:{rec.warnings[0]}", place)
            if meta["warnings"]:
                warnings.update(meta["warnings"].split(","))
            if rec.size != size:
                skip("bad_size", place, f"board {rec.size}x{rec.size}, expected {size}x{size}")
                continue
            if options.max_moves and rec.num_moves > options.max_moves:
                skip("too_long", place, f"{rec.num_moves} moves, over --max-moves {options.max_moves}")
                continue
            if options.no_handicap and (rec.handicap >= 2 or rec.setup_black or rec.setup_white):
                skip("filtered_handicap", place, f"handicap {rec.handicap}")
                continue
            if not passes_min_rank(rec.black_rank, rec.white_rank, min_rank):
                skip("filtered_rank", place, f"{rec.black_rank or '?'} vs {rec.white_rank or '?'}")
                continue
            row = {"game_id": game_id(rec), "archive": archive, "member": member, "black": rec.black,
                   "white": rec.white, "handicap": int(rec.handicap), "result": str(rec.result),
                   "winner": rec.result.winner, "num_moves": rec.num_moves, **meta}
            if where is not None and not where_late and (why := where.reason(row)) is not None:
                skip("filtered_where", place, why)
                filtered_where[why] += 1
                continue
            t = time.perf_counter()
            try:
                out = replay(rec, min_moves=0, keep_history=False)
            except GotkError as e:
                t_replay += time.perf_counter() - t
                skip(e.reason, place, str(e))
                continue
            t_replay += time.perf_counter() - t
            rows = _kept_rows(rec, out.moves_played, include_passes, skip_first)
            err = out.error
            if err is not None and options.drop_partial:
                skip(err.reason, place, str(err))
                continue
            if rows == 0:
                skip(err.reason if err is not None else "too_short", place,
                     str(err) if err is not None else f"{rec.num_moves} moves, no position kept")
                continue
            if where_late:
                row.update(positions=rows, partial=err.reason if err is not None else None)
                if (why := where.reason(row)) is not None:
                    skip("filtered_where", place, why)
                    filtered_where[why] += 1
                    continue
            if err is not None:
                partial[err.reason] += 1
                examples.setdefault(f"partial:{err.reason}", f"{place}: {err}")
            row.update(path=path, rows=rows, partial=err.reason if err is not None else None,
                       size=rec.size, first_player=int(rec.first_player or 0),
                       setup_black=_u16(rec.setup_black), setup_white=_u16(rec.setup_white),
                       setup_empty=_u16(rec.setup_empty), colors=np.asarray(rec.colors, dtype="u1").tobytes(),
                       points=_u16(rec.points))
            for key in cols:
                cols[key].append(row[key])

    stats = {
        "unit_id": unit.unit_id,
        "digest": unit.digest,
        "games_read": games_read,
        "candidates": len(cols["game_id"]),
        "skipped": dict(sorted(skipped.items())),
        "partial": dict(sorted(partial.items())),
        "examples": dict(sorted(examples.items())),
        "warnings": dict(sorted(warnings.items())),
        "filtered_where": dict(sorted(filtered_where.items())),
        "sgf_reader": dict(sorted(reader.items())),
    }
    table = pa.Table.from_pydict(cols, schema=SCAN_SCHEMA)
    table = table.replace_schema_metadata({UNIT_META_KEY: json.dumps(stats, sort_keys=True).encode()})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    blob = sink.getvalue()
    st = options.storage()
    st.write_bytes_atomic(scan_path(options.work_dir, unit.unit_id), blob)
    st.write_text_atomic(scan_sum_path(options.work_dir, unit.unit_id), sha256_bytes(blob))
    total = time.perf_counter() - t0
    stats["timing"] = {"parse_s": t_parse, "replay_s": t_replay, "other_s": total - t_parse - t_replay,
                       "scan_other_s": total - t_parse - t_replay}
    return {**stats, "games": table, "peak_rss_mib": peak_rss_mib()}


def warm_up(options: ShardOptions) -> None:
    """Compile (or load from numba's cache) every kernel a work unit runs: :func:`warm_scan` and
    :func:`warm_encoder`. Called in the parent before a process pool forks, so the workers inherit the
    compiled code instead of each compiling its own copy at once."""
    warm_scan(options)
    warm_encoder(options)


_WARM_GAME = b"(;GM[1]SZ[%d];B[aa];W[ba];B[];W[])"


def warm_scan(options: ShardOptions) -> None:
    """Compile what a scan unit runs (the SGF reader and the replay), on a four-move game."""
    from gotk.game.replay import replay
    from gotk.sgf.reader import read_sgf

    (rec,) = read_sgf(_WARM_GAME % options.board_size)
    replay(rec, min_moves=0, keep_history=False)


def warm_encoder(options: ShardOptions) -> None:
    """Compile what a shard runs: ``options``' encoder (and only that one), on a four-move game."""
    from gotk.sgf.reader import read_sgf

    (rec,) = read_sgf(_WARM_GAME % options.board_size)
    _encoder(options).encode_game(rec, include_passes=options.include_passes, skip_first=options.skip_first)


def encoder_in_cache(options: ShardOptions) -> bool:
    """Whether numba's cache already holds ``options``' encoder (its game loop): False on a first run."""
    from gotk import jit

    loop = getattr(_encoder(options), "game_loop", None)
    return loop is None or jit.in_cache(loop)


def encoder_compiles_ahead(options: ShardOptions) -> bool:
    """Whether ``options``' encoder gains from compiling in a helper process on a first run: its own kernels
    are much more than the scan's (alphago's ladder reader), not a copy of them (the small encoders)."""
    return bool(getattr(_encoder(options), "compile_ahead", False))


# --- encoding ---------------------------------------------------------------------------------

_ENCODERS: dict[str, object] = {}


def _encoder(options: ShardOptions):
    key = json.dumps([options.encoder, options.board_size, options.encoder_options],
                     sort_keys=True)
    enc = _ENCODERS.get(key)
    if enc is None:
        from gotk.encoders import get_encoder

        enc = get_encoder(options.encoder, board_size=options.board_size,
                          **(options.encoder_options))
        _ENCODERS[key] = enc
    return enc


class _UnitGames:
    """One scan file's games, columns held as numpy views (no per-game Python objects until asked):
    :meth:`record` rebuilds the compact :class:`GameRecord` the encoder replays."""

    def __init__(self, table: pa.Table) -> None:
        self.game_id = table.column("game_id").to_pylist()
        self.winner = table.column("winner").to_pylist()
        self.rules = table.column("rules_raw").to_pylist()  # as written: the engine reads RU spellings
        self.rows = table.column("rows").to_numpy()
        self.size = table.column("size").to_numpy()
        self.komi = table.column("komi").fill_null(0.0).to_numpy()
        self.handicap = table.column("handicap").to_numpy()
        self.first_player = table.column("first_player").to_numpy()
        self._bin = {name: self._binary(table.column(name))
                     for name in ("setup_black", "setup_white", "setup_empty", "colors", "points")}

    @staticmethod
    def _binary(col: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
        """(offsets, bytes) of a binary column, both numpy views."""
        arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        _, off, data = arr.buffers()
        offsets = np.frombuffer(off, dtype=np.int32)[arr.offset: arr.offset + len(arr) + 1]
        raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.empty(0, np.uint8)
        return offsets, raw

    def _bytes(self, name: str, i: int) -> np.ndarray:
        off, raw = self._bin[name]
        return raw[off[i]: off[i + 1]]

    def _points(self, name: str, i: int) -> tuple[int, ...]:
        b = self._bytes(name, i)
        return tuple(b.view("<u2").tolist()) if b.size else ()

    def record(self, i: int) -> GameRecord:
        first = int(self.first_player[i])
        return GameRecord(
            size=int(self.size[i]), komi=float(self.komi[i]), handicap=int(self.handicap[i]),
            rules=self.rules[i] or "", setup_black=self._points("setup_black", i),
            setup_white=self._points("setup_white", i), setup_empty=self._points("setup_empty", i),
            colors=self._bytes("colors", i).view(np.int8), points=self._bytes("points", i).view("<i2"),
            first_player=first or None,
        )


#: Rows encoded before they are handed to the shard writer: about this many bytes of packed
#: features (at least one row group), so memory stays bounded whatever ``--shard-rows``.
BATCH_BYTES = 64 << 20


def shard_done_path(work_dir: str | os.PathLike, split: str, index: int) -> Path | str:
    return join(work_dir, "shards", f"{split}-{index:05d}.json")


def encode_shard(spec: dict, options: ShardOptions) -> dict:
    """Encode one final shard: ``spec`` = ``{"split", "index", "file" (relative to the output
    folder), "digest", "pieces": [[unit_id, game_index, row_lo, row_hi], ...]}``; ``options``:
    ``encoder``, ``encoder_options``, ``board_size``, ``include_passes``, ``skip_first``,
    ``work_dir``, ``out_dir``, ``row_group_rows``, ``zstd_level``. Returns the shard's entry
    (``file``, ``rows``, ``bytes``, ``sha256``) plus timings.

    Rows go straight into preallocated column arrays (features packed per game), a batch of up to
    :data:`BATCH_BYTES` at a time, and each batch is one zero-copy Arrow table for the writer."""
    t0 = time.perf_counter()
    enc = _encoder(options)
    desc = enc.describe()
    schema = S.shard_schema(desc)
    width = S.features_nbytes(desc)
    packed_bits = desc["dtype"] != "int8"
    include_passes = options.include_passes
    skip_first = options.skip_first
    st = options.storage()
    out_path = join(options.out_dir, spec["file"])
    row_group_rows = options.row_group_rows
    writer = S.ShardWriter(out_path, schema, row_group_rows, options.zstd_level, storage=st)
    batch_rows = max(row_group_rows, BATCH_BYTES // width)
    remaining = sum(hi - lo for _, _, lo, hi in spec["pieces"])
    t_encode = t_write = 0.0
    cols: dict[str, np.ndarray] = {}
    gids: list[str] = []
    pos = 0

    def new_batch(need: int) -> None:
        nonlocal pos
        n = max(need, min(batch_rows, remaining))
        cols.update(feat=np.empty((n, width), np.uint8), gidx=np.empty(n, np.int32), move=np.empty(n, np.int32),
                    tp=np.empty(n, np.int8), label=np.empty(n, np.int16), value=np.empty(n, np.int8))
        gids.clear()
        pos = 0

    def flush() -> None:
        nonlocal t_write
        t = time.perf_counter()
        if pos:
            game_ids = pa.array(gids, pa.string()).take(pa.array(cols["gidx"][:pos]))
            writer.write(S.rows_table(schema, game_ids, cols["move"][:pos], cols["tp"][:pos], cols["feat"][:pos],
                                      cols["label"][:pos], cols["value"][:pos]))
        t_write += time.perf_counter() - t

    def room(k: int) -> slice:
        """Rows ``pos:pos + k`` of the batch (flushed and started afresh first when they do not fit)."""
        if pos + k > len(cols["label"]):
            flush()
            new_batch(k)
        return slice(pos, pos + k)

    def close_rows(k: int, winner, gid: str) -> None:
        """The ``k`` rows just written at ``pos`` get their value targets and game; the batch moves on."""
        nonlocal pos, remaining
        sl = slice(pos, pos + k)
        cols["value"][sl] = value_targets(winner, cols["tp"][sl])
        cols["gidx"][sl] = len(gids)
        gids.append(gid)
        pos += k
        remaining -= k

    def put(eg, a: int, b: int, winner, gid: str) -> None:
        """Rows ``a:b`` of the encoded piece ``eg`` into the batch."""
        k = b - a
        sl = room(k)
        feats = eg.features[a:b].reshape(k, -1)
        cols["feat"][sl] = np.packbits(feats, axis=1, bitorder="big") if packed_bits else feats.view(np.uint8)
        cols["move"][sl] = eg.move_numbers[a:b]
        cols["tp"][sl] = eg.to_play[a:b]
        cols["label"][sl] = eg.labels[a:b]
        close_rows(k, winner, gid)

    def put_whole(rec, nrows: int, winner, gid: str) -> bool:
        """A whole game's rows encoded straight into the batch (no per-game arrays, no copy): planes
        into the batch's own feature rows (unpacked encoders) or into ``scratch`` and packed from there.
        False (nothing written) when the encoder cannot, or the game is longer than one piece."""
        nonlocal scratch
        cap = kept_count(rec.points, rec.size, include_passes, skip_first)  # rows the loop may touch
        if into is None or cap > chunk_moves:
            return False
        sl = room(cap)
        if packed_bits:
            if scratch is None:
                scratch = np.empty((chunk_moves, enc.num_planes, enc.num_points), dtype=enc.np_dtype)
            out = scratch[:cap]
        else:
            out = cols["feat"][sl].view(enc.np_dtype).reshape(cap, enc.num_planes, enc.num_points)
        out[:] = 0
        rows, _, _ = into(rec, out, cols["label"][sl], cols["move"][sl], cols["tp"][sl], include_passes, skip_first)
        if rows != nrows:
            raise RuntimeError(f"encoder {desc['name']} gave {rows} rows for game {gid}, the scan counted {nrows}")
        if packed_bits:
            cols["feat"][pos:pos + rows] = np.packbits(out[:rows].reshape(rows, -1), axis=1, bitorder="big")
        close_rows(rows, winner, gid)
        return True

    # long games are encoded a piece at a time: about BATCH_BYTES of unpacked planes per piece
    chunk_moves = max(256, BATCH_BYTES // (enc.num_planes * enc.num_points * enc.np_dtype.itemsize))
    scratch: np.ndarray | None = None
    into = getattr(enc, "encode_game_into", None)  # every FillEncoder; another Encoder goes through its chunks
    try:
        unit_id_now, unit = None, None
        new_batch(0)
        for unit_id, game_index, lo, hi in spec["pieces"]:
            if unit_id != unit_id_now:  # pieces come in unit order: one unit's records at a time
                unit = _UnitGames(read_scan_table(scan_path(options.work_dir, unit_id), st))
                unit_id_now = unit_id
            rec = unit.record(game_index)
            game_rows = 0
            gid = unit.game_id[game_index]
            t, w = time.perf_counter(), t_write
            if lo == 0 and hi == unit.rows[game_index] and put_whole(rec, hi, unit.winner[game_index], gid):
                t_encode += time.perf_counter() - t - (t_write - w)  # a flush on the way counts as writing
                continue
            for eg in enc.encode_game_chunks(rec, include_passes=include_passes, skip_first=skip_first,
                                             chunk_moves=chunk_moves):
                t_encode += time.perf_counter() - t
                r0, game_rows = game_rows, game_rows + len(eg)
                a, b = max(lo, r0), min(hi, game_rows)
                if a < b:
                    put(eg, a - r0, b - r0, unit.winner[game_index], gid)
                t = time.perf_counter()
            t_encode += time.perf_counter() - t
            if game_rows != unit.rows[game_index]:
                raise RuntimeError(f"encoder {desc['name']} gave {game_rows} rows for game "
                                   f"{gid}, the scan counted {unit.rows[game_index]}")
        flush()
        t = time.perf_counter()
        info = writer.close()
        t_write += time.perf_counter() - t
    except BaseException:
        writer.abort()
        raise
    entry = {"file": spec["file"], "rows": info["rows"], "bytes": info["bytes"], "sha256": info["sha256"]}
    done = shard_done_path(options.work_dir, spec["split"], spec["index"])
    record = json.dumps({"digest": spec["digest"], **entry}, sort_keys=True)
    st.write_text_atomic(done, record)
    total = time.perf_counter() - t0
    return {**entry, "timing": {"encode_s": t_encode, "other_s": total - t_encode,
                                "shard_write_s": t_write, "shard_rest_s": total - t_encode - t_write},
            "peak_rss_mib": peak_rss_mib()}


def reuse_shard(spec: dict, options: ShardOptions) -> dict | None:
    """The entry of a shard finished by an earlier run with the same plan, or None (then it is encoded
    again): the file must still have the size and sha256 its done-record wrote (a damaged shard is redone)."""
    st = options.storage()
    done = shard_done_path(options.work_dir, spec["split"], spec["index"])
    try:
        rec = json.loads(st.read_text(done))
    except (OSError, ValueError):
        return None
    path = join(options.out_dir, spec["file"])
    if rec.get("digest") != spec["digest"] or not st.isfile(path) or st.size(path) != rec.get("bytes"):
        return None
    src = st.open_input(path)
    try:
        with open(src, "rb") if isinstance(src, str) else src as f:
            if sha256_stream(f)[0] != rec.get("sha256"):
                return None
    except OSError:
        return None
    return {k: rec[k] for k in ("file", "rows", "bytes", "sha256")}

