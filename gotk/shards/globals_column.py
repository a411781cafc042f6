"""The shard format's optional ``globals`` column: one fixed-size list of float32 per row, the row's global inputs
(:mod:`gotk.encoders.global_inputs`), last in a shard that has it; :mod:`gotk.shards.format` adds it to a schema
(``shard_schema(..., globals_desc=)``) and says whether a shard has it (``schema_globals``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

GLOBALS = "globals"


def globals_column(schema: pa.Schema, values: np.ndarray, n: int) -> pa.Array:
    """The Arrow array of the ``globals`` column for ``n`` rows of ``(n, G)`` float32 values (finite), checked."""
    g = schema.field(GLOBALS).type.list_size
    v = np.ascontiguousarray(values, dtype=np.float32)
    if v.shape != (n, g):
        raise ValueError(f"globals must be ({n}, {g}), got {v.shape}")
    if not np.isfinite(v).all():
        raise ValueError("globals holds non-finite values")
    return pa.FixedSizeListArray.from_arrays(pa.array(v.reshape(-1)), g)


def decode_globals(batch: pa.Table | pa.RecordBatch) -> np.ndarray | None:
    """The ``globals`` column of shard rows as ``(N, G)`` float32, or None for rows without it."""
    if GLOBALS not in batch.schema.names:
        return None
    col = batch.column(GLOBALS)
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    g = col.type.list_size
    return col.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(len(col), g)
