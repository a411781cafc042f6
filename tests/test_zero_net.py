"""The ``zero`` model (KataGo-style, ownership and score outputs) and training it on self-play targets through the
public training API: soft policy targets weighted per row, ownership and score losses, continuing from an agent
file (``init_agent``), the CLI options, and two processes under torchrun."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from gotk.cli.main import app
from gotk.encoders import get_encoder
from gotk.nets.agent import load_agent
from gotk.nets.agent_file import read_agent_files, save_agent
from gotk.nets.networks import MODELS, ZeroBlock, ZeroNet, build_model
from gotk.shards import format as S
from gotk.shards.assemble import assemble_dataset
from gotk.train.config import TrainConfig
from gotk.train.trainer import Trainer, train

SIZE = 5
TINY = {"blocks": 3, "filters": 16}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_zero_outputs_and_neutral_start() -> None:
    torch.manual_seed(0)
    for size in (9, 19, 5):
        model = build_model("zero", 7, size, **TINY).eval()
        assert isinstance(model, ZeroNet) and model.head == "both" and model.has_aux
        x = (torch.rand(3, 7, size, size) < 0.3).to(torch.uint8)
        with torch.no_grad():
            p, v = model(x)
            p2, v2, own, score = model.forward_aux(x)
            _, _, logits, _ = model(x, aux="logits")
        assert p.shape == (3, size * size + 1) and v.shape == (3,)
        assert own.shape == (3, size, size) and score.shape == (3,)
        assert torch.equal(p, p2) and torch.equal(v, v2)
        assert torch.allclose(torch.tanh(logits), own)
        # every output layer starts at zero: uniform policy, value 0, score 0, ownership 0
        assert torch.count_nonzero(p) == 0 and torch.count_nonzero(v) == 0
        assert torch.count_nonzero(own) == 0 and torch.count_nonzero(score) == 0
    # a global-pooling bias in every third block
    model = build_model("zero", 7, 9, blocks=6, filters=16)
    assert [b.gpool is not None for b in model.blocks if isinstance(b, ZeroBlock)] == [False, False, True] * 2
    assert MODELS["zero"].hparams == {"blocks": 6, "filters": 64}
    assert not build_model("resnet", 7, 9, filters=8, blocks=1).has_aux
    policy_only = build_model("zero", 7, 9, head="policy", **TINY)
    assert not policy_only.has_aux and policy_only.forward_aux(torch.zeros(1, 7, 9, 9))[2] is None


def test_zero_agent_file_round_trip(tmp_path: Path) -> None:
    enc = get_encoder("sevenplane", 9)
    torch.manual_seed(1)
    model = build_model("zero", enc.num_planes, 9, **TINY)
    for prm in model.parameters():  # non-zero outputs, so the comparison means something
        prm.data.normal_(0, 0.1)
    model.eval()
    path = save_agent(tmp_path / "agent.gotk", model, "zero", TINY, enc.describe())
    agent = load_agent(path)
    assert agent.model.has_aux and agent.has_policy and agent.has_value
    x = (torch.rand(2, enc.num_planes, 9, 9) < 0.3).to(torch.uint8)
    with torch.no_grad():
        want = model.forward_aux(x)
        got = agent.model.forward_aux(x)
    for a, b in zip(want, got, strict=True):
        assert torch.equal(a, b)
    from gotk.game.state import GameState

    probs = agent.policy(GameState(9))
    assert probs.shape == (82,) and abs(probs.sum() - 1) < 1e-9


# --- training on self-play targets ----------------------------------------------------------------------


def _synthetic_game(rng: np.random.Generator, gid: str, n: int) -> dict:
    """Positions whose targets are functions of the planes (so a network can learn them): the policy spread over
    the points of plane 0 (pass when there is none), ownership +1 on plane 0, -1 on plane 1 elsewhere, the score
    their sum, a quarter of the rows without a search policy (weight 0)."""
    planes = (rng.random((n, 7, SIZE, SIZE)) < 0.3).astype(np.uint8)
    own = np.where(planes[:, 0] == 1, 1, np.where(planes[:, 1] == 1, -1, 0)).astype(np.int8)
    policy = np.zeros((n, SIZE * SIZE + 1), np.float32)
    policy[:, :-1] = planes[:, 0].reshape(n, -1)
    policy[policy.sum(1) == 0, -1] = 1.0
    policy /= policy.sum(1, keepdims=True)
    score = own.reshape(n, -1).sum(1).astype(np.float32) + 0.5
    label = np.array([rng.choice(SIZE * SIZE + 1, p=pr / pr.sum()) for pr in policy.astype(np.float64)], np.int16)
    return {"game_id": gid, "planes": planes, "label": label, "value": np.where(score > 0, 1, -1).astype(np.int8),
            "targets": {"policy": policy, "root_value": np.tanh(score / 5).astype(np.float32), "ownership": own,
                        "score": score, "weight": (rng.random(n) < 0.75).astype(np.float32)}}


@pytest.fixture(scope="module")
def target_dataset(tmp_path_factory) -> Path:
    """A self-play-like dataset (5x5, sevenplane planes): a generation folder of real target shards and the
    dataset folder assembled over it."""
    root = tmp_path_factory.mktemp("zero-data")
    rng = np.random.default_rng(0)
    desc = get_encoder("sevenplane", SIZE).describe()
    schema = S.shard_schema(desc, targets=True)
    splits: dict[str, list[str]] = {}
    games = []
    for split, count in (("train", 30), ("val", 6)):
        # row groups of 100 rows: under torchrun both ranks get some (a rank reads whole row groups)
        w = S.ShardWriter(root / "gen-0001" / split / "part-00000.parquet", schema, row_group_rows=100)
        for _ in range(count):
            gid = bytes(rng.integers(0, 256, 16, dtype=np.uint8)).hex()
            n = 20
            g = _synthetic_game(rng, gid, n)
            w.write(S.rows_table(schema, [gid] * n, np.arange(n), np.where(np.arange(n) % 2, -1, 1),
                                 S.pack_features(g["planes"], "bit"), g["label"], g["value"], g["targets"]))
            games.append({"game_id": gid, "winner": "b", "result": "B+0.5", "komi": 0.5, "num_moves": n})
        w.close()
        splits[split] = [f"../gen-0001/{split}/part-00000.parquet"]
    assemble_dataset(root / "data", desc, splits, games, {"board_size": SIZE}, {"name": "test"})
    return root / "data"


def _steps(run: Path) -> list[dict]:
    return [r for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines()) if r["kind"] == "step"]


def _cfg(data: Path, out: Path, **over) -> TrainConfig:
    kw = dict(model="zero", hparams=TINY, max_steps=100, epochs=100, batch_size=32, threads=1, device="cpu",
              log_every=10, checkpoint_every=10**6, progress=False, positions_per_game=10**6, tensorboard=False)
    kw.update(over)
    return TrainConfig(data=str(data), out=str(out), **kw)


@pytest.fixture(scope="module")
def zero_run(target_dataset: Path, tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("zero-run") / "run"
    train(_cfg(target_dataset, run))
    return run


def test_zero_learns_the_targets(zero_run: Path) -> None:
    steps = _steps(zero_run)
    assert [r["step"] for r in steps] == list(range(10, 101, 10))
    for r in steps:
        for k in ("loss", "policy_loss", "top1", "value_mse", "policy_soft_ce", "ownership_loss", "score_loss"):
            assert np.isfinite(r[k]), (k, r)
    first, last = steps[0], steps[-1]
    assert last["policy_soft_ce"] < first["policy_soft_ce"] - 0.5, [r["policy_soft_ce"] for r in steps]
    assert last["ownership_loss"] < 0.85 * first["ownership_loss"], [r["ownership_loss"] for r in steps]
    assert last["score_loss"] < 0.8 * first["score_loss"], [r["score_loss"] for r in steps]
    assert last["loss"] < first["loss"]
    epochs = [r for r in map(json.loads, (zero_run / "metrics.jsonl").read_text().splitlines()) if r["kind"] == "epoch"]
    assert epochs and all(np.isfinite(epochs[-1][f"val_{k}"]) for k in ("policy_soft_ce", "ownership_loss",
                                                                          "score_loss", "top1", "value_mse"))
    assert epochs[-1]["val_ownership_loss"] < epochs[0]["val_ownership_loss"]
    # the defaults: KataGo's weights for this board size, the model's own optimizer
    conf = json.loads((zero_run / "config.json").read_text())["config"]
    assert conf["optimizer"] == "adam" and conf["lr"] == 3e-3
    assert conf["ownership_weight"] is None and conf["score_weight"] is None
    agent = load_agent(zero_run / "agent.gotk")
    assert agent.meta["model"]["name"] == "zero" and agent.model.has_aux
    # the trained ownership output has learned the rule: +1 on plane 0, -1 on plane 1
    rng = np.random.default_rng(5)
    g = _synthetic_game(rng, "x", 64)
    with torch.no_grad():
        _, _, own, score = agent.model.forward_aux(torch.from_numpy(g["planes"]))
    target = torch.from_numpy(g["targets"]["ownership"]).float()
    assert (own.sign() == target.sign())[target != 0].float().mean() > 0.75  # chance: 0.5


def test_policy_weight_zero_rows_add_no_policy_loss(target_dataset: Path, tmp_path: Path) -> None:
    """The soft cross-entropy against the search's policy, averaged with the rows' weights: a row of weight 0
    changes nothing, whatever its policy."""
    tr = Trainer(_cfg(target_dataset, tmp_path / "r", max_steps=1))
    tr.net.eval()
    batch = next(iter(tr.train_ds))
    _, stats = tr._losses(batch)
    changed = dict(batch)
    pol = batch["policy"].clone()
    zero = batch["weight"] == 0
    assert zero.any() and (~zero).any()
    pol[zero] = torch.roll(pol[zero], 3, dims=1)
    changed["policy"] = pol
    _, stats2 = tr._losses(changed)
    assert torch.equal(stats[6:8], stats2[6:8])
    # and the logged value is the weighted mean of -sum(pi log p)
    with torch.no_grad():
        p, _ = tr.model(batch["features"])
        ce = -(batch["policy"] * torch.log_softmax(p.float(), 1)).sum(1)
    w = batch["weight"]
    assert float(stats[6] / stats[7]) == pytest.approx(float((w * ce).sum() / w.sum()), rel=1e-5)


def test_init_agent_continues_from_an_agent(zero_run: Path, target_dataset: Path, tmp_path: Path) -> None:
    agent_path = zero_run / "agent.gotk"
    _, tensors = read_agent_files(agent_path)
    tr = Trainer(_cfg(target_dataset, tmp_path / "next", init_agent=str(agent_path)))
    state = tr.model.state_dict()
    assert all(torch.equal(state[k].cpu(), v) for k, v in tensors.items())
    fresh = Trainer(_cfg(target_dataset, tmp_path / "fresh"))
    assert not torch.equal(fresh.model.state_dict()["policy_out.weight"], tensors["policy_out.weight"])
    with pytest.raises(ValueError, match="hparams"):
        Trainer(_cfg(target_dataset, tmp_path / "bad", init_agent=str(agent_path), hparams={"blocks": 2}))
    with pytest.raises(ValueError, match="model"):
        Trainer(_cfg(target_dataset, tmp_path / "bad2", model="resnet", hparams={"blocks": 1, "filters": 8},
                     init_agent=str(agent_path)))
    with pytest.raises(ValueError, match="init-agent"):
        Trainer(_cfg(target_dataset, tmp_path / "bad3", init_agent=str(tmp_path / "missing.gotk")))


def test_init_optimizer_continues_a_saved_optimizer(zero_run: Path, target_dataset: Path, tmp_path: Path) -> None:
    """A run started from an optimizer state file goes on with its state (Adam's step count, moments); one of
    another optimizer or a missing file is refused in one line."""
    from gotk.train.checkpoint import CHECKPOINT, load_checkpoint, save_optimizer_state

    st = load_checkpoint(zero_run / CHECKPOINT)
    path = tmp_path / "optimizer.pt"
    save_optimizer_state(path, "adam", st["optimizer"])
    tr = Trainer(_cfg(target_dataset, tmp_path / "next", init_agent=str(zero_run / "agent.gotk"),
                      init_optimizer=str(path)))
    state = tr.optimizer.state_dict()["state"]
    assert {int(s["step"]) for s in state.values()} == {100}
    assert all(torch.equal(state[k]["exp_avg_sq"], st["optimizer"]["state"][k]["exp_avg_sq"]) for k in state)
    with pytest.raises(ValueError, match="optimizer 'adam', this run's is 'sgd'"):
        Trainer(_cfg(target_dataset, tmp_path / "sgd", optimizer="sgd", init_optimizer=str(path)))
    with pytest.raises(ValueError, match="no such optimizer state file"):
        Trainer(_cfg(target_dataset, tmp_path / "none", init_optimizer=str(tmp_path / "missing.pt")))


def test_cli_options_and_plain_data(zero_run: Path, target_dataset: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "cli"
    res = runner.invoke(app, ["train", "--data", str(target_dataset), "--out", str(out), "--model", "zero",
                              "--blocks", "3", "--filters", "16", "--batch-size", "32", "--max-steps", "3",
                              "--log-every", "1", "--threads", "1", "--device", "cpu", "--no-progress",
                              "--no-tensorboard", "--ownership-weight", "0.1", "--score-weight", "0.05",
                              "--positions-per-game", "1000", "--init-agent", str(zero_run / "agent.gotk")])
    assert res.exit_code == 0, res.output
    conf = json.loads((out / "config.json").read_text())["config"]
    assert conf["ownership_weight"] == 0.1 and conf["score_weight"] == 0.05
    assert conf["init_agent"] == str(zero_run / "agent.gotk")
    assert all("ownership_loss" in r for r in _steps(out))
    res = runner.invoke(app, ["train", "--data", str(target_dataset), "--out", str(tmp_path / "bad"), "--model",
                              "zero", "--score-weight", "-1", "--no-progress", "--device", "cpu"])
    assert res.exit_code != 0 and "score-weight" in res.output


def test_zero_trains_on_plain_data(tmp_path_factory, tmp_path: Path) -> None:
    """Without target columns the zero model trains like any model (hard labels, outcomes)."""
    from helpers import sample_dataset

    data = sample_dataset(tmp_path_factory)
    run = tmp_path / "plain"
    train(TrainConfig(data=str(data), out=str(run), model="zero", hparams={"blocks": 1, "filters": 8}, max_steps=4,
                      batch_size=16, threads=1, device="cpu", log_every=2, progress=False, tensorboard=False,
                      max_val_positions=64))
    steps = _steps(run)
    assert steps and all("ownership_loss" not in r and "policy_soft_ce" not in r for r in steps)
    assert all(np.isfinite(r["policy_loss"]) for r in steps)


def test_two_processes_train_zero_on_targets(target_dataset: Path, tmp_path: Path) -> None:
    """Under torchrun (gloo, CPU) the target losses reduce over ranks like the other stats."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env["OMP_NUM_THREADS"] = "1"
    out = tmp_path / "ddp"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m", "gotk",
           "train", "--data", str(target_dataset), "--out", str(out), "--model", "zero", "--blocks", "2",
           "--filters", "8", "--batch-size", "32", "--max-steps", "6", "--log-every", "2", "--threads", "1",
           "--device", "cpu", "--no-progress", "--no-tensorboard", "--positions-per-game", "1000",
           "--max-val-positions", "64"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    steps = _steps(out)
    assert [r["step"] for r in steps] == [2, 4, 6]
    for r in steps:
        assert r["positions"] == 2 * 2 * 32  # two steps of two ranks' batches
        assert all(np.isfinite(r[k]) for k in ("policy_soft_ce", "ownership_loss", "score_loss"))
    assert load_agent(out / "agent.gotk").model.has_aux
