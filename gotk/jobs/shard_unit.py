"""The shard work unit of ``gotk encode`` (:func:`encode_shard`), beside the scan unit of
:mod:`gotk.jobs.workers`: a pure top-level function ``(shard spec, options) → result``.

* :func:`encode_shard` — a shard plan (a list of pieces: unit, game, row range) → replay + encode
  every piece with the encoder (runs of whole games in one compiled call where the encoder has a batch
  loop), pack, write ``OUT/<split>/part-NNNNN.parquet``; a done-record in
  ``WORK/shard-SPLIT-NNNNN.json`` marks it finished for ``--resume`` (:func:`reuse_shard`).

It writes its output files itself (atomically) and returns a small picklable dict, so it runs in-process,
in a process pool or under Dask alike. The scan units' games come from :func:`gotk.jobs.workers.unit_games`.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from gotk.encoders.base import kept_count
from gotk.hashing import sha256_stream
from gotk.jobs.workers import ShardOptions, _UnitGames, peak_rss_mib, unit_games
from gotk.sgf.record import signed_value_targets, value_targets
from gotk.shards import format as S
from gotk.storage import join

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
    enc = encoder_for(options)
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
        rows_out = (out, rows_to["label"][sl], rows_to["move"][sl], rows_to["tp"][sl], include_passes, skip_first)
        if board_only and unit.trace is not None:  # replayed by the scan: boards alone, no engine
            result, rows, done = enc.encode_traced_batch_into(sub, unit.trace.take(run), *rows_out)
        else:
            result, rows, done = enc.encode_batch_into(sub, *rows_out)
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
    board_only = batchable and getattr(enc, "board_only", False)
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
