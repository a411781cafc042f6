"""``gotk demo`` end to end on the built-in sample (short settings), through the real CLI."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import zipfile

import pyarrow.parquet as pq


def _demo(out, *extra):
    return subprocess.run([sys.executable, "-m", "gotk", "demo", "--out", str(out), "--minutes", "0.1",
                           "--eval-positions", "2000", "--games", "1", "--threads", "1", *extra],
                          capture_output=True, text=True, timeout=900)


def test_demo_runs_every_stage(tmp_path):
    out = tmp_path / "demo"
    res = _demo(out)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    report = json.loads((out / "demo-report.json").read_text())
    commands = [s["command"].split()[1] for s in report["steps"]]
    assert commands == ["download", "encode", "inspect", "train", "eval", "match", "match"]
    # the last match: the shipped agent, searching, against the demo's own agent
    assert report["steps"][-1]["command"].split()[1:5] == ["match", "--agent", "kgs", "--visits"]
    kgs_games = list((out / "games-kgs").glob("*.sgf"))
    assert len(kgs_games) == 1 and b"RE[" in kgs_games[0].read_bytes()
    assert all(s["exit_code"] == 0 for s in report["steps"])
    # the download went through the mirror and produced verified archives plus its index
    index = json.loads((out / "data" / "kgs" / "index.json").read_text())
    from gotk.data import sample_archives

    expected = {a.name: hashlib.sha256(a.read_bytes()).hexdigest() for a in sample_archives()}
    assert {name: f["sha256"] for name, f in index["files"].items()} == expected
    for name, digest in expected.items():
        assert hashlib.sha256((out / "data" / "kgs" / name).read_bytes()).hexdigest() == digest
    # held-out month went wholly to test; train/val come from the other month
    manifest = json.loads((out / "dataset" / "manifest.json").read_text())
    games = pq.read_table(out / "dataset" / "games.parquet").to_pandas()
    assert set(games[games.split == "test"].archive.str[:11]) == {"KGS-2017_02"}
    assert "KGS-2017_02" not in set(games[games.split != "test"].archive.str[:11])
    assert manifest["encoder"]["name"] == "sevenplane"
    with zipfile.ZipFile(out / "run" / "agent.gotk") as z:
        assert {"agent.json", "weights.safetensors"} <= set(z.namelist())
    sgfs = list((out / "games").glob("*.sgf"))
    assert len(sgfs) == 1 and b"RE[" in sgfs[0].read_bytes()
    assert "gotk gtp --agent" in res.stdout


def test_demo_refuses_foreign_folder(tmp_path):
    (tmp_path / "precious.txt").write_text("keep me")
    res = _demo(tmp_path)
    assert res.returncode == 2
    assert (tmp_path / "precious.txt").read_text() == "keep me"
