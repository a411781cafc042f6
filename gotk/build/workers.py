"""The two work units of ``gotk encode``: pure top-level functions ``(unit spec, options) → result``.

Both write their output files themselves (atomically: ``.tmp`` + rename) and return small picklable
dicts, so the same functions run in-process (``--workers 1``), in a process pool, or under any other
executor (e.g. Dask ``client.submit(scan_unit, spec, options)``) given a shared file system.

* :func:`scan_unit` — a chunk of SGF inputs (bytes in memory) → parse, hash (``game_id``), filter,
  replay to count the rows each game yields → ``WORK/unit-NNNNN.arrow`` (an uncompressed
  Arrow IPC file: cheap to write and memory-mapped back): one row per candidate game (metadata +
  the compact record: setup stones, colours, points), with the unit's counts (games read, skip
  reasons) in the schema metadata. The table also comes back with the result (``"games"``), so
  the parent plans from it without reading the file.
* :func:`encode_shard` — a shard plan (a list of pieces: unit, game, row range) → replay + encode
  every piece with the encoder, pack, write ``OUT/<split>/part-NNNNN.parquet``; a done-record in
  ``WORK/shard-SPLIT-NNNNN.json`` marks it finished for ``--resume``.

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
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from gotk.build.splits import passes_min_rank
from gotk.encoders.base import kept_count, kept_counts
from gotk.errors import GotkError
from gotk.hashing import sha256_bytes, sha256_stream
from gotk.sgf.record import GameRecord, signed_value_targets, value_targets, winner_sign
from gotk.shards import format as S
from gotk.shards import manifest as M
from gotk.shards.gameid import game_id, game_ids
from gotk.storage import Storage, join

if TYPE_CHECKING:
    from gotk.game.replay import GameBatch

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
    h = hashlib.sha256()  # twice blake2b's speed where the CPU has SHA extensions (this host: 1.6 vs 3.2 ms/3 MB)
    h.update(json.dumps([SCAN_VERSION, scan_options.key()], sort_keys=True).encode())
    for path, archive, member, data in items:
        h.update(f"{path}\0{archive}\0{member}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()[:32]


# Scan files and done-records sit in WORK itself, not in folders of their own: removing a folder cost this
# host's file system (ext4, discard) 3-4 ms each at the end of every run, 4% of a one-worker encode.
def scan_path(work_dir: str | os.PathLike, unit_id: int) -> Path | str:
    return join(work_dir, f"unit-{unit_id:05d}.arrow")


def scan_sum_path(work_dir: str | os.PathLike, unit_id: int) -> Path | str:
    """The sha256 of a finished scan file, written after it: ``--resume`` reuses a scan only when it matches."""
    return join(work_dir, f"unit-{unit_id:05d}.sha256")


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


def _kept_rows(rec: GameRecord, played: int, include_passes: bool, skip_first: int) -> int:
    """Rows the encoder yields for ``played`` replayed moves (:func:`gotk.encoders.base.kept_count`)."""
    return kept_count(rec.points[:played], rec.size, include_passes, skip_first)


_WHERE_AFTER_REPLAY = {"positions", "partial"}  # columns known only once the game is replayed
_SCAN_ARRAYS = ("setup_black", "setup_white", "setup_empty", "colors", "points")  # the compact record's arrays


def _binary_column(data: np.ndarray, offsets: np.ndarray, keep: np.ndarray) -> pa.Array:
    """A binary column of the rows ``keep`` of a flat array cut at ``offsets`` (row ``g`` =
    ``data[offsets[g]:offsets[g + 1]]``), each row its elements' little-endian bytes."""
    if len(keep) == len(offsets) - 1:  # every row (the usual case), and offsets start at 0: no gather
        ends = (np.asarray(offsets) * data.dtype.itemsize).astype(np.int32)
        raw = np.ascontiguousarray(data).view(np.uint8)
        return pa.Array.from_buffers(pa.binary(), len(keep), [None, pa.py_buffer(ends), pa.py_buffer(raw)])
    lengths = (offsets[1:] - offsets[:-1])[keep]
    starts = offsets[:-1][keep]
    index = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths) + np.arange(lengths.sum())
    raw = np.ascontiguousarray(data[index]).view(np.uint8)
    item = data.dtype.itemsize
    ends = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths * item, out=ends[1:])
    return pa.Array.from_buffers(pa.binary(), len(lengths), [None, pa.py_buffer(ends), pa.py_buffer(raw)])


