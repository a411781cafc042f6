"""The shard row writer (:class:`gotk.shards.row_writer.ShardRowWriter`) and the one packing rule both ways
(:func:`gotk.shards.format.pack_features` / :func:`~gotk.shards.format.unpack_features`)."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gotk.hashing import sha256_file
from gotk.shards import decode_features
from gotk.shards import format as S
from gotk.shards.row_writer import ShardRowWriter


def _desc(shape, dtype="bit"):
    return {"name": "test", "version": 1, "board_size": shape[1], "num_planes": shape[0], "shape": list(shape),
            "dtype": dtype, "plane_names": [f"p{i}" for i in range(shape[0])], "options": {}}


def _game(rng, rows, shape, dtype="bit"):
    """One game's rows: planes, move numbers, colours, labels, values."""
    c, h, w = shape
    planes = (rng.integers(-1, 2, (rows, c, h, w), dtype=np.int8) if dtype == "int8"
              else rng.integers(0, 2, (rows, c, h, w), dtype=np.uint8))
    to_play = np.where(np.arange(rows) % 2, -1, 1).astype(np.int8)
    return planes, np.arange(rows, dtype=np.int32), to_play, rng.integers(0, h * w + 1, rows).astype(np.int16), \
        (to_play * rng.choice([-1, 1])).astype(np.int8)


@given(c=st.integers(1, 5), h=st.integers(1, 9), w=st.integers(1, 9), n=st.integers(0, 6),
       dtype=st.sampled_from(["bit", "int8"]), seed=st.integers(0, 2**32 - 1))
