"""The shard format (schema version 2): one Parquet row per position, see ``docs/shards.md``.

Columns: ``game_id`` string, ``move_number`` int32, ``to_play`` int8, ``features``
fixed_size_binary, ``label`` int16, ``value`` int8; self-play shards add the optional target columns
:data:`TARGETS` (``policy``, ``root_value``, ``ownership``, ``score``, ``weight``, ``aux_weight``) after them,
listed in the metadata's ``targets`` (:func:`schema_targets`; shards written before ``aux_weight`` have the first
five, :data:`TARGETS_V1`); a shard may also have the optional ``globals`` column (the global inputs of
:mod:`gotk.encoders.global_inputs`, described under the metadata's ``globals``: :func:`schema_globals`), then the
optional ``metadata`` column (:mod:`gotk.shards.metadata_column`); the optional experience columns (``return``,
``play_value``, ``play_prob``, ``opponent``: :mod:`gotk.shards.experience_column`) sit between the targets and
those, listed under the metadata's ``experience``. Bit encoders store ``np.packbits`` of the C×H×W
0/1 planes (C order, big bit order); ``int8`` encoders store the raw int8 bytes (both ways coded once:
:func:`pack_features`, :func:`unpack_features`). The schema metadata key ``gotk`` holds ``{"schema_version",
"encoder" (Encoder.describe()), "features"}`` as JSON, so a shard alone is self-describing. zstd compression, fixed
row groups of :data:`ROW_GROUP_ROWS` rows, statistics and dictionary only on the small columns.

:class:`ShardWriter` writes one file atomically (``.tmp`` + rename) and cuts row groups at fixed row
counts whatever the batch sizes fed to it, so the bytes depend only on the rows.
:class:`gotk.shards.row_writer.ShardRowWriter` feeds it from rows written into preallocated columns (what
``gotk encode``'s shard unit fills).
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
from gotk.shards import experience_column as X
from gotk.shards import metadata_column as V
from gotk.shards.globals_column import GLOBALS
from gotk.storage import Storage

SCHEMA_VERSION = 2  # 2: games.parquet holds the normalised metadata columns; shard rows as in 1
ROW_GROUP_ROWS = 8192
ZSTD_LEVEL = 1
METADATA_KEY = b"gotk"
SMALL_COLUMNS = ["game_id", "move_number", "to_play", "label", "value"]
#: The optional self-play target columns, in their order after the six position columns (docs/shards.md,
#: "Self-play target columns"): a shard written now has all of them or none.
TARGETS = ("policy", "root_value", "ownership", "score", "weight", "aux_weight")
#: The target columns of shards written before ``aux_weight``: still read, every row's aux weight taken as 1 (what
#: those shards were trained with; whether a row's game was played out cannot be told from the shard).
TARGETS_V1 = TARGETS[:5]
#: Target columns small enough for Parquet statistics (min/max per row group), beside :data:`SMALL_COLUMNS`.
TARGET_STAT_COLUMNS = ["root_value", "score", "weight", "aux_weight"]


def features_nbytes(encoder_desc: dict) -> int:
    """Bytes per row of the ``features`` column for an encoder description."""
    c, h, w = encoder_desc["shape"]
    n = int(c) * int(h) * int(w)
    return n if encoder_desc["dtype"] == "int8" else (n + 7) // 8


def shard_metadata(encoder_desc: dict, targets: bool = False, globals_desc: dict | None = None,
                   metadata_desc: dict | None = None, experience_desc: dict | None = None) -> dict:
    """The JSON object stored under the ``gotk`` schema metadata key (``targets``: the shard has the self-play target
    columns, listed under ``"targets"``; ``globals_desc`` / ``metadata_desc`` / ``experience_desc``: it has that
    column or columns, described under ``"globals"`` / ``"metadata"`` / ``"experience"``; without them the object is
    unchanged)."""
    meta = {
        "schema_version": SCHEMA_VERSION,
        "encoder": encoder_desc,
        "features": {
            "encoding": "int8" if encoder_desc["dtype"] == "int8" else "packbits_big",
            "bytes_per_row": features_nbytes(encoder_desc),
            "order": "C (plane, row, col)",
        },
    }
    if targets:
        meta["targets"] = list(TARGETS)
    for name, desc in ((GLOBALS, globals_desc), (V.METADATA, metadata_desc),
                       (X.EXPERIENCE, X.check_description(experience_desc))):
        if desc is not None:
            meta[name] = dict(desc)
    return meta


def board_points(encoder_desc: dict) -> int:
    """Points of the board (``H * W`` of the encoder's planes): a policy target has this many + 1 (pass) moves."""
    _, h, w = encoder_desc["shape"]
    return int(h) * int(w)


def shard_schema(encoder_desc: dict, targets: bool = False, globals_desc: dict | None = None,
                 metadata_desc: dict | None = None, experience_desc: dict | None = None) -> pa.Schema:
    """The Arrow schema of a shard, with its ``gotk`` metadata; ``targets`` adds the self-play target columns
    (:data:`TARGETS`) after the six position columns, ``experience_desc`` (``experience_column.describe()``) the
    experience columns after them, ``globals_desc`` (``global_inputs.describe()``) the ``globals`` column,
    ``metadata_desc`` (``metadata_inputs.describe()``) the ``metadata`` column last."""
    meta = json.dumps(shard_metadata(encoder_desc, targets, globals_desc, metadata_desc, experience_desc),
                      sort_keys=True, separators=(",", ":"))
    fields = [
        pa.field("game_id", pa.string(), nullable=False),
        pa.field("move_number", pa.int32(), nullable=False),
        pa.field("to_play", pa.int8(), nullable=False),
        pa.field("features", pa.binary(features_nbytes(encoder_desc)), nullable=False),
        pa.field("label", pa.int16(), nullable=False),
        pa.field("value", pa.int8(), nullable=False),
    ]
    if targets:
        points = board_points(encoder_desc)
        fields += [
            pa.field("policy", pa.binary((points + 1) * 2), nullable=False),  # float16 LE per move, pass last
            pa.field("root_value", pa.float32(), nullable=False),
            pa.field("ownership", pa.binary(points), nullable=False),  # int8 per point, row-major
            pa.field("score", pa.float32(), nullable=False),
            pa.field("weight", pa.float32(), nullable=False),
            pa.field("aux_weight", pa.float32(), nullable=False),  # ownership and score: 1 played out, 0 not
        ]
    if experience_desc is not None:
        fields += X.fields(X.check_description(experience_desc), board_points(encoder_desc) + 1)
    fields += V.vector_fields({GLOBALS: globals_desc, V.METADATA: metadata_desc})
    return pa.schema(fields, metadata={METADATA_KEY: meta.encode()})


def schema_globals(source: pa.Schema | dict | None, column: str = GLOBALS) -> dict | None:
    """The description of a shard's ``globals`` (or ``metadata``) column, or None when it has none: from its Arrow
    schema, ``gotk`` metadata object or a manifest; ValueError when a schema's column and metadata disagree."""
    if source is None:
        return None
    if isinstance(source, pa.Schema):
        raw = (source.metadata or {}).get(METADATA_KEY)
        desc = json.loads(raw).get(column) if raw is not None else None
        if (desc is not None) != (column in source.names) or (
                desc is not None and source.field(column).type.list_size != V.vector_width(desc)):
            raise ValueError(f"the shard's {column} column and its metadata disagree (presence or width)")
        return desc
    return source.get(column)


def schema_experience(source: pa.Schema | dict | None) -> dict | None:
    """The description of a shard's experience columns (:mod:`gotk.shards.experience_column`), or None when it has
    none: from its Arrow schema, ``gotk`` metadata object or a manifest; ValueError when a schema's columns and
    metadata disagree, or the description lists other columns."""
    if source is None:
        return None
    if isinstance(source, pa.Schema):
        raw = (source.metadata or {}).get(METADATA_KEY)
        desc = json.loads(raw).get(X.EXPERIENCE) if raw is not None else None
        present = [n for n in X.COLUMNS if n in source.names]
        if (present and tuple(present) not in (X.COLUMNS, X.LEGACY_COLUMNS)) or bool(present) != (desc is not None) \
                or (desc is not None and present != list(desc.get("columns") or ())):
            raise ValueError(f"the shard's experience columns {present} and its metadata disagree")
        return X.check_description(desc)
    return X.check_description(source.get(X.EXPERIENCE))


def schema_targets(source: pa.Schema | dict | None) -> tuple[str, ...]:
    """The self-play target columns a shard has (:data:`TARGETS`, :data:`TARGETS_V1` for a shard written before
    ``aux_weight``, or ``()`` for a plain shard), from its Arrow
    schema, its ``gotk`` metadata object or a manifest (their ``"targets"`` list); ValueError when the list names
    other columns, or when a schema's columns disagree with its metadata."""
    if source is None:
        return ()
    if isinstance(source, pa.Schema):
        raw = (source.metadata or {}).get(METADATA_KEY)
        listed = tuple(json.loads(raw).get("targets") or ()) if raw is not None else ()
        present = tuple(n for n in TARGETS if n in source.names)
        if listed and present != listed:
            raise ValueError(f"the shard's metadata lists targets {list(listed)} but it has columns {list(present)}")
    else:
        listed = tuple(source.get("targets") or ())
    if listed and listed not in (TARGETS, TARGETS_V1):
        raise ValueError(f"unknown target columns {list(listed)}; this gotk reads {list(TARGETS)}")
    return listed


def _target_bytes(name: str, values: np.ndarray, width: int) -> pa.FixedSizeBinaryArray:
    n = values.shape[0]
    raw = np.ascontiguousarray(values).view(np.uint8).reshape(n, -1)
    if raw.shape[1] != width:
        raise ValueError(f"targets[{name!r}] is {raw.shape[1]} bytes per row, the schema says {width}")
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), n, [None, pa.py_buffer(raw)])


