"""``gotk train --max-minutes`` and the refusals that keep a run from producing a silently useless model."""

from __future__ import annotations

import json
import re
import time
import zipfile
from pathlib import Path

import pytest
from conftest import archive_slice
from helpers import TINY, invoke, sample_dataset


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return sample_dataset(tmp_path_factory)


def _encode(src: Path, out: Path, split: str) -> Path:
    res = invoke(["encode", str(src), "--encoder", "sevenplane", "--out", str(out), "--split", split,
                  "--workers", "1", "--no-progress"])
    assert res.exit_code == 0, res.output
    return out


def test_budget_ends_the_run_cleanly(dataset: Path, tmp_path: Path) -> None:
    run = tmp_path / "b"
    t0 = time.monotonic()
    res = invoke(["train", "--data", str(dataset), "--out", str(run), *TINY, "--epochs", "1000",
                  "--max-minutes", "0.05", "--log-every", "1", "--max-val-positions", "200"])
    wall = time.monotonic() - t0
    assert res.exit_code == 0, res.output
    assert (run / "agent.gotk").is_file()
    recs = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in recs if r["kind"] == "step"]
    epochs = [r for r in recs if r["kind"] == "epoch"]
    # stopped by the budget long before 1000 epochs: one partial epoch, validated
    assert len(epochs) == 1 and epochs[0].get("partial") and "val_top1" in epochs[0]
    assert 1 <= len(steps) and epochs[0]["epoch"] == 0
    # the schedule spans the budget: the learning rate decays as the budget is used
    assert steps[-1]["lr"] < steps[0]["lr"]
    # 3 s of training plus start-up and validation: far from the thousand epochs asked for
    assert wall < 120
    cfg = json.loads((run / "config.json").read_text())["config"]
    assert cfg["max_minutes"] == 0.05


@pytest.mark.parametrize("value", ["0", "-1", "nan"])
def test_budget_must_be_positive(dataset: Path, tmp_path: Path, value: str) -> None:
    res = invoke(["train", "--data", str(dataset), "--out", str(tmp_path / "r"), *TINY, "--max-minutes", value])
    assert res.exit_code == 2 and "--max-minutes must be a positive number" in res.output
    assert not (tmp_path / "r").exists()


def test_no_val_split_warns_and_patience_is_refused(sample_archive: Path, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    data = _encode(archive_slice(sample_archive, src, 30), tmp_path / "noval", "train=1.0")
    res = invoke(["train", "--data", str(data), "--out", str(tmp_path / "r"), *TINY, "--max-steps", "2",
                  "--patience", "1"])
    assert res.exit_code == 2 and "--patience needs a 'val' split" in res.output
    res = invoke(["train", "--data", str(data), "--out", str(tmp_path / "r2"), *TINY, "--max-steps", "2"])
    assert res.exit_code == 0, res.output
    assert "has no 'val' split: no validation" in res.output
    assert (tmp_path / "r2" / "agent.gotk").is_file()


def test_value_head_needs_results(sample_archive: Path, tmp_path: Path) -> None:
    """Games whose records carry no result cannot train a value head: a clear refusal, not a model that
    learns from all-zero targets."""
    src = tmp_path / "src"
    src.mkdir()
    sl = archive_slice(sample_archive, src, 30)
    stripped = src / "noresult.zip"
    with zipfile.ZipFile(sl) as zin, zipfile.ZipFile(stripped, "w") as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, re.sub(rb"RE\[[^\]]*\]", b"", zin.read(info)))
    sl.unlink()
    data = _encode(stripped, tmp_path / "nores", "train=0.9,val=0.1")
    res = invoke(["train", "--data", str(data), "--out", str(tmp_path / "r"), *TINY, "--head", "both",
                  "--max-steps", "2"])
    assert res.exit_code == 2 and "the value head needs game results" in res.output
    res = invoke(["train", "--data", str(data), "--out", str(tmp_path / "r2"), *TINY, "--max-steps", "2"])
    assert res.exit_code == 0, res.output  # the policy head alone is fine


def _records(run: Path, kind: str) -> list[dict]:
    return [r for r in (json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()) if r["kind"] == kind]


def test_a_budget_without_epochs_is_the_limit(dataset: Path, tmp_path: Path) -> None:
    """One position per game makes an epoch 7 steps: a 6-second budget runs many epochs, not the default one."""
    run = tmp_path / "m"
    res = invoke(["train", "--data", str(dataset), "--out", str(run), *TINY, "--positions-per-game", "1",
                  "--max-minutes", "0.1", "--max-val-positions", "64"])
    assert res.exit_code == 0, res.output
    assert "ended by the --max-minutes budget" in res.output
    epochs = _records(run, "epoch")
    assert len(epochs) >= 2 and epochs[-1]["step"] > 7
    run = tmp_path / "s"
    res = invoke(["train", "--data", str(dataset), "--out", str(run), *TINY, "--positions-per-game", "1",
                  "--max-steps", "10", "--max-val-positions", "64"])
    assert res.exit_code == 0, res.output
    assert "steps 10; epochs 1;" in res.output and "ended by --max-steps 10" in res.output
    run = tmp_path / "e"
    res = invoke(["train", "--data", str(dataset), "--out", str(run), *TINY, "--positions-per-game", "1",
                  "--max-val-positions", "64"])
    assert res.exit_code == 0, res.output
    assert "steps 7; epochs 1;" in res.output and "ended after --epochs 1" in res.output


def test_validation_fits_inside_the_budget(dataset: Path, tmp_path: Path) -> None:
    """A network whose full validation takes several seconds on one thread, and a 3-second budget: validation
    is cut to its share of the budget (and says how long it took), the whole run stays near the budget."""
    run = tmp_path / "v"
    args = [a for a in TINY if a not in ("16",)]
    args[args.index("--filters") + 1:args.index("--filters") + 1] = ["48"]
    t0 = time.monotonic()
    res = invoke(["train", "--data", str(dataset), "--out", str(run), *args, "--max-minutes", "0.05"])
    wall = time.monotonic() - t0
    assert res.exit_code == 0, res.output
    val_rows = json.loads((dataset / "manifest.json").read_text())["splits"]["val"]["rows"]
    epoch = _records(run, "epoch")[-1]
    assert 0 < epoch["val_positions"] < val_rows
    assert epoch["val_seconds"] < 0.1 * 3 + 2.0  # its share, plus the batch that was running
    seconds = float(re.search(r"; ([0-9.]+)s;", res.output).group(1))
    assert seconds < 3 + 8, res.output  # start-up of the loader, the agent and the curves on a busy host
    assert wall < 60
