"""``gotk encode``: SGF sources → deduplicated, split, encoded Parquet shards (see ``docs/shards.md``).

Design (one executor — a local process pool or Dask, see :mod:`gotk.executors` — and two
kinds of work unit: the scan unit in :mod:`gotk.jobs.workers`, the shard unit in :mod:`gotk.jobs.shard_unit`):

1. The parent reads the sources in a fixed order (archive members in memory, never extracted) and
   cuts them into *scan units* of ``unit_size`` members (never spanning two archives). Workers
   parse, hash, filter and replay each unit (to count the rows every game yields) and write
   ``.work/unit-NNNNN.arrow``. At most ``2 × workers`` units are in flight, so memory stays
   bounded whatever the archive size.
2. The parent consumes scan results strictly in unit order: global dedupe by ``game_id`` (first in
   source order wins), split assignment (from ``game_id``, or ``test`` for ``--test-from``
   sources), ``games.parquet`` rows. Each split's row stream is cut into shards of exactly
   ``shard_rows`` rows; as soon as a shard's content is known its *shard unit* is submitted, and a
   worker replays + encodes its games and writes the final ``<split>/part-NNNNN.parquet``.
3. When every shard is written: ``games.parquet``, then ``manifest.json`` (last: it marks the
   dataset complete), ``run-report.json`` (timings, excluded from the determinism claim), and
   ``.work/`` is removed.

Every byte of the output depends only on the sources and options — not on ``--workers``, the
unit size or scheduling. ``--resume`` reuses every scan file whose input digest matches and every
shard whose plan digest matches (all writes are temp + rename, so a killed run leaves only whole
files or ``.tmp`` leftovers).

``out_dir`` may be an fsspec URL (``s3://bucket/prefix``, …): every output file then goes through
:mod:`gotk.storage` (one object PUT per file on object stores), with the same bytes.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import time
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from gotk import executors as X
from gotk.errors import GotkError
from gotk.hashing import sha256_bytes, sha256_file
from gotk.jobs import precompile as P
from gotk.jobs import scan_files as SF
from gotk.jobs import shard_unit as SU
from gotk.jobs import workers as W
from gotk.jobs.plan import Planner
from gotk.jobs.progress import ProgressBars
from gotk.jobs.splits import DEFAULT_SPLIT, parse_min_rank, parse_split
from gotk.runfolder import RunFolderError, prepare_run_folder, without_defaults
from gotk.sgf.fast import path_counts
from gotk.shards import format as S
from gotk.shards import manifest as M
from gotk.shards.card import write_card
from gotk.sources.archives import MAX_SGF_BYTES, Skip, archive_stem, escape_name, is_archive, iter_sources
from gotk.storage import Storage, StorageError, is_url, join

DEFAULT_SHARD_ROWS = 65536
DEFAULT_UNIT_SIZE = 128


class EncodeError(GotkError):
    """A run that cannot start or finish; ``exit_code`` is what the CLI exits with."""

    def __init__(self, reason: str, message: str, exit_code: int = 2) -> None:
        super().__init__(reason, message)
        self.exit_code = exit_code


@dataclass
class EncodeOptions:
    """Everything that decides the output bytes (``--workers``, ``--out``, ``--resume`` do not)."""

    encoder: str
    encoder_options: dict = field(default_factory=dict)
    board_size: int = 19
    split: str = DEFAULT_SPLIT
    test_from: list[str] = field(default_factory=list)
    min_rank: str | None = None
    no_handicap: bool = False
    include_passes: bool = False
    skip_first: int = 0
    drop_partial: bool = False
    shard_rows: int = DEFAULT_SHARD_ROWS
    row_group_rows: int = S.ROW_GROUP_ROWS
    max_member_bytes: int = MAX_SGF_BYTES
    where: str | None = None  # gotk.shards.where expression over the games table
    bots: list[str] = field(default_factory=list)  # extra bot-name list files (gotk.sgf.metadata.BotList)
    max_moves: int = W.DEFAULT_MAX_MOVES  # longer games are skipped (too_long); 0: no cap
    globals: bool = True  # shards carry the globals column: komi and colour to move (gotk.encoders.global_inputs)
    metadata: bool = False  # shards carry the metadata column: KataGo's human-SL inputs (encoders.metadata_inputs)

    def validate(self) -> list[tuple[str, float]]:
        from gotk.jobs.splits import check_game_filters
        from gotk.shards.where import WhereError

        try:
            splits = parse_split(self.split)
            check_game_filters(self.min_rank, self.where, self.bots)
        except WhereError as e:
            raise EncodeError("bad_where", str(e)) from e
        except ValueError as e:
            raise EncodeError("bad_option", str(e)) from e
        if self.shard_rows < 1 or self.row_group_rows < 1 or self.skip_first < 0 or self.max_moves < 0:
            raise EncodeError("bad_option", "--shard-rows must be ≥ 1, --skip-first and --max-moves ≥ 0")
        return splits

    def bot_patterns(self) -> tuple[str, ...]:
        """The bot-name patterns of this run (default list + $GOTK_BOTS + ``bots`` files), resolved in the
        parent so every worker uses the same list."""
        from gotk.jobs.splits import check_game_filters

        return check_game_filters(None, None, self.bots)


# --- sources -------------------------------------------------------------------------------------


def expand_sources(paths: Sequence[str | os.PathLike]) -> tuple[list[Path], list[dict]]:
    """The files to read, in order: each SOURCE as given; folders expanded recursively (sorted) to
    their ``.sgf`` files and archives. The same file twice is read once; an archive published in
    several formats (same name stem) is read once, in the preferred format
    (:data:`gotk.sources.archives.ARCHIVE_SUFFIXES`).
    Returns ``(files, skipped)`` with ``skipped`` entries ``{"path", "reason", "detail"}``."""
    files: list[Path] = []
    skipped: list[dict] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            skipped.append({"path": str(raw), "reason": "missing", "detail": "no such file or directory"})
        elif p.is_dir():
            files.extend(sorted(q for q in p.rglob("*")
                                if q.is_file() and (q.suffix.lower() == ".sgf" or is_archive(q))))
        else:
            files.append(p)
    best: dict[str, tuple[int, Path]] = {}
    for f in files:
        st = archive_stem(f.name)
        if st is not None and (st[0] not in best or st[1] < best[st[0]][0]):
            best[st[0]] = (st[1], f)
    out: list[Path] = []
    seen: set[Path] = set()
    for f in files:
        real = f.resolve()
        st = archive_stem(f.name)
        if real in seen:
            skipped.append({"path": str(f), "reason": "repeated", "detail": "the same file was already given"})
        elif st is not None and best[st[0]][1] is not f:
            skipped.append({"path": str(f), "reason": "other_format",
                            "detail": f"the same archive is read as {best[st[0]][1]}"})
        else:
            seen.add(real)
            out.append(f)
    return out, skipped




def _options_record(opts: EncodeOptions, encoder_desc: dict, sources: list[dict]) -> dict:
    return {"options": asdict(opts), "encoder": encoder_desc, "sources": sources}


def _prepare_out_dir(out: Path | str, resume: bool, record: dict, st: Storage, damaged: list) -> bool:
    """Check/create the output folder (:func:`gotk.runfolder.prepare_run_folder`). Returns True when a finished
    identical dataset is there and every file it lists is intact (size, sha256, rows); a damaged one is appended
    to ``damaged`` and the run is redone."""

    def verify(manifest: dict) -> list:
        try:
            return M.verify_dataset(out, st.storage_options, manifest)["problems"]
        except (KeyError, TypeError, ValueError, OSError) as e:
            return [{"file": M.MANIFEST_NAME, "problem": f"unreadable: {e}"}]

    try:
        found = prepare_run_folder(out, record, resume, run_file=f"{M.WORK_NAME}/run.json",
                                   finished_file=M.MANIFEST_NAME, finished_keys=("options", "encoder", "sources"),
                                   comparable=without_defaults({"metadata": False}),
                                   verify=verify, command="gotk encode run", st=st)
    except RunFolderError as e:
        raise EncodeError(e.reason, e.message) from e
    damaged.extend(found.damaged)
    return found.finished


def source_entries(files: list[Path]) -> list[dict]:
    """The manifest's ``sources``: each archive with its size and sha256; loose ``.sgf`` files as one entry
    whose digest covers every file's path and bytes."""
    entries = [{"path": str(f), "name": f.name, "bytes": f.stat().st_size, "sha256": sha256_file(f)}
               for f in files if is_archive(f)]
    loose = [f for f in files if not is_archive(f)]
    if loose:
        h = hashlib.sha256()
        for f in loose:
            h.update(f"{f}\0".encode() + bytes.fromhex(sha256_bytes(f.read_bytes())))
        entries.append({"path": "(loose .sgf files)", "name": "", "files": len(loose),
                        "bytes": sum(f.stat().st_size for f in loose), "sha256": h.hexdigest()})
    return entries