def target_columns(schema: pa.Schema, targets: dict[str, np.ndarray], n: int) -> list[pa.Array]:
    """The Arrow arrays of the target columns for ``n`` rows, checked (ValueError with the column's name):
    ``policy`` ``(n, points+1)`` probabilities (finite, >= 0; stored as float16 little-endian), ``root_value``,
    ``score``, ``weight``, ``aux_weight`` ``(n,)`` finite (the weights >= 0), ``ownership`` ``(n, size, size)`` or
    ``(n, points)`` in {-1, 0, +1} (stored as int8). ``aux_weight`` may be left out: 1 for every row (the
    ownership and score are those of a game played out)."""
    names = schema_targets(schema)
    missing = [k for k in names if k not in targets and k != "aux_weight"]
    extra = sorted(set(targets) - set(names))
    if missing or extra:
        raise ValueError(f"targets need exactly {list(names)}: missing {missing}, unknown {extra}")
    points = schema.field("ownership").type.byte_width
    out: list[pa.Array] = []
    for name in names:
        v = np.asarray(targets[name]) if name in targets else np.ones(n, np.float32)
        if v.shape[:1] != (n,):
            raise ValueError(f"targets[{name!r}] has {v.shape[0] if v.ndim else 0} rows, the table {n}")
        if name == "policy":
            if v.ndim != 2 or v.shape[1] != points + 1:
                raise ValueError(f"targets['policy'] must be (n, {points + 1}), got {v.shape}")
            if not np.isfinite(v).all() or (v < 0).any():
                raise ValueError("targets['policy'] holds negative or non-finite probabilities")
            out.append(_target_bytes(name, v.astype("<f2"), (points + 1) * 2))
        elif name == "ownership":
            if int(np.prod(v.shape[1:])) != points:
                raise ValueError(f"targets['ownership'] must be (n, size, size) with {points} points, got {v.shape}")
            if v.size and (v.min() < -1 or v.max() > 1):
                raise ValueError("targets['ownership'] holds values outside -1, 0, +1")
            out.append(_target_bytes(name, v.astype(np.int8), points))
        else:
            if v.ndim != 1:
                raise ValueError(f"targets[{name!r}] must be (n,), got {v.shape}")
            f = v.astype(np.float32)
            if not np.isfinite(f).all():
                raise ValueError(f"targets[{name!r}] holds non-finite values")
            if name in ("weight", "aux_weight") and (f < 0).any():
                raise ValueError(f"targets[{name!r}] holds negative weights")
            out.append(pa.array(f))
    return out


