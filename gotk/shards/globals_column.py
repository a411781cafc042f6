"""The shard format's optional ``globals`` column: one fixed-size list of float32 per row, the row's global inputs
(:mod:`gotk.encoders.global_inputs`), last in a shard that has it; :mod:`gotk.shards.format` adds it to a schema
(``shard_schema(..., globals_desc=)``) and says whether a shard has it (``schema_globals``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

GLOBALS = "globals"


def globals_column(schema: pa.Schema, values: np.ndarray, n: int, name: str = GLOBALS) -> pa.Array:
    """The Arrow array of the ``globals`` column (or another float-vector column ``name``) for ``n`` rows of
    ``(n, G)`` float32 values (finite), checked."""
    g = schema.field(name).type.list_size
    v = np.ascontiguousarray(values, dtype=np.float32)
    if v.shape != (n, g):
        raise ValueError(f"{name} must be ({n}, {g}), got {v.shape}")
    if not np.isfinite(v).all():
        raise ValueError(f"{name} holds non-finite values")
    return pa.FixedSizeListArray.from_arrays(pa.array(v.reshape(-1)), g)


def decode_globals(batch: pa.Table | pa.RecordBatch, name: str = GLOBALS) -> np.ndarray | None:
    """The ``globals`` column (or another float-vector column ``name``) of shard rows as ``(N, G)`` float32, or None
    for rows without it."""
    if name not in batch.schema.names:
        return None
    col = batch.column(name)
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    g = col.type.list_size
    return col.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(len(col), g)
