"""The streaming loader over real ``gotk encode`` output (the built-in 2017-02 KGS archive)."""

from __future__ import annotations

import collections
import pickle
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from torch.utils.data import DataLoader

from gotk.coords import symmetry_permutation, transform_planes
from gotk.datasets import Sampling, ShardDataset, SplitIndex, game_index, iter_numpy_batches, worker_batch_offsets
from gotk.jobs.encode import EncodeOptions, encode_dataset
from gotk.shards.format import decode_features

BS = 256


@pytest.fixture(scope="session")
def seven(tmp_path_factory, sample_archive) -> Path:
    """sevenplane dataset of the 525-game archive: small shards and row groups (many, unevenly sized),
    passes included so that pass labels occur."""
    out = tmp_path_factory.mktemp("loader") / "seven"
    opts = EncodeOptions(encoder="sevenplane", split="train=0.8,val=0.1,test=0.1", shard_rows=7000,
                         row_group_rows=1000, include_passes=True)
    encode_dataset([sample_archive], out, opts, workers=2, progress=False)
    return out


@pytest.fixture(scope="session")
def loose_sgf(tmp_path_factory, sample_archive) -> Path:
    """The archive's first 40 games, written as loose .sgf files."""
    src = tmp_path_factory.mktemp("loader1") / "sgf"
    src.mkdir()
    with tarfile.open(sample_archive, "r|*") as tf:
        n = 0
        for info in tf:
            if info.isfile() and info.name.endswith(".sgf") and n < 40:
                (src / f"g{n:03d}.sgf").write_bytes(tf.extractfile(info).read())
                n += 1
    return src


@pytest.fixture(scope="session")
def oneplane(loose_sgf) -> Path:
    """oneplane (int8) dataset of the 40 loose games, written without the globals column."""
    out = loose_sgf.parent / "one"
    encode_dataset([loose_sgf], out, EncodeOptions(encoder="oneplane", split="train=1.0", shard_rows=3000,
                                                   row_group_rows=700, include_passes=True, globals=False),
                   workers=1, progress=False)
    return out


@pytest.fixture(scope="session")
def relative(loose_sgf) -> Path:
    """relative dataset of the 40 loose games, with the globals column (gotk encode's default)."""
    out = loose_sgf.parent / "relative"
    encode_dataset([loose_sgf], out, EncodeOptions(encoder="relative", split="train=1.0", shard_rows=3000,
                                                   row_group_rows=700), workers=1, progress=False)
    return out


def split_rows(path: Path, split: str) -> dict[tuple[int, int], tuple[np.ndarray, int, int]]:
    """(game_index, move_number) → (features, label, value) of every stored row, read directly."""
    out = {}
    for f in SplitIndex(path, split).files:
        t = pq.read_table(f)
        feats = decode_features(t)
        gids = t.column("game_id").to_pylist()
        moves = t.column("move_number").to_numpy()
        labels = t.column("label").to_numpy()
        values = t.column("value").to_numpy()
        for i, g in enumerate(gids):
            key = (game_index(g), int(moves[i]))
            assert key not in out
            out[key] = (feats[i], int(labels[i]), int(values[i]))
    return out


def keys(batches) -> list[tuple[int, int]]:
    return [(int(g), int(m)) for b in batches for g, m in zip(b["game_index"], b["move_number"], strict=True)]


def collect(ds, num_workers: int = 0) -> list[dict]:
    return [{k: v.numpy() for k, v in b.items()} for b in DataLoader(ds, batch_size=None, num_workers=num_workers)]


def same(a: list[dict], b: list[dict]) -> bool:
    return len(a) == len(b) and all(
        x.keys() == y.keys() and all(x[k].dtype == y[k].dtype and np.array_equal(x[k], y[k]) for k in x)
        for x, y in zip(a, b, strict=True))


