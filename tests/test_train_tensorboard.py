"""``gotk train`` writes TensorBoard event files beside ``metrics.jsonl``, readable by TensorBoard's own reader
and holding the same numbers; without the ``tensorboard`` package it says so in one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import TINY, invoke, sample_dataset


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return sample_dataset(tmp_path_factory)


def test_event_files_hold_the_metrics(dataset: Path, tmp_path: Path) -> None:
    pytest.importorskip("tensorboard", reason="the tensorboard package (gotk[test] installs it)")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = tmp_path / "tb"
    res = invoke(["train", "--data", str(dataset), "--out", str(run), *TINY, "--head", "both", "--max-steps", "12",
                  "--log-every", "4", "--max-val-positions", "200"])
    assert res.exit_code == 0, res.output
    assert list(run.glob("events.out.tfevents.*"))
    acc = EventAccumulator(str(run))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    for tag in ("train/loss", "train/policy_loss", "train/top1", "train/top5", "train/value_mse", "train/lr",
                "train/samples_per_s", "val/top1", "val/top5", "val/value_mse", "val/komi_handicap_mse"):
        assert tag in tags, (tag, tags)
    recs = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in recs if r["kind"] == "step"]
    assert [e.step for e in acc.Scalars("train/loss")] == [r["step"] for r in steps] == [4, 8, 12]
    for key in ("loss", "top1", "value_mse", "lr"):
        assert [e.value for e in acc.Scalars(f"train/{key}")] == pytest.approx([r[key] for r in steps], abs=1e-5)
    epoch = [r for r in recs if r["kind"] == "epoch"][-1]
    (val,) = acc.Scalars("val/value_mse")
    assert val.step == 12 and val.value == pytest.approx(epoch["val_value_mse"], abs=1e-5)


def test_without_the_package_one_line_says_so(dataset: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # what an install without it gives
    res = invoke(["train", "--data", str(dataset), "--out", str(tmp_path / "a"), *TINY, "--max-steps", "2",
                  "--max-val-positions", "64", "--tensorboard"])
    assert res.exit_code == 2 and "pip install 'gotk[tensorboard]'" in res.output
    assert not (tmp_path / "a").exists()
    res = invoke(["train", "--data", str(dataset), "--out", str(tmp_path / "b"), *TINY, "--max-steps", "2",
                  "--max-val-positions", "64"])
    assert res.exit_code == 0, res.output
    assert res.output.count("note: no TensorBoard event files") == 1
    assert not list((tmp_path / "b").glob("events.out.tfevents.*"))
    res = invoke(["train", "--data", str(dataset), "--out", str(tmp_path / "c"), *TINY, "--max-steps", "2",
                  "--max-val-positions", "64", "--no-tensorboard"])
    assert res.exit_code == 0 and "TensorBoard" not in res.output
