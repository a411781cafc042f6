"""``gotk show``: the position as the library reads it (gotk.shards.position), and the command's handling of
its output files and options (checked before anything is read or printed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import archive_slice
from typer.testing import CliRunner

from gotk.cli.main import app
from gotk.shards.position import MOVE_MARK, POINT_MARK, read_position

runner = CliRunner()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, sample_archive) -> Path:
    """The first 12 real games of the built-in archive, sevenplane, all in ``train``."""
    from gotk.jobs.encode import EncodeOptions, encode_dataset

    d = tmp_path_factory.mktemp("show")
    out = d / "ds"
    encode_dataset([archive_slice(sample_archive, d, 12)], out, EncodeOptions(encoder="sevenplane", split="train=1"),
                   workers=1, progress=False)
    return out


def _show(dataset: Path, *args: str):
    return runner.invoke(app, ["show", str(dataset), "--row", "30", *args])


def test_the_library_position_is_what_show_prints(dataset):
    pos = read_position(dataset, "train", 30)
    assert pos.encoder["name"] == "sevenplane" and pos.planes.shape == (7, 19, 19)
    assert pos.point(None) == pos.label and pos.point("D4") == 15 * 19 + 3
    marks = pos.marks(pos.point("D4"))
    assert marks[pos.label] == MOVE_MARK and marks[15 * 19 + 3] == POINT_MARK
    assert pos.marks(pos.label) == {pos.label: MOVE_MARK}  # the point asked about is the move: one mark
    stones = pos.stones()
    assert stones is not None and int(np.count_nonzero(stones)) > 10
    res = _show(dataset, "--point", "D4")
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines() == "\n".join(pos.lines(15 * 19 + 3)).splitlines()
    assert res.stdout.splitlines()[-1].startswith("planes set at D4: ")
    with pytest.raises(ValueError):
        pos.point("Z99")
    with pytest.raises(ValueError, match="row 999999 outside"):
        read_position(dataset, "train", 999_999)


@pytest.mark.parametrize("flag", ["--svg", "--png"])
def test_an_output_file_in_a_missing_folder_is_refused_before_any_work(dataset, tmp_path, flag):
    target = tmp_path / "missing_dir" / ("x" + flag.replace("--", "."))
    res = _show(dataset, flag, str(target))
    assert res.exit_code == 2, res.output
    assert res.stdout == ""  # no board printed before the error
    assert res.stderr.strip() == f"error: {flag} {target}: no folder {target.parent}"
    assert not target.parent.exists()
    # a folder given as the file: refused the same way
    res = _show(dataset, flag, str(tmp_path))
    assert res.exit_code == 2 and res.stdout == "" and "is a folder" in res.stderr


def test_the_real_command_fails_in_one_line_without_a_traceback(dataset, tmp_path):
    r = subprocess.run([sys.executable, "-m", "gotk", "show", str(dataset), "--svg",
                        str(tmp_path / "missing_dir" / "x.svg")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("error: --svg ") and "Traceback" not in r.stderr


def test_a_bad_plane_is_refused_before_the_board_is_printed(dataset, tmp_path):
    svg = tmp_path / "b.svg"
    res = _show(dataset, "--svg", str(svg), "--plane", "nope")
    assert res.exit_code == 2
    assert res.stdout == "" and "no plane 'nope'" in res.stderr and len(res.stderr.splitlines()) == 1
    assert not svg.exists()
    # --plane without a picture to overlay it on is refused too, not silently dropped
    res = _show(dataset, "--plane", "ko")
    assert res.exit_code == 2 and res.stdout == "" and "--plane" in res.stderr


def test_show_prints_the_files_it_wrote(dataset, tmp_path):
    svg, png = tmp_path / "b.svg", tmp_path / "b.png"
    res = _show(dataset, "--svg", str(svg), "--png", str(png), "--plane", "ko")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[-2:] == [f"wrote {svg}", f"wrote {png}"]
    assert svg.read_text().startswith("<svg") and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    res = _show(dataset, "--svg", str(svg))
    assert res.exit_code == 0 and res.stdout.splitlines()[-1] == f"wrote {svg}" and res.stdout.count("wrote ") == 1
