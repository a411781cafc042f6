"""``gotk train`` end to end on a real sample: run files, learning, exact resume, refusals."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import torch
from helpers import TINY, invoke, sample_dataset, trained_run


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return sample_dataset(tmp_path_factory)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return trained_run(tmp_path_factory)


def test_run_writes_everything(run_dir: Path, dataset: Path) -> None:
    cfg = json.loads((run_dir / "config.json").read_text())
    from gotk import __version__

    assert cfg["gotk_version"] == __version__
    assert cfg["data"]["manifest_sha256"] == hashlib.sha256((dataset / "manifest.json").read_bytes()).hexdigest()
    assert cfg["config"]["model"] == "resnet" and cfg["config"]["hparams"] == {"blocks": 2, "filters": 16}
    assert cfg["config"]["positions_per_game"] == 8  # the value head is trained: capped by default
    assert cfg["data"]["encoder"]["name"] == "sevenplane"
    recs = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in recs if r["kind"] == "step"]
    epochs = [r for r in recs if r["kind"] == "epoch"]
    assert len(epochs) == 4 and [r["epoch"] for r in epochs] == [1, 2, 3, 4]
    for key in ("loss", "top1", "top5", "value_mse", "samples_per_s", "lr"):
        assert key in steps[0], key
    for key in ("train_loss", "train_top1", "val_top1", "val_top5", "val_nll", "val_value_mse"):
        assert key in epochs[-1], key
    # about 8 positions per game per epoch: 437 train games
    assert 0.8 * 437 * 8 <= epochs[0]["train_positions"] <= 437 * 8
    assert steps[-1]["loss"] < steps[0]["loss"]
    assert (run_dir / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (run_dir / "checkpoint.pt").is_file()
    from gotk.nets import load_agent

    agent = load_agent(run_dir / "agent.gotk")
    assert agent.has_policy and agent.has_value
    # the shards carry the globals column and resnet takes it: on by default
    assert cfg["model"]["num_globals"] == 2 and agent.num_globals == 2
    assert agent.meta["data_manifest_sha256"] == cfg["data"]["manifest_sha256"]
    best = max(epochs, key=lambda r: r["val_top1"])
    assert agent.meta["metrics"]["val_top1"] == pytest.approx(best["val_top1"], abs=1e-6)


def test_trained_model_beats_frequency_baseline(run_dir: Path, dataset: Path) -> None:
    res = invoke(["eval", "--agent", str(run_dir / "agent.gotk"), "--data", str(dataset), "--split", "test",
                  "--json", "--device", "cpu", "--threads", "1"])
    assert res.exit_code == 0, res.output
    r = json.loads(res.stdout)
    assert r["positions"] > 5000
    freq = r["baselines"]["frequency"]["top1"]
    assert r["top1"] > 4 * freq, r  # a few hundred steps: well above always-the-commonest-move
    assert r["top1"] > r["baselines"]["random"]["top1"]
    assert r["top5"] > r["baselines"]["frequency"]["top5"]


def _weights(run: Path) -> dict[str, torch.Tensor]:
    return torch.load(run / "checkpoint.pt", map_location="cpu", weights_only=True)["model"]


def test_resume_is_exact(dataset: Path, tmp_path: Path) -> None:
    # one position per game (~437 rows, 7 batches an epoch): 20 steps cross two epoch boundaries and
    # the split at step 9 lands mid-epoch
    common = ["--data", str(dataset), *TINY, "--head", "both", "--positions-per-game", "1", "--epochs", "10",
              "--max-val-positions", "300", "--log-every", "4", "--checkpoint-every", "3"]
    straight, split = tmp_path / "straight", tmp_path / "split"
    assert invoke(["train", *common, "--out", str(straight), "--max-steps", "20"]).exit_code == 0
    res = invoke(["train", *common, "--out", str(split), "--max-steps", "9", "--schedule-steps", "20"])
    assert res.exit_code == 0, res.output
    res = invoke(["train", "--data", str(dataset), "--out", str(split), "--resume", "--max-steps", "20",
                  "--no-progress"])
    assert res.exit_code == 0, res.output
    a, b = _weights(straight), _weights(split)
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k
    sa = torch.load(straight / "checkpoint.pt", weights_only=True)
    sb = torch.load(split / "checkpoint.pt", weights_only=True)
    assert (sa["step"], sa["epoch"]) == (sb["step"], sb["epoch"]) == (20, 2)
    steps_a = [json.loads(x) for x in (straight / "metrics.jsonl").read_text().splitlines()]
    steps_b = [json.loads(x) for x in (split / "metrics.jsonl").read_text().splitlines()]
    strip = ("samples_per_s",)

    def core(recs):
        return [{k: v for k, v in r.items() if k not in strip} for r in recs if r["kind"] == "step"]

    assert core(steps_a) == core(steps_b)


def test_refusals(dataset: Path, run_dir: Path, tmp_path: Path) -> None:
    res = invoke(["train", "--data", str(dataset), "--out", str(run_dir), *TINY, "--max-steps", "1"])
    assert res.exit_code == 2 and "--resume" in res.output
    res = invoke(["train", "--data", str(tmp_path), "--out", str(tmp_path / "r"), *TINY])
    assert res.exit_code == 2 and "manifest.json" in res.output
    res = invoke(["train", "--data", str(dataset), "--out", str(tmp_path / "r"), "--model", "small",
                  "--filters", "8"])
    assert res.exit_code == 2 and "takes no --filters" in res.output
    res = invoke(["train", "--data", str(dataset), "--out", str(tmp_path / "r2"), "--optimizer", "rmsprop"])
    assert res.exit_code == 2 and "--optimizer" in res.output
    res = invoke(["train", "--data", str(dataset), "--out", str(tmp_path / "r3"), "--resume"])
    assert res.exit_code == 2 and "no checkpoint.pt" in res.output


def test_global_inputs_choices(dataset: Path, tmp_path: Path) -> None:
    from gotk.data import HELDOUT_ARCHIVE
    from gotk.nets import load_agent

    res = invoke(["train", "--data", str(dataset), "--out", str(tmp_path / "off"), *TINY, "--max-steps", "2",
                  "--no-globals"])
    assert res.exit_code == 0, res.output
    assert load_agent(tmp_path / "off" / "agent.gotk").num_globals == 0
    res = invoke(["train", "--data", str(dataset), "--out", str(tmp_path / "small"), "--model", "small",
                  "--max-steps", "2", "--threads", "1", "--no-progress", "--device", "cpu"])
    assert res.exit_code == 0, res.output  # a model that takes none trains on data with the column
    assert load_agent(tmp_path / "small" / "agent.gotk").num_globals == 0
    res = invoke(["train", "--data", str(dataset), "--out", str(tmp_path / "r"), "--model", "small", "--globals"])
    assert res.exit_code == 2 and "takes no global inputs" in res.output
    bare = tmp_path / "bare"
    res = invoke(["encode", str(HELDOUT_ARCHIVE), "--encoder", "sevenplane", "--out", str(bare), "--workers", "1",
                  "--split", "train=0.9,val=0.1", "--no-globals", "--no-progress"])
    assert res.exit_code == 0, res.output
    res = invoke(["train", "--data", str(bare), "--out", str(tmp_path / "b"), *TINY, "--globals"])
    assert res.exit_code == 2 and "no globals column" in res.output
    res = invoke(["train", "--data", str(bare), "--out", str(tmp_path / "b2"), *TINY, "--max-steps", "2"])
    assert res.exit_code == 0, res.output
    assert load_agent(tmp_path / "b2" / "agent.gotk").num_globals == 0


def test_value_only_model(dataset: Path, tmp_path: Path) -> None:
    run = tmp_path / "v"
    res = invoke(["train", "--data", str(dataset), "--out", str(run), "--model", "alphago_value", "--filters", "4",
                  "--batch-size", "32", "--max-steps", "6", "--positions-per-game", "1", "--threads", "1",
                  "--no-progress", "--device", "cpu", "--max-val-positions", "200", "--optimizer", "sgd",
                  "--schedule", "step", "--log-every", "3"])
    assert res.exit_code == 0, res.output
    from gotk.nets import load_agent

    agent = load_agent(run / "agent.gotk")
    assert agent.has_value and not agent.has_policy
    assert "val_value_mse" in agent.meta["metrics"] and "val_top1" not in agent.meta["metrics"]
    res = invoke(["eval", "--agent", str(run / "agent.gotk"), "--data", str(dataset), "--max-positions", "300",
                  "--json", "--device", "cpu"])
    assert res.exit_code == 0, res.output
    r = json.loads(res.stdout)
    assert "top1" not in r and 0 <= r["value_mse"] <= 4 and r["positions"] == 300


def test_early_stopping(dataset: Path, tmp_path: Path) -> None:
    # learning rate 0: the policy outputs stay at their zero initialisation, the validation score never improves
    run = tmp_path / "p"
    res = invoke(["train", "--data", str(dataset), "--out", str(run), "--model", "alphago", "--filters", "4",
                  "--lr", "0", "--patience", "1", "--epochs", "6", "--positions-per-game", "1", "--batch-size", "64",
                  "--threads", "1", "--no-progress", "--device", "cpu", "--max-val-positions", "200"])
    assert res.exit_code == 0, res.output
    epochs = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines() if '"epoch"' in x]
    epochs = [r for r in epochs if r["kind"] == "epoch"]
    assert [r["epoch"] for r in epochs] == [1, 2, 3]  # best at 1, then two epochs without improvement > patience 1
    assert len({r["val_top1"] for r in epochs}) == 1
