"""Turn shard rows back into feature planes, vectorised (no per-row Python loop)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

_KEY = b"gotk"


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
    raw = (schema.metadata or {}).get(_KEY)
    if raw is None:
        raise ValueError("no gotk metadata in this schema: pass the encoder description explicitly")
    return encoder_description(json.loads(raw))


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
    expected = size if desc["dtype"] == "int8" else (size + 7) // 8
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
