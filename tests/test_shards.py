"""The shard format: schema, metadata, fixed row groups, packing and vectorised decoding."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gotk.hashing import sha256_file
from gotk.sgf import read_sgf
from gotk.shards import decode_features, encoder_description
from gotk.shards import format as S
from gotk.shards.row_writer import ShardRowWriter
from gotk.sources.archives import SgfSource, iter_sources


def _desc(shape, dtype="bit", name="test"):
    return {"name": name, "version": 1, "board_size": shape[1], "num_planes": shape[0], "shape": list(shape),
            "dtype": dtype, "plane_names": [f"p{i}" for i in range(shape[0])], "options": {}}


def _table(desc, n, seed=0):
    rng = np.random.default_rng(seed)
    c, h, w = desc["shape"]
    if desc["dtype"] == "int8":
        feats = rng.integers(-1, 2, size=(n, c, h, w), dtype=np.int8)
    else:
        feats = rng.integers(0, 2, size=(n, c, h, w), dtype=np.uint8)
    schema = S.shard_schema(desc)
    t = S.rows_table(schema, [f"g{i // 7}" for i in range(n)], np.arange(n), np.where(np.arange(n) % 2, -1, 1),
                     S.pack_features(feats, desc["dtype"]), rng.integers(0, h * w + 1, n), rng.integers(-1, 2, n))
    return t, feats


@pytest.mark.parametrize("shape,dtype", [((7, 19, 19), "bit"), ((3, 9, 9), "bit"), ((1, 19, 19), "int8")])
def test_pack_decode_roundtrip(tmp_path, shape, dtype):
    desc = _desc(shape, dtype)
    t, feats = _table(desc, 50)
    assert t.schema.field("features").type.byte_width == S.features_nbytes(desc)
    assert np.array_equal(decode_features(t), feats)  # metadata from the table's schema
    assert np.array_equal(decode_features(t.column("features"), desc), feats)  # column + description
    assert np.array_equal(decode_features(t.to_batches()[0]), feats)  # RecordBatch
    # a slice (non-zero offset) decodes the right rows
    assert np.array_equal(decode_features(t.slice(13, 20)), feats[13:33])
    w = S.ShardWriter(tmp_path / "s.parquet", t.schema)
    w.write(t)
    info = w.close()
    assert info["rows"] == 50 and info["sha256"] == sha256_file(tmp_path / "s.parquet")
    back = pq.read_table(tmp_path / "s.parquet")
    assert np.array_equal(decode_features(back), feats)
    assert encoder_description(tmp_path / "s.parquet") == desc
    assert S.read_shard_metadata(tmp_path / "s.parquet")["schema_version"] == S.SCHEMA_VERSION == 2


def test_packbits_layout_is_c_order_big_endian():
    desc = _desc((2, 3, 3))
    feats = np.zeros((1, 2, 3, 3), dtype=np.uint8)
    feats[0, 0, 0, 0] = 1  # first bit of the first byte: 0b1000_0000
    feats[0, 1, 2, 2] = 1  # flat index 17 → byte 2, second-highest bit (0x40)
    packed = S.pack_features(feats, "bit")
    assert packed.tolist() == [[0x80, 0x00, 0x40]]
    assert np.array_equal(decode_features(pa.array([bytes(packed[0])], pa.binary(3)), desc), feats)


def test_schema_and_metadata():
    desc = _desc((7, 19, 19))
    schema = S.shard_schema(desc)
    assert [f.name for f in schema] == ["game_id", "move_number", "to_play", "features", "label", "value"]
    assert [str(f.type) for f in schema] == ["string", "int32", "int8", "fixed_size_binary[316]", "int16", "int8"]
    meta = json.loads(schema.metadata[b"gotk"])
    assert meta["schema_version"] == S.SCHEMA_VERSION and meta["encoder"] == desc
    assert meta["features"]["encoding"] == "packbits_big" and meta["features"]["bytes_per_row"] == 316


def test_globals_column_written_read_and_checked(tmp_path):
    from gotk.encoders import global_inputs as GI
    from gotk.shards.globals_column import decode_globals

    desc = _desc((3, 9, 9))
    schema = S.shard_schema(desc, globals_desc=GI.describe())
    assert schema.names[-1] == "globals" and str(schema.field("globals").type) == "fixed_size_list<item: float>[2]"
    assert S.schema_globals(schema) == GI.describe() and S.schema_globals(S.shard_schema(desc)) is None
    glob = np.array([[-0.325, 0.0], [0.325, 1.0], [0.0, 0.0]], dtype=np.float32)
    with ShardRowWriter(tmp_path / "g.parquet", schema) as w:
        packed = S.pack_features(np.zeros((3, 3, 9, 9), np.uint8), "bit")
        w.add("g0", packed[:2], np.arange(2), np.array([1, -1]), np.zeros(2), np.zeros(2), global_inputs=glob[:2])
        w.add("g1", packed[2:], np.arange(1), np.array([1]), np.zeros(1), np.zeros(1), global_inputs=glob[2:])
        with pytest.raises(ValueError, match="global_inputs= is required"):
            w.add("g2", packed[:1], np.arange(1), np.array([1]), np.zeros(1), np.zeros(1))
        w.finish()
    table = pq.read_table(tmp_path / "g.parquet")
    assert np.array_equal(decode_globals(table), glob) and decode_globals(_table(desc, 2)[0]) is None
    with pytest.raises(ValueError, match="globals must be"):
        S.rows_table(schema, ["g"], [0], [1], packed[:1], [0], [0], global_inputs=glob)
    with pytest.raises(ValueError, match="non-finite"):
        S.rows_table(schema, ["g"], [0], [1], packed[:1], [0], [0], global_inputs=np.full((1, 2), np.nan))
    lying = table.schema.remove(table.schema.get_field_index("globals"))  # metadata says globals, no column
    with pytest.raises(ValueError, match="disagree"):
        S.schema_globals(lying)


def test_metadata_column_after_globals_written_read_and_checked(tmp_path):
    from gotk.encoders import global_inputs as GI
    from gotk.encoders import metadata_inputs as MI
    from gotk.shards.metadata_column import decode_metadata

    desc = _desc((3, 9, 9))
    schema = S.shard_schema(desc, globals_desc=GI.describe(), metadata_desc=MI.describe())
    assert schema.names[-2:] == ["globals", "metadata"]
    assert str(schema.field("metadata").type) == "fixed_size_list<item: float>[192]"
    assert S.schema_globals(schema, "metadata") == MI.describe() and S.schema_globals(schema) == GI.describe()
    pair = MI.game_rows(MI.profile("rank_3d_1k"), 81)
    to_play = np.array([1, -1, 1])
    meta = MI.rows_for(pair, to_play)
    glob = GI.from_to_play(6.5, to_play, 9)
    packed = S.pack_features(np.zeros((3, 3, 9, 9), np.uint8), "bit")
    with ShardRowWriter(tmp_path / "m.parquet", schema) as w:
        w.add("g0", packed, np.arange(3), to_play, np.zeros(3), np.zeros(3), global_inputs=glob,
              metadata_inputs=meta)
        with pytest.raises(ValueError, match="metadata_inputs= is required"):
            w.add("g1", packed[:1], np.arange(1), to_play[:1], np.zeros(1), np.zeros(1), global_inputs=glob[:1])
        w.finish()
    table = pq.read_table(tmp_path / "m.parquet")
    assert np.array_equal(decode_metadata(table), meta) and not np.array_equal(meta[0], meta[1])
    assert decode_metadata(_table(desc, 2)[0]) is None
    with pytest.raises(ValueError, match="metadata must be"):
        S.rows_table(schema, ["g"], [0], [1], packed[:1], [0], [0], global_inputs=glob[:1], metadata_inputs=meta)
    lying = table.schema.remove(table.schema.get_field_index("metadata"))
    with pytest.raises(ValueError, match="metadata column and its metadata disagree"):
        S.schema_globals(lying, "metadata")


def test_row_groups_fixed_whatever_the_batches(tmp_path):
    desc = _desc((7, 19, 19))
    t, _ = _table(desc, 1000, seed=3)
    a = S.ShardWriter(tmp_path / "a.parquet", t.schema, row_group_rows=128)
    a.write(t)
    ia = a.close()
    b = S.ShardWriter(tmp_path / "b.parquet", t.schema, row_group_rows=128)
    for lo, hi in [(0, 1), (1, 300), (300, 301), (301, 777), (777, 1000)]:
        b.write(t.slice(lo, hi - lo))
    ib = b.close()
    assert ia["sha256"] == ib["sha256"]
    md = pq.ParquetFile(tmp_path / "a.parquet").metadata
    assert [md.row_group(i).num_rows for i in range(md.num_row_groups)] == [128] * 7 + [104]
    assert md.row_group(0).column(3).compression == "ZSTD"
    assert not list(tmp_path.glob("*.tmp"))


def test_abort_leaves_no_file(tmp_path):
    desc = _desc((1, 9, 9), "int8")
    t, _ = _table(desc, 10)
    w = S.ShardWriter(tmp_path / "x.parquet", t.schema)
    w.write(t)
    w.abort()
    assert list(tmp_path.iterdir()) == []


def test_decode_rejects_mismatched_description():
    t, _ = _table(_desc((7, 19, 19)), 4)
    with pytest.raises(ValueError, match="bytes per row"):
        decode_features(t, _desc((8, 19, 19)))
    with pytest.raises(ValueError, match="needs the encoder"):
        decode_features(t.column("features"))


@pytest.mark.parametrize("name", ["oneplane", "sevenplane", "simple"])
def test_real_encoder_rows_roundtrip(tmp_path, sample_archive, name):
    from gotk.encoders import get_encoder

    enc = get_encoder(name)
    desc = enc.describe()
    schema = S.shard_schema(desc)
    items = [s for s in iter_sources([sample_archive]) if isinstance(s, SgfSource)][:3]
    w = S.ShardWriter(tmp_path / "s.parquet", schema, row_group_rows=100)
    expect = []
    for s in items:
        eg = enc.encode_game(read_sgf(s.data)[0])
        expect.append(eg.features)
        w.write(S.rows_table(schema, ["g"] * len(eg), eg.move_numbers, eg.to_play,
                             S.pack_features(eg.features, desc["dtype"]), eg.labels, np.zeros(len(eg), np.int8)))
    w.close()
    expect = np.concatenate(expect)
    got = decode_features(pq.read_table(tmp_path / "s.parquet"))
    assert got.dtype == expect.dtype and got.shape == expect.shape
    assert np.array_equal(got, expect)
