"""The shard row writer: rows written into preallocated column arrays and handed to a
:class:`gotk.shards.format.ShardWriter` in batches (what ``gotk encode``'s shard unit fills; the format itself is
:mod:`gotk.shards.format`'s)."""

from __future__ import annotations

import os
import time

import numpy as np
import pyarrow as pa

from gotk.shards import metadata_column as V
from gotk.shards.format import ROW_GROUP_ROWS, ZSTD_LEVEL, ShardWriter, rows_table, schema_experience, schema_targets
from gotk.shards.globals_column import GLOBALS
from gotk.storage import Storage

#: Rows a :class:`ShardRowWriter` gathers before it hands them to the Parquet writer: about this many bytes of
#: ``features`` (at least one row group), so memory stays bounded whatever the shard's size.
BATCH_BYTES = 64 << 20


class ShardRowWriter:
    """One shard file written from rows: rows are gathered in preallocated column arrays (a batch of about
    :data:`BATCH_BYTES` of features), each full batch goes to a :class:`ShardWriter` as one zero-copy Arrow
    table (so the bytes depend only on the rows, not on how they were added), and :meth:`finish` renames
    the finished file into place (atomic); :meth:`abort` (or leaving the ``with`` block without
    :meth:`finish`) leaves no file behind.

    Rows come in two ways. :meth:`add` copies one game's rows given as arrays. An encoder that writes
    rows in place asks :meth:`reserve` for rows of the batch, fills :attr:`features` (packed, see
    :func:`pack_features`), :attr:`move_number`, :attr:`to_play`, :attr:`label` and :attr:`value` there
    from :attr:`pos` on, then hands them to their games with :meth:`commit`. The column arrays are replaced when a
    batch is written out, so they are read after :meth:`reserve`, never kept across it.

    A schema with the self-play target columns (:func:`shard_schema` with ``targets=True``) adds the arrays
    :attr:`policy` (float32, ``(n, points+1)``), :attr:`root_value`, :attr:`ownership` (int8, ``(n, points)``),
    :attr:`score`, :attr:`weight` and :attr:`aux_weight`, filled the same way (or given to :meth:`add` as
    ``targets``; ``aux_weight`` may be left out there: 1); a schema with the ``globals`` column adds
    :attr:`global_inputs` (float32, ``(n, G)``; :meth:`add`'s ``global_inputs``), the ``metadata`` column
    :attr:`metadata_inputs` likewise.

    ``expected_rows`` (the rows the file will hold, when known) keeps batches no larger than the rows to come."""

    def __init__(self, path: str | os.PathLike, schema: pa.Schema, expected_rows: int | None = None,
                 row_group_rows: int = ROW_GROUP_ROWS, zstd_level: int = ZSTD_LEVEL,
                 storage: Storage | None = None, batch_bytes: int = BATCH_BYTES) -> None:
        self.schema = schema
        self.width = schema.field("features").type.byte_width
        self.targets = schema_targets(schema)  # the self-play target columns, or ()
        if schema_experience(schema) is not None:
            raise ValueError("the row writer does not fill experience columns: write their tables with rows_table")
        self.batch_rows = max(row_group_rows, batch_bytes // self.width)
        self.remaining = expected_rows  # rows still to come, when known
        self.write_s = 0.0  # seconds spent writing batches out (Arrow tables, Parquet, zstd, the final rename)
        self.pos = 0  # the next free row of the batch
        self._game_ids: list[str] = []  # the batch's games; row i belongs to _game_ids[_game_index[i]]
        self._finished = False
        self._writer = ShardWriter(path, schema, row_group_rows, zstd_level, storage=storage)
        self._new_batch(0)

    def _new_batch(self, need: int) -> None:
        n = max(need, self.batch_rows if self.remaining is None else min(self.batch_rows, self.remaining))
        self.features = np.empty((n, self.width), np.uint8)
        self.move_number = np.empty(n, np.int32)
        self.to_play = np.empty(n, np.int8)
        self.label = np.empty(n, np.int16)
        self.value = np.empty(n, np.int8)
        if self.targets:
            points = self.schema.field("ownership").type.byte_width
            self.policy = np.empty((n, points + 1), np.float32)
            self.root_value = np.empty(n, np.float32)
            self.ownership = np.empty((n, points), np.int8)
            self.score = np.empty(n, np.float32)
            self.weight = np.empty(n, np.float32)
            self.aux_weight = np.empty(n, np.float32)
        vectors = V.vector_arrays(self.schema, n)
        self.global_inputs, self.metadata_inputs = vectors.get(GLOBALS), vectors.get(V.METADATA)
        self._game_index = np.empty(n, np.int32)
        self._game_ids.clear()
        self.pos = 0

    @property
    def free(self) -> int:
        """Rows of the batch free from :attr:`pos` on."""
        return len(self.label) - self.pos

    def reserve(self, rows: int) -> slice:
        """Rows ``pos:pos + rows`` of the batch, for the caller to fill before :meth:`commit`: when they do not
        fit, the batch is written out first and a new one (of at least ``rows`` rows) started. The batch may
        have room beyond them (:attr:`free`)."""
        if rows > self.free:
            self._write_batch()
            self._new_batch(rows)
        return slice(self.pos, self.pos + rows)

    def commit(self, game_ids: list[str], rows_per_game: list[int] | np.ndarray) -> None:
        """The next rows from :attr:`pos` on, filled by the caller, are ``rows_per_game[i]`` rows of game
        ``game_ids[i]`` in turn; the batch moves past them."""
        n = len(game_ids)
        first = len(self._game_ids)
        rows = int(rows_per_game[0]) if n == 1 else int(np.sum(rows_per_game))
        if rows > self.free:
            raise ValueError(f"{rows} rows committed, the batch has {self.free} free")
        if n == 1:
            self._game_index[self.pos:self.pos + rows] = first
        else:
            self._game_index[self.pos:self.pos + rows] = np.repeat(np.arange(first, first + n, dtype=np.int32),
                                                                    rows_per_game)
        self._game_ids.extend(game_ids)
        self.pos += rows
        if self.remaining is not None:
            self.remaining -= rows

    def add(self, game_id: str, features: np.ndarray, move_number: np.ndarray, to_play: np.ndarray,
            label: np.ndarray, value: np.ndarray, targets: dict[str, np.ndarray] | None = None,
            global_inputs: np.ndarray | None = None, metadata_inputs: np.ndarray | None = None) -> None:
        """Rows of one game, copied: ``features`` packed (``(k, bytes_per_row)`` uint8, :func:`pack_features`),
        the other columns ``k`` values each; ``targets`` (the self-play target columns, as :func:`rows_table`
        takes them) exactly when the schema has them; ``global_inputs`` ``(k, G)``, ``metadata_inputs`` likewise."""
        if bool(self.targets) != (targets is not None):
            raise ValueError("targets= is required exactly when the shard schema has the target columns")
        k = len(label)
        sl = self.reserve(k)
        self.features[sl] = features
        self.move_number[sl] = move_number
        self.to_play[sl] = to_play
        self.label[sl] = label
        self.value[sl] = value
        if targets is not None:
            for name in self.targets:
                col = getattr(self, name)
                col[sl] = np.asarray(targets[name]).reshape(k, *col.shape[1:]) if name in targets else 1.0
        V.check_vectors(self.schema, {GLOBALS: global_inputs, V.METADATA: metadata_inputs})
        for dst, src in ((self.global_inputs, global_inputs), (self.metadata_inputs, metadata_inputs)):
            if src is not None:
                dst[sl] = src
        self.commit([game_id], [k])

    def _write_batch(self) -> None:
        t = time.perf_counter()
        n = self.pos
        if n:
            ids = pa.array(self._game_ids, pa.string()).take(pa.array(self._game_index[:n]))
            targets = {name: getattr(self, name)[:n] for name in self.targets} if self.targets else None
            glob, meta = (None if v is None else v[:n] for v in (self.global_inputs, self.metadata_inputs))
            self._writer.write(rows_table(self.schema, ids, self.move_number[:n], self.to_play[:n],
                                          self.features[:n], self.label[:n], self.value[:n], targets, glob, meta))
        self.write_s += time.perf_counter() - t

    def finish(self) -> dict:
        """Write the rest and move the file into place; returns ``{"rows", "sha256", "bytes"}``."""
        try:
            self._write_batch()
            t = time.perf_counter()
            info = self._writer.close()
            self.write_s += time.perf_counter() - t
        except BaseException:
            self.abort()
            raise
        self._finished = True
        return info

    def abort(self) -> None:
        """Drop the file: nothing is left at its path or beside it."""
        if not self._finished:
            self._finished = True
            self._writer.abort()

    def __enter__(self) -> ShardRowWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.abort()  # a no-op after finish(); else the rows so far are dropped


__all__ = ["BATCH_BYTES", "ShardRowWriter"]
