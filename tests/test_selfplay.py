"""Self-play: the Gumbel rules against hand-computed values, real games on small boards checked move by move
against the engine and the encoder, and the run folder (dataset, SGF, resume, determinism, bad options)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from gotk.encoders import get_encoder
from gotk.game.state import GameState
from gotk.nets.agent import Agent, load_agent
from gotk.nets.networks import build_model
from gotk.search import gumbel as G
from gotk.search import tree as T
from gotk.selfplay.config import SelfPlayConfig, SelfPlayError
from gotk.selfplay.games import SelfPlayBatch
from gotk.sgf.reader import read_sgf


def _agent(size: int = 5, seed: int = 0, head: str = "both") -> Agent:
    torch.manual_seed(seed)
    enc = get_encoder("simple", size)
    net = build_model("resnet", enc.num_planes, size, head=head, blocks=1, filters=8)
    with torch.no_grad():
        for p in net.parameters():
            p.normal_(0, 0.3)  # distinctive outputs: a fresh network's are uniform
    return Agent(net, enc, {"model": {"name": "resnet"}})


def _tiny_tree() -> T.Tree:
    """A root with three children: priors 0.5/0.3/0.2, visits 2/1/0, value sums 0.6/−0.2 (root mover's view)."""
    t = T.Tree(16)
    t.expand(0, np.array([4, 7, 9], dtype=np.int32), np.array([0.5, 0.3, 0.2]), 0.1)
    t.N[1:4] = [2, 1, 0]
    t.W[1:4] = [0.6, -0.2, 0.0]
    t.N[0] = 4
    return t


def test_completed_q_and_improved_policy_by_hand():
    t = _tiny_tree()
    # unvisited child: v_mix = (v̂ + ΣN · Σ π q / Σ π) / (1 + ΣN) over the visited ones
    vmix = (0.1 + 3 * (0.5 * 0.3 + 0.3 * -0.2) / (0.5 + 0.3)) / (1 + 3)
    assert vmix == pytest.approx(0.109375)
    out = np.zeros(8)
    assert T.completed_q_of(t.arrays, 0, out) == 2
    assert out[:3] == pytest.approx([0.3, -0.2, vmix])
    # σ(q) = (c_visit + max N) · c_scale · (q + 1) / 2, π' = softmax(log π + σ)
    scale = (50 + 2) * 1.0
    logits = [math.log(p) + scale * (q + 1) / 2 for p, q in zip([0.5, 0.3, 0.2], [0.3, -0.2, vmix], strict=True)]
    z = sum(math.exp(x - max(logits)) for x in logits)
    want = [math.exp(x - max(logits)) / z for x in logits]
    got = G.improved_policy(t.arrays, 50.0, 1.0, np.zeros(8))
    assert got == pytest.approx(want, rel=1e-9)
    assert got[0] > 0.99  # the best Q dominates at c_scale 1
    # a smaller c_scale keeps more of the prior
    soft = G.improved_policy(t.arrays, 50.0, 0.02, np.zeros(8))
    assert soft[1] > got[1] and soft.sum() == pytest.approx(1.0)


def test_root_pick_follows_the_schedule_and_the_gumbel_scores():
    t = _tiny_tree()
    scratch = np.zeros(8)
    g = np.array([0.0, 0.0, 40.0])  # a large Gumbel draw makes the unvisited child the choice among N == 0
    assert G.root_pick(t.arrays, g, np.zeros(3), 50.0, 1.0, 0, scratch) == 3
    # among the children with one visit there is only child 2
    assert G.root_pick(t.arrays, g, np.zeros(3), 50.0, 1.0, 1, scratch) == 2
    # -1: the most visited (child 1, N = 2)
    assert G.root_pick(t.arrays, g, np.zeros(3), 50.0, 1.0, -1, scratch) == 1
    assert G.root_pick(t.arrays, g, np.zeros(3), 50.0, 1.0, 5, scratch) == -1


def test_sequential_halving_schedule():
    # m = 4, n = 8: log2 m = 2; 4 candidates once each (8 / (2·4) = 1 round), then 2 candidates twice each
    assert G.considered_visits(4, 8).tolist() == [0, 0, 0, 0, 1, 1, 2, 2]
    # m = 2, n = 5: one candidate pair, 5 / (1·2) = 2 rounds, then again
    assert G.considered_visits(2, 5).tolist() == [0, 0, 1, 1, 2]
    assert G.considered_visits(1, 3).tolist() == [0, 1, 2]
    seq = G.considered_visits(16, 32)
    assert seq.shape == (32,) and seq[:16].tolist() == [0] * 16


def test_gumbel_walk_follows_the_improved_policy_below_the_root():
    t = _tiny_tree()
    # expand child 1 (move 4) with two children of equal prior, one of them visited with a good value
    t.expand(1, np.array([0, 1], dtype=np.int32), np.array([0.5, 0.5]), -0.3)
    t.N[4], t.W[4] = 1, 0.9
    path = np.zeros(8, dtype=np.int64)
    code, length = T.walk(t.arrays, 1, T.GUMBEL, 1.0, 0.0, 50.0, 1.0, np.zeros(8), path)
    # π'(visited, q = 0.9) ≈ 1 → its score ≈ 1 − 1/2 beats the other's ≈ 0 − 0
    assert code == T.LEAF and path[:length].tolist() == [0, 1, 4]
    assert t.VL[[0, 1, 4]].tolist() == [1, 1, 1] and t.status[4] == T.PENDING  # the walk's virtual visits
    t.W2[4] = 0.81
    T.backup(t.arrays, path, length, 1.0)
    assert not t.VL[: t.size].any()
    assert (t.N[4], t.N[1], t.N[0]) == (2, 3, 5)
    assert (t.W[4], t.W[1], t.W[0]) == pytest.approx((1.9, -0.4, 1.0))
    assert (t.W2[4], t.W2[1], t.W2[0]) == pytest.approx((1.81, 1.0, 1.0))  # squares of the values added


@pytest.mark.parametrize("search", ["gumbel", "puct"])
def test_games_are_legal_and_their_rows_match_the_engine(search):
    size = 5
    agent = _agent(size)
    cfg = SelfPlayConfig.make(size=size, search=search, visits=8, fast_visits=2, full_fraction=0.5, komi=0.5,
                         resign_threshold=None)
    games = SelfPlayBatch(agent, cfg, [(i, 3) for i in range(6)], seed=3).run()
    assert [g.index for g in games] == list(range(6))
    enc = get_encoder("simple", size)
    for g in games:
        state = GameState(size, komi=0.5)
        row = 0
        for k, (color, point) in enumerate(g.moves):
            if row < len(g.label) and g.move_number[row] == k:
                assert g.to_play[row] == (1 if color == 1 else -1)
                assert g.label[row] == point
                assert np.array_equal(g.planes[row], enc.encode(state))
                pol = g.policy[row]
                assert pol.sum() == pytest.approx(1.0, abs=1e-5) and pol[point] > 0
                legal = np.zeros(size * size + 1, dtype=bool)
                legal[state.legal_moves()] = True
                assert not pol[~legal].any()
                assert g.weight[row] == 1.0 and -1 <= g.root_value[row] <= 1
                row += 1
            state.play(point, color)
        assert row == len(g.label)
        assert len(g.comments) == len(g.moves)
        over = state.passes >= 2 or len(g.moves) >= cfg.move_cap
        assert over
        assert g.score == pytest.approx(state.score_final())  # the count of the search's terminal values
        assert g.winner == (1 if g.score > 0 else 2)
        assert g.result == f"{'B' if g.winner == 1 else 'W'}+{abs(g.score):g}"
        assert g.ownership.sum() - g.komi == pytest.approx(g.score)


@pytest.mark.parametrize("policy_only", [False, True])
def test_agent_with_global_inputs_plays_and_its_chunk_carries_them(tmp_path, policy_only):
    import pyarrow.parquet as pq

    from gotk.encoders import global_inputs as GI
    from gotk.selfplay.run import write_chunk
    from gotk.shards.format import schema_globals
    from gotk.shards.globals_column import decode_globals

    size = 5
    torch.manual_seed(6)
    enc = get_encoder("relative", size)
    net = build_model("resnet", enc.num_planes, size, head="both", blocks=1, filters=8, num_globals=GI.size())
    with torch.no_grad():
        for p in net.parameters():
            p.normal_(0, 0.3)
    agent = Agent(net, enc, {"model": {"name": "resnet"}})
    cfg = SelfPlayConfig.make(size=size, visits=6, fast_visits=2, full_fraction=1.0, komi=2.5, resign_threshold=None,
                         policy_only=policy_only)
    games = SelfPlayBatch(agent, cfg, [(i, 4) for i in range(6 if policy_only else 3)], seed=4).run()
    rows = sum(len(g.label) for g in games)
    assert rows > 0
    path = tmp_path / "chunk.parquet"
    assert write_chunk(path, games, enc.describe()) == rows
    table = pq.read_table(path)
    assert schema_globals(table.schema) == GI.describe()
    glob = decode_globals(table)
    white = table.column("to_play").to_numpy() == -1
    # by hand: komi 2.5 is +0.125 for white to move, -0.125 for black
    assert np.array_equal(glob, np.stack([np.where(white, 0.125, -0.125), white], axis=1).astype(np.float32))


def test_same_seed_same_games_and_policy_only_mode():
    agent = _agent(5, seed=1)
    cfg = SelfPlayConfig.make(size=5, visits=6, fast_visits=2)
    a = SelfPlayBatch(agent, cfg, [(i, 9) for i in range(3)], seed=9).run()
    b = SelfPlayBatch(agent, cfg, [(i, 9) for i in range(3)], seed=9).run()
    assert [g.moves for g in a] == [g.moves for g in b]
    c = SelfPlayBatch(agent, cfg, [(i, 10) for i in range(3)], seed=10).run()
    assert [g.moves for g in a] != [g.moves for g in c]
    po = SelfPlayBatch(agent, SelfPlayConfig.make(size=5, policy_only=True), [(i, 1) for i in range(8)], seed=1).run()
    assert all(len(g.label) <= 1 for g in po) and sum(len(g.label) for g in po) >= 1
    for g in po:
        if len(g.label):
            assert g.weight[0] == 0.0 and g.policy[0][g.label[0]] == 1.0 and 0 < g.play_prob[0] <= 1
            assert g.comments[g.move_number[0] - 1] == "random"  # the position after the one random move


def test_resignation_and_false_resignation_bookkeeping():
    agent = _agent(5, seed=2)
    cfg = SelfPlayConfig.make(size=5, visits=4, fast_visits=2, resign_threshold=1.0, resign_moves=1,
                              resign_disabled=0.5)
    games = SelfPlayBatch(agent, cfg, [(i, 4) for i in range(12)], seed=4).run()
    enabled = [g for g in games if g.resign_enabled]
    disabled = [g for g in games if not g.resign_enabled]
    assert enabled and disabled
    for g in enabled:  # a threshold of 1.0 resigns at the first searched move from resign_min_move on
        assert g.resigned and g.result.endswith("+R") and g.comments[-1].endswith("resigns")
    for g in disabled:
        assert not g.resigned and g.would_resign in (1, 2)


def test_ownership_and_score_weigh_only_games_played_out(tmp_path):
    """Rows of a game that resigned or stopped at the move cap carry aux weight 0 in the written shard and add no
    ownership or score loss; rows of a game ended by two passes carry 1."""
    import pyarrow.parquet as pq

    from gotk.selfplay.run import game_id_of, write_chunk
    from gotk.shards import format as S
    from gotk.train.losses import LossWeights, aux_sums

    size, agent = 5, _agent(5, seed=2)
    plain = dict(size=size, visits=2, fast_visits=1, full_fraction=0.5, resign_threshold=None)
    resigned = SelfPlayBatch(agent, SelfPlayConfig.make(**{**plain, "resign_threshold": 1.0}, resign_moves=1,
                                                   resign_disabled=0.0, resign_min_move=4), [(0, 1), (1, 1)]).run()
    capped = SelfPlayBatch(agent, SelfPlayConfig.make(**plain, max_moves=7), [(2, 1), (3, 1)]).run()
    played = SelfPlayBatch(agent, SelfPlayConfig.make(**plain), [(i, 1) for i in range(4, 7)]).run()
    pas = size * size

    def two_passes(g) -> bool:
        return len(g.moves) >= 2 and g.moves[-1][1] == pas and g.moves[-2][1] == pas

    assert all(g.resigned and g.comments[-1].endswith("resigns") for g in resigned)
    assert all(len(g.moves) == 7 and not two_passes(g) and g.capped for g in capped)
    played = [g for g in played if two_passes(g)]
    assert played and not any(g.capped or g.resigned for g in played)
    games = resigned + capped + played
    shard = tmp_path / "chunk.parquet"
    write_chunk(shard, games, agent.encoder.describe())
    table = pq.read_table(shard)
    aux = S.decode_targets(table)["aux_weight"]
    ids = table.column("game_id").to_pylist()
    want = {game_id_of(g): 0.0 for g in resigned + capped} | {game_id_of(g): 1.0 for g in played}
    assert all(len(g.label) for g in games)
    assert sorted(set(ids)) == sorted(want)
    assert [float(a) for a in aux] == [want[i] for i in ids]
    # the zero rows add no ownership or score loss, whatever the predictions
    rows = np.flatnonzero(aux == 0)
    t = S.decode_targets(table.take(rows))
    batch = {k: torch.tensor(np.array(t[k])) for k in ("ownership", "score", "aux_weight")}
    own = torch.randn(len(rows), size, size)
    score = 30 * torch.randn(len(rows))
    weights = LossWeights(1.0, 1.0, 1.0, size)
    assert [float(x) for x in aux_sums(own, score, batch, weights)] == [0.0, 0.0]
    batch["aux_weight"] = torch.ones(len(rows))
    assert all(float(x) > 0 for x in aux_sums(own, score, batch, weights))


def test_bad_agents_get_one_line():
    with pytest.raises(SelfPlayError, match="plays 5x5, not 9x9"):
        SelfPlayBatch(_agent(5), SelfPlayConfig.make(size=9), [(0, 0)])
    with pytest.raises(SelfPlayError, match="value head"):
        SelfPlayBatch(_agent(5, head="policy"), SelfPlayConfig.make(size=5), [(0, 0)])
    with pytest.raises(SelfPlayError, match="--search"):
        SelfPlayConfig.make(search="mcts").validate()


def _cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "gotk", *args], capture_output=True, text=True, timeout=600)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def test_selfplay_cli_writes_a_dataset_sgf_and_resumes(tmp_path):
    out = tmp_path / "sp"
    args = ["selfplay", "--init", "random", "--size", "5", "--games", "6", "--chunk-games", "3", "--visits", "6",
            "--fast-visits", "2", "--out", str(out), "--blocks", "1", "--filters", "8", "--seed", "5", "--json"]
    first = json.loads(_cli(*args).stdout)
    assert first["games"] == 6 and first["chunks"] == 2 and first["positions"] > 0
    assert sorted(p.name for p in (out / "sgf").iterdir()) == [f"game-{i:07d}.sgf" for i in range(6)]
    rec = read_sgf((out / "sgf" / "game-0000003.sgf").read_bytes())[0]
    assert rec.size == 5 and len(rec.points) > 0
    # the dataset: the loader decodes it with the target columns, gotk show prints a row
    from gotk.datasets.sampling import Sampling, iter_numpy_batches

    batches = list(iter_numpy_batches(out, "train",
                                      sampling=Sampling(batch_size=1000, shuffle=False, symmetries="none")))
    assert sum(len(b["label"]) for b in batches) == first["positions"]
    b = batches[0]
    assert b["policy"].shape[1] == 26 and np.allclose(b["policy"].sum(1), 1.0, atol=1e-2)
    assert set(np.unique(b["ownership"])) <= {-1.0, 0.0, 1.0} and (b["weight"] == 1.0).all()
    assert "move" in _cli("show", str(out), "--split", "train", "--row", "0").stdout.lower()
    # a lost chunk (its done-record gone) is played again, identically; the other is kept
    shard = out / "chunks" / "chunk-00001.parquet"
    before = shard.read_bytes()
    (out / "chunks" / "chunk-00001.json").unlink()
    shard.unlink()
    again = json.loads(_cli(*args).stdout)
    assert again["chunks_reused"] == 1 and again["positions"] == first["positions"]
    assert shard.read_bytes() == before
    # another run's settings in the same folder: one line, exit 2
    r = _cli(*[a if a != "6" else "7" for a in args[:-1]], "--visits", "9", check=False)
    assert r.returncode == 2 and "another self-play run" in r.stderr and "Traceback" not in r.stderr