def unpack_policy(raw: np.ndarray) -> np.ndarray:
    """``(N, (points+1)*2)`` uint8 ``policy`` bytes → ``(N, points+1)`` float32 probabilities."""
    return np.ascontiguousarray(raw).view("<f2").astype(np.float32)


def decode_targets(batch: pa.Table | pa.RecordBatch) -> dict[str, np.ndarray]:
    """The target columns of shard rows as arrays: ``policy`` float32 ``(N, points+1)``, ``root_value``,
    ``score``, ``weight``, ``aux_weight`` float32 ``(N,)`` (ones for a shard without it, :data:`TARGETS_V1`),
    ``ownership`` int8 ``(N, size, size)`` (tensor order); ``{}`` for rows without targets."""
    names = schema_targets(batch.schema)
    if not names:
        return {}
    n = batch.num_rows
    out: dict[str, np.ndarray] = {} if "aux_weight" in names else {"aux_weight": np.ones(n, np.float32)}
    for name in names:
        col = batch.column(name)
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        if name in ("policy", "ownership"):
            width = col.type.byte_width
            raw = np.frombuffer(col.buffers()[1], np.uint8, count=(col.offset + n) * width)[col.offset * width:]
            raw = raw.reshape(n, width)
            if name == "policy":
                out[name] = unpack_policy(raw)
            else:
                side = int(round(width ** 0.5))
                out[name] = raw.view(np.int8).reshape(n, side, side) if side * side == width else raw.view(np.int8)
        else:
            out[name] = col.to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    return out


