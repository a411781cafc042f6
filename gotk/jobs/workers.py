"""The scan work unit of ``gotk encode`` (the shard unit is :mod:`gotk.jobs.shard_unit`) and the options of both
units: pure top-level functions ``(unit spec, options) → result``. The scan files' layout and their games read
back are :mod:`gotk.jobs.scan_files`.

Both units write their output files themselves (atomically: ``.tmp`` + rename) and return small picklable
dicts, so the same functions run in-process (``--workers 1``), in a process pool, or under any other
executor (e.g. Dask ``client.submit(scan_unit, spec, options)``) given a shared file system.

* :func:`scan_unit` — a chunk of SGF inputs (bytes in memory) → parse, hash (``game_id``), filter,
  replay to count the rows each game yields → ``WORK/unit-NNNNN.arrow`` (an uncompressed
  Arrow IPC file: cheap to write and memory-mapped back): one row per candidate game (metadata +
  the compact record: setup stones, colours, points), with the unit's counts (games read, skip
  reasons) in the schema metadata. The table also comes back with the result (``"games"``), so
  the parent plans from it without reading the file. A process keeps the last scan units it wrote or
  read (:func:`gotk.jobs.scan_files.unit_games`), so its shards need not read them back.

``work_dir``/``out_dir`` may be fsspec URLs (``options.storage_options`` go to fsspec): then every
file goes through :mod:`gotk.storage`; local paths keep plain files + ``os.replace``.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from gotk.encoders.base import kept_count, kept_counts
from gotk.errors import GotkError
from gotk.hashing import sha256_bytes
from gotk.jobs.scan_files import (
    SCAN_SCHEMA,
    SCAN_VERSION,
    UNIT_META_KEY,
    remember_unit,
    scan_path,
    scan_sum_path,
)
from gotk.jobs.splits import passes_min_rank
from gotk.sgf.record import GameRecord
from gotk.shards import format as S
from gotk.shards import manifest as M
from gotk.shards.gameid import game_id, game_ids
from gotk.storage import Storage

if TYPE_CHECKING:
    from gotk.game.replay import BoardTrace, GameBatch

#: Games with more main-line moves are skipped as ``too_long`` (``gotk encode --max-moves``): real games
#: have a few hundred; a hostile file under the byte cap can hold over a million.
DEFAULT_MAX_MOVES = 10_000


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
    min_rank: int | None = None  # see gotk.jobs.splits.rank_value
    no_handicap: bool = False
    include_passes: bool = False
    skip_first: int = 0
    drop_partial: bool = False
    where: str | None = None  # a gotk.shards.where expression over the games table
    bot_patterns: tuple[str, ...] | None = None  # gotk.sgf.metadata.BotList patterns (None: the default list)
    max_moves: int = DEFAULT_MAX_MOVES
    storage_options: dict | None = None
    # keep each game's board trace (gotk.game.replay.BoardTrace) with the unit this process remembers
    # (remember_unit): its shards, in this process, then encode a board-only encoder without the engine
    board_trace: bool = False

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
    globals: bool = True  # shards carry the globals column (gotk.encoders.global_inputs)
    metadata: bool = False  # shards carry the metadata column (gotk.encoders.metadata_inputs)

    def storage(self) -> Storage:
        return Storage.for_url(self.out_dir, self.storage_options)


def unit_digest(items: list[tuple[str, str, str, bytes]], scan_options: ScanOptions) -> str:
    """Identity of a unit's inputs and the scan options that shape its result (reuse on ``--resume``)."""
    h = hashlib.sha256()  # faster than blake2b where the CPU has SHA extensions
    h.update(json.dumps([SCAN_VERSION, scan_options.key()], sort_keys=True).encode())
    for path, archive, member, data in items:
        h.update(f"{path}\0{archive}\0{member}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()[:32]


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
    from gotk.game import batch as B

    keep = np.asarray(kept, dtype=np.int64)
    moves = np.append(offsets[:, 0], offsets[-1, 1] if len(offsets) else 0)
    games = batch.games
    out = {"colors": _binary_column(batch.colors.astype("u1"), moves, keep),
           "points": _binary_column(batch.points.astype("<u2"), moves, keep)}
    for name, c0, pts in (("setup_black", B.G_B0, batch.setup_b), ("setup_white", B.G_W0, batch.setup_w),
                          ("setup_empty", B.G_E0, batch.setup_e)):
        off = np.append(games[:, c0], games[-1, c0 + 1] if len(games) else 0)
        out[name] = _binary_column(pts.astype("<u2"), off, keep)
    return out


def _where(text: str | None):
    from gotk.shards.where import compile_where

    return compile_where(text, M.ENCODE_WHERE_COLUMNS) if text else None


class _Tally:
    """What a scan unit counts as it goes: games read, skips (by reason, with the first example of each),
    partial games, metadata warnings, ``--where`` refusals, SGF reader paths, and the time spent parsing and
    replaying."""

    def __init__(self) -> None:
        self.games_read = 0
        self.skipped: Counter = Counter()
        self.partial: Counter = Counter()
        self.examples: dict[str, str] = {}
        self.warnings: Counter = Counter()
        self.filtered_where: Counter = Counter()
        self.reader: Counter = Counter()  # inputs / games per SGF reader path (compiled or sgfmill)
        self.parse_s = 0.0
        self.replay_s = 0.0

    def skip(self, reason: str, where: str, message: str = "") -> None:
        self.skipped[reason] += 1
        self.examples.setdefault(reason, f"{where}: {message}" if message else where)

    def stats(self, unit: ScanUnit, candidates: int) -> dict:
        """The unit's stats as its scan file stores them (every count sorted by key)."""
        return {
            "unit_id": unit.unit_id,
            "digest": unit.digest,
            "games_read": self.games_read,
            "candidates": candidates,
            "skipped": dict(sorted(self.skipped.items())),
            "partial": dict(sorted(self.partial.items())),
            "examples": dict(sorted(self.examples.items())),
            "warnings": dict(sorted(self.warnings.items())),
            "filtered_where": dict(sorted(self.filtered_where.items())),
            "sgf_reader": dict(sorted(self.reader.items())),
        }


class _UnitScan:
    """The three passes of :func:`scan_unit` over one unit, and what each hands to the next.

    :meth:`read` parses, normalises and filters every input, noting in :attr:`steps` (source order) either a
    skip ``(reason, where, message)`` or the index of a game in :attr:`games` ``(place, path, record, row)``;
    :meth:`replay` replays every game left in one compiled call (:func:`gotk.game.replay.replay_batch`) and
    counts its rows; :meth:`settle` walks :attr:`steps` again and decides each game, so skips and first
    examples come exactly as one game at a time would give them."""

    def __init__(self, options: ScanOptions) -> None:
        from gotk.sgf.metadata import BotList, default_bots

        self.options = options
        self.where = _where(options.where)
        self.where_late = self.where is not None and bool(self.where.used_columns() & _WHERE_AFTER_REPLAY)
        self.bots = default_bots() if options.bot_patterns is None else BotList(list(options.bot_patterns))
        self.tally = _Tally()
        self.steps: list[tuple[str, str, str] | int] = []
        self.games: list[tuple[str, str, GameRecord, dict]] = []
        # set by replay(): the games as one batch, its board trace, each game's main-line range, rows, moves
        # replayed and engine status
        self.batch: GameBatch | None = None
        self.trace: BoardTrace | None = None
        self.offsets = np.empty((0, 2), np.int64)
        self.rows_kept: list[int] = []
        self.played: list[int] = []
        self.status: list[int] = []

    def read(self, items: list[tuple[str, str, str, bytes]]) -> None:
        """Pass 1: every input read, normalised and filtered."""
        from gotk.sgf.metadata import normalise_record
        from gotk.sgf.reader import iter_sgf

        options, where, tally, steps = self.options, self.where, self.tally, self.steps
        size = options.board_size
        for path, archive, member, data in items:
            place = f"{archive}:{member}" if member else archive
            t = time.perf_counter()
            try:
                records = list(iter_sgf(data, archive, member, counts=tally.reader))
            except GotkError as e:
                tally.parse_s += time.perf_counter() - t
                tally.games_read += 1
                steps.append((e.reason, place, str(e)))
                continue
            tally.parse_s += time.perf_counter() - t
            for rec in records:
                tally.games_read += 1
                if isinstance(rec, GotkError):
                    steps.append((rec.reason, place, str(rec)))
                    continue
                meta = normalise_record(rec, self.bots)
                if rec.warnings:  # the reader's fallbacks (charset_mismatch) join the metadata warnings
                    meta["warnings"] = ",".join(sorted({*(meta["warnings"] or "").split(","), *rec.warnings} - {""}))
                    tally.examples.setdefault(f"warning:{rec.warnings[0]}", place)
                if meta["warnings"]:
                    tally.warnings.update(meta["warnings"].split(","))
                if rec.size != size:
                    steps.append(("bad_size", place, f"board {rec.size}x{rec.size}, expected {size}x{size}"))
                    continue
                if options.max_moves and rec.num_moves > options.max_moves:
                    steps.append(("too_long", place, f"{rec.num_moves} moves, over --max-moves {options.max_moves}"))
                    continue
                if options.no_handicap and (rec.handicap >= 2 or rec.setup_black or rec.setup_white):
                    steps.append(("filtered_handicap", place, f"handicap {rec.handicap}"))
                    continue
                if not passes_min_rank(rec.black_rank, rec.white_rank, options.min_rank):
                    steps.append(("filtered_rank", place, f"{rec.black_rank or '?'} vs {rec.white_rank or '?'}"))
                    continue
                row = {"game_id": game_id(rec) if where is not None else "", "archive": archive, "member": member,
                       "black": rec.black, "white": rec.white, "handicap": int(rec.handicap),
                       "result": str(rec.result), "winner": rec.result.winner, "num_moves": rec.num_moves, **meta}
                if where is not None and not self.where_late and (why := where.reason(row)) is not None:
                    steps.append(("filtered_where", place, why))
                    tally.filtered_where[why] += 1
                    continue
                steps.append(len(self.games))
                self.games.append((place, path, rec, row))

    def replay(self) -> None:
        """Pass 2: every game left replayed, and its rows counted, in one compiled call (its board trace kept
        when the options ask for it); the games' ids, unless a ``--where`` needed them earlier."""
        from gotk.game import batch as B
        from gotk.game.replay import GameBatch, replay_batch

        options = self.options
        t = time.perf_counter()
        batch = GameBatch.from_records([g[2] for g in self.games])
        replayed, self.trace = replay_batch(batch, trace=True) if options.board_trace else (replay_batch(batch), None)
        self.batch = batch
        self.offsets = batch.games[:, [B.G_M0, B.G_M1]]
        moves = np.append(self.offsets[:, 0], self.offsets[-1, 1] if len(self.offsets) else 0)
        self.rows_kept = kept_counts(batch.points, moves, replayed[:, 0], options.board_size, options.include_passes,
                                     options.skip_first).tolist()
        self.played, self.status = replayed[:, 0].tolist(), replayed[:, 1].tolist()
        self.tally.replay_s += time.perf_counter() - t
        if self.where is None:  # the ids of the whole batch at once
            setup = [(pts, np.append(batch.games[:, c], batch.games[-1, c + 1] if len(batch) else 0))
                     for pts, c in ((batch.setup_b, B.G_B0), (batch.setup_w, B.G_W0), (batch.setup_e, B.G_E0))]
            ids = game_ids(options.board_size, batch.colors, batch.points, moves, setup)
            for (_, _, _, row), gid in zip(self.games, ids, strict=True):
                row["game_id"] = gid

    def settle(self) -> tuple[list[int], list[dict]]:
        """Pass 3: each game decided in source order. Returns the indices (in :attr:`games`) of the games kept
        and their rows of the scan table."""
        from gotk.game import batch as B
        from gotk.game import kernels as K
        from gotk.game.replay import replay, stop_error

        options, where, tally = self.options, self.where, self.tally
        kept: list[int] = []
        kept_rows: list[dict] = []
        for step in self.steps:
            if not isinstance(step, int):
                tally.skip(*step)
                continue
            place, path, rec, row = self.games[step]
            status = self.status[step]
            if status == B.SETUP_FAILED:  # replay raises the error (bad_setup) with its message
                t = time.perf_counter()
                try:
                    out = replay(rec, min_moves=0, keep_history=False)
                except GotkError as e:
                    tally.replay_s += time.perf_counter() - t
                    tally.skip(e.reason, place, str(e))
                    continue
                tally.replay_s += time.perf_counter() - t
                err = out.error
                self.rows_kept[step] = _kept_rows(rec, out.moves_played, options.include_passes, options.skip_first)
            elif status != K.OK or rec.defect is not None:
                err = stop_error(rec, status, self.played[step], rec.colors, rec.points)
            else:
                err = None
            rows = self.rows_kept[step]
            if err is not None and options.drop_partial:
                tally.skip(err.reason, place, str(err))
                continue
            if rows == 0:
                tally.skip(err.reason if err is not None else "too_short", place,
                           str(err) if err is not None else f"{rec.num_moves} moves, no position kept")
                continue
            if self.where_late:
                row.update(positions=rows, partial=err.reason if err is not None else None)
                if (why := where.reason(row)) is not None:
                    tally.skip("filtered_where", place, why)
                    tally.filtered_where[why] += 1
                    continue
            if err is not None:
                tally.partial[err.reason] += 1
                tally.examples.setdefault(f"partial:{err.reason}", f"{place}: {err}")
            row.update(path=path, rows=rows, partial=err.reason if err is not None else None,
                       size=rec.size, first_player=int(rec.first_player or 0))
            kept_rows.append(row)
            kept.append(step)
        return kept, kept_rows

    def table(self, kept: list[int], kept_rows: list[dict], stats: dict) -> pa.Table:
        """The scan table of the games ``kept`` (:data:`SCAN_SCHEMA`), ``stats`` in its schema metadata."""
        columns: dict[str, list | pa.Array] = _scan_arrays(self.batch, self.offsets, kept)
        for name in SCAN_SCHEMA.names:
            if name not in columns:
                columns[name] = [row[name] for row in kept_rows]
        table = pa.Table.from_pydict(columns, schema=SCAN_SCHEMA)
        return table.replace_schema_metadata({UNIT_META_KEY: json.dumps(stats, sort_keys=True).encode()})


def scan_unit(unit: ScanUnit, options: ScanOptions) -> dict:
    """Parse, identify, filter and count one chunk of inputs; write its scan file; return its stats.

    Three passes (:class:`_UnitScan`), so that the replays of the whole unit run in one compiled call: read and
    filter every game (its skips noted in source order), replay the games left, then settle each game in source
    order (skips and first examples exactly as one game at a time gives)."""
    t0 = time.perf_counter()
    scan = _UnitScan(options)
    scan.read(unit.items)
    scan.replay()
    kept, kept_rows = scan.settle()
    stats = scan.tally.stats(unit, len(kept_rows))
    table = scan.table(kept, kept_rows, stats)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    blob = sink.getvalue()
    st = options.storage()
    digest = sha256_bytes(blob)
    st.write_bytes_atomic(scan_path(options.work_dir, unit.unit_id), blob)
    st.write_text_atomic(scan_sum_path(options.work_dir, unit.unit_id), digest)
    index = np.asarray(kept, dtype=np.int64)
    remember_unit(options.work_dir, unit.unit_id, st, table, digest, scan.batch.take(index),
                  None if scan.trace is None else scan.trace.take(index))
    total = time.perf_counter() - t0
    t_parse, t_replay = scan.tally.parse_s, scan.tally.replay_s
    stats["timing"] = {"parse_s": t_parse, "replay_s": t_replay, "other_s": total - t_parse - t_replay,
                       "scan_other_s": total - t_parse - t_replay}
    return {**stats, "games": table, "peak_rss_mib": peak_rss_mib()}