def test_numpy_batches_are_the_stored_rows(seven):
    rows = split_rows(seven, "test")
    batches = list(iter_numpy_batches(seven, "test",
                                      sampling=Sampling(batch_size=BS, symmetries="none", shuffle_buffer=3000)))
    assert collections.Counter(keys(batches)) == collections.Counter(rows.keys())
    assert [len(b["label"]) for b in batches[:-1]] == [BS] * (len(batches) - 1)
    assert 0 < len(batches[-1]["label"]) <= BS
    b = batches[0]
    assert b["features"].shape == (BS, 7, 19, 19) and b["features"].dtype == np.uint8
    assert (b["label"].dtype, b["value"].dtype, b["move_number"].dtype, b["game_index"].dtype) == (
        np.int64, np.float32, np.int32, np.int64)
    for b in batches:
        for i, key in enumerate(zip(b["game_index"].tolist(), b["move_number"].tolist(), strict=True)):
            feats, label, value = rows[key]
            assert np.array_equal(b["features"][i], feats)
            assert b["label"][i] == label and b["value"][i] == value
    # shuffled: consecutive samples rarely come from the same game
    same_game = np.mean(batches[0]["game_index"][1:] == batches[0]["game_index"][:-1])
    assert same_game < 0.2


@pytest.mark.parametrize("num_workers", [0, 1, 2])
def test_dataloader_every_row_once(seven, num_workers):
    ds = ShardDataset(seven, "test", sampling=Sampling(batch_size=BS), num_workers=num_workers)
    got = collect(ds, num_workers)
    index = SplitIndex(seven, "test")
    expected = collections.Counter()
    for f in index.files:
        t = pq.read_table(f, columns=["game_id", "move_number"])
        expected.update(zip(map(game_index, t.column("game_id").to_pylist()),
                            t.column("move_number").to_numpy().tolist(), strict=True))
    assert collections.Counter(keys(got)) == expected
    assert sum(len(b["label"]) for b in got) == ds.num_rows == index.num_rows
    assert len(ds) == len(got)
    assert got[0]["features"].shape[1:] == (ds.num_planes, ds.board_size, ds.board_size) == (7, 19, 19)
    assert ds.encoder["name"] == "sevenplane"
    dtypes = {k: v.dtype for k, v in got[0].items()}
    assert dtypes == {"features": np.uint8, "label": np.int64, "value": np.float32, "move_number": np.int32,
                      "to_play": np.int8, "game_index": np.int64, "globals": np.float32}


def test_ranks_times_workers_every_row_once(seven):
    per_rank = []
    for rank in (0, 1):
        ds = ShardDataset(seven, "test", sampling=Sampling(batch_size=BS, seed=3), rank=rank, world_size=2,
                          num_workers=2)
        got = collect(ds, 2)
        assert len(got) == len(ds) == ds.rank_batch_counts(2)[rank]
        per_rank.append(collections.Counter(keys(got)))
    assert not set(per_rank[0]) & set(per_rank[1])
    assert per_rank[0] + per_rank[1] == collections.Counter(split_rows(seven, "test").keys())
    assert min(per_rank[0].values()) == max(per_rank[1].values()) == 1


def test_deterministic_per_seed_and_epoch(seven):
    def run(seed, epoch, workers=0):
        ds = ShardDataset(seven, "test", sampling=Sampling(batch_size=BS, seed=seed, shuffle_buffer=2000))
        ds.set_epoch(epoch)
        return collect(ds, workers)

    a = run(7, 0)
    assert same(a, run(7, 0))
    assert same(a, run(7, 0, workers=1))  # DataLoader with 0 or 1 workers: the same stream
    for other in (run(7, 1), run(8, 0)):
        assert not same(a, other)
        assert keys(a) != keys(other)
        assert collections.Counter(keys(a)) == collections.Counter(keys(other))
    w2 = [run(7, 0, workers=2), run(7, 0, workers=2)]
    assert same(*w2)


def test_unshuffled_reads_in_file_order(seven):
    got = list(iter_numpy_batches(seven, "test", sampling=Sampling(batch_size=BS, shuffle=False, symmetries="none")))
    expected = []
    for f in SplitIndex(seven, "test").files:
        t = pq.read_table(f, columns=["game_id", "move_number"])
        expected += list(zip(map(game_index, t.column("game_id").to_pylist()),
                             t.column("move_number").to_numpy().tolist(), strict=True))
    assert keys(got) == expected


