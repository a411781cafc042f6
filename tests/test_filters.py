"""gotk.shards.where (--where) and where it is used: encode, replay, the loader, eval --by rank."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import invoke, sample_dataset, trained_run

from gotk.shards import manifest as M
from gotk.shards.where import WhereError, compile_where

COLS = ["black_rank", "white_rank", "handicap", "black_is_bot", "white_is_bot", "year", "rules", "komi", "end"]
ROWS = [
    dict(black_rank=6, white_rank=7, handicap=0, black_is_bot=False, white_is_bot=False, year=2017,
         rules="japanese", komi=6.5, end="resign"),
    dict(black_rank=None, white_rank=7, handicap=0, black_is_bot=False, white_is_bot=False, year=2017,
         rules=None, komi=None, end="time"),
    dict(black_rank=6, white_rank=7, handicap=2, black_is_bot=False, white_is_bot=True, year=2017,
         rules="chinese", komi=0.5, end="score"),
    dict(black_rank=-3, white_rank=103, handicap=0, black_is_bot=False, white_is_bot=False, year=2010,
         rules="aga", komi=7.5, end="resign"),
]
ISSUE_EXAMPLE = ("min(black_rank, white_rank) >= 5 and handicap = 0 and not (black_is_bot or white_is_bot) "
                 "and year >= 2015")


@pytest.mark.parametrize("text, expected", [
    (ISSUE_EXAMPLE, [True, False, False, False]),
    ("min(black_rank, white_rank) >= 5d", [True, False, True, False]),  # rank literal: 5d = 5
    ("white_rank >= 1p", [False, False, False, True]),
    ("black_rank <= 1k", [False, False, False, True]),
    ("rules in ('japanese', 'aga')", [True, False, False, True]),
    ("rules not in ('japanese')", [False, False, True, True]),
    ("komi is null", [False, True, False, False]),
    ("komi is not null and komi > 6", [True, False, False, True]),
    ("abs(black_rank - white_rank) <= 1", [True, False, True, False]),
    ("coalesce(black_rank, 0) >= 6 or end = 'time'", [True, True, True, False]),
    ("not black_rank >= 6", [False, False, False, True]),  # null stays null: not kept
    ("handicap * 2 + 1 = 5 or year / 2 = 1005", [False, False, True, True]),
    ("YEAR >= 2015 AND NOT white_is_bot", [True, True, False, False]),  # keywords any case
    ("-black_rank > 0", [False, False, False, True]),
    ("komi == 6.5 or komi <> 0.5 and komi != 7.5", [True, False, False, False]),
])
def test_where_row_and_arrow_agree(text, expected):
    w = compile_where(text.replace("YEAR", "year"), COLS)
    assert [w.matches(r) for r in ROWS] == expected
    kept = w.filter_table(pa.Table.from_pylist(ROWS))
    assert kept.num_rows == sum(expected)
    assert kept.column("year").to_pylist() == [r["year"] for r, e in zip(ROWS, expected, strict=True) if e]


def test_where_reason_is_the_first_failed_term():
    w = compile_where(ISSUE_EXAMPLE, COLS)
    assert [w.reason(r) for r in ROWS] == [None, "min(black_rank, white_rank) >= 5", "handicap = 0",
                                          "min(black_rank, white_rank) >= 5"]
    w = compile_where("white_rank in (7d, 1p) and black_rank >= 6d", COLS)  # rank literals shown as written
    assert [w.reason(r) for r in ROWS] == [None, "black_rank >= 6d", None, "white_rank in (7d, 1p)"]


@pytest.mark.parametrize("text, message", [
    ("black_rank >", "expected a value"),
    ("rank >= 5", "unknown column 'rank'"),
    ("min(black_rank", "expected ')'"),
    ("eval(1)", "unknown function 'eval'"),
    ("black_rank >= 5 andd handicap = 0", "unexpected 'andd'"),
    ("", "empty expression"),
    ("black_rank @ 3", "cannot read '@ 3'"),
    ("__import__('os')", "unknown function '__import__'"),
    ("komi is 3", "expected 'is null'"),
])
def test_where_errors_list_the_columns(text, message):
    with pytest.raises(WhereError) as e:
        compile_where(text, COLS)
    assert message in str(e.value) and "columns: black_is_bot, black_rank, " in str(e.value)


# --- encode / replay / loader / eval -------------------------------------------------------------

@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return sample_dataset(tmp_path_factory)


def test_encode_where_counts_filtered_games(tmp_path):
    from gotk.data import HELDOUT_ARCHIVE

    out = tmp_path / "ds"
    expr = "min(black_rank, white_rank) >= 6d and not (black_is_bot or white_is_bot) and positions >= 100"
    res = invoke(["encode", str(HELDOUT_ARCHIVE), "-e", "oneplane", "-o", str(out), "--where", expr,
                  "--workers", "1", "--no-progress", "--json"])
    assert res.exit_code == 0, res.output
    m = json.loads(res.stdout)
    games = pq.read_table(out / "games.parquet").to_pandas()
    assert len(games) == m["games"]["kept"] > 0
    assert (games[["black_rank", "white_rank"]].min(axis=1) >= 6).all()
    assert not (games["black_is_bot"] | games["white_is_bot"]).any() and (games["positions"] >= 100).all()
    fw = m["games"]["filtered_where"]
    assert set(fw) <= {"min(black_rank, white_rank) >= 6d", "not (black_is_bot or white_is_bot)", "positions >= 100"}
    assert sum(fw.values()) == m["games"]["skipped"]["filtered_where"] > 0
    assert json.loads((out / "run-report.json").read_text())["filtered_where"] == fw
    # the same games without --where: the filtered ones are exactly those the expression rejects
    out2 = tmp_path / "all"
    res = invoke(["encode", str(HELDOUT_ARCHIVE), "-e", "oneplane", "-o", str(out2), "--workers", "1",
                  "--no-progress"])
    assert res.exit_code == 0, res.output
    every = pq.read_table(out2 / "games.parquet")
    kept = compile_where(expr, M.ENCODE_WHERE_COLUMNS).filter_table(every)
    assert sorted(kept.column("game_id").to_pylist()) == sorted(games["game_id"])
    assert every.num_rows - kept.num_rows == sum(fw.values())


def test_encode_bad_where_fails_before_work(tmp_path):
    out = tmp_path / "ds"
    res = invoke(["encode", "-e", "oneplane", "-o", str(out), "--where", "rank >= 5"])
    assert res.exit_code == 2 and "unknown column 'rank'" in res.output and "black_rank" in res.output
    assert not out.exists()


def test_replay_where():
    from gotk.data import HELDOUT_ARCHIVE

    res = invoke(["replay", str(HELDOUT_ARCHIVE), "--json"])
    base = json.loads(res.stdout)
    res = invoke(["replay", str(HELDOUT_ARCHIVE), "--json", "--where", "end = 'resign' and white_rank >= 7"])
    assert res.exit_code == 0, res.output
    r = json.loads(res.stdout)
    assert 0 < r["games_replayed"] < base["games_replayed"]
    assert r["skipped"]["filtered_where"] == sum(r["filtered_where"].values())
    assert r["games_read"] == base["games_read"]
    res = invoke(["replay", str(HELDOUT_ARCHIVE), "--where", "positions > 3"])  # not known before replay
    assert res.exit_code == 2 and "unknown column 'positions'" in res.output


def test_loader_where_selects_rows_without_reencoding(dataset):
    from gotk.datasets import Sampling, ShardDataset, iter_numpy_batches
    from gotk.datasets.index import game_index

    games = pq.read_table(dataset / "games.parquet").to_pandas()
    val = games[games.split == "val"]
    expr = "white_rank >= 7 and end != 'time'"
    want = val[(val.white_rank >= 7) & (val.end != "time")]
    assert 0 < len(want) < len(val)
    seen, rows = set(), 0
    for b in iter_numpy_batches(dataset, "val", sampling=Sampling(batch_size=256, shuffle=True), where=expr):
        seen |= set(b["game_index"].tolist())
        rows += len(b["label"])
    assert seen == {game_index(g) for g in want.game_id} and rows == want.positions.sum()
    ds = ShardDataset(dataset, "val", sampling=Sampling(batch_size=256), where=expr, rank=0, world_size=1)
    assert len(ds) == -(-int(want.positions.sum()) // 256)
    assert sum(len(b["label"]) for b in ds) == want.positions.sum()
    with pytest.raises(WhereError, match="unknown column"):
        next(iter_numpy_batches(dataset, "val", where="strength > 3"))


def test_eval_by_rank(tmp_path_factory, dataset):
    agent = trained_run(tmp_path_factory) / "agent.gotk"
    res = invoke(["eval", "--agent", str(agent), "--data", str(dataset), "--split", "val", "--by", "rank",
                  "--json", "--device", "cpu", "--threads", "1"])
    assert res.exit_code == 0, res.output
    r = json.loads(res.stdout)
    bands = r["by_rank"]
    assert sum(b["positions"] for b in bands.values()) == r["positions"]
    weighted = sum(b["top1"] * b["positions"] for b in bands.values()) / r["positions"]
    assert weighted == pytest.approx(r["top1"])
    # the band sizes are those of the player to move, from games.parquet and the rows' to_play
    games = pq.read_table(dataset / "games.parquet").to_pandas().set_index("game_id")
    counts: dict[str, int] = {}
    from gotk.sgf.metadata import rank_band

    for f in sorted((dataset / "val").glob("*.parquet")):
        t = pq.read_table(f, columns=["game_id", "to_play"]).to_pandas()
        rk = np.where(t.to_play == 1, games.loc[t.game_id, "black_rank"], games.loc[t.game_id, "white_rank"])
        for v in rk:
            band = rank_band(None if v != v else float(v))
            counts[band] = counts.get(band, 0) + 1
    assert {k: v["positions"] for k, v in bands.items()} == counts
    # SGF input: the rank of the player to move comes from BR/WR
    from gotk.data import TRAIN_ARCHIVE

    res = invoke(["eval", "--agent", str(agent), "--data", str(TRAIN_ARCHIVE), "--by", "rank", "--max-positions",
                  "2000", "--json", "--device", "cpu", "--threads", "1"])
    assert res.exit_code == 0, res.output
    r = json.loads(res.stdout)
    assert sum(b["positions"] for b in r["by_rank"].values()) == r["positions"] == 2000
    assert set(r["by_rank"]) <= {"1d-3d", "4d-5d", "6d", "7d", "8d", "9d", "1p-9p", "?"} and "6d" in r["by_rank"]
    res = invoke(["eval", "--agent", str(agent), "--data", str(dataset), "--by", "colour", "--device", "cpu"])
    assert res.exit_code == 2 and "only 'rank'" in res.output


def test_train_where_reads_only_the_kept_games(tmp_path, dataset):
    from helpers import TINY

    games = pq.read_table(dataset / "games.parquet").to_pandas()
    rows = int(games[(games.split == "train") & (games.white_rank >= 8)].positions.sum())
    assert 0 < rows < games[games.split == "train"].positions.sum()
    run = tmp_path / "run"
    res = invoke(["train", "--data", str(dataset), "--out", str(run), *TINY, "--head", "policy", "--epochs", "1",
                  "--where", "white_rank >= 8", "--max-val-positions", "200"])
    assert res.exit_code == 0, res.output
    assert f"steps {-(-rows // 64)}" in res.output  # one epoch = the kept rows in batches of 64
    assert json.loads((run / "config.json").read_text())["config"]["where"] == "white_rank >= 8"
    res = invoke(["train", "--data", str(dataset), "--out", str(tmp_path / "bad"), *TINY, "--where", "elo > 3"])
    assert res.exit_code == 2 and "unknown column 'elo'" in res.output
