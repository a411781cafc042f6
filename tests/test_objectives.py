"""Learning from experience: each objective's gradient against a hand computation from its formula (plain ``math``
on the numbers below, not the code under test), the policy gradient moving a policy the right way, and the whole
path through the CLI: policy games recorded as experience by ``gotk selfplay --experience``, read back by the
loader, ``gotk inspect`` and ``gotk train --objective`` (each objective), and the refusals before any work."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from gotk.search.choice import behaviour
from gotk.train import objectives as O
from gotk.train.losses import LossWeights, batch_losses

GOTK = [sys.executable, "-m", "gotk"]
LOGITS = [[1.0, 0.0, -1.0], [0.5, 2.0, 0.0]]
ACTION = [0, 2]
RETURN = [1.0, -1.0]


def softmax(z: list[float]) -> list[float]:
    e = [math.exp(x) for x in z]
    return [x / sum(e) for x in e]


def _grad(fn) -> np.ndarray:
    z = torch.tensor(LOGITS, requires_grad=True)
    fn(z).backward()
    return z.grad.numpy()


@pytest.mark.parametrize("baseline", [None, "mean"])
def test_policy_gradient_by_hand(baseline) -> None:
    b = [0.0, 0.0] if baseline is None else [sum(RETURN) / 2] * 2
    want = np.zeros((2, 3))
    for i, z in enumerate(LOGITS):
        pi = softmax(z)
        for j in range(3):  # d/dz_j of -(R - b) log pi_a = -(R - b) (1[j = a] - pi_j)
            want[i, j] = -(RETURN[i] - b[i]) * ((j == ACTION[i]) - pi[j])
    base = None if baseline is None else torch.tensor(b)
    got = _grad(lambda z: O.policy_gradient_sum(z, torch.tensor(ACTION), torch.tensor(RETURN), base))
    assert np.allclose(got, want, atol=1e-6)
    value = -sum((RETURN[i] - b[i]) * math.log(softmax(LOGITS[i])[ACTION[i]]) for i in range(2))
    assert float(O.policy_gradient_sum(torch.tensor(LOGITS), torch.tensor(ACTION), torch.tensor(RETURN),
                                       base)) == pytest.approx(value, rel=1e-6)


def test_a_lost_move_is_not_pushed_below_the_floor() -> None:
    z = torch.tensor([[0.0, -30.0, 0.0]], requires_grad=True)  # log pi(1) = -30.7 < log 1e-7 = -16.1
    O.policy_gradient_sum(z, torch.tensor([1]), torch.tensor([-1.0])).backward()
    assert float(z.grad.abs().sum()) == 0.0  # the loss cannot fall further by lowering the move
    z = torch.tensor([[0.0, -30.0, 0.0]], requires_grad=True)
    O.policy_gradient_sum(z, torch.tensor([1]), torch.tensor([1.0])).backward()
    assert z.grad[0, 1] < 0  # a won game's improbable move is still raised (descent raises its logit)


def test_ratio_clip_by_hand() -> None:
    # PPO's clipped surrogate, eps 0.2: rows 0 and 3 inside (row 3: a lost move raised since play: the larger
    # penalty, unclipped), row 1 a lost move already below (1 - eps) mu and row 2 a won one above (1 + eps) mu: no
    # gradient from them
    logits = [LOGITS[0], LOGITS[1], LOGITS[0], LOGITS[1]]
    action, ret, mu = [0, 2, 1, 1], [1.0, -1.0, 1.0, -1.0], [0.6, 0.2, 0.1, 0.5]
    eps = 0.2
    want = np.zeros((4, 3))
    value = 0.0
    for i, z in enumerate(logits):
        pi = softmax(z)
        rho = pi[action[i]] / mu[i]
        plain, clipped = rho * ret[i], min(max(rho, 1 - eps), 1 + eps) * ret[i]
        value -= min(plain, clipped)
        if plain <= clipped:  # d/dz_j of -A rho = -A rho (1[j = a] - pi_j)
            for j in range(3):
                want[i, j] = -ret[i] * rho * ((j == action[i]) - pi[j])
    assert [bool(want[i].any()) for i in range(4)] == [True, False, False, True]
    z = torch.tensor(logits, requires_grad=True)
    loss = O.policy_gradient_sum(z, torch.tensor(action), torch.tensor(ret), play_prob=torch.tensor(mu),
                                 ratio_clip=eps)
    loss.backward()
    assert float(loss) == pytest.approx(value, abs=1e-6)
    assert np.allclose(z.grad.numpy(), want, atol=1e-6)
    with pytest.raises(ValueError, match="play_prob"):
        O.policy_gradient_sum(z, torch.tensor(action), torch.tensor(ret), ratio_clip=eps)


def test_actor_critic_by_hand() -> None:
    values = [0.25, -0.5]
    c, beta = 0.5, 0.1
    want_z = np.zeros((2, 3))
    want_v = np.zeros(2)
    for i, z in enumerate(LOGITS):
        pi = softmax(z)
        h = -sum(p * math.log(p) for p in pi)
        adv = RETURN[i] - values[i]  # a constant: no gradient through V into the policy term
        for j in range(3):
            # policy term -A log pi_a; entropy bonus -beta H with dH/dz_j = -pi_j (log pi_j + H)
            want_z[i, j] = -adv * ((j == ACTION[i]) - pi[j]) + beta * pi[j] * (math.log(pi[j]) + h)
        want_v[i] = 2 * c * (values[i] - RETURN[i])
    z = torch.tensor(LOGITS, requires_grad=True)
    v = torch.tensor(values, requires_grad=True)
    weights = LossWeights(value=c, ownership=0.0, score=0.0, board_size=1, objective="actor-critic", entropy=beta)
    batch = {"return": torch.tensor(RETURN), "play_value": torch.zeros(2)}
    loss, _, stats = batch_losses(z, v, None, None, torch.tensor(ACTION), batch, weights)
    loss.backward()
    assert np.allclose(z.grad.numpy(), want_z / 2, atol=1e-6)  # the loss is the mean over the two rows
    assert np.allclose(v.grad.numpy(), want_v / 2, atol=1e-6)
    assert float(stats[4]) == pytest.approx(sum((values[i] - RETURN[i]) ** 2 for i in range(2)), rel=1e-6)


def test_q_learning_by_hand() -> None:
    want = np.zeros((2, 3))
    for i, z in enumerate(LOGITS):
        q = math.tanh(z[ACTION[i]])  # d/dz_a (tanh z_a - R)^2 = 2 (q - R)(1 - q^2); the other moves: 0
        want[i, ACTION[i]] = 2 * (q - RETURN[i]) * (1 - q * q)
    got = _grad(lambda z: O.q_learning_sum(z, torch.tensor(ACTION), torch.tensor(RETURN)))
    assert np.allclose(got, want, atol=1e-6)


def test_policy_gradient_raises_won_moves_and_lowers_lost_ones() -> None:
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 3)
    x = torch.randn(2, 4)
    opt = torch.optim.SGD(net.parameters(), lr=0.5)
    before = torch.log_softmax(net(x), 1)[[0, 1], ACTION].detach()
    for _ in range(20):
        opt.zero_grad()
        O.policy_gradient_sum(net(x), torch.tensor(ACTION), torch.tensor(RETURN)).backward()
        opt.step()
    after = torch.log_softmax(net(x), 1)[[0, 1], ACTION].detach()
    assert after[0] > before[0] and after[1] < before[1]  # the won game's move up, the lost one's down


def test_experience_trains_at_the_book_s_rate_with_its_gradient_capped() -> None:
    from gotk.train.config import TrainConfig

    rl = TrainConfig(data="d", out="o", model="zero", objective="actor-critic").resolved()
    sup = TrainConfig(data="d", out="o", model="zero").resolved()
    assert (rl.lr, rl.clip_grad_norm, rl.positions_per_game) == (1e-4, 1.0, None)
    assert (sup.lr, sup.clip_grad_norm, sup.positions_per_game) == (3e-3, None, 8)
    given = TrainConfig(data="d", out="o", objective="q-learning", lr=0.01, clip_grad_norm=5.0).resolved()
    assert (given.lr, given.clip_grad_norm) == (0.01, 5.0)
    with pytest.raises(ValueError, match="--clip-grad-norm"):
        TrainConfig(data="d", out="o", clip_grad_norm=0.0).resolved()


def test_behaviour_clips_and_mixes() -> None:
    q = behaviour(np.array([1.0, 0.0, 0.0, 0.0]), clip=0.01)
    assert q.min() > 0 and q.sum() == pytest.approx(1.0)  # no move impossible after the clip
    u = behaviour(np.array([0.7, 0.3]), random_share=1.0)
    assert np.allclose(u, 0.5)
    t = behaviour(np.array([0.8, 0.2]), temperature=0.5)
    assert t[0] == pytest.approx(0.64 / 0.68)


def _agent(seed: int, head: str = "both"):
    from gotk.encoders import get_encoder
    from gotk.nets.agent import Agent
    from gotk.nets.networks import build_model

    torch.manual_seed(seed)
    enc = get_encoder("simple", 5)
    net = build_model("resnet", enc.num_planes, 5, head=head, blocks=1, filters=8)
    with torch.no_grad():
        for prm in net.parameters():
            prm.normal_(0, 0.3)  # distinctive outputs
    return Agent(net, enc, {"model": {"name": "resnet"}})


def test_experience_games_against_an_opponent_network() -> None:
    from gotk.game.state import GameState
    from gotk.selfplay.config import SelfPlayConfig
    from gotk.selfplay.games import SelfPlayBatch

    cfg = SelfPlayConfig.make(size=5, policy_only=True, experience=True, clip=1e-5, random_moves=0.05,
                              discount=0.9)
    me, other = _agent(1), _agent(2, head="policy")
    games = SelfPlayBatch(me, cfg, [(i, 7) for i in range(6)], seed=7, opponent=other).run()
    again = SelfPlayBatch(me, cfg, [(i, 7) for i in range(6)], seed=7, opponent=other).run()
    assert [g.moves for g in games] == [g.moves for g in again]  # a seed makes them again
    for g in games:
        learner = 1 if g.index % 2 == 0 else -1  # Black in the games of even index
        assert len(g.label) > 0 and set(g.to_play.tolist()) == {learner}
        # each row is the learner's move as the game record has it, from the position before it
        state = GameState(5)
        played = {}
        for colour, point in g.moves:
            played[state.move_number] = (colour, point)
            state.play(point, colour)
        for mn, label in zip(g.move_number.tolist(), g.label.tolist(), strict=True):
            assert played[mn] == (1 if learner == 1 else 2, label)
        assert ((g.play_prob > 0) & (g.play_prob <= 1)).all()
        # the return: the result from the mover's view, discounted by the moves after it
        black = 1 if g.winner == 1 else -1
        want = [learner * black * 0.9 ** (len(g.moves) - 1 - t) for t in g.move_number.tolist()]
        assert np.allclose(g.returns(0.9), want, rtol=1e-5)
        assert np.allclose(g.returns(), learner * black)


def _cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run([*GOTK, *args], capture_output=True, text=True, timeout=600)
    if check:
        assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def experience(tmp_path_factory) -> Path:
    from gotk.nets import save_agent

    folder = tmp_path_factory.mktemp("rl")
    net = _agent(5)
    save_agent(folder / "acting.gotk", net.model, "resnet", {"blocks": 1, "filters": 8}, net.encoder.describe())
    _cli("selfplay", "--agent", str(folder / "acting.gotk"), "--size", "5", "--games", "8", "--chunk-games", "4",
         "--experience", "--out", str(folder / "exp"), "--seed", "3", "--json")
    return folder / "exp"


def test_policy_games_recorded_as_experience(experience) -> None:
    from gotk.datasets.sampling import Sampling, iter_numpy_batches

    manifest = json.loads((experience / "manifest.json").read_text())
    assert manifest["experience"]["columns"] == ["return", "play_value", "play_prob", "opponent", "choices",
                                                 "symmetry"]
    from gotk.datasets.symmetry import apply_symmetries_
    from gotk.nets.agent import load_agent

    acting = load_agent(experience.parent / "acting.gotk")
    rows = 0
    for b in iter_numpy_batches(experience, "train", sampling=Sampling(batch_size=64, shuffle=False,
                                                                         symmetries="none")):
        n = len(b["label"])
        rows += n
        assert set(np.unique(b["return"])) <= {-1.0, 1.0}  # komi 7.5: no draws
        assert (b["return"] == b["value"]).all()  # undiscounted: the result from the mover's view
        assert ((b["play_prob"] > 0) & (b["play_prob"] <= 1)).all()
        # the value at play time: the acting network's value of the recorded position, under the one board symmetry
        # the self-play evaluation drew for it
        by_sym = []
        for sym in range(8):
            x = b["features"].copy()
            apply_symmetries_(x, np.full(n, sym))
            by_sym.append(acting.predict(x)[1].reshape(-1))
        assert (np.abs(np.stack(by_sym) - b["play_value"]).min(0) < 1e-4).all() and b["play_value"].std() > 0
    assert rows == manifest["rows"] and rows > 8 * 5  # every move of every game, not one a game
    import pyarrow.parquet as pq

    shard = next((experience / "chunks").glob("*.parquet"))
    assert set(pq.read_table(shard, columns=["opponent"]).column(0).to_pylist()) == {"self"}
    assert "experience return, play_value, play_prob, opponent, choices, symmetry" in _cli("inspect",
                                                                                          str(experience)).stdout
    assert "move" in _cli("show", str(experience), "--split", "train", "--row", "3").stdout.lower()


def test_alphago_s_value_recipe_is_experience_one_position_a_game(experience, tmp_path) -> None:
    from gotk.datasets.sampling import Sampling, iter_numpy_batches

    out = tmp_path / "value"
    _cli("selfplay", "--agent", str(experience.parent / "acting.gotk"), "--size", "5", "--games", "12",
         "--chunk-games", "6", "--policy-only", "--out", str(out), "--seed", "3", "--json")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["experience"]["columns"] == ["return", "play_value", "play_prob", "opponent", "choices",
                                                 "symmetry"]
    assert "weight" in manifest["targets"]  # and the value recipe's targets: policy weight 0
    rows = 0
    for b in iter_numpy_batches(out, "train", sampling=Sampling(batch_size=64, shuffle=False, symmetries="none")):
        rows += len(b["label"])
        assert (b["return"] == b["value"]).all() and set(np.unique(b["value"])) <= {-1.0, 1.0}
        assert ((b["play_prob"] > 0) & (b["play_prob"] <= 1)).all() and (b["weight"] == 0).all()
        assert (b["policy"][np.arange(len(b["label"])), b["label"]] == 1).all()  # the move then played
    assert rows == manifest["rows"] and 1 <= rows <= 12  # at most one position a game
    # a value network trains on it as before; a policy gradient can learn from the same rows
    for args in (["--head", "value"], ["--head", "policy", "--objective", "policy-gradient"]):
        _cli("train", "--data", str(out), "--out", str(tmp_path / args[1]), "--model", "resnet", "--blocks", "1",
             "--filters", "8", "--max-steps", "2", "--batch-size", "8", "--no-progress", "--no-tensorboard", *args)
        assert (tmp_path / args[1] / "agent.gotk").exists()


@pytest.mark.parametrize("objective,head", [("policy-gradient", "policy"), ("actor-critic", "both"),
                                            ("q-learning", "policy")])
def test_train_each_objective_on_experience(experience, tmp_path, objective, head) -> None:
    from gotk.nets.agent_file import read_agent_files

    out = tmp_path / objective
    _cli("train", "--data", str(experience), "--out", str(out), "--objective", objective, "--head", head,
         "--model", "resnet", "--blocks", "1", "--filters", "8", "--max-steps", "3", "--batch-size", "32",
         "--no-progress", "--no-tensorboard", "--baseline", "mean" if objective == "policy-gradient" else "none")
    meta, _ = read_agent_files(out / "agent.gotk")
    assert meta["objective"] == objective and meta["training"]["step"] == 3
    logged = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert any(r.get("kind") == "epoch" and math.isfinite(r["train_loss"]) for r in logged)
    if objective == "q-learning":  # the Q agent plays epsilon-greedy through GTP
        r = subprocess.run([*GOTK, "gtp", "--agent", str(out / "agent.gotk"), "--epsilon", "0.5", "--seed", "1"],
                           input="genmove b\ngenmove w\ngenmove b\nquit\n", capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr
        assert len([x for x in r.stdout.splitlines() if x.startswith("= ") and x[2:].strip()]) == 3
        for args, words in ((["--epsilon", "2"], "--epsilon must be in 0..1"),
                            (["--epsilon", "0.1", "--visits", "4"], "leave out --visits")):
            r = subprocess.run([*GOTK, "gtp", "--agent", str(out / "agent.gotk"), *args], input="quit\n",
                               capture_output=True, text=True, timeout=120)
            assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_objectives_refuse_what_they_cannot_learn_from(experience, tmp_path) -> None:
    sup = tmp_path / "sup"
    _cli("selfplay", "--init", "random", "--size", "5", "--games", "2", "--visits", "4", "--fast-visits", "2",
         "--out", str(sup), "--blocks", "1", "--filters", "8", "--seed", "1")
    for args, words in (([str(sup), "--objective", "policy-gradient"], "has no experience columns"),
                        ([str(experience), "--objective", "actor-critic", "--head", "policy"],
                         "needs a value head"),
                        ([str(experience), "--objective", "sarsa"], "--objective must be one of"),
                        ([str(experience), "--objective", "q-learning", "--patience", "2"], "--patience"),
                        ([str(experience), "--objective", "policy-gradient", "--ratio-clip", "-0.1"],
                         "--ratio-clip must be in [0, 1)")):
        r = _cli("train", "--data", *args, "--out", str(tmp_path / "x"), "--max-steps", "1", "--model", "resnet",
                 "--blocks", "1", "--filters", "8", "--no-progress", "--no-tensorboard", check=False)
        assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert not (tmp_path / "x" / "agent.gotk").exists()
    r = _cli("selfplay", "--init", "random", "--size", "5", "--games", "2", "--experience", "--clip", "0.7",
             "--out", str(tmp_path / "y"), check=False)
    assert r.returncode == 2 and "--clip must be in [0, 0.5)" in r.stderr and not (tmp_path / "y").exists()
