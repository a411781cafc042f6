"""Self-play target columns in shards (``gotk.shards.format``), a dataset folder assembled over other folders'
shards (``gotk.shards.assemble``), and the loader yielding the targets under symmetries, shuffling, game caps,
``where`` and resume. Everything is written with the real writers and read back from real Parquet."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from gotk.coords import transform_planes
from gotk.datasets import Sampling, ShardDataset, SplitIndex, game_index, iter_numpy_batches
from gotk.datasets.symmetry import label_permutations
from gotk.encoders import get_encoder
from gotk.shards import format as S
from gotk.shards.assemble import assemble_dataset
from gotk.shards.manifest import load_manifest, read_games, summary_lines, verify_dataset
from gotk.shards.position import read_row
from gotk.shards.row_writer import ShardRowWriter

SIZE = 5
POINTS = SIZE * SIZE


def encoder_desc() -> dict:
    return get_encoder("sevenplane", SIZE).describe()


def game_rows(rng: np.random.Generator, gid: str, n: int) -> dict:
    """``n`` positions of one made-up game with every column, targets included."""
    c, h, w = encoder_desc()["shape"]
    planes = rng.integers(0, 2, (n, c, h, w), dtype=np.uint8)
    policy = rng.random((n, POINTS + 1)).astype(np.float32)
    policy /= policy.sum(1, keepdims=True)
    to_play = np.where(np.arange(n) % 2, -1, 1).astype(np.int8)
    return {"game_id": gid, "planes": planes, "move_number": np.arange(n, dtype=np.int32), "to_play": to_play,
            "label": rng.integers(0, POINTS + 1, n).astype(np.int16), "value": (to_play * rng.choice([-1, 1])).astype(
                np.int8),
            "targets": {"policy": policy, "root_value": rng.uniform(-1, 1, n).astype(np.float32),
                        "ownership": rng.integers(-1, 2, (n, SIZE, SIZE)).astype(np.int8),
                        "score": rng.normal(0, 10, n).astype(np.float32),
                        "weight": rng.choice([0.0, 1.0], n).astype(np.float32),
                        "aux_weight": np.full(n, rng.choice([0.0, 1.0]), np.float32)}}


def write_shard(path: Path, games: list[dict], row_group_rows: int = 16) -> dict:
    schema = S.shard_schema(encoder_desc(), targets=True)
    w = S.ShardWriter(path, schema, row_group_rows=row_group_rows)
    for g in games:
        n = len(g["label"])
        w.write(S.rows_table(schema, [g["game_id"]] * n, g["move_number"], g["to_play"],
                             S.pack_features(g["planes"], "bit"), g["label"], g["value"], g["targets"]))
    return w.close()


def hexid(rng: np.random.Generator) -> str:
    return bytes(rng.integers(0, 256, 16, dtype=np.uint8)).hex()


@pytest.fixture(scope="module")
def generations(tmp_path_factory) -> tuple[Path, dict[tuple[int, int], dict]]:
    """Two self-play generation folders of real target shards (``gen-0001``, ``gen-0002``, two shards each in
    ``train``, one in ``val``), a window folder ``window`` assembled over both; and every row by
    ``(game_index, move_number)``."""
    root = tmp_path_factory.mktemp("selfplay")
    rng = np.random.default_rng(7)
    rows: dict[tuple[int, int], dict] = {}
    splits: dict[str, list[str]] = {"train": [], "val": []}
    games: list[dict] = []
    for gen in (1, 2):
        folder = root / f"gen-{gen:04d}"
        for split, shards in (("train", 2), ("val", 1)):
            for k in range(shards):
                gs = [game_rows(rng, hexid(rng), int(rng.integers(5, 14))) for _ in range(3)]
                rel = f"{split}/part-{k:05d}.parquet"
                write_shard(folder / rel, gs)
                splits[split].append(f"../gen-{gen:04d}/{rel}")
                for g in gs:
                    games.append({"game_id": g["game_id"], "black": "gotk", "white": "gotk", "komi": 7.5,
                                  "winner": "b", "result": "B+3.5", "end": "score", "num_moves": len(g["label"]),
                                  "rules": "tromp-taylor", "source": "other"})
                    for i in range(len(g["label"])):
                        rows[(game_index(g["game_id"]), i)] = {
                            "planes": g["planes"][i], "label": int(g["label"][i]),
                            **{k2: v[i] for k2, v in g["targets"].items()}}
    games.append({"game_id": "0" * 32, "black": "nobody"})  # not in any shard: dropped
    m = assemble_dataset(root / "window", encoder_desc(), splits, games, {"komi": 7.5, "visits": 16},
                         generator={"name": "gotk selfplay", "generations": [1, 2]})
    assert m["generator"]["name"] == "gotk selfplay"
    return root / "window", rows


def test_plain_schema_is_unchanged_and_targets_are_listed() -> None:
    desc = encoder_desc()
    plain = S.shard_schema(desc)
    assert plain.names == ["game_id", "move_number", "to_play", "features", "label", "value"]
    assert "targets" not in json.loads(plain.metadata[S.METADATA_KEY])
    assert S.schema_targets(plain) == ()
    full = S.shard_schema(desc, targets=True)
    assert full.names == plain.names + list(S.TARGETS)
    assert full.field("policy").type.byte_width == (POINTS + 1) * 2
    assert full.field("ownership").type.byte_width == POINTS
    assert S.schema_targets(full) == S.TARGETS
    assert S.schema_targets(json.loads(full.metadata[S.METADATA_KEY])) == S.TARGETS
    assert S.schema_targets({"targets": list(S.TARGETS)}) == S.TARGETS


def test_rows_table_requires_targets_exactly_with_the_schema() -> None:
    rng = np.random.default_rng(1)
    g = game_rows(rng, hexid(rng), 4)
    args = ([g["game_id"]] * 4, g["move_number"], g["to_play"], S.pack_features(g["planes"], "bit"), g["label"],
            g["value"])
    full = S.shard_schema(encoder_desc(), targets=True)
    with pytest.raises(ValueError, match="needs targets"):
        S.rows_table(full, *args)
    with pytest.raises(ValueError, match="no target columns"):
        S.rows_table(S.shard_schema(encoder_desc()), *args, targets=g["targets"])
    with pytest.raises(ValueError, match="missing"):
        S.rows_table(full, *args, targets={k: v for k, v in g["targets"].items() if k != "score"})
    bad = {**g["targets"], "policy": g["targets"]["policy"][:, :-1]}
    with pytest.raises(ValueError, match="policy"):
        S.rows_table(full, *args, targets=bad)
    with pytest.raises(ValueError, match="ownership"):
        S.rows_table(full, *args, targets={**g["targets"], "ownership": g["targets"]["ownership"] * 2})
    with pytest.raises(ValueError, match="rows"):
        S.rows_table(full, *args, targets={**g["targets"], "weight": np.ones(3, np.float32)})


def test_target_columns_round_trip_through_both_writers(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    gs = [game_rows(rng, hexid(rng), n) for n in (7, 3, 11)]
    info = write_shard(tmp_path / "a.parquet", gs, row_group_rows=8)
    schema = S.shard_schema(encoder_desc(), targets=True)
    with ShardRowWriter(tmp_path / "b.parquet", schema, row_group_rows=8) as rw:
        for g in gs:
            rw.add(g["game_id"], S.pack_features(g["planes"], "bit"), g["move_number"], g["to_play"], g["label"],
                   g["value"], g["targets"])
        info_b = rw.finish()
    assert info["rows"] == info_b["rows"] == 21
    assert info["sha256"] == info_b["sha256"]  # the same rows give the same bytes, whichever writer
    table = pq.read_table(tmp_path / "a.parquet")
    assert S.schema_targets(table.schema) == S.TARGETS
    got = S.decode_targets(table)
    want = {k: np.concatenate([g["targets"][k] for g in gs]) for k in S.TARGETS}
    np.testing.assert_array_equal(got["policy"], want["policy"].astype(np.float16).astype(np.float32))
    np.testing.assert_allclose(got["policy"].sum(1), 1.0, atol=5e-3)
    np.testing.assert_array_equal(got["ownership"], want["ownership"])
    for k in ("root_value", "score", "weight"):
        np.testing.assert_array_equal(got[k], want[k])
    # the ownership bytes are the int8 points in tensor order (row-major, row 0 at the top)
    raw = table.column("ownership").chunk(0)[0].as_py()
    assert np.frombuffer(raw, np.int8).tolist() == gs[0]["targets"]["ownership"][0].ravel().tolist()
    with pytest.raises(ValueError, match="targets"):
        with ShardRowWriter(tmp_path / "c.parquet", schema) as rw:
            g = gs[0]
            rw.add(g["game_id"], S.pack_features(g["planes"], "bit"), g["move_number"], g["to_play"], g["label"],
                   g["value"])


def test_assembled_window_over_two_generations(generations, tmp_path: Path) -> None:
    window, rows = generations
    m = load_manifest(window)
    assert m["targets"] == list(S.TARGETS)
    assert m["splits"]["train"]["shards"][0]["file"] == "../gen-0001/train/part-00000.parquet"
    assert len(m["splits"]["train"]["shards"]) == 4 and len(m["splits"]["val"]["shards"]) == 2
    assert m["rows"] == len(rows) == m["splits"]["train"]["rows"] + m["splits"]["val"]["rows"]
    assert m["games"]["read"] == 19 and m["games"]["kept"] == 18 and m["games"]["not_in_shards"] == 1
    assert m["splits"]["train"]["games"] == 12 and m["splits"]["val"]["games"] == 6
    check = verify_dataset(window)
    assert check["problems"] == [] and check["files"] == 7
    assert not (window / "README.md").exists()  # shards outside the folder: no Hub card claiming train/*.parquet
    lines = summary_lines(m)
    assert "targets   policy, root_value, ownership, score, weight, aux_weight" in lines
    assert "made by   gotk selfplay" in lines
    games = read_games(window)
    assert games.num_rows == 18
    assert set(games.column("split").to_pylist()) == {"train", "val"}
    assert sum(games.column("positions").to_pylist()) == len(rows)
    assert games.column("komi").to_pylist()[0] == 7.5
    # gotk show's reader follows the ../ paths too
    table, _ = read_row(window, "val", 3)
    assert table.num_rows == 1 and S.schema_targets(table.schema) == S.TARGETS
    # a damaged generation shard is found through the window
    shard = window.parent / "gen-0002" / "val" / "part-00000.parquet"
    data = bytearray(shard.read_bytes())
    copy = tmp_path / "copy.parquet"
    copy.write_bytes(bytes(data))
    data[100] ^= 0xFF
    shard.write_bytes(bytes(data))
    try:
        problems = verify_dataset(window)["problems"]
        assert [p["file"] for p in problems] == ["../gen-0002/val/part-00000.parquet"]
    finally:
        shard.write_bytes(copy.read_bytes())


def test_assemble_refuses_mixed_or_missing_shards(generations, tmp_path: Path) -> None:
    window, _ = generations
    plain = tmp_path / "plain" / "train" / "part-00000.parquet"
    schema = S.shard_schema(encoder_desc())
    rng = np.random.default_rng(3)
    g = game_rows(rng, hexid(rng), 3)
    w = S.ShardWriter(plain, schema)
    w.write(S.rows_table(schema, [g["game_id"]] * 3, g["move_number"], g["to_play"],
                         S.pack_features(g["planes"], "bit"), g["label"], g["value"]))
    w.close()
    gen1 = str(window.parent / "gen-0001" / "train" / "part-00000.parquet")
    out = tmp_path / "mixed"
    with pytest.raises(ValueError, match="targets or none"):
        assemble_dataset(out, encoder_desc(), {"train": [gen1, str(plain)]}, [], {})
    with pytest.raises(FileNotFoundError):
        assemble_dataset(out, encoder_desc(), {"train": ["nope.parquet"]}, [], {})
    with pytest.raises(ValueError, match="encoder"):
        assemble_dataset(out, get_encoder("simple", SIZE).describe(), {"train": [gen1]}, [], {})
    assert not (out / "manifest.json").exists()
    # a plain folder with its shards inside: a complete dataset, card included
    m = assemble_dataset(tmp_path / "plain", encoder_desc(), {"train": ["train/part-00000.parquet"]},
                         [{"game_id": g["game_id"], "winner": "w"}], {"source": "test"})
    assert m["targets"] == [] and "generator" not in m
    assert (tmp_path / "plain" / "README.md").is_file()
    assert SplitIndex(tmp_path / "plain", "train").targets == ()
    batch = next(iter_numpy_batches(tmp_path / "plain", "train", sampling=Sampling(batch_size=8, shuffle=False)))
    assert "policy" not in batch and batch["features"].shape == (3, 7, SIZE, SIZE)


def _v1_schema():
    """The target schema of a shard written before ``aux_weight`` (what an older gotk wrote)."""
    import pyarrow as pa

    full = S.shard_schema(encoder_desc(), targets=True)
    meta = json.loads(full.metadata[S.METADATA_KEY])
    meta["targets"] = list(S.TARGETS_V1)
    fields = [f for f in full if f.name != "aux_weight"]
    return pa.schema(fields, metadata={S.METADATA_KEY: json.dumps(meta).encode()})


def test_shards_written_before_aux_weight_read_as_weight_one(generations, tmp_path: Path) -> None:
    """A shard without ``aux_weight`` (an older run's) is read with aux weight 1 on every row, and may join a
    window with newer shards: their rows keep their own aux weights."""
    import pyarrow as pa

    window, rows = generations
    rng = np.random.default_rng(9)
    g = game_rows(rng, hexid(rng), 6)
    old = tmp_path / "old" / "train" / "part-00000.parquet"
    schema = _v1_schema()
    assert S.schema_targets(schema) == S.TARGETS_V1
    n = len(g["label"])
    table = pa.Table.from_arrays(
        S.rows_table(S.shard_schema(encoder_desc(), targets=True), [g["game_id"]] * n, g["move_number"],
                     g["to_play"], S.pack_features(g["planes"], "bit"), g["label"], g["value"],
                     g["targets"]).columns[:-1], schema=schema)
    w = S.ShardWriter(old, schema)
    w.write(table)
    w.close()
    np.testing.assert_array_equal(S.decode_targets(pq.read_table(old))["aux_weight"], np.ones(n, np.float32))
    new = str(window.parent / "gen-0001" / "train" / "part-00000.parquet")
    m = assemble_dataset(tmp_path / "mixed", encoder_desc(), {"train": [new, str(old)]}, [], {})
    assert m["targets"] == list(S.TARGETS_V1)  # the columns every shard has
    index = SplitIndex(tmp_path / "mixed", "train")
    assert index.targets == S.TARGETS and index.file_targets == [S.TARGETS, S.TARGETS_V1]
    gid = game_index(g["game_id"])
    seen_old = seen_new = 0
    for b in iter_numpy_batches(tmp_path / "mixed", "train",
                                sampling=Sampling(batch_size=5, shuffle=False, symmetries="none")):
        for i in range(len(b["label"])):
            if int(b["game_index"][i]) == gid:
                assert b["aux_weight"][i] == 1.0
                seen_old += 1
            else:
                want = rows[(int(b["game_index"][i]), int(b["move_number"][i]))]
                assert b["aux_weight"][i] == want["aux_weight"]
                seen_new += 1
    assert seen_old == n and seen_new > 0
    assert {float(rows[k]["aux_weight"]) for k in rows} == {0.0, 1.0}  # the new rows do differ


def _check_rows(batch: dict, rows: dict) -> int:
    """Every row of an untransformed batch carries its own targets; returns the rows checked."""
    n = len(batch["label"])
    for i in range(n):
        want = rows[(int(batch["game_index"][i]), int(batch["move_number"][i]))]
        assert int(batch["label"][i]) == want["label"]
        np.testing.assert_array_equal(batch["features"][i], want["planes"])
        np.testing.assert_array_equal(batch["policy"][i], want["policy"].astype(np.float16).astype(np.float32))
        np.testing.assert_array_equal(batch["ownership"][i], want["ownership"].astype(np.float32))
        for k in ("root_value", "score", "weight", "aux_weight"):
            assert float(batch[k][i]) == float(want[k])
    return n


def test_loader_yields_targets(generations) -> None:
    window, rows = generations
    index = SplitIndex(window, "train")
    assert index.targets == S.TARGETS
    seen = 0
    for b in iter_numpy_batches(window, "train", sampling=Sampling(batch_size=7, shuffle=True, seed=3,
                                                                   symmetries="none", shuffle_buffer=10)):
        assert b["policy"].shape == (len(b["label"]), POINTS + 1) and b["policy"].dtype == np.float32
        assert b["ownership"].shape == (len(b["label"]), SIZE, SIZE) and b["ownership"].dtype == np.float32
        for k in ("root_value", "score", "weight", "aux_weight"):
            assert b[k].dtype == np.float32
        seen += _check_rows(b, rows)
    assert seen == index.num_rows
    # the game cap and --where select rows, the targets follow them
    capped = [b for b in iter_numpy_batches(window, "train",
                                            sampling=Sampling(batch_size=5, seed=1, symmetries="none"),
                                            max_positions_per_game=2)]
    assert sum(_check_rows(b, rows) for b in capped) == 2 * 12
    where = list(iter_numpy_batches(window, "train", sampling=Sampling(batch_size=5, symmetries="none"),
                                    where="num_moves >= 9"))
    assert sum(_check_rows(b, rows) for b in where) > 0
    # resume: the batches after a skip are the same batches, targets included
    full = list(iter_numpy_batches(window, "train", sampling=Sampling(batch_size=6, seed=5)))
    rest = list(iter_numpy_batches(window, "train", sampling=Sampling(batch_size=6, seed=5), skip_batches=3))
    assert len(rest) == len(full) - 3
    for a, b in zip(full[3:], rest, strict=True):
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])


def test_symmetries_move_the_targets_with_the_board(generations) -> None:
    """A transformed row's policy is its untransformed policy permuted like the label, its ownership the
    untransformed ownership transformed like a plane: found by the symmetry that maps its planes."""
    window, _ = generations
    plain = list(iter_numpy_batches(window, "train", Sampling(batch_size=64, shuffle=False, symmetries="none")))
    turned = list(iter_numpy_batches(window, "train",
                                     Sampling(batch_size=64, shuffle=False, symmetries="random", seed=11)))
    table = label_permutations(SIZE)
    used = set()
    for a, b in zip(plain, turned, strict=True):
        for i in range(len(a["label"])):
            syms = [s for s in range(8) if np.array_equal(transform_planes(a["features"][i], s), b["features"][i])
                    and table[s, a["label"][i]] == b["label"][i]]
            assert syms, "no symmetry maps the row's planes"
            s = syms[0]
            used.add(s)
            want = np.empty_like(a["policy"][i])
            want[table[s]] = a["policy"][i]
            np.testing.assert_array_equal(b["policy"][i], want)
            np.testing.assert_array_equal(b["ownership"][i], transform_planes(a["ownership"][i], s))
            # the played move keeps its probability and, on the board, its point's owner
            assert b["policy"][i, b["label"][i]] == a["policy"][i, a["label"][i]]
            if a["label"][i] < POINTS:
                r, c = divmod(int(a["label"][i]), SIZE)
                r2, c2 = divmod(int(b["label"][i]), SIZE)
                assert b["ownership"][i, r2, c2] == a["ownership"][i, r, c]
            for k in ("root_value", "score", "weight", "aux_weight", "value"):
                assert a[k][i] == b[k][i]
    assert len(used) >= 6


def test_shard_dataset_in_workers_carries_targets(generations) -> None:
    """Through a DataLoader worker (the one shared-memory tensor per batch) and resume by state_dict."""
    import torch
    from torch.utils.data import DataLoader

    window, rows = generations
    ds = ShardDataset(window, "train", sampling=Sampling(batch_size=8, seed=2, symmetries="none"), num_workers=1)
    got = list(DataLoader(ds, batch_size=None, num_workers=1))
    assert sum(_check_rows({k: v.numpy() for k, v in b.items()}, rows) for b in got) == ds.num_rows
    assert all(b["policy"].dtype == torch.float32 and b["ownership"].shape[1:] == (SIZE, SIZE) for b in got)
    inproc = list(ds)
    for a, b in zip(got, inproc, strict=True):
        for k in a:
            assert torch.equal(a[k], b[k])
    ds.load_state_dict(ds.state_dict(2))
    rest = list(ds)
    assert len(rest) == len(inproc) - 2
    assert all(torch.equal(a["policy"], b["policy"]) for a, b in zip(inproc[2:], rest, strict=True))


def test_inspect_and_show_read_the_window(generations) -> None:
    """``gotk inspect --verify`` and ``gotk show`` on the assembled folder, whose shards lie in sibling folders."""
    from typer.testing import CliRunner

    from gotk.cli.main import app

    window, _ = generations
    runner = CliRunner()
    res = runner.invoke(app, ["inspect", str(window), "--verify"])
    assert res.exit_code == 0, res.output
    assert "targets   policy" in res.output
    res = runner.invoke(app, ["show", str(window), "--split", "train", "--row", "5"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("train row 5: game ")
