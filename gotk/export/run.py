"""``gotk export``: SGF sources (or a ``gotk encode`` dataset's sources, or a ``gotk selfplay`` folder) → an
engine's training files.

A self-play folder's games are its ``sgf/*.sgf`` files (its dataset's games); for Leela Zero each game's
records are those of its shard rows, with the search's ``policy`` (see ``docs/export.md``).

The run reuses the encode machinery (see :mod:`gotk.jobs.encode`):

1. **scan** — the sources are read in a fixed order (:func:`gotk.sources.archives.iter_sources`), cut
   into units of members and handed to :func:`gotk.jobs.workers.scan_unit` (parse, ``game_id``,
   size / rank / handicap filters, full replay; games the engine refuses or with setup stones after
   the root are skipped, ``drop_partial``), which writes ``.work/unit-NNNNN.arrow``.
2. **plan** — the parent takes the units in order: duplicates (same ``game_id``, first in source order
   wins), games without a winner (``no_result``) and, for Leela Zero, games won on time (``won_on_time``, as
   ``dump_supervised``) are counted as skips (``--where``, as in encode, is applied by the scan); the kept
   games are shuffled with ``--seed`` and cut into files: ``--games-per-chunk`` games per Leela Zero
   chunk, ``--rows-per-file`` rows per KataGo ``.npz`` (a game may be cut across two files).
3. **write** — one work unit per file (:mod:`gotk.export.writers`), each written atomically, then
   ``export.json`` (the manifest, written last: the export is complete) and ``run-report.json``
   (timings), and ``.work/`` is removed.

The output bytes depend only on the sources and the options (``--seed`` included), never on
``--workers``; ``--resume`` reuses every scan unit and output file whose digest matches, so an
interrupted run finishes with the same files as an uninterrupted one.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from dataclasses import asdict
from pathlib import Path

import numpy as np

from gotk import __version__
from gotk import executors as X
from gotk.export import writers as WR
from gotk.export.inputs import dataset_sources, is_dataset, is_selfplay, selfplay_shards, selfplay_sources
from gotk.export.options import FORMATS, ExportError, ExportOptions, katago_available
from gotk.jobs import scan_files as SF
from gotk.jobs import workers as W
from gotk.jobs.encode import expand_sources, source_entries
from gotk.jobs.progress import ProgressBars
from gotk.jobs.splits import parse_min_rank
from gotk.runfolder import RunFolderError, prepare_run_folder, without_defaults
from gotk.sgf.record import parse_result
from gotk.shards import manifest as M
from gotk.sources.archives import Skip, is_archive, iter_sources
from gotk.storage import Storage, is_url

__all__ = ["EXPORT_NAME", "FORMATS", "ExportError", "ExportOptions", "export", "katago_available", "plan_files"]

EXPORT_NAME = "export.json"
EXPORT_FORMAT = "gotk-export"
DEFAULT_UNIT_SIZE = 128


# --- the plan ------------------------------------------------------------------------------------


def _digest(*parts) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(json.dumps(parts, sort_keys=True).encode())
    return h.hexdigest()


def file_name(fmt: str, index: int) -> str:
    """Output file names: ``train.NNNNNN.gz`` (Leela Zero, as leelaz's ``NAME.N.gz``) or
    ``train.NNNNNN.npz`` (KataGo)."""
    return f"train.{index:06d}.gz" if fmt == "leela-zero" else f"train.{index:06d}.npz"


def plan_files(kept: list[tuple[int, int, str, int]], opts: ExportOptions, unit_digests: dict[int, str]) -> list[dict]:
    """Shuffle the kept games ``(unit_id, index, game_id, rows)`` with ``opts.seed`` and cut them into
    file specs (Leela Zero: games per chunk; KataGo: rows per file, a game may straddle two files)."""
    order = np.random.default_rng(opts.seed).permutation(len(kept)) if kept else np.empty(0, np.int64)
    key = json.dumps(asdict(opts), sort_keys=True)
    specs: list[dict] = []

    def spec(index: int, body_key: str, body: list) -> dict:
        units = sorted({b[0] for b in body})
        return {"index": index, "file": file_name(opts.format, index), body_key: body,
                "digest": _digest(key, index, body, [unit_digests[u] for u in units])}

    if opts.format == "leela-zero":
        n = opts.games_per_chunk
        for c, lo in enumerate(range(0, len(order), n)):
            specs.append(spec(c, "games", [[kept[i][0], kept[i][1]] for i in order[lo: lo + n]]))
        return specs
    pieces: list = []
    room = opts.rows_per_file
    for i in order:
        unit_id, index, _, rows = kept[i]
        lo = 0
        while lo < rows:
            hi = min(rows, lo + room)
            pieces.append([unit_id, index, lo, hi if hi < rows else -1])
            room -= hi - lo
            lo = hi
            if room == 0:
                specs.append(spec(len(specs), "pieces", pieces))
                pieces, room = [], opts.rows_per_file
    if pieces:
        specs.append(spec(len(specs), "pieces", pieces))
    return specs


# --- the output folder ---------------------------------------------------------------------------


def _prepare_out(out: Path, resume: bool, record: dict) -> bool:
    """Check/create the output folder (:func:`gotk.runfolder.prepare_run_folder`); True when a finished export
    with the same record is there."""
    try:
        return prepare_run_folder(out, record, resume, run_file=f"{M.WORK_NAME}/run.json", finished_file=EXPORT_NAME,
                                  finished_keys=("options", "sources"), command="gotk export", noun="export",
                                  comparable=without_defaults({"metadata": False})).finished
    except RunFolderError as e:
        raise ExportError(e.reason, e.message) from e


# --- the run -------------------------------------------------------------------------------------


def _inputs(sources: Sequence[str | os.PathLike], opts: ExportOptions) -> tuple[list[Path], set[str] | None,
                                                                          str | None, list[dict], bool]:
    """What an export reads: ``(files, allowed, dataset, sources_skipped, selfplay)``. A self-play folder or a
    ``gotk encode`` dataset gives its sources and the game ids it holds (``allowed``: of ``opts.split``, when
    given), and names the ``dataset``; anything else is SGF files, folders and archives."""
    selfplay = len(sources) == 1 and is_selfplay(sources[0])
    if selfplay or (len(sources) == 1 and is_dataset(sources[0])):
        read = selfplay_sources if selfplay else dataset_sources
        files, allowed, size = read(sources[0], opts.split)
        dataset = str(sources[0])
        if size != opts.board_size:
            raise ExportError("bad_option", f"{dataset} holds {size}x{size} games; pass --board-size {size}")
        return files, allowed, dataset, [], selfplay
    if opts.split is not None:
        raise ExportError("bad_option", "--split needs a dataset folder (made by gotk encode) as the input")
    files, sources_skipped = expand_sources(sources)
    missing = [s["path"] for s in sources_skipped if s["reason"] == "missing"]
    if missing:
        raise ExportError("missing_source", f"no such file or folder: {', '.join(missing)}")
    return files, None, None, sources_skipped, False


class _ExportRun:
    """One export once its inputs are known (:func:`export` runs its steps): the output folder prepared, then
    :meth:`scan` (the scan units, each game kept or counted as a skip), :meth:`write` (the planned files) and
    :meth:`finish` (``export.json`` and the run report)."""

    def __init__(self, sources: Sequence[str | os.PathLike], out: Path, opts: ExportOptions, resume: bool,
                 unit_size: int) -> None:
        self.opts, self.out, self.resume, self.unit_size = opts, out, resume, unit_size
        self.files, self.allowed, self.dataset, self.sources_skipped, selfplay = _inputs(sources, opts)
        if not self.files:
            raise ExportError("no_source", "no .sgf file or archive to read")
        self.entries = source_entries(self.files)
        record = {"options": asdict(opts), "sources": self.entries}
        if self.dataset is not None:
            record["dataset"] = self.dataset
        if selfplay and opts.format == "leela-zero":  # the search policies come from the shards
            record["policy_shards"] = selfplay_shards(sources[0])
        self.already_complete = _prepare_out(out, resume, record)
        self.work = work = (out / M.WORK_NAME).absolute()
        # every main-line move gives a row (passes too); a game the engine stops is dropped whole
        self.scan_opts = W.ScanOptions(work_dir=str(work), board_size=opts.board_size,
                                       min_rank=parse_min_rank(opts.min_rank) if opts.min_rank else None,
                                       no_handicap=opts.no_handicap, include_passes=True, skip_first=0,
                                       drop_partial=True, where=opts.where or None, bot_patterns=opts.bot_patterns())
        self.write_opts = {"work_dir": str(work), "out_dir": str(out.absolute()), "compress_level": opts.compress_level,
                           "seed": opts.seed, "keep_time_wins": opts.keep_time_wins, "metadata": opts.metadata,
                           "selfplay": (str(Path(sources[0]).absolute()) if selfplay and opts.format == "leela-zero"
                                        else None)}
        self.inputs_skipped: Counter = Counter()
        self.skipped: Counter = Counter()
        self.examples: dict[str, str] = {}
        self.counts: Counter = Counter()
        self.seen: set[str] = set()
        self.kept: list[tuple[int, int, str, int]] = []
        self.unit_digests: dict[int, str] = {}
        self.filtered_where: Counter = Counter()  # --where: the first failed term → games (as gotk encode)
        self.games_read = 0

    def units(self) -> Iterator[W.ScanUnit]:
        """The scan units, cut from the sources in order (an archive ends its unit); unreadable inputs counted."""
        uid, batch = 0, []
        for f in self.files:
            for item in iter_sources([f], self.opts.max_member_bytes):
                if isinstance(item, Skip):
                    self.inputs_skipped[item.reason] += 1
                    self.examples.setdefault(f"input:{item.reason}", f"{item.where}: {item.message}")
                    continue
                batch.append((str(f), item.archive, item.member, item.data))
                if len(batch) >= self.unit_size:
                    yield W.ScanUnit(uid, batch, W.unit_digest(batch, self.scan_opts))
                    uid, batch = uid + 1, []
            if batch and is_archive(f):
                yield W.ScanUnit(uid, batch, W.unit_digest(batch, self.scan_opts))
                uid, batch = uid + 1, []
        if batch:
            yield W.ScanUnit(uid, batch, W.unit_digest(batch, self.scan_opts))

    def scan(self, pool: X.Executor, bars: ProgressBars) -> None:
        """Scan every unit (a finished one reused on ``--resume``), at most 2 × workers units in flight,
        consumed in unit order."""
        window: deque = deque()
        it = self.units()
        exhausted = False
        while True:
            while not exhausted and len(window) < 2 * pool.workers:
                unit = next(it, None)
                if unit is None:
                    exhausted = True
                    break
                stats = SF.read_scan_stats(SF.scan_path(self.work, unit.unit_id)) if self.resume else None
                if stats is not None and stats.get("digest") == unit.digest:
                    self.counts["units_reused"] += 1
                    window.append((unit.unit_id, stats))
                else:
                    window.append((unit.unit_id, pool.submit(W.scan_unit, unit, self.scan_opts)))
            if not window:
                return
            uid, item = window.popleft()
            self._take(uid, dict(item.result()) if isinstance(item, Future) else item, bars)

    def _take(self, uid: int, stats: dict, bars: ProgressBars) -> None:
        """A scanned unit's counts, and its games kept or counted as skips: duplicates (the first in source order
        wins), games of no ``allowed`` id, without a winner, or (Leela Zero) won on time."""
        opts, skipped, examples = self.opts, self.skipped, self.examples
        table = stats.pop("games", None)
        self.counts["units"] += 1
        self.unit_digests[uid] = stats["digest"]
        self.games_read += stats["games_read"]
        bars.games(stats["games_read"])
        skipped.update(stats["skipped"])
        self.filtered_where.update(stats.get("filtered_where", {}))
        for k, v in stats["examples"].items():
            examples.setdefault(k, v)
        if not stats["candidates"]:
            return
        if table is None:
            table = SF.read_scan_table(SF.scan_path(self.work, uid))
        t = table.select([c for c in table.column_names if not c.startswith("setup_")
                          and c not in ("colors", "points")]).to_pydict()
        for i, gid in enumerate(t["game_id"]):
            where_ = f"{t['archive'][i]}:{t['member'][i]}" if t["member"][i] else t["archive"][i]
            if gid in self.seen:
                reason = "duplicate"
            elif self.allowed is not None and gid not in self.allowed:
                self.counts["not_in_dataset"] += 1
                continue
            elif t["winner"][i] not in ("b", "w"):
                reason = "no_result"
            elif (opts.format == "leela-zero" and not opts.keep_time_wins
                  and parse_result(t["result"][i]).reason == "time"):
                reason = "won_on_time"  # as leelaz's dump_supervised
            else:
                self.seen.add(gid)
                self.kept.append((uid, i, gid, int(t["rows"][i])))
                continue
            skipped[reason] += 1
            examples.setdefault(reason, f"{where_}: game_id {gid}" if reason == "duplicate"
                                else f"{where_}: result {t['result'][i]!r}")

    def write(self, pool: X.Executor, bars: ProgressBars) -> list[dict]:
        """Plan the files of the kept games and write each (a finished one reused on ``--resume``); their
        results in file order."""
        specs = plan_files(self.kept, self.opts, self.unit_digests)
        writer = WR.write_leelazero_chunk if self.opts.format == "leela-zero" else WR.write_katago_file
        bars.planned(sum(k[3] for k in self.kept))
        pending: list[tuple[dict, Future | dict]] = []
        for spec in specs:
            reused = WR.reuse_file(spec, self.write_opts) if self.resume else None
            if reused is not None:
                self.counts["files_reused"] += 1
                bars.rows(reused["positions"])
                pending.append((spec, reused))
            else:
                fut = pool.submit(writer, spec, self.write_opts)
                fut.add_done_callback(lambda f: bars.rows(f.result()["positions"]) if not f.exception() else None)
                pending.append((spec, fut))
        return [dict(res.result()) if isinstance(res, Future) else res for _, res in pending]

    def finish(self, results: list[dict], pool: X.Executor, executor: str, t_start: float) -> dict:
        """Write ``export.json`` (last: the export is complete) and the run report, remove ``.work/``; returns
        the manifest with the report under ``"run"``."""
        opts, out, skipped, examples = self.opts, self.out, self.skipped, self.examples
        write_s = sum(r.pop("seconds", 0.0) for r in results)
        refused = 0  # games the format's writer refused (each counted once, in the file where it starts)
        for r in results:
            refused += sum(r.get("skipped", {}).values())
            skipped.update(r.pop("skipped", {}))
            for k, v in r.pop("examples", {}).items():
                examples.setdefault(k, v)
        files_out = [{k: r[k] for k in ("file", "games", "positions", "bytes", "sha256")} for r in results
                     if r["positions"]]
        planned = {r["file"] for r in files_out}
        for f in out.iterdir():  # files of another plan (cannot be, with --resume's same options): never kept
            if f.is_file() and f.name.startswith("train.") and f.name not in planned:
                f.unlink()
        positions = sum(r["positions"] for r in files_out)
        dataset = self.dataset
        manifest = {
            "format": EXPORT_FORMAT,
            "export_format": opts.format,
            "gotk_version": __version__,
            "options": asdict(opts),
            "sources": self.entries,
            **({"dataset": dataset} if dataset is not None else {}),
            **({"policy_target": "search"} if self.write_opts["selfplay"] else {}),
            "sources_skipped": self.sources_skipped,
            "inputs_skipped": dict(sorted(self.inputs_skipped.items())),
            "games": {"read": self.games_read, "kept": len(self.kept) - refused,
                      **({"not_in_dataset": self.counts["not_in_dataset"]} if dataset is not None else {}),
                      "skipped": dict(sorted(skipped.items())), "examples": dict(sorted(examples.items())),
                      "filtered_where": dict(sorted(self.filtered_where.items()))},
            "positions": positions,
            "bytes": sum(r["bytes"] for r in files_out),
            "files": files_out,
        }
        M.write_json_atomic(out / EXPORT_NAME, manifest)
        wall = time.perf_counter() - t_start
        counts = self.counts
        run = {"executor": getattr(pool, "name", executor), "workers": pool.workers, "unit_size": self.unit_size,
               "wall_s": round(wall, 4),
               "positions_per_s": round(positions / wall, 1) if wall > 0 else 0.0,
               "games_per_s": round(self.games_read / wall, 1) if wall > 0 else 0.0, "write_s": round(write_s, 4),
               "units": counts["units"], "units_reused": counts["units_reused"], "files_reused": counts["files_reused"],
               "skipped": dict(sorted(skipped.items())), "peak_rss_mib": {"parent": W.peak_rss_mib()}}
        M.write_json_atomic(out / M.RUN_REPORT_NAME, run)
        Storage.for_url(out).rm_tree(self.work)
        manifest["run"] = run
        return manifest


def export(sources: Sequence[str | os.PathLike], out_dir: str | os.PathLike, opts: ExportOptions,
           workers: int | None = None, resume: bool = False, progress: bool = True,
           unit_size: int = DEFAULT_UNIT_SIZE, executor: str = "local", scheduler: str | None = None) -> dict:
    """Run ``gotk export``; returns the export manifest (plus ``"run"``: the run report). Raises
    :class:`ExportError` for unusable options, inputs or output folders. ``executor``/``scheduler`` as
    for ``gotk encode`` (:mod:`gotk.executors`: a local process pool, or Dask with the output on
    a path every worker shares)."""
    t_start = time.perf_counter()
    opts.validate()
    try:
        X.require(executor, scheduler)
    except X.ExecutorError as e:
        raise ExportError(e.reason, e.message) from e
    if opts.format == "katago" and not katago_available():
        raise ExportError("not_available", "--format katago: the KataGo feature module (gotk.export.katago) is not "
                          "in this build yet")
    if is_url(out_dir):
        raise ExportError("bad_option", "gotk export writes to a local folder (--out PATH), not a URL")
    out = Path(out_dir)
    run = _ExportRun(sources, out, opts, resume, unit_size)
    if run.already_complete:
        m = json.loads((out / EXPORT_NAME).read_text())
        m["run"] = {"already_complete": True}
        return m
    try:
        pool = X.make_executor(executor, workers, scheduler)
    except X.ExecutorError as e:
        raise ExportError(e.reason, e.message) from e
    try:
        pool.start()  # before any progress-bar thread exists (fork)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    bars = ProgressBars(progress)
    try:
        run.scan(pool, bars)
        results = run.write(pool, bars)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        bars.close()
        raise
    pool.shutdown(wait=True)
    bars.close()
    return run.finish(results, pool, executor, t_start)