def check_symmetric(rows, batches, size: int) -> collections.Counter:
    """Every sample is one symmetry of its stored row (features and label alike); returns how often
    each symmetry is the only one that fits."""
    perms = [symmetry_permutation(size, s) for s in range(8)]
    unique = collections.Counter()
    passes = 0
    for b in batches:
        for i, key in enumerate(zip(b["game_index"].tolist(), b["move_number"].tolist(), strict=True)):
            feats, label, _ = rows[key]
            fits = [s for s in range(8) if b["label"][i] == perms[s][label]
                    and np.array_equal(b["features"][i], transform_planes(feats, s))]
            assert fits, f"sample {key} is no symmetry of its row"
            if len(fits) == 1:
                unique[fits[0]] += 1
            if label == size * size:
                passes += 1
                assert b["label"][i] == size * size
    assert passes > 0, "the fixture should contain pass labels"
    return unique


def test_random_symmetries_transform_features_and_labels(seven):
    rows = split_rows(seven, "test")
    ds = ShardDataset(seven, "test", sampling=Sampling(batch_size=BS, symmetries="random", seed=1))
    unique = check_symmetric(rows, collect(ds), 19)
    assert set(unique) == set(range(8))
    assert min(unique.values()) > 0.08 * sum(unique.values())
    # symmetries "random" and "none" give the same rows in the same order
    plain = ShardDataset(seven, "test", sampling=Sampling(batch_size=BS, symmetries="none", seed=1))
    assert keys(collect(plain)) == keys(collect(ds))


def test_int8_encoder(oneplane):
    rows = split_rows(oneplane, "train")
    batches = list(iter_numpy_batches(oneplane, "train", sampling=Sampling(batch_size=100, seed=2)))
    assert batches[0]["features"].dtype == np.int8
    assert batches[0]["features"].shape[1:] == (1, 19, 19)
    assert collections.Counter(keys(batches)) == collections.Counter(rows.keys())
    assert set(np.unique(np.concatenate([b["features"].ravel() for b in batches]))) <= {-1, 0, 1}
    assert len(check_symmetric(rows, batches, 19)) == 8
    ds = ShardDataset(oneplane, "train", sampling=Sampling(batch_size=100, seed=2))
    in_process = collect(ds)
    assert in_process[0]["features"].dtype == np.int8
    assert same(in_process, collect(ds, 1))  # the shared-memory worker path keeps dtypes and values
    assert same(in_process, batches)
    torch_batch = next(iter(ds))
    assert torch_batch["features"].dtype == torch.int8
    assert SplitIndex(oneplane, "train").globals is None and "globals" not in batches[0]  # shards without them


def sgf_komi(path: Path) -> float:
    """The ``KM`` property of an SGF file, read with a regular expression (0 when absent)."""
    import re

    m = re.search(rb"KM\[([^\]]*)\]", path.read_bytes())
    return float(m.group(1)) if m and m.group(1).strip() else 0.0


def test_globals_are_the_sgf_komi_and_side_to_move_under_every_symmetry(relative, loose_sgf):
    games = pq.read_table(relative / "games.parquet", columns=["game_id", "archive"]).to_pylist()
    komi_of = {game_index(g["game_id"]): sgf_komi(loose_sgf / Path(g["archive"]).name) for g in games}
    assert len(set(komi_of.values())) > 1  # games of several komi
    plain = list(iter_numpy_batches(relative, "train",
                                    sampling=Sampling(batch_size=100, shuffle=False, symmetries="none")))
    turned = list(iter_numpy_batches(relative, "train",
                                     sampling=Sampling(batch_size=100, shuffle=False, symmetries="random", seed=5)))
    for a, b in zip(plain, turned, strict=True):
        assert not np.array_equal(a["features"], b["features"])  # the boards did turn
        assert np.array_equal(a["globals"], b["globals"]) and b["globals"].dtype == np.float32
    rows = {k: v for k in plain[0] for v in [np.concatenate([b[k] for b in plain])]}
    white = rows["to_play"] == -1
    komi = np.array([komi_of[int(g)] for g in rows["game_index"]])
    # KataGo's convention: the komi for the player to move (+ for white, who receives it), over 20
    assert np.allclose(rows["globals"][:, 0], np.where(white, komi, -komi) / 20)
    assert np.array_equal(rows["globals"][:, 1], white.astype(np.float32))
    assert white.any() and (~white).any()


@pytest.fixture(scope="session")
def with_metadata(loose_sgf) -> Path:
    """relative dataset of the 40 loose games with the metadata column (``--metadata``), in small row groups."""
    out = loose_sgf.parent / "metadata"
    encode_dataset([loose_sgf], out, EncodeOptions(encoder="relative", split="train=1.0", shard_rows=3000,
                                                   row_group_rows=700, metadata=True), workers=1, progress=False)
    return out


