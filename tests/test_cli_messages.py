"""What the command line prints: every command's ``--help`` in plain words (no typer type annotations, no
reStructuredText markup), the files ``gotk stats --plots`` wrote, and one clear line for a missing folder."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from gotk.cli.main import app

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()
COMMANDS = sorted(typer.main.get_command(app).commands)
PLACEHOLDER = re.compile(r"<(bool|int|float|str|path|Path|list\[[^\]]*\])>")


def test_every_command_is_listed() -> None:
    assert {"train", "eval", "gtp", "match", "serve", "stats", "export", "replay", "show"} <= set(COMMANDS)


@pytest.mark.parametrize("command", [[]] + [[c] for c in COMMANDS], ids=lambda c: " ".join(c) or "gotk")
def test_help_has_no_type_placeholders_or_double_backticks(command: list[str]) -> None:
    res = runner.invoke(app, [*command, "--help"], terminal_width=100)
    assert res.exit_code == 0, res.output
    assert not PLACEHOLDER.search(res.output), PLACEHOLDER.search(res.output).group(0)
    assert "``" not in res.output
    assert "--help" in res.output


BRACKETED = re.compile(r"\[[^\]\[]+\]")


def _words(text: str) -> str:
    """The help's words in order, without the box drawing and line breaks of the rich layout."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


@pytest.mark.parametrize("command", COMMANDS)
def test_help_keeps_every_bracketed_default(command: str) -> None:
    """Options give defaults as ``[...]`` in their help; rich would read ``[cores / workers]`` as a style tag
    and drop it, so every one must reach the printed help."""
    click_cmd = typer.main.get_command(app).commands[command]
    wanted = [b for p in click_cmd.params for b in BRACKETED.findall(getattr(p, "help", None) or "")]
    shown = _words(runner.invoke(app, [command, "--help"], terminal_width=100).output)
    for b in wanted:
        assert _words(b.replace("``", "`")) in shown, (command, b)


def test_help_shows_value_names_and_nothing_after_flags() -> None:
    out = runner.invoke(app, ["replay", "--help"], terminal_width=120).output
    line = {ln.split()[1]: ln for ln in out.splitlines() if ln.startswith("│ --")}
    assert "INTEGER" in line["--min-moves"] and "TEXT" in line["--where"] and "PATH" in line["--bots"]
    assert line["--json"].split()[2] == "Print"  # a flag: its help follows at once
    assert "PATH..." in out  # the paths argument takes several


def test_stats_prints_the_plots_it_wrote(sample_archive: Path, tmp_path: Path) -> None:
    plots = tmp_path / "plots"
    res = runner.invoke(app, ["stats", str(sample_archive), "--plots", str(plots)])
    assert res.exit_code == 0, res.output
    written = sorted(plots.glob("*.png"))
    assert written
    listed = res.output.split("plots (", 1)[1].splitlines()[1:]
    assert sorted(Path(x.strip()) for x in listed if x.strip()) == written


def test_serve_names_a_missing_folder(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such"
    proc = subprocess.run([sys.executable, "-m", "gotk", "serve", str(missing), "--port", "0"], capture_output=True,
                          text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"error: no such folder: {missing}"]


def test_resume_mismatch_says_which_option_differs(sample_archive: Path, tmp_path: Path) -> None:
    from conftest import archive_slice

    src = archive_slice(sample_archive, tmp_path, 20)
    out = tmp_path / "ds"
    common = ["encode", str(src), "-e", "sevenplane", "-o", str(out), "--workers", "1", "--no-progress"]
    assert runner.invoke(app, [*common, "--split", "train=0.9,val=0.1"]).exit_code == 0
    res = runner.invoke(app, [*common, "--split", "train=0.8,val=0.2", "--resume"])
    assert res.exit_code == 2 and "resume_mismatch" in res.output
    assert "options.split" in res.output and "in the run" in res.output and " now" in res.output
    assert "0.9" in res.output and "0.8" in res.output


def test_record_differences() -> None:
    from gotk.runfolder import record_differences

    old = {"options": {"seed": 3, "split": "a"}, "sources": [{"path": "x"}, {"path": "y"}]}
    assert record_differences(old, old) == []
    assert record_differences(old, {**old, "options": {"seed": 4, "split": "a"}}) == [
        "options.seed is 3 in the run, 4 now"]
    assert record_differences(old, {**old, "sources": [{"path": "x"}]}) == ["sources: 2 entries in the run, 1 now"]
    assert record_differences(old, {**old, "sources": [{"path": "x"}, {"path": "z"}]}) == [
        "sources[1].path is 'y' in the run, 'z' now"]
    assert record_differences({"options": {}}, {"options": {"min_rank": "1d"}}) == [
        "options.min_rank is '1d' now, not set in the run"]