def encode_dataset(sources: Sequence[str | os.PathLike], out_dir: str | os.PathLike, opts: EncodeOptions,
                   workers: int | None = None, resume: bool = False, progress: bool = True,
                   unit_size: int = DEFAULT_UNIT_SIZE, executor: str | X.Executor = "local",
                   scheduler: str | None = None, storage_options: dict | None = None) -> dict:
    """Run ``gotk encode``; returns the manifest (plus ``"run"``: the run report). Raises
    :class:`EncodeError` for unusable options or output folders. ``executor``: ``"local"``,
    ``"dask"`` (``scheduler``: ``tcp://HOST:PORT``, or None for a LocalCluster), or an
    :class:`~gotk.executors.Executor` instance (shut down when the run ends); worker
    options get absolute paths, so remote workers need the output at the same path. ``out_dir`` may
    be an fsspec URL (``s3://bucket/prefix``; ``storage_options`` go to fsspec, see
    :mod:`gotk.storage`)."""
    run = EncodeRun(sources, out_dir, opts, resume, unit_size, executor, scheduler, storage_options)
    if run.already_complete:
        m = M.load_manifest(run.out, run.storage.storage_options)
        m["run"] = {"already_complete": True}
        return m
    return run.execute(workers, progress)


class EncodeRun:
    """One ``gotk encode`` run. Construction checks everything that can be checked before work starts
    (options, executor, output folder, encoder, sources) and prepares the output folder; :meth:`execute`
    scans and encodes (steps 1-2 of the module docstring) and :meth:`finish` writes the games table,
    manifest and run report (step 3)."""

    def __init__(self, sources: Sequence[str | os.PathLike], out_dir: str | os.PathLike, opts: EncodeOptions,
                 resume: bool = False, unit_size: int = DEFAULT_UNIT_SIZE, executor: str | X.Executor = "local",
                 scheduler: str | None = None, storage_options: dict | None = None) -> None:
        self.t_start = time.perf_counter()
        self.opts = opts
        self.splits = opts.validate()
        self.resume = resume
        self.unit_size = unit_size
        self.scheduler = scheduler
        if isinstance(executor, str):
            try:
                X.require(executor, scheduler)
            except X.ExecutorError as e:
                raise EncodeError(e.reason, e.message) from e
        self.executor = executor
        try:
            self.storage = st = Storage.for_url(out_dir, storage_options)
            st.check(out_dir)
        except StorageError as e:
            raise EncodeError(e.reason, e.message) from e
        from gotk.encoders import get_encoder

        try:
            encoder = get_encoder(opts.encoder, board_size=opts.board_size, **opts.encoder_options)
        except (KeyError, ValueError, TypeError) as e:
            raise EncodeError("bad_encoder", f"encoder {opts.encoder!r}: {e}") from e
        self.desc = encoder.describe()
        self.board_only = encoder.board_only
        self.out: Path | str = str(out_dir).rstrip("/") if is_url(out_dir) else Path(out_dir)
        self.files, self.sources_skipped = expand_sources(sources)
        missing = [s["path"] for s in self.sources_skipped if s["reason"] == "missing"]
        if missing:
            raise EncodeError("missing_source", f"no such file or folder: {', '.join(missing)}")
        self.source_entries = source_entries(self.files)
        record = _options_record(opts, self.desc, self.source_entries)
        self.damaged: list[dict] = []
        self.already_complete = _prepare_out_dir(self.out, resume, record, st, self.damaged)
        self.work = work = join(self.out, M.WORK_NAME)
        abs_work, abs_out = ((str(work), str(self.out)) if not st.is_local
                             else (str(work.absolute()), str(self.out.absolute())))
        remote = None if st.is_local else st.storage_options
        self.scan_opts = W.ScanOptions(
            work_dir=abs_work, board_size=opts.board_size,
            min_rank=parse_min_rank(opts.min_rank) if opts.min_rank else None, no_handicap=opts.no_handicap,
            include_passes=opts.include_passes, skip_first=opts.skip_first, drop_partial=opts.drop_partial,
            where=opts.where or None, bot_patterns=opts.bot_patterns(), max_moves=opts.max_moves,
            storage_options=remote)
        self.shard_opts = W.ShardOptions(
            encoder=opts.encoder, encoder_options=opts.encoder_options, board_size=opts.board_size,
            include_passes=opts.include_passes, skip_first=opts.skip_first, work_dir=abs_work, out_dir=abs_out,
            row_group_rows=opts.row_group_rows, zstd_level=S.ZSTD_LEVEL, storage_options=remote, globals=opts.globals,
            metadata=opts.metadata)
        plan_key = json.dumps([asdict(opts), self.desc, S.SCHEMA_VERSION], sort_keys=True)
        self.planner: Planner | None = None
        self.plan_key = plan_key
        self.inputs_skipped: Counter = Counter()
        self.read_s = 0.0
        self.timing: Counter = Counter()
        self.counts: Counter = Counter()
        self.reader: Counter = Counter()  # SGF inputs / games per reader path, summed over the scan units
        self.worker_rss = 0.0
        self.precompile: P.Helper | None = None  # the helper compiling the encoder on a first run
        self.precompiled: bool | None = None  # whether it did (None: no helper was started)

    # --- step 1: scan units, read from the sources in a fixed order ------------------------------------

    def units(self) -> Iterator[W.ScanUnit]:
        """The scan units: ``unit_size`` members at a time, never spanning two archives."""
        uid = 0
        batch: list = []
        for f in self.files:
            t = time.perf_counter()
            path = escape_name(str(f))
            for item in iter_sources([f], self.opts.max_member_bytes):
                if isinstance(item, Skip):
                    self.inputs_skipped[item.reason] += 1
                    self.planner.examples.setdefault(f"input:{item.reason}", f"{item.where}: {item.message}")
                    continue
                batch.append((path, item.archive, item.member, item.data))
                if len(batch) >= self.unit_size:
                    self.read_s += time.perf_counter() - t
                    yield W.ScanUnit(uid, batch, W.unit_digest(batch, self.scan_opts))
                    t = time.perf_counter()
                    uid += 1
                    batch = []
            self.read_s += time.perf_counter() - t
            if batch and is_archive(f):
                yield W.ScanUnit(uid, batch, W.unit_digest(batch, self.scan_opts))
                uid += 1
                batch = []
        if batch:
            yield W.ScanUnit(uid, batch, W.unit_digest(batch, self.scan_opts))

    # --- steps 1-2 on the executor ---------------------------------------------------------------------

    def execute(self, workers: int | None = None, progress: bool = True) -> dict:
        """Scan, plan and encode every shard, then :meth:`finish`; returns the manifest with ``"run"``."""
        executor = self.executor
        if isinstance(executor, str):
            try:
                executor = X.make_executor(executor, workers, self.scheduler)
            except X.ExecutorError as e:
                raise EncodeError(e.reason, e.message) from e
        self.executor = executor
        if self.board_only and isinstance(executor, X.LocalExecutor) and executor.workers == 1:
            # the shards run here, after the scans that replayed their games: they encode from the scans' board
            # traces (gotk.game.replay.BoardTrace), without replaying the games again
            self.scan_opts = replace(self.scan_opts, board_trace=True)
        # first run: the encoder compiles in a helper process while this one compiles the scan's kernels
        self.precompile = P.start(self.shard_opts) if isinstance(executor, X.LocalExecutor) else None
        try:
            if isinstance(executor, X.LocalExecutor) and executor.workers > 1:
                P.warm_scan(self.shard_opts)  # compile once here: the forked workers inherit the kernels
                self._await_encoder()
                P.warm_encoder(self.shard_opts)
            executor.start()  # start (fork) the workers now, before any progress-bar thread exists
        except BaseException:
            self._await_encoder(stop=True)
            executor.shutdown(wait=False, cancel_futures=True)
            raise
        self.planner = Planner(self.out, self.splits, self.opts.shard_rows, self.opts.test_from, self.plan_key,
                               self.storage)
        self.bars = ProgressBars(progress)
        try:
            entries = self._run_units(executor)
        except BaseException:
            self._await_encoder(stop=True)
            executor.shutdown(wait=False, cancel_futures=True)
            self.planner.games.abort()
            self.bars.close()
            raise
        finally:
            SF.forget_units()
        self._await_encoder(stop=True)  # a run with no shard to encode
        executor.shutdown(wait=True)
        self.bars.close()
        return self.finish(entries)

    def _await_encoder(self, stop: bool = False) -> None:
        """Wait for the helper compiling the encoder (:mod:`gotk.jobs.precompile`), or with ``stop`` end it."""
        helper, self.precompile = self.precompile, None
        if helper is not None and stop:
            helper.close()
        elif helper is not None:
            self.precompiled = helper.wait()

    def _submit_shard(self, spec: dict, results: list[tuple[dict, Future | dict]]) -> None:
        self.bars.add_planned(sum(p[3] - p[2] for p in spec["pieces"]))
        reused = SU.reuse_shard(spec, self.shard_opts) if self.resume else None
        if reused is not None:
            self.counts["shards_reused"] += 1
            self.bars.rows(reused["rows"])
            results.append((spec, reused))
        else:
            self._await_encoder()  # the first shard: the encoder is in numba's cache now
            fut = self.executor.submit(SU.encode_shard, spec, self.shard_opts)
            fut.add_done_callback(lambda f: self.bars.rows(f.result()["rows"]) if not f.exception() else None)
            results.append((spec, fut))

    def _scan_result(self, unit: W.ScanUnit) -> Future | dict:
        """A unit's scan: reused from an earlier run's scan file when its digest matches, else submitted."""
        if self.resume:
            stats = SF.read_scan_stats(SF.scan_path(self.work, unit.unit_id), self.storage)
            if (stats is not None and stats.get("digest") == unit.digest
                    and SF.scan_intact(self.work, unit.unit_id, self.storage)):
                self.counts["units_reused"] += 1
                return stats
        return self.executor.submit(W.scan_unit, unit, self.scan_opts)

    def _collect(self, result: dict) -> dict:
        """Fold a worker result's timings and peak memory into the run's; returns the rest."""
        r = dict(result)
        self.worker_rss = max(self.worker_rss, r.pop("peak_rss_mib", 0.0))
        for k, v in r.pop("timing", {}).items():
            self.timing[k] += v
        return r

    def _run_units(self, executor: X.Executor) -> dict[str, list[dict]]:
        """Scan units (at most ``2 x workers`` in flight) consumed in unit order by the planner; each shard
        submitted as soon as its content is known. Returns each split's shard entries."""
        planner = self.planner
        shard_results: list[tuple[dict, Future | dict]] = []
        window: deque = deque()
        it = self.units()
        exhausted = False
        while True:
            while not exhausted and len(window) < 2 * executor.workers:
                unit = next(it, None)
                if unit is None:
                    exhausted = True
                    break
                window.append((unit.unit_id, self._scan_result(unit)))
            if not window:
                break
            uid, item = window.popleft()
            stats = dict(item.result()) if isinstance(item, Future) else dict(item)
            games = stats.pop("games", None)
            self.worker_rss = max(self.worker_rss, stats.pop("peak_rss_mib", 0.0))
            self.counts["units"] += 1
            for k, v in stats.get("timing", {}).items():
                self.timing[k] += v
            self.reader.update(stats.get("sgf_reader", {}))
            self.bars.games(stats["games_read"])
            for spec in planner.add_unit(uid, stats, games):
                self._submit_shard(spec, shard_results)
        for spec in planner.finish():
            self._submit_shard(spec, shard_results)
        entries: dict[str, list[dict]] = {n: [] for n in planner.split_names}
        for spec, res in shard_results:
            entries[spec["split"]].append(self._collect(res.result() if isinstance(res, Future) else res))
        return entries

    # --- step 3 ------------------------------------------------------------------------------------------

    def finish(self, entries: dict[str, list[dict]]) -> dict:
        """Remove stale shard files, close the games table, write the manifest and run report, drop
        ``.work/``; returns the manifest with ``"run"``."""
        st, out, planner, opts = self.storage, self.out, self.planner, self.opts
        planned = {e["file"] for es in entries.values() for e in es}
        for d, is_dir in st.listdir(out):
            if is_dir and d != M.WORK_NAME:
                for f, _ in st.listdir(join(out, d)):
                    if fnmatch.fnmatchcase(f, "part-*.parquet*") and f"{d}/{f}" not in planned:
                        st.rm(join(out, d, f))
        games_info = planner.games.close()
        splits_out = {}
        for name in planner.split_names:
            es = entries[name]
            splits_out[name] = {"games": planner.split_games[name], "rows": planner.split_rows[name],
                                "bytes": sum(e["bytes"] for e in es), "shards": es}
        partial = {k: v for k, v in sorted(planner.partial.items()) if v}
        games = {
            "read": planner.games_read,
            "kept": len(planner.seen),
            "partial": sum(partial.values()),
            "partial_reasons": partial,
            "skipped": dict(sorted(planner.skipped.items())),
            "examples": dict(sorted(planner.examples.items())),
            "filtered_where": dict(sorted(planner.filtered_where.items())),
            "metadata_warnings": dict(sorted(planner.warnings.items())),
        }
        manifest = M.dataset_manifest(self.desc, asdict(opts), games, games_info, splits_out, opts.row_group_rows,
                                      self.source_entries, self.sources_skipped,
                                      dict(sorted(self.inputs_skipped.items())))
        total_rows = manifest["rows"]
        write_card(out, manifest, st)  # README.md, the Hub dataset card (before the manifest, which is last)
        M.write_json_atomic(join(out, M.MANIFEST_NAME), manifest, st)
        wall = time.perf_counter() - self.t_start
        run = {
            "executor": getattr(self.executor, "name", type(self.executor).__name__),
            "workers": self.executor.workers, "unit_size": self.unit_size, "wall_s": round(wall, 4),
            "positions_per_s": round(total_rows / wall, 1) if wall > 0 else 0.0,
            "games_per_s": round(planner.games_read / wall, 1) if wall > 0 else 0.0,
            "stage_s": {"archive_read_s": round(self.read_s, 4),
                        **{k: round(v, 4) for k, v in sorted(self.timing.items())}},
            "units": self.counts["units"], "units_reused": self.counts["units_reused"],
            "shards_reused": self.counts["shards_reused"], "sgf_reader": path_counts(self.reader),
            "filtered_where": dict(sorted(planner.filtered_where.items())),  # --where: first failed term → games
            "damaged_redone": self.damaged,  # files of a finished dataset that --resume found damaged
            # peak resident memory: of this process, and the largest of any work unit's process (with one
            # local worker the units run in this process; elsewhere, in the pool or cluster workers)
            "peak_rss_mib": {"parent": W.peak_rss_mib(), "worker": self.worker_rss},
            "encoder_compiled_ahead": self.precompiled,  # first run: by a helper process, during the scan
        }
        M.write_json_atomic(join(out, M.RUN_REPORT_NAME), run, st)
        st.rm_tree(self.work)
        manifest["run"] = run
        return manifest