def pack_features(planes: np.ndarray, dtype: str) -> np.ndarray:
    """``N`` rows of planes → their ``features`` bytes, ``(N, bytes_per_row)`` uint8 (see :func:`features_nbytes`);
    :func:`unpack_features` is the inverse. The one place the layout is coded (both ways):

    * each row's planes (any shape after the first axis, normally ``(C, H, W)``) are flattened in C order
      (plane, row, column);
    * ``dtype="int8"`` encoders: a row is those values' raw bytes, one per value;
    * bit encoders (values 0/1): a row is those values packed eight to a byte, the first in the most
      significant bit (``np.packbits``, ``bitorder="big"``), the last byte padded with zero bits."""
    n = planes.shape[0]
    flat = np.ascontiguousarray(planes).reshape(n, int(np.prod(planes.shape[1:])))
    if dtype == "int8":
        return flat.view(np.uint8)
    return np.packbits(flat, axis=1, bitorder="big")


def unpack_features(packed: np.ndarray, shape: tuple[int, int, int], dtype: str) -> np.ndarray:
    """``(N, bytes_per_row)`` uint8 ``features`` bytes → ``(N, C, H, W)`` planes for an encoder of planes ``shape``
    and ``dtype``: int8 for ``int8`` encoders (a view of ``packed`` when it is contiguous), else uint8 0/1
    (one vectorised unpack, the padding bits dropped). The inverse of :func:`pack_features`."""
    n = packed.shape[0]
    c, h, w = shape
    if dtype == "int8":
        return np.ascontiguousarray(packed).view(np.int8).reshape(n, c, h, w)
    return np.unpackbits(packed, axis=1, count=c * h * w, bitorder="big").reshape(n, c, h, w)


def rows_table(schema: pa.Schema, game_ids: list[str] | pa.Array, move_numbers: np.ndarray,
               to_play: np.ndarray, packed: np.ndarray, labels: np.ndarray, values: np.ndarray,
               targets: dict[str, np.ndarray] | None = None, global_inputs: np.ndarray | None = None,
               metadata_inputs: np.ndarray | None = None, experience: dict | None = None) -> pa.Table:
    """One Arrow table of shard rows from column arrays (``packed`` is (N, bytes_per_row) uint8;
    ``game_ids`` a list of strings or a pyarrow string array). ``targets`` gives the self-play target columns
    (see :func:`target_columns`), ``experience`` the experience columns
    (:func:`gotk.shards.experience_column.experience_columns`), ``global_inputs`` the ``globals`` column,
    ``metadata_inputs`` the ``metadata`` column (``gotk.shards.metadata_column``): each required exactly when
    ``schema`` has it (ValueError otherwise)."""
    n = int(packed.shape[0])
    width = schema.field("features").type.byte_width
    if packed.shape[1] != width:
        raise ValueError(f"features are {packed.shape[1]} bytes per row, the schema says {width}")
    has_targets = bool(schema_targets(schema))
    if has_targets and targets is None:
        raise ValueError(f"the schema has the target columns {list(schema_targets(schema))}: rows_table needs "
                         "targets=")
    if not has_targets and targets is not None:
        raise ValueError("targets given, but the schema has no target columns (shard_schema(..., targets=True))")
    feats = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(width), n, [None, pa.py_buffer(np.ascontiguousarray(packed, dtype=np.uint8))])
    columns = [
        game_ids if isinstance(game_ids, pa.Array) else pa.array(game_ids, type=pa.string()),
        pa.array(np.asarray(move_numbers, dtype=np.int32)),
        pa.array(np.asarray(to_play, dtype=np.int8)),
        feats,
        pa.array(np.asarray(labels, dtype=np.int16)),
        pa.array(np.asarray(values, dtype=np.int8)),
    ]
    if targets is not None:
        columns += target_columns(schema, targets, n)
    if (experience is not None) != (schema_experience(schema) is not None):
        raise ValueError("experience= is required exactly when the shard schema has the experience columns")
    if experience is not None:
        listed = tuple(schema_experience(schema)["columns"])
        given = X.COLUMNS if "choices" in experience or "symmetry" in experience else X.LEGACY_COLUMNS
        if given != listed:
            raise ValueError(f"experience= gives the columns {list(given)}, the schema lists {list(listed)}")
        columns += X.experience_columns({**experience, "label": labels}, n)
    columns += V.vector_columns(schema, {GLOBALS: global_inputs, V.METADATA: metadata_inputs}, n)
    return pa.Table.from_arrays(columns, schema=schema)


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
                write_statistics=([c for c in SMALL_COLUMNS + TARGET_STAT_COLUMNS if c in schema.names]
                                  if statistics is None else statistics),
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
    expected = features_nbytes(desc)
    if width != expected:
        raise ValueError(f"features are {width} bytes per row; encoder {desc.get('name')!r} {desc['shape']} "
                         f"({desc['dtype']}) needs {expected}")
    if column.null_count:
        raise ValueError("features column has nulls")
    buf = column.buffers()[1]
    raw = np.frombuffer(buf, dtype=np.uint8, count=(column.offset + n) * width)[column.offset * width:]
    return unpack_features(raw.reshape(n, width), (c, h, w), desc["dtype"])
