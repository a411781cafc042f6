"""The scan files of ``gotk encode`` (``WORK/unit-NNNNN.arrow``, written by :func:`gotk.jobs.workers.scan_unit`):
their layout, where they lie, whether one is whole, and their games read back (:class:`UnitGames`), which a
process keeps for the last scan units it wrote or read (:func:`unit_games`), so that its shards need not read
them back."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from gotk.encoders import metadata_inputs as MI
from gotk.encoders.base import kept_counts
from gotk.hashing import sha256_bytes
from gotk.sgf.record import GameRecord, winner_sign
from gotk.shards import manifest as M
from gotk.storage import Storage, join

if TYPE_CHECKING:
    from gotk.game.replay import BoardTrace, GameBatch

UNIT_META_KEY = b"gotk_unit"
# version of the scan file layout (SCAN_SCHEMA + the stats under UNIT_META_KEY): part of every unit digest, so a
# resumed run never reuses a scan file written in another layout (it is redone instead)
SCAN_VERSION = 2

#: One row per candidate game: ``path``, every games.parquet column but ``split``/``positions`` (see
#: gotk.shards.manifest.GAMES_SCHEMA), then ``rows`` and the compact record the encoder replays.
SCAN_SCHEMA = pa.schema(
    [("game_id", pa.string()), ("path", pa.string())]
    + [(f.name, f.type) for f in M.GAMES_SCHEMA if f.name not in ("game_id", "split", "positions")]
    + [("rows", pa.int32()), ("size", pa.int16()), ("first_player", pa.int8()),
       ("setup_black", pa.binary()), ("setup_white", pa.binary()), ("setup_empty", pa.binary()),
       ("colors", pa.binary()), ("points", pa.binary())])


# Scan files and done-records sit in WORK itself, not in folders of their own: removing a folder costs a file
# system with discard (ext4) a noticeable share of a small encode at the end of every run.
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


# --- scan files kept in this process ----------------------------------------------------------

class UnitGames:
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
        self._meta_table = table.select([f.name for f in M.GAMES_SCHEMA if f.name in table.column_names])
        self._meta_rows: dict[int, np.ndarray] = {}  # metadata_rows per board area
        self._bin = {name: self._binary(table.column(name))
                     for name in ("setup_black", "setup_white", "setup_empty", "colors", "points")}
        self._batch: GameBatch | None = None
        self.trace: BoardTrace | None = None  # the scan's board trace of the batch's games, where it kept one
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

    def metadata_rows(self, board_area: int) -> np.ndarray:
        """``(games, 2, 192)`` float32: each game's metadata inputs with black, then white to move
        (:func:`gotk.encoders.metadata_inputs.game_rows` of its normalised metadata), made once."""
        got = self._meta_rows.get(board_area)
        if got is None:
            rows = self._meta_table.to_pylist()
            got = self._meta_rows[board_area] = np.stack([MI.game_rows(MI.from_normalised(r), board_area)
                                                          for r in rows]) if rows \
                else np.empty((0, 2, MI.NUM_CHANNELS), np.float32)
        return got

    def cap(self, include_passes: bool, skip_first: int) -> np.ndarray:
        """Each game's :func:`~gotk.encoders.base.kept_count` of its whole main line: the rows an encoder
        may touch (after :meth:`batch`)."""
        from gotk.game import batch as B

        key = (include_passes, skip_first)
        if key not in self.caps:
            b = self._batch
            moves = np.append(b.games[:, B.G_M0], b.games[-1, B.G_M1] if len(b) else 0)
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


_UNITS: dict[tuple, UnitGames] = {}  # recently read local scan units (see unit_games)
_UNITS_KEPT = 64


def forget_units() -> None:
    """Drop the scan units this process keeps (:func:`unit_games`): a run's end, so that a long-lived process
    (a notebook, a test session) does not hold the last run's games."""
    _UNITS.clear()


def _keep_unit(key: tuple, unit: UnitGames) -> UnitGames:
    if len(_UNITS) >= _UNITS_KEPT or any(k[0] != key[0] for k in _UNITS):
        _UNITS.clear()  # too many, or another run's
    _UNITS[key] = unit
    return unit


def unit_games(work_dir: str, unit_id: int, st: Storage) -> UnitGames:
    """Scan unit ``unit_id``'s games. A process that writes several shards reads each unit once while it is
    among the last :data:`_UNITS_KEPT` read or scanned here (each split's shards take pieces of every unit).
    Local files only; a unit is known by the sha256 written beside its scan file, so a scan file written
    afresh (``--resume``, another run in the same folder) is read afresh."""
    if not st.is_local:
        return UnitGames(read_scan_table(scan_path(work_dir, unit_id), st))
    key = (str(work_dir), unit_id, st.read_text(scan_sum_path(work_dir, unit_id)).strip())
    unit = _UNITS.get(key)
    return unit if unit is not None else _keep_unit(key, UnitGames(read_scan_table(scan_path(work_dir, unit_id),
                                                                                     st)))


def remember_unit(work_dir: str, unit_id: int, st: Storage, table: pa.Table, sha256: str, batch: GameBatch,
                  trace: BoardTrace | None = None) -> None:
    """Keep the table of the scan file (of that ``sha256``) this process just wrote, and the batch of its games
    the scan replayed (and its board ``trace``, if it kept one), for :func:`unit_games` (local files only): with
    one worker the shards then read no scan file back."""
    if st.is_local:
        unit = UnitGames(table)
        unit.use_batch(batch)
        unit.trace = trace
        _keep_unit((str(work_dir), unit_id, sha256), unit)