def test_selfplay_cli_refuses_bad_agents(tmp_path):
    a = _agent(5, head="policy")
    from gotk.nets.agent_file import save_agent

    path = save_agent(tmp_path / "p.gotk", a.model, "resnet", {"blocks": 1, "filters": 8},
                      a.encoder.describe())
    r = _cli("selfplay", "--agent", str(path), "--size", "5", "--games", "1", "--out", str(tmp_path / "o"),
             check=False)
    assert r.returncode == 2 and "value heads" in r.stderr and "Traceback" not in r.stderr
    r = _cli("selfplay", "--agent", str(path), "--size", "9", "--games", "1", "--out", str(tmp_path / "o"),
             check=False)
    assert r.returncode == 2 and "plays 5x5, not 9x9" in r.stderr
    assert load_agent(path).board_size == 5
    assert not Path(tmp_path / "o").exists()


def test_two_worker_processes_write_the_same_games(tmp_path):
    base = ["selfplay", "--init", "random", "--size", "5", "--games", "4", "--chunk-games", "2", "--visits", "4",
            "--fast-visits", "2", "--blocks", "1", "--filters", "8", "--seed", "2", "--threads", "1", "--json"]
    one = json.loads(_cli(*base, "--out", str(tmp_path / "w1")).stdout)
    two = json.loads(_cli(*base, "--out", str(tmp_path / "w2"), "--workers", "2").stdout)
    assert one["games"] == two["games"] == 4 and one["positions"] == two["positions"]
    for name in ("chunk-00000.parquet", "chunk-00001.parquet"):
        assert (tmp_path / "w1" / "chunks" / name).read_bytes() == (tmp_path / "w2" / "chunks" / name).read_bytes()