@settings(max_examples=200, deadline=None)
def test_pack_unpack_round_trip(c, h, w, n, dtype, seed):
    rng = np.random.default_rng(seed)
    planes = (rng.integers(-128, 128, (n, c, h, w), dtype=np.int8) if dtype == "int8"
              else rng.integers(0, 2, (n, c, h, w), dtype=np.uint8))
    packed = S.pack_features(planes, dtype)
    assert packed.dtype == np.uint8 and packed.shape == (n, S.features_nbytes(_desc((c, h, w), dtype)))
    back = S.unpack_features(packed, (c, h, w), dtype)
    assert back.dtype == (np.int8 if dtype == "int8" else np.uint8)
    assert np.array_equal(back, planes)
    # the layout: C order, the first value in the high bit of the first byte, zero padding
    if dtype == "bit":
        flat = planes.reshape(n, c * h * w)
        for i in range(n):
            for j in range(flat.shape[1]):
                assert (packed[i, j // 8] >> (7 - j % 8)) & 1 == flat[i, j]
            pad = packed.shape[1] * 8 - flat.shape[1]
            assert pad < 8 and (n == 0 or int(packed[i, -1]) & ((1 << pad) - 1) == 0)


def test_unpack_of_a_non_contiguous_block():
    rng = np.random.default_rng(1)
    planes = rng.integers(0, 2, (6, 3, 5, 5), dtype=np.uint8)
    packed = S.pack_features(planes, "bit")
    assert np.array_equal(S.unpack_features(packed[::2], (3, 5, 5), "bit"), planes[::2])
    raw = S.pack_features(planes.astype(np.int8), "int8")
    assert np.array_equal(S.unpack_features(raw[1::2], (3, 5, 5), "int8"), planes[1::2])


@pytest.mark.parametrize("shape,dtype", [((3, 5, 5), "bit"), ((1, 5, 5), "int8")])
def test_writer_add_finish_gives_a_readable_shard(tmp_path, shape, dtype):
    rng = np.random.default_rng(0)
    schema = S.shard_schema(_desc(shape, dtype))
    games = [(f"g{i}", _game(rng, int(rng.integers(1, 40)), shape, dtype)) for i in range(30)]
    path = tmp_path / "train" / "part-00000.parquet"
    # batches far smaller than the rows (many writes), row groups of 64 rows
    with ShardRowWriter(path, schema, row_group_rows=64, batch_bytes=1) as w:
        for gid, (planes, moves, tp, labels, values) in games:
            w.add(gid, S.pack_features(planes, dtype), moves, tp, labels, values)
            assert len(w.label) >= w.batch_rows  # rows to come unknown: batches stay full-sized
        info = w.finish()
    rows = sum(len(g[1][0]) for g in games)
    assert info == {"rows": rows, "sha256": sha256_file(path), "bytes": path.stat().st_size}
    assert sorted(p.name for p in path.parent.iterdir()) == ["part-00000.parquet"]  # no temp file left
    pf = pq.ParquetFile(path)
    assert [pf.metadata.row_group(i).num_rows for i in range(pf.metadata.num_row_groups)] == \
        [64] * (rows // 64) + ([rows % 64] if rows % 64 else [])
    t = pf.read()
    assert t.schema.equals(schema, check_metadata=True)
    assert t.column("game_id").to_pylist() == [gid for gid, g in games for _ in range(len(g[0]))]
    assert np.array_equal(decode_features(t), np.concatenate([g[0] for _, g in games]))
    for col, k in (("move_number", 1), ("to_play", 2), ("label", 3), ("value", 4)):
        assert np.array_equal(t.column(col).to_numpy(), np.concatenate([g[k] for _, g in games])), col


def test_writer_bytes_do_not_depend_on_batches_or_how_rows_came(tmp_path):
    """One game at a time through add, or many games per reserve/commit, in small or large batches: the
    same file bytes."""
    rng = np.random.default_rng(3)
    shape = (2, 4, 4)
    schema = S.shard_schema(_desc(shape))
    games = [(f"g{i}", _game(rng, int(rng.integers(1, 25)), shape)) for i in range(40)]
    rows = sum(len(g[1][0]) for g in games)

    with ShardRowWriter(tmp_path / "a.parquet", schema, rows, row_group_rows=50) as w:
        for gid, (planes, moves, tp, labels, values) in games:
            w.add(gid, S.pack_features(planes, "bit"), moves, tp, labels, values)
        a = w.finish()
    with ShardRowWriter(tmp_path / "b.parquet", schema, rows, row_group_rows=50, batch_bytes=1) as w:
        for start in range(0, len(games), 7):  # seven games per commit, written in place
            run = games[start:start + 7]
            per_game = [len(g[0]) for _, g in run]
            sl = w.reserve(sum(per_game))
            w.features[sl] = S.pack_features(np.concatenate([g[0] for _, g in run]), "bit")
            for name, k in (("move_number", 1), ("to_play", 2), ("label", 3), ("value", 4)):
                getattr(w, name)[sl] = np.concatenate([g[k] for _, g in run])
            w.commit([gid for gid, _ in run], np.array(per_game))
        b = w.finish()
    assert a == b
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def test_writer_commit_beyond_the_reserved_batch_is_refused(tmp_path):
    schema = S.shard_schema(_desc((1, 3, 3)))
    with ShardRowWriter(tmp_path / "s.parquet", schema, expected_rows=4) as w:
        w.reserve(4)
        with pytest.raises(ValueError, match="5 rows committed, the batch has 4 free"):
            w.commit(["g"], [5])
    assert list(tmp_path.iterdir()) == []


def test_writer_abort_and_unfinished_with_leave_nothing(tmp_path):
    rng = np.random.default_rng(2)
    shape = (2, 3, 3)
    schema = S.shard_schema(_desc(shape))
    planes, moves, tp, labels, values = _game(rng, 300, shape)
    packed = S.pack_features(planes, "bit")

    w = ShardRowWriter(tmp_path / "d" / "a.parquet", schema, row_group_rows=16, batch_bytes=1)
    w.add("g", packed, moves, tp, labels, values)  # row groups already written to the temp file
    w.abort()
    w.abort()  # twice is harmless
    assert list((tmp_path / "d").iterdir()) == []

    with pytest.raises(RuntimeError, match="encoder failed"):
        with ShardRowWriter(tmp_path / "d" / "b.parquet", schema, row_group_rows=16, batch_bytes=1) as w:
            w.add("g", packed, moves, tp, labels, values)
            raise RuntimeError("encoder failed")
    assert list((tmp_path / "d").iterdir()) == []

    with ShardRowWriter(tmp_path / "d" / "c.parquet", schema) as w:  # left without finish(): no shard either
        w.add("g", packed, moves, tp, labels, values)
    assert list((tmp_path / "d").iterdir()) == []

    with ShardRowWriter(tmp_path / "d" / "e.parquet", schema) as w:
        w.add("g", packed, moves, tp, labels, values)
        w.finish()
    w.abort()  # after finish: the shard stays
    assert pq.read_table(tmp_path / "d" / "e.parquet").num_rows == 300
