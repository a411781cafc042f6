"""``gotk`` command line: help, version, and ``gotk replay`` counts and exit codes."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from sgfmill import sgf
from typer.testing import CliRunner

from gotk import __version__
from gotk.cli.main import app

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


def sgfmill_counts(path) -> dict:
    """Games, main-line moves and passes of an archive, counted with tarfile + sgfmill only."""
    games = moves = passes = empty = 0
    with tarfile.open(path) as tf:
        for info in tf:
            if not (info.isfile() and info.name.lower().endswith(".sgf")):
                continue
            game = sgf.Sgf_game.from_bytes(tf.extractfile(info).read())
            games += 1
            n = 0
            for node in game.get_main_sequence():
                colour, move = node.get_move()
                if colour is not None:
                    n += 1
                    passes += move is None
            moves += n
            empty += n == 0
    return {"games": games, "moves": moves, "passes": passes, "empty": empty}


def test_help_and_version():
    r = run("--help")
    assert r.exit_code == 0 and "replay" in r.output
    r = run("--version")
    assert r.exit_code == 0 and r.output.strip() == f"gotk {__version__}"
    r = run("replay", "--help")
    assert r.exit_code == 0 and "--json" in r.output and "--strict" in r.output


def test_python_dash_m_gotk():
    out = subprocess.run([sys.executable, "-m", "gotk", "--version"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == f"gotk {__version__}"


def test_replay_json_matches_an_independent_count(sample_archive, tmp_path):
    # a small real archive: the first 80 games of the built-in sample, one of them with no moves
    small = tmp_path / "small.tar.gz"
    with tarfile.open(sample_archive) as src, tarfile.open(small, "w:gz") as dst:
        kept = 0
        for info in src:
            if info.isfile() and kept < 80:
                dst.addfile(info, src.extractfile(info))
                kept += 1
        empty = tarfile.TarInfo("empty-game.sgf")
        empty.size = len(b"(;GM[1]SZ[19]KM[6.5])")
        dst.addfile(empty, io.BytesIO(b"(;GM[1]SZ[19]KM[6.5])"))
    sample_archive = small
    expected = sgfmill_counts(sample_archive)
    assert expected["games"] == 81 and expected["empty"] >= 1
    r = run("replay", str(sample_archive), "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    for key in ("games_read", "games_replayed", "moves", "passes", "skipped", "seconds", "moves_per_second"):
        assert key in d
    assert d["games_read"] == expected["games"]
    assert d["games_replayed"] == expected["games"] - expected["empty"]  # empty games are too_short
    assert d["moves"] == expected["moves"]
    assert d["passes"] == expected["passes"]
    assert d["skipped"] == ({"too_short": expected["empty"]} if expected["empty"] else {})
    assert d["seconds"] > 0
    assert d["moves_per_second"] == pytest.approx(d["moves"] / d["seconds"], rel=0.01)
    # --min-moves 0 replays the empty games too
    d0 = json.loads(run("replay", str(sample_archive), "--json", "--min-moves", "0").output)
    assert d0["games_replayed"] == expected["games"] and d0["skipped"] == {}


def test_no_args_uses_the_built_in_sample():
    from gotk.data import sample_archives

    r = run("replay", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    games = 0
    for p in sample_archives():
        with tarfile.open(p) as tf:
            games += sum(1 for i in tf if i.isfile() and i.name.lower().endswith(".sgf"))
    assert d["games_read"] == games
    assert d["moves"] > 100 * games


def _folder(tmp_path, good: int, bad: bool):
    d = tmp_path / "games"
    d.mkdir(parents=True)
    for i in range(good):
        (d / f"g{i}.sgf").write_bytes(b"(;GM[1]SZ[9];B[ee];W[cc];B[gg];W[])")
    if bad:
        (d / "broken.sgf").write_bytes(b"(;GM[1]SZ[9];B[ee")
    return d


def test_exit_codes(tmp_path):
    clean = _folder(tmp_path / "a", 3, bad=False)
    mixed = _folder(tmp_path / "b", 2, bad=True)
    r = run("replay", str(clean), "--json", "--strict")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert (d["games_read"], d["games_replayed"], d["moves"], d["passes"]) == (3, 3, 12, 3)
    r = run("replay", str(mixed), "--json")
    assert r.exit_code == 0
    d = json.loads(r.output)
    assert (d["games_read"], d["games_replayed"], d["skipped"]) == (3, 2, {"parse_error": 1})
    assert run("replay", str(mixed), "--strict").exit_code == 2
    # nothing replayable at all
    junk = tmp_path / "junk.sgf"
    junk.write_bytes(b"(;GM[1]SZ[9];B[ee")  # SGF, but broken
    r = run("replay", str(junk), "--json")
    assert r.exit_code == 1
    assert json.loads(r.output)["skipped"] == {"parse_error": 1}
    r = run("replay", str(tmp_path / "does-not-exist"))
    assert r.exit_code == 1 and "missing" in r.output


def test_table_output(tmp_path):
    d = _folder(tmp_path, 1, bad=True)
    r = run("replay", str(d))
    assert r.exit_code == 0
    assert "games read" in r.output and "parse_error" in r.output


def test_a_file_that_is_not_sgf_is_one_line(tmp_path):
    """Text with no game tree in it is ``not_sgf`` (the documented reason), said in one line with exit code 2."""
    readme = Path(__file__).resolve().parents[1] / "README.md"
    r = run("replay", str(readme))
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [f"error: {readme} is not an SGF file (no game record in it)"]
    other = tmp_path / "notes.txt"
    other.write_text("no game here")
    r = run("replay", str(readme), str(other))
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and "none of the 2 inputs" in r.output
    # beside real games the file is one counted skip, with its reason
    good = _folder(tmp_path / "g", 1, bad=False)
    r = run("replay", str(good), str(other), "--json")
    assert r.exit_code == 0 and json.loads(r.output)["skipped"] == {"not_sgf": 1}
