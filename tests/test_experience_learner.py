"""What a learner from experience may and may not change (gotk.train with an experience objective): the heads its
objective does not train, the batch-norm statistics its start learnt, the probabilities of moves the player could
not choose; and the ratio π / μ it compares with the acting network is 1 while the network has not moved."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from gotk.nets.agent_file import read_agent_files
from gotk.train.config import TrainConfig
from gotk.train.losses import LossWeights, experience_losses
from gotk.train.trainer import Trainer

GOTK = [sys.executable, "-m", "gotk"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    r = subprocess.run([*GOTK, *args], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def start(tmp_path_factory) -> Path:
    """A small 9x9 network with both heads, its batch-norm statistics away from their initial 0 / 1 (as a trained
    network's are), and the policy games it played, recorded as experience without exploration (T = 1, no clip,
    no random moves: each move's probability at play time is the network's)."""
    from gotk.nets import save_agent
    from gotk.nets.agent import load_agent
    from gotk.selfplay.run import new_agent

    folder = tmp_path_factory.mktemp("learner")
    new_agent(folder / "fresh.gotk", 9, "resnet", "simple", 1, blocks=1, filters=8)
    agent = load_agent(folder / "fresh.gotk")
    torch.manual_seed(3)
    with torch.no_grad():
        for name, buf in agent.model.named_buffers():
            if name.endswith("running_mean"):
                buf.normal_(0, 0.2)
            elif name.endswith("running_var"):
                buf.uniform_(0.5, 2.0)
        for w in agent.model.parameters():
            w.normal_(0, 0.3)  # outputs far from uniform, so that a symmetry or a mode changes them
    save_agent(folder / "start.gotk", agent.model, "resnet", {"blocks": 1, "filters": 8}, agent.encoder.describe())
    _cli("selfplay", "--agent", str(folder / "start.gotk"), "--size", "9", "--games", "6", "--chunk-games", "6",
         "--experience", "--clip", "0", "--random-moves", "0", "--temperature", "1", "--max-moves", "60",
         "--out", str(folder / "exp"), "--seed", "5", "--json")
    return folder


def _config(start: Path, out: Path, objective: str, **kw) -> TrainConfig:
    meta, _ = read_agent_files(start / "start.gotk")
    kw = {"batch_size": 64, "max_steps": 3, "lr": 1e-2, "optimizer": "adam", **kw}
    return TrainConfig(data=str(start / "exp"), out=str(out), model="resnet", head="both",
                       hparams=meta["model"]["hparams"], init_agent=str(start / "start.gotk"), objective=objective,
                       val_split="", progress=False,
                       tensorboard=False, checkpoint_every=10 ** 9, globals=False, **kw)


def _weights(path: Path) -> dict[str, torch.Tensor]:
    return {k: v.float() for k, v in read_agent_files(path)[1].items()}


@pytest.fixture(scope="module")
def trained(start, tmp_path_factory) -> dict[str, dict[str, torch.Tensor]]:
    """The network after three policy-gradient steps and after three actor-critic steps (a large rate, so that
    what moves moves visibly)."""
    from gotk.train.trainer import train

    out = {}
    for objective in ("policy-gradient", "actor-critic"):
        run = tmp_path_factory.mktemp(objective)
        train(_config(start, run, objective))
        out[objective] = _weights(run / "agent.gotk")
    return out


def test_a_policy_gradient_step_leaves_the_value_head_as_it_was(start, trained) -> None:
    before, after = _weights(start / "start.gotk"), trained["policy-gradient"]
    value = [k for k in before if k.startswith("value_head.") and not k.endswith("num_batches_tracked")]
    assert value and all(torch.equal(before[k], after[k]) for k in value), \
        [k for k in value if not torch.equal(before[k], after[k])]
    moved = [k for k in before if k.startswith(("policy_conv.", "stem.0.")) and not torch.equal(before[k], after[k])]
    assert moved  # the trunk and the policy learnt
    # actor-critic trains the value head: it moves
    assert any(not torch.equal(before[k], trained["actor-critic"][k]) for k in value if k.endswith("weight"))


def test_an_experience_step_keeps_the_batch_norm_statistics(start, trained) -> None:
    before = _weights(start / "start.gotk")
    for after in trained.values():
        stats = [k for k in before if k.endswith(("running_mean", "running_var"))]
        assert stats and all(torch.equal(before[k], after[k]) for k in stats), \
            [k for k in stats if not torch.equal(before[k], after[k])]


def test_a_negative_advantage_raises_no_probability_off_the_player_s_choices() -> None:
    torch.manual_seed(0)
    n, moves = 6, 26
    logits = torch.randn(n, moves, requires_grad=True)
    choices = torch.zeros(n, moves, dtype=torch.bool)
    choices[:, :10] = True  # the sensible moves; the rest occupied points, own eyes, pass
    action = torch.arange(n)
    batch = {"return": -torch.ones(n), "play_value": torch.zeros(n), "play_prob": torch.full((n,), 0.1),
             "choices": choices}
    for clip in (0.0, 0.2):
        for objective in ("policy-gradient", "actor-critic"):
            weights = LossWeights.default(5, aux=False, objective=objective, ratio_clip=clip)
            value = torch.zeros(n, 1, requires_grad=True)
            loss, _, _ = experience_losses(logits, value, action, batch, weights)
            (grad,) = torch.autograd.grad(loss, logits)
            # a descent step raises a logit where the gradient is negative: none off the choices moves at all
            assert torch.equal(grad[~choices], torch.zeros_like(grad[~choices])), (objective, clip)
            lowered = grad[torch.arange(n), action]
            # the lost moves are lowered (under the clip, those already below (1 - ε) μ no further: there only
            # actor-critic's entropy bonus acts, a little)
            assert (lowered > 0).all() if clip == 0 else (lowered > 0).any() and (lowered > -1e-3).all()


def test_the_ratio_is_one_for_an_unchanged_network(start, tmp_path) -> None:
    """With the ratio clip on, a row's term is −min(ρ A, clip(ρ) A): −A exactly where ρ = 1. The first step's
    loss, taken before the step changes anything, is then −mean(return) (baseline none) over its rows, each row
    seen by the learner under the symmetry, mode and choice of moves the acting network had."""
    trainer = Trainer(_config(start, tmp_path / "ratio", "policy-gradient", ratio_clip=0.2, batch_size=256))
    batch = next(iter(trainer.train_ds))
    n = batch["label"].shape[0]
    assert n > 100 and "choices" in batch
    stats = trainer.train_step(batch)
    want = -float(batch["return"].float().mean())
    assert float(stats[6]) == pytest.approx(want, abs=1e-4)
    # and row by row: the learner's π(a | s) over the choices is the recorded μ
    from gotk.train.objectives import masked_log_softmax

    trainer2 = Trainer(_config(start, tmp_path / "ratio2", "policy-gradient"))
    trainer2.net.train()
    from gotk.train.setup import freeze_batch_norm

    freeze_batch_norm(trainer2.model)
    with torch.no_grad():
        p, _ = trainer2.net(batch["features"])
        logp = masked_log_softmax(p, batch["choices"]).gather(1, batch["label"].long()[:, None]).squeeze(1)
    assert np.allclose(logp.exp().numpy(), batch["play_prob"].numpy(), rtol=1e-4, atol=1e-6)


def test_train_from_an_agent_takes_its_network(start, tmp_path) -> None:
    """`gotk train --init-agent A` builds A's model, head and size unless told otherwise: an actor-critic run from
    a network with both heads needs no --model, --head or --blocks."""
    out = tmp_path / "ac"
    _cli("train", "--data", str(start / "exp"), "--out", str(out), "--objective", "actor-critic", "--init-agent",
         str(start / "start.gotk"), "--max-steps", "1", "--batch-size", "32", "--no-progress", "--no-tensorboard")
    meta, _ = read_agent_files(out / "agent.gotk")
    assert meta["model"]["head"] == "both" and meta["model"]["hparams"] == {"blocks": 1, "filters": 8}


def _sure_agent(value: float):
    """A 5x5 network with both heads whose value head says ``value`` (the mover's view) in every position."""
    from gotk.encoders import get_encoder
    from gotk.nets.agent import Agent
    from gotk.nets.networks import build_model

    torch.manual_seed(4)
    enc = get_encoder("simple", 5)
    net = build_model("resnet", enc.num_planes, 5, head="both", blocks=1, filters=8)
    with torch.no_grad():
        net.value_head[-1].weight.zero_()
        net.value_head[-1].bias.fill_(float(np.arctanh(value)))
    return Agent(net.eval(), enc, {"model": {"name": "resnet"}})


def test_policy_games_end_by_resignation_as_a_player_s_games_do() -> None:
    from gotk.selfplay.config import SelfPlayConfig
    from gotk.selfplay.games import SelfPlayBatch

    def play(agent, **kw):
        cfg = SelfPlayConfig.make(size=5, policy_only=True, experience=True, resign_threshold=-0.9,
                                  resign_moves=2, **kw)
        return SelfPlayBatch(agent, cfg, [(i, 3) for i in range(6)], seed=3).run()

    lost = play(_sure_agent(-0.99), resign_disabled=0.0)  # every mover sure it has lost
    assert len(lost) == 6
    for g in lost:
        assert g.resigned and g.result == "W+R"  # Black, first to move at the resignation move, resigns
        assert len(g.moves) <= 5 * 5 // 2 + 3 and len(g.label) == sum(1 for c in g.comments if c == "")
        assert g.choices.shape == (len(g.label), 26) and g.choices[np.arange(len(g.label)), g.label].all()
    # the share played out: no resignation, only what would have resigned is counted
    out = play(_sure_agent(-0.99), resign_disabled=1.0)
    assert len(out) == 6 and not any(g.resigned for g in out) and all(g.would_resign == 1 for g in out)
    assert min(len(g.moves) for g in out) > max(len(g.moves) for g in lost)
    # a network sure it wins plays on to the end
    won = play(_sure_agent(0.99), resign_disabled=0.0)
    assert not any(g.resigned for g in won) and all(g.winner in (1, 2) for g in won)


def test_the_kl_term_is_zero_at_the_anchor_and_kl_elsewhere() -> None:
    from gotk.train.objectives import kl_sum

    torch.manual_seed(0)
    a, b = torch.randn(5, 10), torch.randn(5, 10)
    assert float(kl_sum(a, a)) == pytest.approx(0.0, abs=1e-6)
    want = torch.nn.functional.kl_div(torch.log_softmax(b, 1), torch.log_softmax(a, 1), log_target=True,
                                      reduction="sum")
    assert float(kl_sum(a, b)) == pytest.approx(float(want), rel=1e-5) and float(want) > 0
    choices = torch.rand(5, 10) > 0.4
    choices[:, 0] = True
    masked = float(kl_sum(a, b, choices))
    pa = torch.log_softmax(a.masked_fill(~choices, float("-inf")), 1)
    pb = torch.log_softmax(b.masked_fill(~choices, float("-inf")), 1)
    by_hand = sum(float((pa[i].exp() * (pa[i] - pb[i]))[choices[i]].sum()) for i in range(5))
    assert masked == pytest.approx(by_hand, rel=1e-5) and np.isfinite(masked)


def test_an_anchor_holds_a_learner_near_its_start(start, tmp_path) -> None:
    """The same policy-gradient steps (a large rate) without and with KL(π ‖ π_start) in the loss: the anchored
    network's policy ends nearer the start's on the rows it learnt from."""
    from gotk.nets.agent import load_agent
    from gotk.train.objectives import kl_sum
    from gotk.train.trainer import train

    kls = {}
    for name, kw in (("free", {}), ("anchored", {"anchor": str(start / "start.gotk"), "anchor_weight": 20.0})):
        train(_config(start, tmp_path / name, "policy-gradient", lr=3e-2, max_steps=6, **kw))
        kls[name] = tmp_path / name / "agent.gotk"
    trainer = Trainer(_config(start, tmp_path / "probe", "policy-gradient"))
    batch = next(iter(trainer.train_ds))
    start_p = load_agent(start / "start.gotk").model.eval()
    with torch.no_grad():
        p0, _ = start_p(batch["features"].float())
        out = {}
        for name, path in kls.items():
            p, _ = load_agent(path).model.eval()(batch["features"].float())
            out[name] = float(kl_sum(p, p0)) / batch["label"].shape[0]
    assert out["free"] > 0.002 and out["anchored"] < 0.5 * out["free"], out
    with pytest.raises(ValueError, match="--anchor-weight"):
        _config(start, tmp_path / "bad", "policy-gradient", anchor_weight=1.0).resolved()


def test_the_anchor_s_weight_follows_the_kl_target() -> None:
    from gotk.zero.learner import KL_WEIGHT_RANGE, LearnerSettings

    s = LearnerSettings(reuse=1, batch_size=16, steps=2, window_rows=100, min_rows=10, lr=None, optimizer=None,
                        warmup=0, aux_targets=False, threads=1, device="cpu", seed=0, kl_target=0.1)
    assert s.next_kl_weight(0.4, 0.2) == 0.8 and s.next_kl_weight(0.4, 0.05) == 0.2
    assert s.next_kl_weight(0.4, 0.1) == 0.4 and s.next_kl_weight(0.4, None) == 0.4
    assert s.next_kl_weight(KL_WEIGHT_RANGE[1], 9.0) == KL_WEIGHT_RANGE[1]
    assert s.next_kl_weight(KL_WEIGHT_RANGE[0], 0.0) == KL_WEIGHT_RANGE[0]


def test_a_step_over_several_batches_sums_their_gradients(start, tmp_path) -> None:
    """With ``accumulate`` 2 the first batch moves no weight and the second takes one step with the mean of the two
    batches' gradients: the same weights as one step on the two batches joined (batch norm frozen: an experience
    step, so the batch's make-up changes no statistic; plain SGD, whose step is the gradient itself)."""
    trainer = Trainer(_config(start, tmp_path / "acc", "policy-gradient", accumulate=2, batch_size=32,
                              clip_grad_norm=1e9, optimizer="sgd", weight_decay=0.0))
    it = iter(trainer.train_ds)
    b1, b2 = next(it), next(it)
    w0 = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}
    trainer.train_step(b1)
    assert trainer.step == 0 and trainer.micro == 1
    assert all(torch.equal(w0[k], v) for k, v in trainer.model.state_dict().items())
    trainer.train_step(b2)
    assert trainer.step == 1 and trainer.micro == 0
    acc = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}
    one = Trainer(_config(start, tmp_path / "one", "policy-gradient", batch_size=64, clip_grad_norm=1e9,
                          optimizer="sgd", weight_decay=0.0))
    joined = {k: torch.cat([b1[k], b2[k]]) for k in b1 if isinstance(b1[k], torch.Tensor) and b1[k].dim() > 0
              and b1[k].shape[0] == b1["label"].shape[0]}
    one.train_step(joined)
    moved = [k for k in acc if not torch.equal(w0[k], acc[k])]
    assert moved
    for k in moved:  # the two batches are equal halves: the mean of their means is the joined batch's mean
        assert torch.allclose(acc[k], one.model.state_dict()[k], atol=1e-6), k
