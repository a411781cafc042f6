"""``gotk encode`` / ``inspect`` / ``show`` end to end on real KGS games and crafted edge cases."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from gotk.cli.main import app
from gotk.sgf import read_sgf
from gotk.shards import decode_features
from gotk.shards import manifest as M
from gotk.sources.archives import SgfSource, iter_sources

runner = CliRunner()

CRAFTED = {
    "nine.sgf": b"(;GM[1]SZ[9];B[ee];W[cc])",
    "broken.sgf": b"(;GM[1]SZ[19];B[dd",
    "illegal.sgf": b"(;GM[1]SZ[19]BR[7d]WR[7d]RE[W+R];B[dd];W[pp];B[qq];W[dd])",  # W[dd] occupied → partial
    "handicap.sgf": b"(;GM[1]SZ[19]HA[2]AB[dd][pp]BR[7d]WR[7d]RE[B+5.5];W[qd];B[dq])",
    "weak.sgf": b"(;GM[1]SZ[19]BR[3k]WR[7d]RE[B+R];B[dd];W[pp];B[dq])",
    "passes.sgf": b"(;GM[1]SZ[19]BR[6d]WR[1p]RE[Void];B[dd];W[];B[pp];W[tt];B[dq])",
    "empty.sgf": b"(;GM[1]SZ[19]BR[6d]WR[6d])",
}


def _slice(sample: Path, n: int) -> list[tuple[str, bytes]]:
    return [(s.member, s.data) for s in iter_sources([sample]) if isinstance(s, SgfSource)][:n]


@pytest.fixture(scope="module")
def slices(tmp_path_factory, sample_archive):
    """A zip and a tar.gz of the first 40 real games (different stems), and a folder of crafted SGFs."""
    d = tmp_path_factory.mktemp("src")
    members = _slice(sample_archive, 40)
    with zipfile.ZipFile(d / "first40.zip", "w") as zf:
        for name, data in members:
            zf.writestr(name, data)
    with tarfile.open(d / "copy40.tar.gz", "w:gz") as tf:
        for name, data in members[:20]:  # the same games again: duplicates
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    crafted = d / "crafted"
    crafted.mkdir()
    for name, data in CRAFTED.items():
        (crafted / name).write_bytes(data)
    return d


def _encode(*args: str) -> tuple[int, str]:
    res = runner.invoke(app, ["encode", "--no-progress", *args])
    return res.exit_code, res.output


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "run-report.json"}


def test_workers_1_and_2_are_byte_identical(tmp_path, slices):
    outs = []
    for w, unit in [(1, 256), (2, 7)]:
        out = tmp_path / f"w{w}"
        code, text = _encode(str(slices / "first40.zip"), "-e", "sevenplane", "-o", str(out), "--workers", str(w),
                             "--unit-size", str(unit), "--shard-rows", "1500")
        assert code == 0, text
        outs.append(_files(out))
    assert outs[0] == outs[1]
    assert any(k.startswith("train/part-00001") for k in outs[0])  # several shards, cut by --shard-rows
    assert not any(".work" in k or k.endswith(".tmp") for k in outs[0])


@pytest.mark.parametrize("opts", [[], ["--include-passes", "--skip-first", "3"]])
def test_one_worker_encodes_oneplane_from_the_scan_s_board_traces_with_the_pool_s_bytes(tmp_path, slices, monkeypatch,
                                                                                       opts):
    """With one worker the shards of a board-only encoder (``oneplane``) run over the board traces of the scans
    before them in the same process (no second replay); a pool (no traces) gives the same bytes, also with a game
    stopped by an illegal move (``crafted``) and a shard that cuts a game."""
    from gotk.encoders.game_loop import FillEncoder

    calls = {"traced": 0, "engine": 0}
    for name, key in (("encode_traced_batch_into", "traced"), ("encode_batch_into", "engine")):
        def spy(self, *a, _f=getattr(FillEncoder, name), _k=key, **kw):
            calls[_k] += 1
            return _f(self, *a, **kw)
        monkeypatch.setattr(FillEncoder, name, spy)
    outs = []
    for w in (1, 2):
        code, text = _encode(str(slices / "first40.zip"), str(slices / "crafted"), "-e", "oneplane", "-o",
                             str(tmp_path / f"w{w}"), "--workers", str(w), "--shard-rows", "1700", *opts)
        assert code == 0, text
        outs.append(_files(tmp_path / f"w{w}"))
        if w == 1:
            assert calls["traced"] > 0 and calls["engine"] == 0, calls
    assert outs[0] == outs[1] and any(k.startswith("train/part-00001") for k in outs[0])


def test_a_folder_encoded_again_in_the_same_process_gives_the_new_run_s_bytes(tmp_path, slices):
    """One worker keeps each scan unit it wrote or read for the shards of its process (known by the sha256 of
    the scan file): a second run into the same folder, with other options, must not use the first run's."""
    import shutil

    out, fresh = tmp_path / "out", tmp_path / "fresh"
    src = [str(slices / "first40.zip"), str(slices / "crafted")]
    assert _encode(*src, "-e", "oneplane", "-o", str(out), "--workers", "1")[0] == 0
    shutil.rmtree(out)
    again = ["-e", "oneplane", "--workers", "1", "--skip-first", "3", "--include-passes", "--shard-rows", "900"]
    assert _encode(*src, *again, "-o", str(out))[0] == 0
    assert _encode(*src, *again, "-o", str(fresh))[0] == 0
    assert _files(out) == _files(fresh)


