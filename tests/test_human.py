"""Metadata-conditioned networks (KataGo's human-SL inputs): the model's encoder, ``gotk train --metadata``, the
agent file's ``metadata`` record, ``gotk eval --by rank --as-rank`` and playing as a profile."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import archive_slice
from helpers import invoke

from gotk.encoders import metadata_inputs as MI
from gotk.game.state import GameState
from gotk.nets.agent import load_agent
from gotk.nets.networks import build_model
from gotk.play.players import PolicyPlayer

TINY = ["--model", "resnet", "--blocks", "2", "--filters", "16", "--batch-size", "64", "--optimizer", "adam",
        "--lr", "3e-3", "--threads", "1", "--no-progress", "--device", "cpu"]


@pytest.mark.parametrize("name", ["resnet", "zero"])
def test_untrained_encoder_changes_nothing_and_refusals(name: str) -> None:
    torch.manual_seed(0)
    plain = build_model(name, 7, 9, head="both", blocks=2, filters=16).eval()
    torch.manual_seed(0)
    cond = build_model(name, 7, 9, head="both", blocks=2, filters=16, num_metadata=192,
                       metadata_channels=8).eval()
    x = torch.rand(3, 7, 9, 9)
    rows = torch.from_numpy(np.stack([MI.fill_row(MI.profile(p), 1, 81) for p in ("rank_20k", "rank_9d", "rank_1k")]))
    for a, b in zip(plain(x), cond(x, meta=rows), strict=True):
        assert torch.equal(a, b)  # the output layer starts at zero, built after the rest
    with pytest.raises(ValueError, match="conditioned"):
        cond(x)
    with pytest.raises(ValueError, match="takes no metadata"):
        plain(x, meta=rows)
    with pytest.raises(ValueError, match=r"\(3, 192\)"):
        cond(x, meta=rows[:2])
    with torch.no_grad():  # a non-zero encoder conditions the output on the row
        cond.meta_in.out.weight.normal_()
    bias = cond.meta_in(rows)
    assert bias.shape == (3, 16) and not torch.allclose(bias, cond.meta_in(rows.flip(0)))


def test_small_models_refuse_metadata() -> None:
    with pytest.raises(ValueError, match="takes no metadata"):
        build_model("small", 7, 9, num_metadata=192)
    with pytest.raises(ValueError, match="takes no metadata"):
        build_model("small", 7, 9)(torch.rand(1, 7, 9, 9), meta=torch.zeros(1, 192))


def test_with_mover_rank_is_the_profile_of_that_rank() -> None:
    row = MI.fill_row(MI.profile("rank_20k_1d"), 1, 361)
    assert np.array_equal(MI.with_mover_rank(row, MI.rank_label_inverse("9d")),
                          MI.fill_row(MI.profile("rank_9d_1d"), 1, 361))
    assert np.array_equal(MI.with_mover_rank(row, MI.rank_label_inverse("3k")),
                          MI.fill_row(MI.profile("rank_3k_1d"), 1, 361))


@pytest.fixture(scope="module")
def human_run(tmp_path_factory, sample_archive) -> tuple[Path, Path]:
    """A tiny resnet trained 60 steps with --metadata on 150 real KGS games encoded with --metadata."""
    base = tmp_path_factory.mktemp("human")
    src = archive_slice(sample_archive, base, 150)
    data, run = base / "ds", base / "run"
    res = invoke(["encode", str(src), "--encoder", "sevenplane", "--out", str(data), "--metadata",
                  "--split", "train=0.8,val=0.1,test=0.1", "--workers", "1", "--no-progress"])
    assert res.exit_code == 0, res.output
    res = invoke(["train", "--data", str(data), "--out", str(run), *TINY, "--head", "both", "--max-steps", "60",
                  "--metadata", "--metadata-channels", "32", "--max-val-positions", "500"])
    assert res.exit_code == 0, res.output
    return data, run / "agent.gotk", src


def test_train_records_metadata_and_refuses_data_without(human_run, tmp_path, sample_archive) -> None:
    _, agent_path, _ = human_run
    with zipfile.ZipFile(agent_path) as zf:
        meta = json.loads(zf.read("agent.json"))
    assert meta["metadata"] == {"size": 192, "layout": "katago-sgfmetadata-v1", "channels": 32}
    agent = load_agent(agent_path)
    assert agent.num_metadata == 192 and agent.model.meta_in.channels == 32
    assert agent.model.meta_in.out.weight.abs().sum() > 0  # trained away from its zero start
    plain = tmp_path / "plain"
    res = invoke(["encode", str(archive_slice(sample_archive, tmp_path, 20)), "--encoder", "sevenplane", "--out",
                  str(plain), "--workers", "1", "--no-progress"])
    assert res.exit_code == 0, res.output
    res = invoke(["train", "--data", str(plain), "--out", str(tmp_path / "r"), *TINY, "--max-steps", "1",
                  "--metadata"])
    assert res.exit_code == 2 and "no metadata column" in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_eval_by_rank_as_rank(human_run) -> None:
    data, agent_path, src = human_run
    res = invoke(["eval", "--agent", str(agent_path), "--data", str(data), "--by", "rank", "--as-rank", "20k",
                  "--json", "--device", "cpu", "--threads", "1", "--no-plot"])
    assert res.exit_code == 0, res.output
    r = json.loads(res.output)
    assert r["as_rank"]["rank"] == "20k" and r["as_rank"]["positions"] == r["positions"]
    assert set(r["as_rank"]["by_rank"]) == set(r["by_rank"])
    assert sum(b["positions"] for b in r["by_rank"].values()) == r["positions"]
    assert r["as_rank"]["nll"] != r["nll"]  # the rank reaches the network
    res = invoke(["eval", "--agent", str(agent_path), "--data", str(data), "--as-rank", "strong", "--device", "cpu"])
    assert res.exit_code == 2 and "not a rank" in res.output
    res = invoke(["eval", "--agent", str(agent_path), "--data", str(src), "--max-positions", "400", "--as-rank", "1d",
                  "--json", "--device", "cpu", "--threads", "1", "--no-plot"])  # SGF: the row from its headers
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["as_rank"]["positions"] == 400


def test_profiles_play(human_run) -> None:
    _, agent_path, _ = human_run
    agent = load_agent(agent_path)
    state = GameState.new(19)
    weak, strong = agent.policy(state, "rank_20k"), agent.policy(state, "rank_9d")
    assert not np.allclose(weak, strong)
    row = MI.fill_row(MI.profile("rank_9d"), state.to_play, 361)
    assert np.array_equal(agent.policy(state, row), strong)
    with pytest.raises(ValueError, match="conditioned"):
        agent.policy(state)
    def picks(seed: int) -> list[int]:
        player = PolicyPlayer(agent, temperature=1.0, seed=seed, profile="rank_20k")
        return [player.choose(state) for _ in range(12)]

    assert picks(3) == picks(3)
    assert len(set(picks(3))) > 1  # sampled, not the argmax


def test_gtp_plays_legal_moves_with_a_profile(human_run) -> None:
    import subprocess
    import sys

    _, agent_path, _ = human_run
    cmds = "name\nboardsize 19\n" + "genmove b\ngenmove w\n" * 4 + "quit\n"
    p = subprocess.run([sys.executable, "-m", "gotk", "gtp", "--agent", str(agent_path), "--profile", "rank_3d",
                        "--seed", "1", "--threads", "1"], input=cmds, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    answers = [line[2:] for line in p.stdout.splitlines() if line.startswith("= ") and line[2:].strip()]
    assert answers[0].endswith(" rank_3d")  # the profile is in the name: match reports and Elo tables tell them apart
    moves = answers[1:]
    assert len(moves) == 8 and len(set(moves)) == 8  # eight distinct points: every one legal on a fresh board
    p = subprocess.run([sys.executable, "-m", "gotk", "gtp", "--agent", str(agent_path)], input="genmove b\n",
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "give --profile" in p.stderr



def test_conditioned_run_starts_from_an_unconditioned_agent_and_records_what_it_learnt(human_run, tmp_path) -> None:
    """--metadata --init-agent PLAIN: the plain agent's weights, a fresh metadata encoder (zero output), so the
    conditioned network predicts as the plain one for every profile; agent.json ``trained_on`` counts the training
    positions by the mover's rank and by source, which the analysis engine's nearest profile reads."""
    import pyarrow.compute as pc

    from gotk.shards.manifest import read_games

    data, _, _ = human_run
    plain = tmp_path / "plain"
    res = invoke(["train", "--data", str(data), "--out", str(plain), *TINY, "--head", "both", "--max-steps", "2",
                  "--max-val-positions", "100"])
    assert res.exit_code == 0, res.output
    cond = tmp_path / "cond"
    res = invoke(["train", "--data", str(data), "--out", str(cond), *TINY, "--head", "both", "--max-steps", "1",
                  "--metadata", "--init-agent", str(plain / "agent.gotk"), "--max-val-positions", "100"])
    assert res.exit_code == 0, res.output
    from types import SimpleNamespace

    from gotk.nets.agent import Agent
    from gotk.train.setup import load_init_agent

    a = load_agent(plain / "agent.gotk")
    model = build_model("resnet", a.model.num_planes, 19, head="both", blocks=2, filters=16,
                        num_globals=a.num_globals, num_metadata=192, metadata_channels=64)
    cfg = SimpleNamespace(model="resnet", head="both", hparams=a.meta["model"]["hparams"])
    load_init_agent(model, str(plain / "agent.gotk"), cfg, a.meta["encoder"])
    fresh = Agent(model, a.encoder, a.meta)
    state = GameState.new(19)
    state.play(60)
    for name in ("rank_20k", "rank_9d", "proyear_1990"):
        assert np.allclose(fresh.policy(state, name), a.policy(state), atol=1e-6)
    trained = load_agent(cond / "agent.gotk").meta["trained_on"]
    games = read_games(data, None, ["positions", "split"])
    train_positions = pc.sum(games.filter(pc.equal(games["split"], "train"))["positions"]).as_py()
    assert trained["positions"] == train_positions and trained["sources"] == {"kgs": train_positions}
    assert abs(sum(trained["mover_inverse_rank"].values()) - train_positions) <= len(trained["mover_inverse_rank"])
    assert max(trained["mover_inverse_rank"], key=trained["mover_inverse_rank"].get) in {str(i) for i in range(1, 5)}
    # the other way round is refused: a conditioned agent cannot start a plain run
    res = invoke(["train", "--data", str(data), "--out", str(tmp_path / "x"), *TINY, "--head", "both",
                  "--max-steps", "1", "--init-agent", str(cond / "agent.gotk")])
    assert res.exit_code == 2 and "metadata" in res.output
