"""The shard work unit of ``gotk encode`` (:func:`encode_shard`), beside the scan unit of
:mod:`gotk.jobs.workers`: a pure top-level function ``(shard spec, options) → result``.

* :func:`encode_shard` — a shard plan (a list of pieces: unit, game, row range) → replay + encode
  every piece with the encoder (runs of whole games in one compiled call where the encoder has a batch
  loop), pack, write ``OUT/<split>/part-NNNNN.parquet``; a done-record in
  ``WORK/shard-SPLIT-NNNNN.json`` marks it finished for ``--resume`` (:func:`reuse_shard`).

It writes its output files itself (atomically) and returns a small picklable dict, so it runs in-process,
in a process pool or under Dask alike. The scan units' games come from :func:`gotk.jobs.scan_files.unit_games`.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

from gotk.encoders import global_inputs as GI
from gotk.encoders import metadata_inputs as MI
from gotk.encoders.base import Encoder, kept_count
from gotk.hashing import sha256_stream
from gotk.jobs.scan_files import UnitGames, unit_games
from gotk.jobs.workers import ShardOptions, peak_rss_mib
from gotk.runfolder import read_done_record, write_done_record
from gotk.sgf.record import signed_value_targets, value_targets
from gotk.shards import format as S
from gotk.shards.row_writer import BATCH_BYTES, ShardRowWriter
from gotk.storage import Storage, join

_ENCODERS: dict[str, object] = {}


def encoder_for(options: ShardOptions):
    """The encoder ``options`` name, made once per process."""
    key = json.dumps([options.encoder, options.board_size, options.encoder_options],
                     sort_keys=True)
    enc = _ENCODERS.get(key)
    if enc is None:
        from gotk.encoders import get_encoder

        enc = get_encoder(options.encoder, board_size=options.board_size,
                          **(options.encoder_options))
        _ENCODERS[key] = enc
    return enc


def shard_done_path(work_dir: str | os.PathLike, split: str, index: int) -> Path | str:
    return join(work_dir, f"shard-{split}-{index:05d}.json")


class ShardEncoder:
    """Encodes the pieces of one shard plan into a :class:`~gotk.shards.row_writer.ShardRowWriter`, each piece by the
    cheapest path the encoder and the piece allow (all give the same rows):

    * whole games the encoder's batch loop takes (it has one, the unit's games are on its board, the game
      is at most :attr:`chunk_moves` rows): queued, then encoded many per compiled call straight into the
      writer's batch (:meth:`_put_games`);
    * part of such a game (the rest of it goes to another shard): the whole game encoded by the batch
      loop into scratch, the piece's rows copied (:meth:`_put_part`);
    * a whole game of another encoder with a game loop (``encode_game_into``), at most
      :attr:`chunk_moves` rows: encoded straight into the batch (:meth:`_put_whole`);
    * anything else: the encoder's ``encode_game_chunks``, :attr:`chunk_moves` rows at a time
      (:meth:`_put_chunks`).

    Pieces come in unit order, so one scan unit's games (:func:`gotk.jobs.scan_files.unit_games`) are open at a
    time. Every path checks that the encoder gave the rows the scan counted. :attr:`encode_s` is the time
    spent encoding (replay, planes, packing into the batch), the writer's :attr:`~ShardRowWriter.write_s`
    excluded."""

    def __init__(self, enc: Encoder, options: ShardOptions, writer: ShardRowWriter, storage: Storage) -> None:
        self.enc = enc
        self.desc = enc.describe()
        self.options = options
        self.writer = writer
        self.storage = storage  # where the scan units are
        self.include_passes = options.include_passes
        self.skip_first = options.skip_first
        #: long games are encoded a piece at a time: about ``BATCH_BYTES`` of unpacked planes per piece
        self.chunk_moves = max(256, BATCH_BYTES // (enc.num_planes * enc.num_points * enc.np_dtype.itemsize))
        self.packed = self.desc["dtype"] != "int8"  # planes go through scratch to be packed
        self.into = enc.encode_game_into if enc.writes_into else None  # else the game goes by chunks
        self.batchable = enc.writes_into and enc.batchable
        self.board_only = self.batchable and enc.board_only
        self.globals = options.globals  # the rows' global inputs go into the writer's globals column
        self.metadata = options.metadata  # the rows' metadata inputs go into the writer's metadata column
        self.encode_s = 0.0
        self._scratch: np.ndarray | None = None  # (chunk_moves, C, H*W) planes, made when first needed
        self._part_rows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # labels, moves, colours
        self._unit: UnitGames | None = None
        self._unit_id: int | None = None
        self._whole: list[int] = []  # per game of the unit: its rows when the batch loop takes it whole, else -1
        self._run: list[int] = []  # whole games of the unit queued for _put_games

    def encode(self, pieces: list) -> None:
        """Every piece ``[unit_id, game_index, row_lo, row_hi]`` of the plan, in order, into the writer."""
        for unit_id, g, lo, hi in pieces:
            if unit_id != self._unit_id:
                self._flush_run()
                self._open_unit(unit_id)
            whole = self._whole[g]
            if whole >= 0 and lo == 0 and hi == whole:
                self._run.append(g)
                continue
            self._flush_run()
            self._timed(self._put_part if whole >= 0 else self._put_game, g, lo, hi)
        self._flush_run()

    def _open_unit(self, unit_id: int) -> None:
        unit = unit_games(self.options.work_dir, unit_id, self.storage)
        self._unit, self._unit_id = unit, unit_id
        if self.batchable and unit.batch(self.enc.board_size) is not None:
            caps = unit.cap(self.include_passes, self.skip_first)
            self._whole = np.where(caps <= self.chunk_moves, unit.rows, -1).tolist()
        else:
            self._whole = [-1] * len(unit.rows)

    def _timed(self, put, *args) -> None:
        t, w = time.perf_counter(), self.writer.write_s
        put(*args)
        self.encode_s += time.perf_counter() - t - (self.writer.write_s - w)  # a batch written on the way

    def _flush_run(self) -> None:
        if self._run:
            self._timed(self._put_games, self._run)
            self._run = []

    def _planes(self) -> np.ndarray:
        if self._scratch is None:
            enc = self.enc
            self._scratch = np.empty((self.chunk_moves, enc.num_planes, enc.num_points), dtype=enc.np_dtype)
        return self._scratch

    def _batch_planes(self, sl: slice) -> np.ndarray:
        """Where planes of the writer's rows ``sl`` go: scratch (packed from there), or, for ``int8`` encoders,
        the batch's own feature bytes."""
        if self.packed:
            return self._planes()
        rows = sl.stop - sl.start
        return self.writer.features[sl].view(self.enc.np_dtype).reshape(rows, self.enc.num_planes,
                                                                         self.enc.num_points)

    def _globals(self, komi, to_play: np.ndarray) -> np.ndarray | None:
        """The global inputs of rows with colours ``to_play`` in games of ``komi`` (one or one per row; 0 where the
        record gave none), or None when the shard has no globals column."""
        return GI.from_to_play(komi, to_play, self.enc.board_size) if self.globals else None

    def _metadata(self, games, to_play: np.ndarray) -> np.ndarray | None:
        """The metadata inputs of rows with colours ``to_play`` of the open unit's game ``games`` (one, or one per
        row), or None when the shard has no metadata column."""
        if not self.metadata:
            return None
        pairs = self._unit.metadata_rows(self.enc.board_size ** 2)
        return MI.rows_for(pairs, to_play, np.broadcast_to(np.asarray(games), np.shape(to_play)))

    def _check_rows(self, rows: int, expected: int, gid: str) -> None:
        if rows != expected:
            raise RuntimeError(f"encoder {self.desc['name']} gave {rows} rows for game {gid}, "
                               f"the scan counted {expected}")

    def _encode_run(self, run: np.ndarray, out: np.ndarray,
                    rows_out: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray, int]:
        """Games ``run`` of the open unit encoded by one compiled call (the encoder's batch loop): planes into
        ``out``, labels, move numbers and colours to play into ``rows_out``; checked against the rows the scan
        counted. Returns (rows per game, rows in all)."""
        from gotk.game.replay import initial_state

        unit = self._unit
        sub = unit.batch(self.enc.board_size).take(run)
        args = (out, *rows_out, self.include_passes, self.skip_first)
        if self.board_only and unit.trace is not None:  # replayed by the scan: boards alone, no engine
            result, rows, done = self.enc.encode_traced_batch_into(sub, unit.trace.take(run), *args)
        else:
            result, rows, done = self.enc.encode_batch_into(sub, *args)
        if done < len(run):  # unusable setup stones: the game's own first position raises the error
            initial_state(unit.record(int(run[done])))
            raise RuntimeError(f"game {unit.game_id[run[done]]}: the batch loop refused its setup stones")
        wrong = np.flatnonzero(result[:, 0] != unit.rows[run])
        if wrong.size:
            g = int(run[wrong[0]])
            self._check_rows(int(result[wrong[0], 0]), int(unit.rows[g]), unit.game_id[g])
        return result[:, 0], rows

    def _put_games(self, games: list[int]) -> None:
        """Whole games of the open unit, as many per compiled call as the writer's batch (and, for bit
        encoders, scratch) has room for."""
        unit, w = self._unit, self.writer
        caps = unit.cap(self.include_passes, self.skip_first)
        index = np.asarray(games, dtype=np.int64)
        k = 0
        while k < len(index):
            w.reserve(int(caps[index[k]]))
            room = min(w.free, self.chunk_moves) if self.packed else w.free
            run = index[k:]
            run = run[:max(1, int(np.searchsorted(np.cumsum(caps[run]), room, side="right")))]
            sl = slice(w.pos, w.pos + int(caps[run].sum()))
            out = self._batch_planes(sl)
            per_game, rows = self._encode_run(run, out, (w.label[sl], w.move_number[sl], w.to_play[sl]))
            sl = slice(w.pos, w.pos + rows)
            if self.packed:
                w.features[sl] = S.pack_features(out[:rows], self.desc["dtype"])
            w.value[sl] = signed_value_targets(np.repeat(unit.sign[run], per_game), w.to_play[sl])
            if self.globals:
                w.global_inputs[sl] = self._globals(np.repeat(unit.komi[run], per_game), w.to_play[sl])
            if self.metadata:
                w.metadata_inputs[sl] = self._metadata(np.repeat(run, per_game), w.to_play[sl])
            w.commit([unit.game_id[g] for g in run.tolist()], per_game)
            k += len(run)

    def _put_part(self, g: int, lo: int, hi: int) -> None:
        """Rows ``lo:hi`` of game ``g`` of the open unit (at most :attr:`chunk_moves` rows in all)."""
        unit = self._unit
        if self._part_rows is None:
            n = self.chunk_moves
            self._part_rows = (np.empty(n, np.int16), np.empty(n, np.int32), np.empty(n, np.int8))
        labels, moves, to_play = self._part_rows
        out = self._planes()
        self._encode_run(np.array([g], dtype=np.int64), out, self._part_rows)
        tp = to_play[lo:hi]
        self.writer.add(unit.game_id[g], S.pack_features(out[lo:hi], self.desc["dtype"]), moves[lo:hi], tp,
                        labels[lo:hi], value_targets(unit.winner[g], tp),
                        global_inputs=self._globals(unit.komi[g], tp), metadata_inputs=self._metadata(g, tp))

    def _put_game(self, g: int, lo: int, hi: int) -> None:
        """Rows ``lo:hi`` of game ``g`` of the open unit, by the encoder's game loop."""
        rec = self._unit.record(g)
        if not (lo == 0 and hi == self._unit.rows[g] and self._put_whole(rec, g)):
            self._put_chunks(rec, g, lo, hi)

    def _put_whole(self, rec, g: int) -> bool:
        """Game ``g`` (its record ``rec``) encoded whole straight into the batch; False (nothing written) when the
        encoder has no game loop or the game may be longer than :attr:`chunk_moves` rows."""
        cap = kept_count(rec.points, rec.size, self.include_passes, self.skip_first)  # rows the loop may touch
        if self.into is None or cap > self.chunk_moves:
            return False
        unit, w = self._unit, self.writer
        sl = w.reserve(cap)
        out = self._batch_planes(sl)[:cap]
        out[:] = 0
        rows, _, _ = self.into(rec, out, w.label[sl], w.move_number[sl], w.to_play[sl], self.include_passes,
                               self.skip_first)
        self._check_rows(rows, int(unit.rows[g]), unit.game_id[g])
        sl = slice(w.pos, w.pos + rows)
        if self.packed:
            w.features[sl] = S.pack_features(out[:rows], self.desc["dtype"])
        w.value[sl] = value_targets(unit.winner[g], w.to_play[sl])
        if self.globals:
            w.global_inputs[sl] = self._globals(unit.komi[g], w.to_play[sl])
        if self.metadata:
            w.metadata_inputs[sl] = self._metadata(g, w.to_play[sl])
        w.commit([unit.game_id[g]], [rows])
        return True

    def _put_chunks(self, rec, g: int, lo: int, hi: int) -> None:
        """Rows ``lo:hi`` of game ``g`` (its record ``rec``) from the encoder's chunks of the game."""
        unit = self._unit
        gid, winner = unit.game_id[g], unit.winner[g]
        game_rows = 0
        for eg in self.enc.encode_game_chunks(rec, include_passes=self.include_passes, skip_first=self.skip_first,
                                              chunk_moves=self.chunk_moves):
            r0, game_rows = game_rows, game_rows + len(eg)
            a, b = max(lo, r0) - r0, min(hi, game_rows) - r0
            if a < b:
                tp = eg.to_play[a:b]
                self.writer.add(gid, S.pack_features(eg.features[a:b], self.desc["dtype"]), eg.move_numbers[a:b],
                                tp, eg.labels[a:b], value_targets(winner, tp),
                                global_inputs=self._globals(unit.komi[g], tp),
                                metadata_inputs=self._metadata(g, tp))
        self._check_rows(game_rows, int(unit.rows[g]), gid)


