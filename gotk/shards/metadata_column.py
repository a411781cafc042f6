"""The shard format's optional ``metadata`` column, and what it shares with the ``globals`` column.

``metadata``: one fixed-size list of 192 float32 per row, the row's metadata inputs (KataGo's human-SL vector of
who played the game and how, from the player to move's view: :mod:`gotk.encoders.metadata_inputs`), after the
``globals`` column where a shard has both; its description (``metadata_inputs.describe()``) sits under the ``gotk``
schema metadata's ``"metadata"``. Both optional float columns (:data:`VECTORS`) are added to a schema, filled by
writers and checked here, once for both; :mod:`gotk.shards.format` calls these helpers."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from gotk.shards.globals_column import GLOBALS, decode_globals, globals_column

METADATA = "metadata"
#: The optional float-vector columns, in their order at the end of a shard's columns.
VECTORS = (GLOBALS, METADATA)
#: The writers' keyword for each (``rows_table``, ``ShardRowWriter.add``).
KEYWORDS = {GLOBALS: "global_inputs", METADATA: "metadata_inputs"}


def vector_width(desc: dict) -> int:
    """Floats per row of a vector column's description (``names`` listed, or a ``width``)."""
    return len(desc["names"]) if "names" in desc else int(desc["width"])


def vector_fields(descs: dict[str, dict | None]) -> list[pa.Field]:
    """The Arrow fields of the vector columns whose description in ``descs`` (name → description) is not None."""
    return [pa.field(name, pa.list_(pa.float32(), vector_width(descs[name])), nullable=False)
            for name in VECTORS if descs.get(name) is not None]


def check_vectors(schema: pa.Schema, values: dict[str, np.ndarray | None]) -> None:
    """ValueError unless ``values`` (name → rows or None) gives exactly the vector columns ``schema`` has."""
    for name in VECTORS:
        if (name in schema.names) != (values.get(name) is not None):
            raise ValueError(f"{KEYWORDS[name]}= is required exactly when the shard schema has the {name} column")


def vector_columns(schema: pa.Schema, values: dict[str, np.ndarray | None], n: int) -> list[pa.Array]:
    """The Arrow arrays of the vector columns of ``n`` rows, checked (:func:`check_vectors`)."""
    check_vectors(schema, values)
    return [globals_column(schema, values[name], n, name) for name in VECTORS if name in schema.names]


def vector_arrays(schema: pa.Schema, n: int) -> dict[str, np.ndarray]:
    """Preallocated ``(n, width)`` float32 rows of each vector column ``schema`` has (a row writer's batch)."""
    return {name: np.empty((n, schema.field(name).type.list_size), np.float32) for name in VECTORS
            if name in schema.names}


def decode_metadata(batch: pa.Table | pa.RecordBatch) -> np.ndarray | None:
    """The ``metadata`` column of shard rows as ``(N, 192)`` float32, or None for rows without it."""
    return decode_globals(batch, METADATA)