def test_metadata_is_the_games_katago_row_for_the_side_to_move(with_metadata, loose_sgf, relative):
    from gotk.encoders.metadata_inputs import fill_row, from_normalised
    from gotk.sgf.metadata import normalise_record
    from gotk.sgf.reader import read_sgf_file

    games = pq.read_table(with_metadata / "games.parquet", columns=["game_id", "archive"]).to_pylist()
    meta_of = {game_index(g["game_id"]): from_normalised(normalise_record(read_sgf_file(
        loose_sgf / Path(g["archive"]).name)[0])) for g in games}
    assert len({(m.black_inverse_rank, m.white_inverse_rank) for m in meta_of.values()}) > 5
    plain = list(iter_numpy_batches(with_metadata, "train",
                                    sampling=Sampling(batch_size=100, shuffle=False, symmetries="none")))
    turned = list(iter_numpy_batches(with_metadata, "train",
                                     sampling=Sampling(batch_size=100, shuffle=False, symmetries="random", seed=3)))
    for a, b in zip(plain, turned, strict=True):
        assert b["metadata"].dtype == np.float32 and b["metadata"].shape == (len(b["label"]), 192)
        assert np.array_equal(a["metadata"], b["metadata"])  # no symmetry changes it
    for b in plain:
        for i in range(len(b["label"])):
            color = 2 if b["to_play"][i] == -1 else 1
            assert np.array_equal(b["metadata"][i], fill_row(meta_of[int(b["game_index"][i])], color, 361))
    assert SplitIndex(relative, "train").metadata is None and "metadata" not in plain_batch(relative)


def plain_batch(path: Path) -> dict:
    return next(iter(iter_numpy_batches(path, "train", sampling=Sampling(batch_size=10, shuffle=False))))


@pytest.mark.parametrize("num_workers", [0, 2])
def test_resume_mid_epoch_gives_exactly_the_rest(seven, num_workers):
    kw = dict(sampling=Sampling(batch_size=BS, seed=5, shuffle_buffer=3000), epoch=1)
    full = collect(ShardDataset(seven, "test", **kw), num_workers)
    for done in (1, 7, len(full) - 1):
        if num_workers == 0:  # the dataset counts what it yielded itself
            ds = ShardDataset(seven, "test", **kw)
            it = iter(ds)
            for _ in range(done):
                next(it)
            state = ds.state_dict()
        else:  # workers: the trainer says how many batches it consumed
            state = ShardDataset(seven, "test", **kw).state_dict(batches_done=done)
        assert state["batches_done"] == done and state["epoch"] == 1
        resumed = ShardDataset(seven, "test", sampling=Sampling(batch_size=BS, seed=5, shuffle_buffer=3000))
        resumed.load_state_dict(state)
        resumed.set_epoch(1)  # the trainer's usual call keeps the resume
        rest = collect(resumed, num_workers)
        assert same(rest, full[done:])
        resumed.set_epoch(2)  # a new epoch starts from its beginning
        assert sum(len(b["label"]) for b in collect(resumed, num_workers)) == resumed.num_rows
    with pytest.raises(ValueError, match="seed"):
        ShardDataset(seven, "test", sampling=Sampling(batch_size=BS, seed=6)).load_state_dict(state)


def test_worker_batch_offsets_follow_dataloader_round_robin():
    assert worker_batch_offsets(5, [3, 3]) == ([3, 2], 1)
    assert worker_batch_offsets(4, [3, 3]) == ([2, 2], 0)
    assert worker_batch_offsets(4, [1, 4]) == ([1, 3], 0)
    assert worker_batch_offsets(6, [2, 0, 5, 3]) == ([2, 0, 2, 2], 0)
    assert worker_batch_offsets(7, [2, 0, 5, 3]) == ([2, 0, 3, 2], 3)