def test_layout_manifest_games_and_rows(tmp_path, slices, sample_archive):
    out = tmp_path / "ds"
    code, text = _encode(str(slices / "first40.zip"), str(slices / "copy40.tar.gz"), str(slices / "crafted"),
                         "-e", "sevenplane", "-o", str(out), "--workers", "2", "--shard-rows", "3000", "--json")
    assert code == 0, text
    m = json.loads(text)
    assert m["format"] == "gotk-shards" and m["schema_version"] == 2
    assert m["encoder"]["name"] == "sevenplane" and m["encoder"]["shape"] == [7, 19, 19]
    g = m["games"]
    assert g["read"] == 40 + 20 + len(CRAFTED)  # broken.sgf counts as read and skipped
    assert g["skipped"]["duplicate"] == 20
    assert g["skipped"]["bad_size"] == 1 and g["skipped"]["parse_error"] == 1 and g["skipped"]["too_short"] >= 1
    assert g["partial"] == 1 and g["partial_reasons"] == {"occupied": 1}
    assert g["kept"] == g["read"] - sum(g["skipped"].values())
    names = {s["name"] for s in m["sources"]}
    assert {"first40.zip", "copy40.tar.gz"} <= names
    assert all(len(s["sha256"]) == 64 for s in m["sources"])
    # every shard listed with rows and a correct sha256
    total = 0
    for split, s in m["splits"].items():
        assert sum(sh["rows"] for sh in s["shards"]) == s["rows"]
        for sh in s["shards"]:
            assert sh["file"].startswith(f"{split}/part-")
            from gotk.hashing import sha256_file

            assert sha256_file(out / sh["file"]) == sh["sha256"]
            assert pq.ParquetFile(out / sh["file"]).metadata.num_rows == sh["rows"]
        total += s["rows"]
    assert total == m["rows"] > 0
    assert not (out / ".work").exists() and (out / "run-report.json").is_file()

    games = pq.read_table(out / "games.parquet").to_pandas()
    assert list(games.columns) == M.GAMES_SCHEMA.names  # normalised metadata beside the raw values (v2)
    assert games["black_rank"].notna().any() and (games["black_rank_raw"] != "").any()
    assert "split" in games.columns and games["game_id"].is_unique and len(games) == g["kept"]
    assert set(games["archive"]) >= {"first40.zip", "illegal.sgf"}
    assert "copy40.tar.gz" not in set(games["archive"])  # first in source order wins

    # rows: one per non-pass move, state before the move; value from the result
    all_rows = []
    for split, s in m["splits"].items():
        for sh in s["shards"]:
            t = pq.read_table(out / sh["file"])
            all_rows.append(t.drop_columns(["features"]).to_pandas().assign(split=split))
    import pandas as pd

    df = pd.concat(all_rows)
    by_game = df.groupby("game_id")["split"].nunique()
    assert (by_game == 1).all()  # no game in two splits
    assert set(df["game_id"]) == set(games["game_id"])
    assert df.groupby("game_id").size().to_dict() == dict(zip(games["game_id"], games["positions"], strict=True))

    # check one real game against a direct replay + encode
    from gotk.encoders import get_encoder
    from gotk.shards.gameid import game_id

    member, data = _slice(sample_archive, 1)[0]
    rec = read_sgf(data)[0]
    gid = game_id(rec)
    eg = get_encoder("sevenplane").encode_game(rec)
    sub = df[df["game_id"] == gid]
    assert sub["move_number"].tolist() == eg.move_numbers.tolist()
    assert sub["label"].tolist() == eg.labels.tolist()
    assert sub["to_play"].tolist() == eg.to_play.tolist()
    color = np.where(eg.to_play > 0, 1, 2)
    assert sub["value"].tolist() == [rec.result.value_for(int(c)) for c in color]
    split = games.set_index("game_id").loc[gid, "split"]
    feats = []
    for sh in m["splits"][split]["shards"]:
        t = pq.read_table(out / sh["file"])
        mask = np.asarray(t.column("game_id").to_pylist()) == gid
        if mask.any():
            feats.append(decode_features(t.filter(mask)))
    assert np.array_equal(np.concatenate(feats), eg.features)

    # the partial game keeps the positions before the illegal move; its value is -1 for black (W+R)
    ill = df[df["game_id"] == games.set_index("archive").loc["illegal.sgf", "game_id"]]
    assert ill["move_number"].tolist() == [0, 1, 2] and ill["value"].tolist() == [-1, 1, -1]