def _scan_arrays(batch: GameBatch, offsets: np.ndarray, kept: list[int]) -> dict[str, pa.Array]:
    """The scan file's record arrays (:data:`_SCAN_ARRAYS`) of the games ``kept`` of the replayed ``batch``
    (``offsets``: each game's main-line range): setup points and points as ``<u2``, colours as ``u1``."""
    from gotk.game import kernels as K

    keep = np.asarray(kept, dtype=np.int64)
    moves = np.append(offsets[:, 0], offsets[-1, 1] if len(offsets) else 0)
    games = batch.games
    out = {"colors": _binary_column(batch.colors.astype("u1"), moves, keep),
           "points": _binary_column(batch.points.astype("<u2"), moves, keep)}
    for name, c0, pts in (("setup_black", K.G_B0, batch.setup_b), ("setup_white", K.G_W0, batch.setup_w),
                          ("setup_empty", K.G_E0, batch.setup_e)):
        off = np.append(games[:, c0], games[-1, c0 + 1] if len(games) else 0)
        out[name] = _binary_column(pts.astype("<u2"), off, keep)
    return out


def _where(text: str | None):
    from gotk.build.filters import compile_where

    return compile_where(text, M.ENCODE_WHERE_COLUMNS) if text else None


def scan_unit(unit: ScanUnit, options: ScanOptions) -> dict:
    """Parse, identify, filter and count one chunk of inputs; write its scan file; return its stats.

    Three passes, so that the replays of the whole unit run in one compiled call: read and filter every
    game (its skips noted in source order), replay the games left (:func:`gotk.game.replay.replay_batch`),
    then settle each game in source order (skips and first examples exactly as one game at a time gives)."""
    from gotk.game import kernels as K
    from gotk.game.replay import GameBatch, replay, replay_batch, stop_error
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

    def skip(reason: str, where: str, message: str = "") -> None:
        skipped[reason] += 1
        examples.setdefault(reason, f"{where}: {message}" if message else where)

    # pass 1: read, normalise, filter; ``steps`` holds, in source order, a skip (reason, where, message) or
    # the index of a game to replay in ``games`` (place, path, record, row)
    steps: list[tuple[str, str, str] | int] = []
    games: list[tuple[str, str, GameRecord, dict]] = []
    for path, archive, member, data in unit.items:
        place = f"{archive}:{member}" if member else archive
        t = time.perf_counter()
        try:
            records = list(iter_sgf(data, archive, member, counts=reader))
        except GotkError as e:
            t_parse += time.perf_counter() - t
            games_read += 1
            steps.append((e.reason, place, str(e)))
            continue
        t_parse += time.perf_counter() - t
        for rec in records:
            games_read += 1
            if isinstance(rec, GotkError):
                steps.append((rec.reason, place, str(rec)))
                continue
            meta = normalise_record(rec, bots)
            if rec.warnings:  # the reader's fallbacks (charset_mismatch) join the metadata warnings
                meta["warnings"] = ",".join(sorted({*(meta["warnings"] or "").split(","), *rec.warnings} - {""}))
                examples.setdefault(f"warning:{rec.warnings[0]}", place)
            if meta["warnings"]:
                warnings.update(meta["warnings"].split(","))
            if rec.size != size:
                steps.append(("bad_size", place, f"board {rec.size}x{rec.size}, expected {size}x{size}"))
                continue
            if options.max_moves and rec.num_moves > options.max_moves:
                steps.append(("too_long", place, f"{rec.num_moves} moves, over --max-moves {options.max_moves}"))
                continue
            if options.no_handicap and (rec.handicap >= 2 or rec.setup_black or rec.setup_white):
                steps.append(("filtered_handicap", place, f"handicap {rec.handicap}"))
                continue
            if not passes_min_rank(rec.black_rank, rec.white_rank, min_rank):
                steps.append(("filtered_rank", place, f"{rec.black_rank or '?'} vs {rec.white_rank or '?'}"))
                continue
            row = {"game_id": game_id(rec) if where is not None else "", "archive": archive, "member": member,
                   "black": rec.black, "white": rec.white, "handicap": int(rec.handicap), "result": str(rec.result),
                   "winner": rec.result.winner, "num_moves": rec.num_moves, **meta}
            if where is not None and not where_late and (why := where.reason(row)) is not None:
                steps.append(("filtered_where", place, why))
                filtered_where[why] += 1
                continue
            steps.append(len(games))
            games.append((place, path, rec, row))

    # pass 2: every game left replayed (and its rows counted) in one compiled call
    t = time.perf_counter()
    batch = GameBatch.from_records([g[2] for g in games])
    replayed = replay_batch(batch)
    offsets = batch.games[:, [K.G_M0, K.G_M1]]
    moves = np.append(offsets[:, 0], offsets[-1, 1] if len(offsets) else 0)
    rows_kept = kept_counts(batch.points, moves, replayed[:, 0], size, include_passes, skip_first).tolist()
    played, status = replayed[:, 0].tolist(), replayed[:, 1].tolist()
    t_replay += time.perf_counter() - t
    if where is None:  # the ids of the whole batch at once (a --where may read them before the replay)
        setup = [(pts, np.append(batch.games[:, c], batch.games[-1, c + 1] if len(batch) else 0))
                 for pts, c in ((batch.setup_b, K.G_B0), (batch.setup_w, K.G_W0), (batch.setup_e, K.G_E0))]
        for (_, _, _, row), gid in zip(games, game_ids(size, batch.colors, batch.points, moves, setup), strict=True):
            row["game_id"] = gid

    # pass 3: each game settled in source order
    kept: list[int] = []
    kept_rows: list[dict] = []
    for step in steps:
        if not isinstance(step, int):
            skip(*step)
            continue
        place, path, rec, row = games[step]
        if status[step] == K.SETUP_FAILED:  # replay raises the error (bad_setup) with its message
            t = time.perf_counter()
            try:
                out = replay(rec, min_moves=0, keep_history=False)
            except GotkError as e:
                t_replay += time.perf_counter() - t
                skip(e.reason, place, str(e))
                continue
            t_replay += time.perf_counter() - t
            err = out.error
            rows_kept[step] = _kept_rows(rec, out.moves_played, include_passes, skip_first)
        elif status[step] != K.OK or rec.defect is not None:
            err = stop_error(rec, status[step], played[step], rec.colors, rec.points)
        else:
            err = None
        rows = rows_kept[step]
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
                   size=rec.size, first_player=int(rec.first_player or 0))
        kept_rows.append(row)
        kept.append(step)
    columns: dict[str, list | pa.Array] = _scan_arrays(batch, offsets, kept)
    for name in SCAN_SCHEMA.names:
        if name not in columns:
            columns[name] = [row[name] for row in kept_rows]

    stats = {
        "unit_id": unit.unit_id,
        "digest": unit.digest,
        "games_read": games_read,
        "candidates": len(kept_rows),
        "skipped": dict(sorted(skipped.items())),
        "partial": dict(sorted(partial.items())),
        "examples": dict(sorted(examples.items())),
        "warnings": dict(sorted(warnings.items())),
        "filtered_where": dict(sorted(filtered_where.items())),
        "sgf_reader": dict(sorted(reader.items())),
    }
    table = pa.Table.from_pydict(columns, schema=SCAN_SCHEMA)
    table = table.replace_schema_metadata({UNIT_META_KEY: json.dumps(stats, sort_keys=True).encode()})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    blob = sink.getvalue()
    st = options.storage()
    digest = sha256_bytes(blob)
    st.write_bytes_atomic(scan_path(options.work_dir, unit.unit_id), blob)
    st.write_text_atomic(scan_sum_path(options.work_dir, unit.unit_id), digest)
    remember_unit(options.work_dir, unit.unit_id, st, table, digest, batch.take(np.asarray(kept, dtype=np.int64)))
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
    """Compile what a scan unit runs (the SGF reader and the batch replay), on a four-move game."""
    from gotk.game.replay import GameBatch, replay_batch
    from gotk.sgf.reader import read_sgf

    (rec,) = read_sgf(_WARM_GAME % options.board_size)
    replay_batch(GameBatch.from_records([rec]))


