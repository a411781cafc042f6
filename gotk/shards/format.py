"""The shard format (schema version 2): one Parquet row per position, see ``docs/shards.md``.

Columns: ``game_id`` string, ``move_number`` int32, ``to_play`` int8, ``features``
fixed_size_binary, ``label`` int16, ``value`` int8. Bit encoders store ``np.packbits`` of the
C×H×W 0/1 planes (C order, big bit order); ``int8`` encoders store the raw int8 bytes. The schema
metadata key ``gotk`` holds ``{"schema_version", "encoder" (Encoder.describe()), "features"}`` as
JSON, so a shard alone is self-describing. zstd compression, fixed row groups of
:data:`ROW_GROUP_ROWS` rows, statistics and dictionary only on the small columns.

:class:`ShardWriter` writes one file atomically (``.tmp`` + rename) and cuts row groups at fixed row
counts whatever the batch sizes fed to it, so the bytes depend only on the rows.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gotk.atomic import temp_path
from gotk.hashing import sha256_file
from gotk.storage import Storage

SCHEMA_VERSION = 2  # 2: games.parquet gained normalised metadata (issue 14); shard rows unchanged
ROW_GROUP_ROWS = 8192
ZSTD_LEVEL = 1
METADATA_KEY = b"gotk"
SMALL_COLUMNS = ["game_id", "move_number", "to_play", "label", "value"]


def features_nbytes(encoder_desc: dict) -> int:
    """Bytes per row of the ``features`` column for an encoder description."""
    c, h, w = encoder_desc["shape"]
    n = int(c) * int(h) * int(w)
    return n if encoder_desc["dtype"] == "int8" else (n + 7) // 8


def shard_metadata(encoder_desc: dict) -> dict:
    """The JSON object stored under the ``gotk`` schema metadata key."""
    return {
        "schema_version": SCHEMA_VERSION,
        "encoder": encoder_desc,
        "features": {
            "encoding": "int8" if encoder_desc["dtype"] == "int8" else "packbits_big",
            "bytes_per_row": features_nbytes(encoder_desc),
            "order": "C (plane, row, col)",
        },
    }


def shard_schema(encoder_desc: dict) -> pa.Schema:
    """The Arrow schema of a shard, with its ``gotk`` metadata."""
    meta = json.dumps(shard_metadata(encoder_desc), sort_keys=True, separators=(",", ":"))
    return pa.schema(
        [
            pa.field("game_id", pa.string(), nullable=False),
            pa.field("move_number", pa.int32(), nullable=False),
            pa.field("to_play", pa.int8(), nullable=False),
            pa.field("features", pa.binary(features_nbytes(encoder_desc)), nullable=False),
            pa.field("label", pa.int16(), nullable=False),
            pa.field("value", pa.int8(), nullable=False),
        ],
        metadata={METADATA_KEY: meta.encode()},
    )


def pack_features(features: np.ndarray, dtype: str) -> np.ndarray:
    """(N, C, H, W) planes → (N, bytes_per_row) uint8: packbits (big bit order) for ``bit``
    encoders, the raw bytes for ``int8``."""
    n = features.shape[0]
    flat = np.ascontiguousarray(features).reshape(n, int(np.prod(features.shape[1:])))
    if dtype == "int8":
        return flat.view(np.uint8)
    return np.packbits(flat, axis=1, bitorder="big")


def rows_table(schema: pa.Schema, game_ids: list[str] | pa.Array, move_numbers: np.ndarray,
               to_play: np.ndarray, packed: np.ndarray, labels: np.ndarray, values: np.ndarray) -> pa.Table:
    """One Arrow table of shard rows from column arrays (``packed`` is (N, bytes_per_row) uint8;
    ``game_ids`` a list of strings or a pyarrow string array)."""
    n = int(packed.shape[0])
    width = schema.field("features").type.byte_width
    if packed.shape[1] != width:
        raise ValueError(f"features are {packed.shape[1]} bytes per row, the schema says {width}")
    feats = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(width), n, [None, pa.py_buffer(np.ascontiguousarray(packed, dtype=np.uint8))])
    return pa.Table.from_arrays(
        [
            game_ids if isinstance(game_ids, pa.Array) else pa.array(game_ids, type=pa.string()),
            pa.array(np.asarray(move_numbers, dtype=np.int32)),
            pa.array(np.asarray(to_play, dtype=np.int8)),
            feats,
            pa.array(np.asarray(labels, dtype=np.int16)),
            pa.array(np.asarray(values, dtype=np.int8)),
        ],
        schema=schema,
    )


#: Keyword arguments of every Parquet read of a shard or games table: each page's CRC-32 (written by
#: :class:`ShardWriter`) is checked, so a flipped bit raises ``OSError`` instead of reading as other data.
PAGE_CHECKS = {"page_checksum_verification": True}


class ShardWriter:
    """Write one shard file: feed tables with :meth:`write`, then :meth:`close` (→ rows, sha256,
    bytes). Row groups are exactly ``row_group_rows`` rows (the last may be shorter). The file is
    written to ``path + '.tmp'`` and renamed on close; :meth:`abort` removes the temp file. With a
    non-local ``storage`` (an fsspec URL ``path``) the bytes stream through
    :meth:`Storage.open_write_atomic` instead (same bytes; sha256 computed while writing)."""

    def __init__(self, path: str | os.PathLike, schema: pa.Schema, row_group_rows: int = ROW_GROUP_ROWS,
                 zstd_level: int = ZSTD_LEVEL, dictionary: list[str] | None = None,
                 statistics: list[str] | None = None, storage: Storage | None = None) -> None:
        self.schema = schema
        self.row_group_rows = row_group_rows
        self.rows = 0
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._remote = storage.open_write_atomic(path) if storage is not None and not storage.is_local else None
        if self._remote is None:
            self.path = Path(path)
            self.tmp = temp_path(self.path)
            self.path.parent.mkdir(parents=True, exist_ok=True)
        else:
            self.path = path
        try:
            self._writer = pq.ParquetWriter(
                self.tmp if self._remote is None else self._remote.sink, schema, compression="zstd",
                compression_level=zstd_level,
                use_dictionary=["game_id"] if dictionary is None else dictionary,
                write_statistics=SMALL_COLUMNS if statistics is None else statistics,
                write_page_checksum=True,  # a CRC-32 per page, verified on read (PAGE_CHECKS): bit rot is an error
            )
        except BaseException:
            if self._remote is not None:
                self._remote.abort()
            raise

    def write(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        self._pending.append(table)
        self._pending_rows += table.num_rows
        if self._pending_rows >= self.row_group_rows:
            self._flush(final=False)

    def _flush(self, final: bool) -> None:
        if not self._pending:
            return
        table = pa.concat_tables(self._pending) if len(self._pending) > 1 else self._pending[0]
        start = 0
        while table.num_rows - start >= self.row_group_rows or (final and start < table.num_rows):
            size = min(self.row_group_rows, table.num_rows - start)
            group = table.slice(start, size)
            # a row group is written from one contiguous chunk (its pages then do not depend on where the
            # batches were cut); only a group that spans two pending tables is copied to make it so
            if group.column(0).num_chunks > 1:
                group = group.combine_chunks()
            self._writer.write_table(group, row_group_size=size)
            start += size
        rest = table.slice(start)
        self._pending = [rest] if rest.num_rows else []
        self._pending_rows = rest.num_rows
        self.rows += start

    def close(self) -> dict:
        """Finish the file; returns ``{"rows", "sha256", "bytes"}``."""
        self._flush(final=True)
        self._writer.close()
        if self._remote is not None:
            self._remote.commit()
            return {"rows": self.rows, "sha256": self._remote.sha256, "bytes": self._remote.nbytes}
        os.replace(self.tmp, self.path)
        return {"rows": self.rows, "sha256": sha256_file(self.path), "bytes": self.path.stat().st_size}

    def abort(self) -> None:
        try:
            self._writer.close()
        finally:
            if self._remote is not None:
                self._remote.abort()
            else:
                self.tmp.unlink(missing_ok=True)


def schema_metadata(schema: pa.Schema, where: str = "this schema", required: bool = True) -> dict | None:
    """The ``gotk`` metadata object of a shard's Arrow schema, its schema version checked (ValueError
    with a clear message when of another version, or when absent and ``required``; else None)."""
    raw = (schema.metadata or {}).get(METADATA_KEY)
    if raw is None:
        if not required:
            return None
        raise ValueError(f"{where} has no gotk metadata: not a gotk shard (pass the encoder description explicitly)")
    meta = json.loads(raw)
    if meta.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"{where} is a gotk shard of schema version {meta.get('schema_version')}; this gotk reads "
                         f"version {SCHEMA_VERSION}")
    return meta


def read_shard_metadata(path: str | os.PathLike) -> dict:
    """The ``gotk`` metadata object of a shard file (reads only the footer)."""
    return schema_metadata(pq.read_schema(path), str(path))


def encoder_description(source) -> dict:
    """The encoder description (``Encoder.describe()``) of a shard: from a pyarrow Schema, Table,
    RecordBatch, ParquetFile, a path to a shard, or the ``gotk`` metadata object / description itself."""
    if isinstance(source, dict):
        return source.get("encoder", source)
    if isinstance(source, (str, bytes)) or hasattr(source, "__fspath__"):
        import pyarrow.parquet as pq

        source = pq.read_schema(source)
    schema = getattr(source, "schema_arrow", None) or getattr(source, "schema", None) or source
    if not isinstance(schema, pa.Schema):
        raise TypeError(f"cannot find an encoder description in {type(source).__name__}")
    return schema_metadata(schema)["encoder"]


def decode_features(batch, encoder: dict | None = None) -> np.ndarray:
    """Rows → ``(N, C, H, W)`` planes: uint8 0/1 for bit encoders, int8 for ``int8`` encoders.

    ``batch``: a pyarrow Table or RecordBatch with a ``features`` column (the description is read
    from its schema metadata unless ``encoder`` is given), or the ``features`` column itself
    (Array / ChunkedArray) with ``encoder`` given. ``encoder`` may be ``Encoder.describe()``, the
    shard's ``gotk`` metadata object, or a path to a shard.
    """
    if isinstance(batch, (pa.Table, pa.RecordBatch)):
        desc = encoder_description(encoder if encoder is not None else batch.schema)
        column = batch.column("features")
    else:
        if encoder is None:
            raise ValueError("decode_features(column) needs the encoder description")
        desc = encoder_description(encoder)
        column = batch
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    c, h, w = (int(x) for x in desc["shape"])
    n = len(column)
    width = column.type.byte_width
    size = c * h * w
    expected = features_nbytes(desc)
    if width != expected:
        raise ValueError(f"features are {width} bytes per row; encoder {desc.get('name')!r} {desc['shape']} "
                         f"({desc['dtype']}) needs {expected}")
    if column.null_count:
        raise ValueError("features column has nulls")
    buf = column.buffers()[1]
    raw = np.frombuffer(buf, dtype=np.uint8, count=(column.offset + n) * width)[column.offset * width:]
    raw = raw.reshape(n, width)
    if desc["dtype"] == "int8":
        return raw.view(np.int8).reshape(n, c, h, w)
    bits = np.unpackbits(raw, axis=1, count=size, bitorder="big")
    return bits.reshape(n, c, h, w)




def read_row(folder: Path | str, split: str, row: int, storage_options: dict | None = None):
    """``(table_of_one_row, manifest)`` for row ``row`` (0-based over the split's shards in order);
    ``folder`` may be an fsspec URL."""
    from gotk.shards.manifest import load_manifest
    from gotk.storage import join

    m = load_manifest(folder, storage_options)
    st = Storage.for_url(folder, storage_options)
    if split not in m["splits"]:
        raise ValueError(f"no split {split!r}; the dataset has {', '.join(m['splits'])}")
    s = m["splits"][split]
    if not 0 <= row < s["rows"]:
        raise ValueError(f"row {row} outside 0..{s['rows'] - 1} of split {split!r}")
    for shard in s["shards"]:
        if row < shard["rows"]:
            pf = pq.ParquetFile(st.open_input(join(folder, shard["file"])), **PAGE_CHECKS)
            for g in range(pf.metadata.num_row_groups):
                n = pf.metadata.row_group(g).num_rows
                if row < n:
                    return pf.read_row_group(g).slice(row, 1), m
                row -= n
        row -= shard["rows"]
    raise ValueError(f"row {row} not found: the manifest and the shard files disagree")
