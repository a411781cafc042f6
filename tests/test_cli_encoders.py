"""``gotk encoders`` and ``gotk features`` through typer's test runner."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from gotk import coords
from gotk.cli.main import app
from gotk.encoders import get_encoder, list_encoders
from gotk.sgf.reader import read_sgf_file

runner = CliRunner()

# 9x9 with setup stones, six moves and a white pass
GAME = (b"(;GM[1]FF[4]SZ[9]KM[6.5]AB[dd][ce][de]AW[ed][ee][fe][df]"
        b";B[ef];W[gg];B[cf];W[cg];B[dg];W[tt];B[aa])")


@pytest.fixture
def sgf_file(tmp_path):
    path = tmp_path / "game.sgf"
    path.write_bytes(GAME)
    return path


def test_encoders_lists_every_encoder_with_its_planes():
    result = runner.invoke(app, ["encoders"])
    assert result.exit_code == 0, result.output
    for name in list_encoders():
        enc = get_encoder(name)
        assert f"{name}  {enc.num_planes} planes  dtype {enc.dtype}" in result.output
        for plane in enc.plane_names:
            assert plane in result.output


def test_encoders_json():
    result = runner.invoke(app, ["encoders", "--json"])
    assert result.exit_code == 0
    described = json.loads(result.output)
    assert [d["name"] for d in described] == list_encoders()
    assert all(d["num_planes"] == len(d["plane_names"]) for d in described)


def test_features_prints_one_board_per_plane(sgf_file):
    result = runner.invoke(app, ["features", str(sgf_file), "--encoder", "simple", "--move", "1"])
    assert result.exit_code == 0, result.output
    enc = get_encoder("simple", board_size=9)
    for k, name in enumerate(enc.plane_names):
        assert f"[{k}] {name}" in result.output
    assert "W to play" in result.output
    # white to move: the white_to_move plane is all ones (81 set), black_to_move empty
    assert "[9] white_to_move  (81 set)" in result.output
    assert "[8] black_to_move  (0 set)" in result.output


def test_features_marks_the_right_points(sgf_file):
    result = runner.invoke(app, ["features", str(sgf_file), "-e", "oneplane", "-m", "0"])
    assert result.exit_code == 0, result.output
    board_lines = result.output.split("[0]")[1].splitlines()[2:11]  # rows 9..1 of the plane diagram
    marked = {}
    for line in board_lines:
        number = int(line.split()[0])
        for col, ch in enumerate(line.split()[1:10]):
            if ch != ".":
                marked[coords.from_gtp(f"{coords.GTP_COLUMNS[col]}{number}", 9)] = ch
    rec = read_sgf_file(sgf_file)[0]
    assert {p for p, ch in marked.items() if ch == "1"} == set(rec.setup_black)  # black to move: own stones
    assert {p for p, ch in marked.items() if ch == "-"} == set(rec.setup_white)


def test_features_out_writes_every_position(sgf_file, tmp_path):
    out = tmp_path / "planes.npz"
    result = runner.invoke(app, ["features", str(sgf_file), "-e", "sevenplane", "--out", str(out), "--include-passes"])
    assert result.exit_code == 0, result.output
    data = np.load(out)
    rec = read_sgf_file(sgf_file)[0]
    game = get_encoder("sevenplane", board_size=9).encode_game(rec, include_passes=True)
    assert data["features"].shape == (rec.num_moves, 7, 9, 9)
    assert np.array_equal(data["features"], game.features)
    assert data["labels"].tolist() == rec.points.tolist()
    assert data["move_numbers"].tolist() == list(range(rec.num_moves))
    assert data["to_play"].tolist() == [1 if c == 1 else -1 for c in rec.colors.tolist()]
    no_passes = tmp_path / "no_passes.npz"
    assert runner.invoke(app, ["features", str(sgf_file), "--out", str(no_passes)]).exit_code == 0
    assert np.load(no_passes)["features"].shape[0] == rec.num_moves - 1


def test_features_errors(sgf_file, tmp_path):
    assert runner.invoke(app, ["features", str(sgf_file), "-e", "nope"]).exit_code == 1
    assert runner.invoke(app, ["features", str(sgf_file), "--move", "99"]).exit_code == 2
    assert runner.invoke(app, ["features", str(tmp_path / "missing.sgf")]).exit_code != 0