def test_filters_passes_skip_first(tmp_path, slices):
    out = tmp_path / "f"
    code, text = _encode(str(slices / "crafted"), "-e", "oneplane", "-o", str(out), "--workers", "1",
                         "--min-rank", "6d", "--no-handicap", "--include-passes", "--skip-first", "1",
                         "--split", "test=1", "--json")
    assert code == 0, text
    m = json.loads(text)
    sk = m["games"]["skipped"]
    assert sk["filtered_rank"] == 1 and sk["filtered_handicap"] == 1
    assert list(m["splits"]) == ["test"]
    t = pq.read_table(out / "test" / "part-00000.parquet").to_pandas()
    games = pq.read_table(out / "games.parquet").to_pandas().set_index("archive")
    p = t[t["game_id"] == games.loc["passes.sgf", "game_id"]]
    assert p["move_number"].tolist() == [1, 2, 3, 4]  # first move skipped, passes kept
    assert p["label"].tolist() == [361, 15 * 19 + 15, 361, 16 * 19 + 3]  # W[] and W[tt] are passes
    assert (p["value"] == 0).all()  # void result
    i = t[t["game_id"] == games.loc["illegal.sgf", "game_id"]]
    assert i["move_number"].tolist() == [1, 2]


def test_test_from_routes_whole_archives(tmp_path, slices):
    out = tmp_path / "t"
    code, text = _encode(str(slices / "first40.zip"), str(slices / "crafted"), "-e", "oneplane", "-o", str(out),
                         "--split", "train=1", "--test-from", "*.zip", "--json")
    assert code == 0, text
    games = pq.read_table(out / "games.parquet").to_pandas()
    assert set(games[games["archive"] == "first40.zip"]["split"]) == {"test"}
    assert set(games[games["archive"] != "first40.zip"]["split"]) == {"train"}


def test_refuses_non_empty_out_and_bad_options(tmp_path, slices):
    out = tmp_path / "x"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    code, text = _encode(str(slices / "crafted"), "-e", "oneplane", "-o", str(out))
    assert code == 2 and "not empty" in text
    assert (out / "keep.txt").read_text() == "mine"
    code, text = _encode(str(slices / "crafted"), "-e", "oneplane", "-o", str(tmp_path / "y"), "--split", "a=0.5")
    assert code == 2 and "sum to" in text
    code, text = _encode(str(slices / "crafted"), "-e", "nosuch", "-o", str(tmp_path / "z"))
    assert code == 2 and "nosuch" in text
    code, text = _encode(str(slices / "crafted"), "-e", "oneplane", "-o", str(tmp_path / "w"), "--min-rank", "x")
    assert code == 2 and "rank" in text
    code, text = _encode(str(slices / "nope.zip"), "-e", "oneplane", "-o", str(tmp_path / "u"))
    assert code == 2 and "no such file" in text and not (tmp_path / "u").exists()
    code, text = _encode(str(slices / "crafted" / "nine.sgf"), "-e", "oneplane", "-o", str(tmp_path / "v"))
    assert code == 1 and "no game was kept" in text


def test_same_archive_in_several_formats_is_read_once(tmp_path, slices):
    d = tmp_path / "dl"
    d.mkdir()
    (d / "KGS-x.zip").write_bytes((slices / "first40.zip").read_bytes())
    with tarfile.open(d / "KGS-x.tar.gz", "w:gz") as tf:
        with zipfile.ZipFile(slices / "first40.zip") as zf:
            for name in zf.namelist()[:5]:
                data = zf.read(name)
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    (d / "index.json").write_text("{}")
    code, text = _encode(str(d), "-e", "oneplane", "-o", str(tmp_path / "o"), "--json")
    assert code == 0, text
    m = json.loads(text)
    assert [s["name"] for s in m["sources"]] == ["KGS-x.tar.gz"]
    assert m["sources_skipped"][0]["reason"] == "other_format"
    assert m["games"]["read"] == 5