def encode_shard(spec: dict, options: ShardOptions) -> dict:
    """Encode one final shard: ``spec`` = ``{"split", "index", "file" (relative to the output
    folder), "digest", "pieces": [[unit_id, game_index, row_lo, row_hi], ...]}``; ``options``:
    ``encoder``, ``encoder_options``, ``board_size``, ``include_passes``, ``skip_first``,
    ``work_dir``, ``out_dir``, ``row_group_rows``, ``zstd_level``, ``globals`` (the ``globals`` column of the
    rows' komi, from the game's record, and colour to move: :mod:`gotk.encoders.global_inputs`), ``metadata`` (the
    ``metadata`` column of the game's metadata: :mod:`gotk.encoders.metadata_inputs`). Returns the
    shard's entry (``file``, ``rows``, ``bytes``, ``sha256``) plus timings.

    The pieces are encoded by a :class:`ShardEncoder` into a :class:`~gotk.shards.row_writer.ShardRowWriter`
    (rows straight into its column arrays, one zero-copy Arrow table per batch); once the file is in place,
    a done-record marks the shard finished for ``--resume``."""
    t0 = time.perf_counter()
    enc = encoder_for(options)
    st = options.storage()
    rows = sum(hi - lo for _, _, lo, hi in spec["pieces"])
    schema = S.shard_schema(enc.describe(), globals_desc=GI.describe() if options.globals else None,
                            metadata_desc=MI.describe() if options.metadata else None)
    with ShardRowWriter(join(options.out_dir, spec["file"]), schema, rows,
                          options.row_group_rows, options.zstd_level, storage=st) as writer:
        encoder = ShardEncoder(enc, options, writer, st)
        encoder.encode(spec["pieces"])
        info = writer.finish()
    entry = {"file": spec["file"], "rows": info["rows"], "bytes": info["bytes"], "sha256": info["sha256"]}
    write_done_record(shard_done_path(options.work_dir, spec["split"], spec["index"]),
                      {"digest": spec["digest"], **entry}, st)
    total = time.perf_counter() - t0
    t_encode, t_write = encoder.encode_s, writer.write_s
    return {**entry, "timing": {"encode_s": t_encode, "other_s": total - t_encode,
                                "shard_write_s": t_write, "shard_rest_s": total - t_encode - t_write},
            "peak_rss_mib": peak_rss_mib()}


def reuse_shard(spec: dict, options: ShardOptions) -> dict | None:
    """The entry of a shard finished by an earlier run with the same plan, or None (then it is encoded
    again): the file must still have the size and sha256 its done-record wrote (a damaged shard is redone)."""
    st = options.storage()
    rec = read_done_record(shard_done_path(options.work_dir, spec["split"], spec["index"]), st, spec["digest"])
    path = join(options.out_dir, spec["file"])
    if rec is None or not st.isfile(path) or st.size(path) != rec.get("bytes"):
        return None
    src = st.open_input(path)
    try:
        with open(src, "rb") if isinstance(src, str) else src as f:
            if sha256_stream(f)[0] != rec.get("sha256"):
                return None
    except OSError:
        return None
    return {k: rec[k] for k in ("file", "rows", "bytes", "sha256")}