def test_shuffle_buffer_is_bounded(seven):
    """A row leaves the buffer at most ``shuffle_buffer + row_group_rows`` rows after it was read."""
    buffer = 1500
    index = SplitIndex(seven, "train")
    read_order = []
    for rg in index.slot_row_groups(0, 4, True, 0, 1, 0, 1):
        t = pq.ParquetFile(index.files[rg.file]).read_row_group(rg.index, columns=["game_id", "move_number"])
        read_order += list(zip(map(game_index, t.column("game_id").to_pylist()),
                               t.column("move_number").to_numpy().tolist(), strict=True))
    read_pos = {k: i for i, k in enumerate(read_order)}
    emitted = keys(iter_numpy_batches(seven, "train", sampling=Sampling(batch_size=BS, seed=4, shuffle_buffer=buffer,
                                                                        symmetries="none")))
    assert sorted(emitted) == sorted(read_order)
    lag = np.array([read_pos[k] for k in emitted]) - np.arange(len(emitted))
    max_rg = max(rg.rows for rg in index.row_groups)
    assert lag.max() <= buffer + max_rg
    assert lag.min() < -buffer // 2  # and rows really are held back and mixed
    # a buffer smaller than a row group still yields every row once
    small = keys(iter_numpy_batches(seven, "test",
                                    sampling=Sampling(batch_size=BS, shuffle_buffer=100, symmetries="none")))
    assert collections.Counter(small) == collections.Counter(split_rows(seven, "test").keys())


def test_max_positions_per_game(seven):
    k = 12
    games = collections.Counter(g for g, _ in split_rows(seven, "train"))

    def picked(epoch: int, world_size: int = 1, num_workers: int = 0) -> list[tuple[int, int]]:
        out = []
        for rank in range(world_size):
            ds = ShardDataset(seven, "train", sampling=Sampling(batch_size=BS), max_positions_per_game=k, epoch=epoch,
                              rank=rank, world_size=world_size, num_workers=num_workers)
            got = collect(ds, num_workers)
            assert len(got) == len(ds)
            out += keys(got)
        return out

    e0 = picked(0)
    assert len(e0) == len(set(e0))
    per_game = collections.Counter(g for g, _ in e0)
    assert per_game == {g: min(n, k) for g, n in games.items()}
    assert sorted(picked(0, world_size=2, num_workers=2)) == sorted(e0)  # independent of the sharding
    assert set(picked(1)) != set(e0)


def test_numpy_iterator_matches_dataset_and_needs_no_torch(seven):
    ds = ShardDataset(seven, "val", sampling=Sampling(batch_size=100, seed=9, drop_last=True), epoch=2)
    a = collect(ds)
    b = list(iter_numpy_batches(seven, "val", sampling=Sampling(batch_size=100, seed=9, drop_last=True), epoch=2))
    assert same(a, b) and len(a) == len(ds) == ds.num_rows // 100
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from gotk.datasets import Sampling, iter_numpy_batches\n"
        f"n = sum(len(b['label']) for b in iter_numpy_batches({str(seven)!r}, 'val', Sampling(batch_size=100)))\n"
        "assert 'torch' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
        "print(n)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout) == ds.num_rows


def test_dataset_pickles(seven):
    """DataLoader with the ``spawn`` start method pickles the dataset."""
    ds = ShardDataset(seven, "val", sampling=Sampling(batch_size=BS, seed=4), max_positions_per_game=30)
    assert same(collect(pickle.loads(pickle.dumps(ds))), collect(ds))


def test_bad_arguments(seven):
    with pytest.raises(ValueError, match="split 'nope'"):
        ShardDataset(seven, "nope")
    with pytest.raises(ValueError, match="symmetries"):
        ShardDataset(seven, "val", sampling=Sampling(symmetries="some"))
    with pytest.raises(ValueError, match="rank"):
        ShardDataset(seven, "val", rank=2, world_size=2)


def test_sgf_batches_carry_the_globals_the_shards_hold(relative, loose_sgf):
    """``gotk eval`` on SGF feeds the same global inputs as the encoded shards of the same games."""
    from gotk.datasets.sgf_batches import sgf_batches
    from gotk.encoders import get_encoder

    sgf = np.concatenate([b["globals"] for b in sgf_batches([loose_sgf], get_encoder("relative"), 500)])
    in_order = Sampling(batch_size=500, shuffle=False, symmetries="none")
    stored = np.concatenate([b["globals"] for b in iter_numpy_batches(relative, "train", sampling=in_order)])
    assert sorted(map(tuple, sgf.tolist())) == sorted(map(tuple, stored.tolist()))