def test_inspect_and_show(tmp_path, slices):
    out = tmp_path / "s"
    code, text = _encode(str(slices / "first40.zip"), "-e", "sevenplane", "-o", str(out), "--split", "train=1")
    assert code == 0, text
    res = runner.invoke(app, ["inspect", str(out)])
    assert res.exit_code == 0
    assert "train" in res.output and "bytes/pos" in res.output and "sevenplane" in res.output
    res = runner.invoke(app, ["show", str(out), "--split", "train", "--row", "30"])
    assert res.exit_code == 0, res.output
    assert "*" in res.output and "planes set at" in res.output and "to play" in res.output
    assert res.output.count("X") + res.output.count("O") > 10  # stones recovered from the planes
    res = runner.invoke(app, ["show", str(out), "--split", "train", "--row", "30", "--point", "Q16"])
    assert res.exit_code == 0 and "planes set at Q16" in res.output
    res = runner.invoke(app, ["show", str(out), "--split", "nope", "--row", "0"])
    assert res.exit_code == 2
    res = runner.invoke(app, ["inspect", str(tmp_path)])
    assert res.exit_code == 2 and "not a gotk dataset" in res.output


def test_inspect_verify_finds_damaged_missing_and_truncated_files(tmp_path, slices):
    out = tmp_path / "v"
    code, text = _encode(str(slices / "first40.zip"), "-e", "sevenplane", "-o", str(out), "--shard-rows", "1500")
    assert code == 0, text
    res = runner.invoke(app, ["inspect", str(out), "--verify"])
    assert res.exit_code == 0 and "verify: all" in res.output and "files match the manifest" in res.output
    res = runner.invoke(app, ["inspect", str(out), "--verify", "--json"])
    check = json.loads(res.output)["verify"]
    assert res.exit_code == 0 and check["problems"] == []
    assert check["files"] == 1 + sum(len(s["shards"]) for s in json.loads((out / "manifest.json").read_text())[
        "splits"].values())

    shard = out / "train" / "part-00000.parquet"
    raw = bytearray(shard.read_bytes())
    raw[len(raw) // 2] ^= 0x01  # one bit flipped inside the data: same size, different content
    shard.write_bytes(bytes(raw))
    (out / "train" / "part-00001.parquet").unlink()
    games = out / "games.parquet"
    games.write_bytes(games.read_bytes()[:-100])
    res = runner.invoke(app, ["inspect", str(out), "--verify"])
    assert res.exit_code == 1, res.output
    assert "verify: 3 of" in res.output
    assert "train/part-00000.parquet: sha256 differs" in res.output
    assert "train/part-00001.parquet: missing" in res.output
    assert "games.parquet:" in res.output and "the manifest says" in res.output


@pytest.mark.parametrize("name", ["oneplane", "sevenplane", "simple", "alphago"])
def test_show_recovers_the_board_from_planes(sample_archive, name):
    from gotk.encoders import get_encoder
    from gotk.encoders.stones import stones_from_planes
    from gotk.game.replay import iter_positions

    rec = read_sgf(_slice(sample_archive, 1)[0][1])[0]
    enc = get_encoder(name)
    eg = enc.encode_game(rec)
    boards = {i: st.board.copy() for st, i, _, _ in iter_positions(rec)}
    for j in (0, 1, 40, len(eg) - 1):
        got = stones_from_planes(eg.features[j], enc.plane_names, int(eg.to_play[j]))
        assert np.array_equal(got, boards[int(eg.move_numbers[j])]), (name, j)


def test_run_report_shows_bounded_memory_per_worker(tmp_path, sample_archive):
    """A fresh ``gotk encode`` (2 worker processes, the widest encoder, a whole real archive) records
    each process's peak RSS in ``run-report.json``; both stay under the 1 GiB target."""
    import subprocess
    import sys

    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "gotk", "encode", str(sample_archive), "-e", "alphago", "-o", str(out),
           "--no-progress", "--workers", "2", "--shard-rows", "20000", "--json"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    report = json.loads((out / "run-report.json").read_text())
    rss = report["peak_rss_mib"]
    assert json.loads(res.stdout)["run"]["peak_rss_mib"] == rss
    # a process running numpy + numba + pyarrow is well over 50 MiB: the figures are real, not zeros
    assert 50 < rss["worker"] < 1024 and 50 < rss["parent"] < 1024, rss
    assert json.loads((out / "manifest.json").read_text())["rows"] > 100_000
