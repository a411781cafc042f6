"""Shards are plain Parquet: DuckDB, pandas and pyarrow read them; numpy alone decodes features."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from gotk.jobs.encode import EncodeOptions, encode_dataset
from gotk.shards import decode_features
from gotk.sources.archives import SgfSource, iter_sources


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, sample_archive):
    import zipfile

    d = tmp_path_factory.mktemp("interop")
    items = [s for s in iter_sources([sample_archive]) if isinstance(s, SgfSource)][:30]
    with zipfile.ZipFile(d / "s.zip", "w") as zf:
        for s in items:
            zf.writestr(s.member, s.data)
    out = d / "ds"
    m = encode_dataset([d / "s.zip"], out, EncodeOptions(encoder="simple", shard_rows=2500, split="train=0.7,val=0.3"),
                       workers=1, progress=False)
    return out, m


def test_duckdb_counts_and_queries(dataset):
    duckdb = pytest.importorskip("duckdb")
    out, m = dataset
    con = duckdb.connect()
    n = con.execute(f"SELECT count(*) FROM '{out}/train/*.parquet'").fetchone()[0]
    assert n == m["splits"]["train"]["rows"] and len(m["splits"]["train"]["shards"]) >= 2
    games = con.execute(f"SELECT count(DISTINCT game_id) FROM '{out}/*/*.parquet'").fetchone()[0]
    assert games == m["games"]["kept"]
    joined = con.execute(
        f"SELECT g.split, count(*) FROM '{out}/val/*.parquet' r JOIN '{out}/games.parquet' g USING (game_id) "
        "GROUP BY g.split").fetchall()
    assert joined == [("val", m["splits"]["val"]["rows"])]
    width = con.execute(f"SELECT octet_length(features) FROM '{out}/train/*.parquet' LIMIT 1").fetchone()[0]
    assert width == (11 * 19 * 19 + 7) // 8


def test_pandas_and_pyarrow(dataset):
    out, m = dataset
    import pandas as pd

    df = pd.read_parquet(out / "val")
    assert len(df) == m["splits"]["val"]["rows"]
    assert df["label"].dtype == np.int16 and df["value"].dtype == np.int8 and df["to_play"].dtype == np.int8
    assert set(df["to_play"]) <= {1, -1} and set(df["value"]) <= {-1, 0, 1}
    ds = pads.dataset(out / "train", format="parquet")
    assert ds.count_rows() == m["splits"]["train"]["rows"]
    t = ds.to_table(columns=["game_id", "move_number", "features"])
    assert decode_features(t, m["encoder"]).shape == (t.num_rows, 11, 19, 19)
    # a shard alone is self-describing
    first = out / m["splits"]["train"]["shards"][0]["file"]
    meta = json.loads(pq.read_schema(first).metadata[b"gotk"])
    assert meta["encoder"] == m["encoder"]
    # streaming: row groups of 8192 rows at most, iterable batch by batch
    pf = pq.ParquetFile(first)
    assert all(pf.metadata.row_group(i).num_rows <= 8192 for i in range(pf.metadata.num_row_groups))
    assert sum(b.num_rows for b in pf.iter_batches(batch_size=1000)) == pf.metadata.num_rows


def test_numpy_only_decode_matches(dataset):
    """The five-line recipe of docs/shards.md ("Reading shards from another project")."""
    out, m = dataset
    path = out / m["splits"]["train"]["shards"][0]["file"]
    # --- recipe ---
    t = pq.read_table(path, columns=["features", "label", "value"])
    meta = json.loads(t.schema.metadata[b"gotk"])["encoder"]
    raw = np.frombuffer(t.column("features").combine_chunks().buffers()[1], np.uint8)
    x = np.unpackbits(raw.reshape(t.num_rows, -1), axis=1, count=int(np.prod(meta["shape"])))
    x = x.reshape(-1, *meta["shape"])
    # --- end ---
    assert np.array_equal(x, decode_features(t))
    assert x.shape == (t.num_rows, 11, 19, 19) and x.max() == 1