def warm_encoder(options: ShardOptions) -> None:
    """Compile what a shard runs: ``options``' encoder (and only that one: its batch loop, else its game loop),
    on a four-move game."""
    from gotk.game.replay import GameBatch, replay_batch
    from gotk.sgf.reader import read_sgf

    (rec,) = read_sgf(_WARM_GAME % options.board_size)
    enc = _encoder(options)
    if getattr(enc, "batchable", False):
        batch = GameBatch.from_records([rec])
        replay_batch(batch)
        n = rec.num_moves
        enc.encode_batch_into(batch, np.empty((n, enc.num_planes, enc.num_points), enc.np_dtype),
                              np.empty(n, np.int16), np.empty(n, np.int32), np.empty(n, np.int8),
                              options.include_passes, options.skip_first)
    else:
        enc.encode_game(rec, include_passes=options.include_passes, skip_first=options.skip_first)


def encoder_in_cache(options: ShardOptions) -> bool:
    """Whether numba's cache already holds ``options``' encoder (the loop its shards run): False on a first run."""
    from gotk import jit

    loop = getattr(_encoder(options), "shard_loop", None)
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
        self._batch: GameBatch | None = None
        self.caps: dict[tuple[bool, int], np.ndarray] = {}  # cap() per row rule
        self.sign: np.ndarray | None = None  # each game's winner_sign (after batch())

    @staticmethod
    def _binary(col: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
        """(offsets, bytes) of a binary column, both numpy views."""
        arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        _, off, data = arr.buffers()
        offsets = np.frombuffer(off, dtype=np.int32)[arr.offset: arr.offset + len(arr) + 1]
        raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.empty(0, np.uint8)
        return offsets, raw

    def batch(self, size: int) -> GameBatch | None:
        """Every game of the unit as one :class:`~gotk.game.replay.GameBatch` (made once), or None unless
        every game is on a ``size`` board."""
        from gotk.game.replay import GameBatch

        if self._batch is None:
            if not bool(np.all(self.size == size)):
                return None

            def flat(name: str, dtype: str) -> tuple[np.ndarray, np.ndarray]:
                off, raw = self._bin[name]
                item = np.dtype(dtype).itemsize
                return raw[off[0]: off[-1]].view(dtype), (off - off[0]) // item

            colors, moves = flat("colors", "i1")
            points, point_moves = flat("points", "<i2")
            if not np.array_equal(moves, point_moves):
                raise ValueError("scan file: the colors and points columns disagree")
            setup = [flat(name, "<u2") for name in ("setup_black", "setup_white", "setup_empty")]
            self.use_batch(GameBatch.from_arrays(size, self.rules, (colors, points, moves), setup))
        return self._batch if self._batch.size == size else None

    def use_batch(self, batch: GameBatch) -> None:
        """Take ``batch`` (the unit's games, in order, as the scan that wrote the table replayed them) as
        :meth:`batch`'s, instead of building it from the table's columns."""
        self._batch = batch
        self.sign = np.array([winner_sign(w) for w in self.winner], dtype=np.int8)

    def cap(self, include_passes: bool, skip_first: int) -> np.ndarray:
        """Each game's :func:`~gotk.encoders.base.kept_count` of its whole main line: the rows an encoder
        may touch (after :meth:`batch`)."""
        from gotk.game import kernels as K

        key = (include_passes, skip_first)
        if key not in self.caps:
            b = self._batch
            moves = np.append(b.games[:, K.G_M0], b.games[-1, K.G_M1] if len(b) else 0)
            self.caps[key] = kept_counts(b.points, moves, np.diff(moves), b.size, include_passes, skip_first)
        return self.caps[key]

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


_UNITS: dict[tuple, _UnitGames] = {}  # recently read local scan units (see unit_games)
_UNITS_KEPT = 64


def _keep_unit(key: tuple, unit: _UnitGames) -> _UnitGames:
    if len(_UNITS) >= _UNITS_KEPT or any(k[0] != key[0] for k in _UNITS):
        _UNITS.clear()  # too many, or another run's
    _UNITS[key] = unit
    return unit


def unit_games(work_dir: str, unit_id: int, st: Storage) -> _UnitGames:
    """Scan unit ``unit_id``'s games. A process that writes several shards reads each unit once while it is
    among the last :data:`_UNITS_KEPT` read or scanned here (each split's shards take pieces of every unit).
    Local files only; a unit is known by the sha256 written beside its scan file, so a scan file written
    afresh (``--resume``, another run in the same folder) is read afresh."""
    if not st.is_local:
        return _UnitGames(read_scan_table(scan_path(work_dir, unit_id), st))
    key = (str(work_dir), unit_id, st.read_text(scan_sum_path(work_dir, unit_id)).strip())
    unit = _UNITS.get(key)
    return unit if unit is not None else _keep_unit(key, _UnitGames(read_scan_table(scan_path(work_dir, unit_id),
                                                                                     st)))


def remember_unit(work_dir: str, unit_id: int, st: Storage, table: pa.Table, sha256: str, batch: GameBatch) -> None:
    """Keep the table of the scan file (of that ``sha256``) this process just wrote, and the batch of its games
    the scan replayed, for :func:`unit_games` (local files only): with one worker the shards then read no scan
    file back."""
    if st.is_local:
        unit = _UnitGames(table)
        unit.use_batch(batch)
        _keep_unit((str(work_dir), unit_id, sha256), unit)


#: Rows encoded before they are handed to the shard writer: about this many bytes of packed
#: features (at least one row group), so memory stays bounded whatever ``--shard-rows``.
BATCH_BYTES = 64 << 20


def shard_done_path(work_dir: str | os.PathLike, split: str, index: int) -> Path | str:
    return join(work_dir, f"shard-{split}-{index:05d}.json")


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
            ids = pa.array(gids, pa.string()).take(pa.array(cols["gidx"][:pos]))
            writer.write(S.rows_table(schema, ids, cols["move"][:pos], cols["tp"][:pos], cols["feat"][:pos],
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

    def encode_run(unit: _UnitGames, run: np.ndarray, out: np.ndarray, sl: slice) -> tuple[np.ndarray, int]:
        """Games ``run`` of ``unit`` encoded by one compiled call (the encoder's batch loop), planes into ``out``
        and labels, move numbers and colours to play into rows ``sl`` of ``rows_to`` (the batch, or
        ``part_rows``); checked against the rows the scan counted. Returns (rows per game, rows in all)."""
        from gotk.game.replay import initial_state

        sub = unit.batch(enc.board_size).take(run)
        result, rows, done = enc.encode_batch_into(sub, out, rows_to["label"][sl], rows_to["move"][sl],
                                                   rows_to["tp"][sl], include_passes, skip_first)
        if done < len(run):  # unusable setup stones: the game's own first position raises the error
            initial_state(unit.record(int(run[done])))
            raise RuntimeError(f"game {unit.game_id[run[done]]}: the batch loop refused its setup stones")
        wrong = np.flatnonzero(result[:, 0] != unit.rows[run])
        if wrong.size:
            g = int(run[wrong[0]])
            raise RuntimeError(f"encoder {desc['name']} gave {int(result[wrong[0], 0])} rows for game "
                               f"{unit.game_id[g]}, the scan counted {unit.rows[g]}")
        return result[:, 0], rows

    def planes_scratch() -> np.ndarray:
        nonlocal scratch
        if scratch is None:
            scratch = np.empty((chunk_moves, enc.num_planes, enc.num_points), dtype=enc.np_dtype)
        return scratch

    def put_games(unit: _UnitGames, games: list[int]) -> None:
        """Whole games of ``unit`` (each under ``chunk_moves`` rows) encoded straight into the batch, as
        many per compiled call (:func:`encode_run`) as the batch (and, for bit encoders, ``scratch``) has
        room for; the same rows as :func:`put_whole` one by one."""
        nonlocal pos, remaining, rows_to
        caps = unit.cap(include_passes, skip_first)
        index = np.asarray(games, dtype=np.int64)
        rows_to = cols
        k = 0
        while k < len(index):
            if pos + caps[index[k]] > len(cols["label"]):
                flush()
                new_batch(int(caps[index[k]]))
            room_rows = len(cols["label"]) - pos
            if packed_bits:
                room_rows = min(room_rows, chunk_moves)
            run = index[k:]
            run = run[:max(1, int(np.searchsorted(np.cumsum(caps[run]), room_rows, side="right")))]
            cap = int(caps[run].sum())
            sl = slice(pos, pos + cap)
            out = (planes_scratch() if packed_bits else
                   cols["feat"][sl].view(enc.np_dtype).reshape(cap, enc.num_planes, enc.num_points))
            per_game, rows = encode_run(unit, run, out, sl)
            sl = slice(pos, pos + rows)
            if packed_bits:
                cols["feat"][sl] = np.packbits(out[:rows].reshape(rows, -1), axis=1, bitorder="big")
            cols["value"][sl] = signed_value_targets(np.repeat(unit.sign[run], per_game), cols["tp"][sl])
            cols["gidx"][sl] = np.repeat(np.arange(len(gids), len(gids) + len(run), dtype=np.int32), per_game)
            gids.extend(unit.game_id[g] for g in run.tolist())
            pos += rows
            remaining -= rows
            k += len(run)

    def put_part(unit: _UnitGames, g: int, lo: int, hi: int) -> None:
        """Rows ``lo:hi`` of game ``g`` of ``unit`` (under ``chunk_moves`` rows; the rest of it goes to another
        shard): the whole game encoded by the batch loop into scratch, those rows copied into the batch."""
        nonlocal rows_to
        rows_to = part_rows
        out = planes_scratch()
        encode_run(unit, np.array([g], dtype=np.int64), out, slice(0, chunk_moves))
        k = hi - lo
        sl = room(k)
        feats = out[lo:hi].reshape(k, -1)
        cols["feat"][sl] = np.packbits(feats, axis=1, bitorder="big") if packed_bits else feats.view(np.uint8)
        for name in ("move", "tp", "label"):
            cols[name][sl] = part_rows[name][lo:hi]
        close_rows(k, unit.winner[g], unit.game_id[g])

    # long games are encoded a piece at a time: about BATCH_BYTES of unpacked planes per piece
    chunk_moves = max(256, BATCH_BYTES // (enc.num_planes * enc.num_points * enc.np_dtype.itemsize))
    scratch: np.ndarray | None = None
    part_rows = {"label": np.empty(chunk_moves, np.int16), "move": np.empty(chunk_moves, np.int32),
                 "tp": np.empty(chunk_moves, np.int8)}  # put_part's rows of one game
    rows_to = cols  # where encode_run writes labels, move numbers and colours to play
    into = getattr(enc, "encode_game_into", None)  # every FillEncoder; another Encoder goes through its chunks
    batchable = into is not None and getattr(enc, "batchable", False)
    run: list[int] = []  # whole games of the current unit waiting for put_games

    def put_run() -> None:
        nonlocal t_encode
        t, w = time.perf_counter(), t_write
        put_games(unit, run)
        t_encode += time.perf_counter() - t - (t_write - w)  # a flush on the way counts as writing
        run.clear()

    try:
        unit_id_now, unit = None, None
        new_batch(0)
        for unit_id, game_index, lo, hi in spec["pieces"]:
            if unit_id != unit_id_now:  # pieces come in unit order: one unit's records at a time
                if run:
                    put_run()
                unit = unit_games(options.work_dir, unit_id, st)
                unit_id_now = unit_id
                # whole games of this unit the batch loop takes: the rows they yield, else -1
                whole = (np.where(unit.cap(include_passes, skip_first) <= chunk_moves, unit.rows, -1).tolist()
                         if batchable and unit.batch(enc.board_size) is not None else [-1] * len(unit.rows))
            if whole[game_index] >= 0:
                if lo == 0 and hi == whole[game_index]:
                    run.append(game_index)
                    continue
                if run:
                    put_run()
                t, w = time.perf_counter(), t_write
                put_part(unit, game_index, lo, hi)
                t_encode += time.perf_counter() - t - (t_write - w)
                continue
            if run:
                put_run()
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
        if run:
            put_run()
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

