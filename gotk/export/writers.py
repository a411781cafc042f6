"""The output work units of ``gotk export``: ``(file spec, options) → entry``, pure top-level functions.

Each rebuilds its games from the scan files that :func:`gotk.jobs.workers.scan_unit` wrote (the
compact record: setup stones, colours, points, result), writes one output file atomically (temp +
rename through :mod:`gotk.storage`, or ``write_katago_npz``'s own atomic write), then a done-record
under ``WORK/files/`` so ``--resume`` can reuse the file. A game the format refuses at this stage
(a :class:`~gotk.errors.GotkError`) is counted by reason, never a crash.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

import numpy as np

from gotk.encoders import metadata_inputs as MI
from gotk.errors import GotkError
from gotk.export.inputs import policy_rows
from gotk.game.kernels import WHITE
from gotk.hashing import sha256_bytes, sha256_file
from gotk.jobs import scan_files as SF
from gotk.runfolder import read_done_record, write_done_record
from gotk.sgf.record import GameRecord, parse_result
from gotk.storage import Storage, join

_CACHE: dict[str, tuple[SF.UnitGames, list]] = {}
_CACHE_UNITS = 1024  # scan files are memory-mapped: holding many open costs address space, not memory


def _games(work_dir: str, unit_id: int, st: Storage) -> tuple[SF.UnitGames, list]:
    """A scan unit's games (numpy views) and result strings, kept open for the process: a file's games
    are shuffled across every chunk, so each unit is needed again and again."""
    key = f"{work_dir}:{unit_id}"
    got = _CACHE.get(key)
    if got is None:
        table = SF.read_scan_table(SF.scan_path(work_dir, unit_id), st)
        got = (SF.UnitGames(table), table.column("result").to_pylist())
        if len(_CACHE) >= _CACHE_UNITS or any(not k.startswith(f"{work_dir}:") for k in _CACHE):
            _CACHE.clear()  # another run's units, or too many
        _CACHE[key] = got
    return got


def game_record(work_dir: str, unit_id: int, index: int, st: Storage) -> tuple[str, GameRecord]:
    """``(game_id, record)`` of game ``index`` of scan unit ``unit_id`` (the result included)."""
    unit, results = _games(work_dir, unit_id, st)
    rec = unit.record(index)
    rec.result = parse_result(results[index])
    return unit.game_id[index], rec


def done_path(work_dir: str | os.PathLike, file: str) -> Path | str:
    return join(work_dir, "files", file.replace("/", "_") + ".json")


def _finish(spec: dict, options: dict, entry: dict, st: Storage) -> None:
    write_done_record(done_path(options["work_dir"], spec["file"]), {"digest": spec["digest"], **entry}, st)


def reuse_file(spec: dict, options: dict) -> dict | None:
    """The entry of a file an earlier run finished with the same plan (digest), or None."""
    st = Storage.for_url(options["out_dir"])
    rec = read_done_record(done_path(options["work_dir"], spec["file"]), st, spec["digest"])
    path = join(options["out_dir"], spec["file"])
    if rec is None or not st.isfile(path) or st.size(path) != rec.get("bytes"):
        return None
    rec.pop("digest")
    return rec


def write_leelazero_chunk(spec: dict, options: dict) -> dict:
    """One Leela Zero chunk: ``spec`` = ``{"index", "file", "digest", "games": [[unit_id, i], ...]}``
    in chunk order; ``options``: ``work_dir``, ``out_dir``, ``compress_level``, ``keep_time_wins``, and
    ``selfplay`` (a self-play folder: each game's records are those of its shard rows, with the search's
    policy; a game whose rows name other moves than its SGF is ``policy_mismatch``)."""
    from gotk.export import leelazero as L

    t0 = time.perf_counter()
    st = Storage.for_url(options["out_dir"])
    texts: list[bytes] = []
    skipped: Counter = Counter()
    examples: dict[str, str] = {}
    positions = 0
    searches = policy_rows(options["selfplay"]) if options.get("selfplay") else None
    for unit_id, index in spec["games"]:
        gid, rec = game_record(options["work_dir"], unit_id, index, st)
        try:
            policy = None
            if searches is not None:
                moves, labels, probs = searches.game(gid)
                if moves.shape[0] and ((moves < 0).any() or (moves >= rec.num_moves).any()
                                       or (rec.points[moves] != labels).any()):
                    raise GotkError("policy_mismatch", "the shard rows' moves are not the game's moves")
                policy = (moves, probs)
            text = L.game_text(rec, time_wins=bool(options.get("keep_time_wins")), policy=policy)
        except GotkError as e:
            skipped[e.reason] += 1
            examples.setdefault(e.reason, f"game {gid}: {e}")
            continue
        texts.append(text)
        positions += rec.num_moves if policy is None else len(policy[0])
    data = L.chunk_bytes(texts, int(options.get("compress_level", L.COMPRESS_LEVEL)))
    st.write_bytes_atomic(join(options["out_dir"], spec["file"]), data)

    entry = {"file": spec["file"], "games": len(texts), "positions": positions, "bytes": len(data),
             "sha256": sha256_bytes(data), "skipped": dict(sorted(skipped.items())),
             "examples": examples}
    _finish(spec, options, entry, st)
    return {**entry, "seconds": time.perf_counter() - t0}


def _metadata_rows(work_dir: str, unit_id: int, index: int, rec: GameRecord, st: Storage) -> np.ndarray:
    """``(moves, 192)``: the metadata inputs of game ``index`` of a scan unit for the player of each move (a KataGo
    row is the position before a move, that move's colour to play; the rows may stop before the last move)."""
    unit, _ = _games(work_dir, unit_id, st)
    white = np.asarray(rec.colors) == WHITE
    return MI.rows_for(unit.metadata_rows(rec.size * rec.size)[index], np.where(white, -1, 1))


def write_katago_file(spec: dict, options: dict) -> dict:
    """One KataGo ``.npz``: ``spec`` = ``{"index", "file", "digest", "pieces": [[unit_id, i, lo, hi],
    ...]}`` (rows ``lo:hi`` of that game's rows; ``hi`` -1: to its end); rows shuffled with
    ``(seed, index)``. ``options``: ``work_dir``, ``out_dir``, ``seed``, ``metadata`` (add ``metadataInputNC``: each
    row's metadata inputs, :mod:`gotk.encoders.metadata_inputs`, for the colour of the row's move)."""
    from gotk.export import katago as KG

    t0 = time.perf_counter()
    st = Storage.for_url(options["out_dir"])
    parts: dict[str, list[np.ndarray]] = {}
    skipped: Counter = Counter()
    examples: dict[str, str] = {}
    games: set[str] = set()
    for unit_id, index, lo, hi in spec["pieces"]:
        gid, rec = game_record(options["work_dir"], unit_id, index, st)
        try:
            rows = KG.katago_game_rows(rec, game_id=gid)
            if options.get("metadata"):
                meta = _metadata_rows(options["work_dir"], unit_id, index, rec, st)
                rows["metadataInputNC"] = meta[:len(rows["globalInputNC"])]
        except GotkError as e:
            if lo == 0:  # a game cut across two files is counted once
                skipped[e.reason] += 1
                examples.setdefault(e.reason, f"game {gid}: {e}")
            continue
        games.add(gid)
        for k, v in rows.items():
            parts.setdefault(k, []).append(v[lo: hi if hi >= 0 else None])
    path = join(options["out_dir"], spec["file"])
    entry = {"file": spec["file"], "games": len(games), "positions": 0, "bytes": 0, "sha256": None}
    if parts:  # else every game of the file was skipped: no file (the run report leaves it out)
        cat = {k: np.concatenate(v) for k, v in parts.items()}
        n = len(next(iter(cat.values())))
        perm = np.random.default_rng([int(options["seed"]), int(spec["index"])]).permutation(n)
        KG.write_katago_npz({k: v[perm] for k, v in cat.items()}, path)
        entry.update(positions=n, bytes=st.size(path), sha256=sha256_file(path))
    entry.update(skipped=dict(sorted(skipped.items())), examples=examples)
    _finish(spec, options, entry, st)
    return {**entry, "seconds": time.perf_counter() - t0}