def test_selfplay_device_is_checked_before_any_work(tmp_path):
    out = tmp_path / "o"
    base = ["selfplay", "--init", "random", "--size", "5", "--games", "1", "--blocks", "1", "--filters", "8",
            "--out", str(out)]
    r = _cli(*base, "--device", "tpu", check=False)
    assert r.returncode == 2 and r.stderr.strip().endswith("--device must be auto, cpu, cuda or cuda:N, not 'tpu'")
    assert len(r.stderr.strip().splitlines()) == 1
    if torch.cuda.device_count() == 0:
        r = _cli(*base, "--device", "cuda", check=False)
        assert r.returncode == 2 and "torch sees no CUDA device" in r.stderr and "Traceback" not in r.stderr
    r = _cli(*base, "--device", "cuda:x", check=False)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert not out.exists()  # not even the random network was written
    # auto is the CPU on a host without a GPU, and the report says which device played
    if torch.cuda.device_count() == 0:
        rep = json.loads(_cli(*base, "--device", "auto", "--visits", "2", "--fast-visits", "2", "--json").stdout)
        assert rep["device"] == "cpu" and rep["games"] == 1


_MARK: list[int] = []


def _marked() -> int:
    return len(_MARK)


def test_local_executor_spawns_fresh_workers_when_asked():
    """Workers that use CUDA must be spawned (a forked child cannot use CUDA once its parent has): a module-level
    change made in the parent reaches forked workers and not spawned ones."""
    from gotk.executors import LocalExecutor

    _MARK.append(1)
    try:
        for method, seen in (("fork", 1), ("spawn", 0)):
            ex = LocalExecutor(2, method)
            try:
                assert ex.submit(_marked).result(timeout=120) == seen, method
            finally:
                ex.shutdown()
    finally:
        _MARK.clear()


@pytest.mark.slow
def test_selfplay_cli_ends_cleanly_every_time(tmp_path):
    """50 runs of ``gotk selfplay`` with forked workers, two at a time, each ending with exit status 0 (no abort at
    interpreter exit: the parent's Arrow threads must never hold Python objects then, see
    ``gotk.shards.assemble._parquet``) and its report printed in full."""
    from concurrent.futures import ThreadPoolExecutor

    def run(i: int) -> tuple[int, subprocess.CompletedProcess]:
        return i, _cli("selfplay", "--init", "random", "--size", "5", "--games", "2", "--chunk-games", "1",
                       "--workers", "2", "--visits", "2", "--fast-visits", "2", "--out", str(tmp_path / f"sp{i}"),
                       "--blocks", "1", "--filters", "8", "--seed", str(i), "--json", check=False)

    with ThreadPoolExecutor(2) as pool:
        for i, r in pool.map(run, range(50)):
            assert r.returncode == 0, (i, r.returncode, r.stderr[-500:])
            assert json.loads(r.stdout)["games"] == 2
