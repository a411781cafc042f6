"""``gotk rl``: the learners from experience on the loop of ``gotk zero`` (actors and a learner at once), end to end
through the CLI on a small board: policy games against a pool of the run's networks recorded as experience, a
network published per round under the method's objective, evaluation against the start and the anchors, the
report; each method; a resume after kill -9; the actors on a Dask LocalCluster; the refusals before any work."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from gotk.nets.agent_file import read_agent_files

TINY = ["--size", "5", "--chunk-games", "4", "--blocks", "1", "--filters", "8", "--train-steps", "2",
        "--batch-size", "16", "--min-rows", "32", "--window-rows", "200", "--gnugo-levels", "", "--threads", "1",
        "--seed", "3", "--calibrate-s", "0"]
GOTK = [sys.executable, "-m", "gotk"]


def _rl(out: Path, *extra: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run([*GOTK, "rl", "--out", str(out), *TINY, *extra], capture_output=True, text=True, timeout=600)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def _records(run: Path) -> dict[int, dict]:
    return {int(p.stem.split("-")[1]): json.loads(p.read_text())
            for p in (run / "selfplay" / "chunks").glob("chunk-*.json")}


@pytest.fixture(scope="module")
def pool_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("rl") / "pg"
    _rl(out, "--method", "pg", "--opponents", "pool", "--generations", "3", "--workers", "2", "--eval-games", "2",
        "--eval-every", "3")
    return out


def test_policy_gradient_against_a_pool_of_the_run_s_networks(pool_run) -> None:
    state = json.loads((pool_run / "zero.json").read_text())
    assert state["options"]["method"] == "pg" and state["options"]["opponents"] == "pool"
    sp = state["options"]["selfplay"]
    assert sp["policy_only"] and sp["experience"] and sp["clip"] == 1e-5 and sp["random_moves"] == 0.01
    assert [n["network"] for n in state["networks"]] == ["net-001", "net-002", "net-003"]
    for n in state["networks"]:
        assert n["learner_peak_rss_mb"] > 0 and "policy_loss" in n["fresh"] or not n["new_chunks"]
    for k in (1, 2, 3):
        assert read_agent_files(pool_run / "networks" / f"net-{k:03d}.gotk")[0]["objective"] == "policy-gradient"
    records = _records(pool_run)
    assert sorted(records) == list(range(len(records)))
    for c, rec in records.items():
        # each chunk's opponent: one of the networks published when it started (drawn from the run's seed)
        assert 0 <= rec["opponent"] <= rec["network"] and rec["peak_rss_mb"] > 0
        table = pq.read_table(pool_run / "selfplay" / "chunks" / f"chunk-{c:05d}.parquet")
        assert set(table.column("opponent").to_pylist()) == {f"net-{rec['opponent']:03d}"}
        ret = table.column("return").to_pylist()
        assert set(ret) <= {-1.0, 1.0} and ret == [float(v) for v in table.column("value").to_pylist()]
        # only the learner's moves: one colour a game (Black in the games of even index)
        for gid, colours in _colours_by_game(table).items():
            assert len(colours) == 1, gid
    assert any(rec["opponent"] < rec["network"] for rec in records.values())  # an earlier network played


def _colours_by_game(table) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for gid, tp in zip(table.column("game_id").to_pylist(), table.column("to_play").to_pylist(), strict=True):
        out.setdefault(gid, set()).add(tp)
    return out


def test_evaluation_against_the_start_and_the_report(pool_run) -> None:
    report = json.loads((pool_run / "report.json").read_text())
    assert (pool_run / "report.png").stat().st_size > 10_000
    names = {r["name"] for r in report["ratings"]}
    assert {"net-000", "net-003", "random"} <= names  # the start is rated beside the last network
    last = report["generations"][-1]
    assert last["network"] == "net-003"
    # the report's win rates are the matches' own counts (draws half; the games on record)
    for key, name in (("vs_start", "vs-net-000"), ("vs_random", "vs-random")):
        games = json.loads((pool_run / "eval" / "net-003" / f"{name}.json").read_text())["per_game"]
        won = sum((g["winner"] == g["agent_colour"]) + 0.5 * (g["winner"] is None and g["result"] != "Void")
                  for g in games)
        decided = sum(g["result"] != "Void" for g in games)
        assert len(games) == 2 and last[key] == pytest.approx(won / decided), key
    assert (pool_run / "eval" / "net-000" / "vs-random.json").is_file()
    m = json.loads((pool_run / "selfplay" / "manifest.json").read_text())
    assert m["experience"]["columns"][0] == "return"  # the run's games: a dataset gotk train --objective reads


@pytest.mark.parametrize("method,objective", [("ac", "actor-critic"), ("q", "q-learning")])
def test_each_method_publishes_networks(tmp_path, method, objective) -> None:
    out = tmp_path / method
    r = _rl(out, "--method", method, "--generations", "2", "--workers", "1", "--eval-games", "0")
    assert "2 networks" in r.stdout
    state = json.loads((out / "zero.json").read_text())
    assert [n["network"] for n in state["networks"]] == ["net-001", "net-002"]
    assert read_agent_files(out / "networks" / "net-002.gotk")[0]["objective"] == objective
    # Q-learning's actors play epsilon-greedy: greedy moves and the book's share of random ones
    assert state["options"]["selfplay"]["temperature"] == (0.0 if method == "q" else 1.0)
    table = pq.read_table(next((out / "selfplay" / "chunks").glob("*.parquet")))
    probs = table.column("play_prob").to_pylist()
    if method == "q":  # each move the greedy one (p > 0.98) or a random one (p < 0.01), nothing between
        assert max(probs) > 0.98 and all(p > 0.98 or p < 0.01 for p in probs)
    report = json.loads((out / "report.json").read_text())
    assert report["ratings"] == []  # no evaluation games: the picture says so instead of an empty axis


def test_expert_iteration_distils_the_search_into_the_raw_policy(tmp_path) -> None:
    out = tmp_path / "exit"
    r = _rl(out, "--method", "exit", "--generations", "2", "--workers", "1", "--eval-games", "2", "--visits", "4",
            "--fast-visits", "2", "--eval-every", "2")
    assert "2 networks" in r.stdout
    state = json.loads((out / "zero.json").read_text())
    o = state["options"]
    assert o["method"] == "exit" and not o["selfplay"]["policy_only"] and not o["selfplay"]["experience"]
    assert (o["reuse"], o["window_rows"], o["train_steps"]) == (2.0, 200, 2)  # the method's reuse, the given rest
    # searched games: the rows carry the search's policy target, not the experience columns
    table = pq.read_table(next((out / "selfplay" / "chunks").glob("*.parquet")))
    assert "policy" in table.column_names and "return" not in table.column_names
    # the raw policies judged against the start (sampled at T = 1: no search in these games)
    vs = json.loads((out / "eval" / "net-002" / "vs-net-000.json").read_text())
    assert len(vs["per_game"]) == 2 and "net-002" in state["evaluations"]
    assert 0 <= state["evaluations"]["net-002"]["vs_start"] <= 1
    # a fine-tuned start: the learner's rate, and batch norm's statistics, are the fine-tuning ones
    from gotk.train.config import EXPERIENCE_LR

    assert state["networks"][0]["lr"] == pytest.approx(EXPERIENCE_LR)


def test_a_learner_step_over_whole_games_each_used_once(tmp_path) -> None:
    out = tmp_path / "games"
    _rl(out, "--method", "pg", "--generations", "3", "--workers", "1", "--eval-games", "0", "--games-per-step", "4",
        "--positions-per-game", "8", "--batch-size", "16")
    # another run scored on this one's games, held out: each network's top-1 and value error, and the start's
    held = tmp_path / "held"
    r = _rl(held, "--method", "pg", "--generations", "2", "--workers", "1", "--eval-games", "0", "--heldout",
            str(out / "selfplay" / "sgf"), "--heldout-positions", "100")
    assert "held-out top-1" in r.stderr
    report = json.loads((held / "report.json").read_text())
    assert report["heldout_start"]["positions"] == 100 and 0 <= report["heldout_start"]["top1"] <= 1
    for row in report["generations"]:
        assert 0 <= row["heldout_top1"] <= 1 and row["heldout_value_mse"] >= 0
    r = _rl(tmp_path / "nowhere", "--method", "pg", "--generations", "1", "--heldout", str(tmp_path / "none"),
            check=False)
    assert r.returncode == 2 and "--heldout" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    state = json.loads((out / "zero.json").read_text())
    nets = state["networks"]
    assert [n["version"] for n in nets] == [1, 2, 3]
    # 4 games x 8 positions = 32 rows a step: 2 batches of 16
    assert all(n["batches_per_step"] == 2 for n in nets)
    # each round trains on the games played since the round before (the first: those before it), never again
    windows = [(n["window"]["first_chunk"], n["window"]["last_chunk"]) for n in nets]
    assert all(b[0] > a[1] for a, b in zip(windows, windows[1:], strict=False)), windows
    # 2 steps a round over 4 games each: a round waits for 8 new games
    games = [n["games"] for n in nets]
    assert all(g >= 8 * (k + 1) for k, g in enumerate(games)), games


def test_a_kl_target_adapts_the_anchor_round_by_round(tmp_path) -> None:
    out = tmp_path / "kl"
    _rl(out, "--method", "pg", "--generations", "3", "--workers", "1", "--eval-games", "0", "--kl-target", "1e-6",
        "--kl-weight", "0.5", "--lr", "0.05")
    nets = json.loads((out / "zero.json").read_text())["networks"]
    # a target far below any drift: the weight doubles every round, from the one given
    assert [n["kl_weight"] for n in nets] == [0.5, 1.0, 2.0]
    assert [n["next_kl_weight"] for n in nets] == [1.0, 2.0, 4.0]
    assert all(n["drift"]["kl_start"] > 1e-6 for n in nets)


def test_a_killed_rl_run_resumes_without_losing_a_game(tmp_path) -> None:
    out = tmp_path / "killed"
    args = [*GOTK, "rl", "--out", str(out), *TINY, "--method", "pg", "--generations", "3", "--workers", "2",
            "--eval-games", "0"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    marker = out / "networks" / "net-001.gotk"
    deadline = time.time() + 300
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    assert marker.exists(), "the run never published net-001"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = {c: (r, (out / "selfplay" / "chunks" / f"chunk-{c:05d}.parquet").read_bytes())
              for c, r in _records(out).items()}
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    after = _records(out)
    for c, (rec, data) in before.items():
        assert after[c] == rec and (out / "selfplay" / "chunks" / f"chunk-{c:05d}.parquet").read_bytes() == data
    assert sorted(after) == list(range(len(after)))
    state = json.loads((out / "zero.json").read_text())
    assert [n["version"] for n in state["networks"]] == [1, 2, 3] and len(state["sessions"]) == 2
    r = _rl(out, "--method", "ac", "--generations", "3", check=False)  # another method: another run
    assert r.returncode == 2 and "other settings" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
def test_rl_actors_on_a_dask_local_cluster(tmp_path) -> None:
    pytest.importorskip("distributed")
    out = tmp_path / "dask"
    _rl(out, "--method", "ac", "--opponents", "pool", "--generations", "2", "--workers", "2", "--executor", "dask",
        "--eval-games", "0")
    state = json.loads((out / "zero.json").read_text())
    assert state["sessions"][0]["executor"] == "dask" and [n["version"] for n in state["networks"]] == [1, 2]
    assert state["cpu"]["actors_s"] > 0


def test_refusals_come_before_any_work(tmp_path) -> None:
    from helpers import tiny_agent_file

    policy_only = tiny_agent_file(tmp_path / "p.gotk", size=5, head="policy")
    cases = [(["--method", "zero"], "--method must be one of pg, ac, q, exit"),
             (["--method", "exit", "--visits", "0"], "--visits"),
             (["--method", "exit", "--opponents", "pool"], "--opponents pool is for"),
             (["--method", "pg", "--kl-target", "0"], "--kl-target anchors"),
             (["--method", "pg", "--games-per-step", "64"], "do not fit --window-rows 200"),
             (["--method", "pg", "--positions-per-game", "4"], "give --games-per-step"),
             (["--method", "pg", "--kl-target", "-1"], "--kl-target anchors"),
             (["--method", "pg", "--opponents", "crowd"], "--opponents must be self or pool"),
             (["--method", "ac", "--init-agent", str(policy_only)], "with policy and value heads"),
             (["--method", "pg", "--init-agent", "kgs"], "must play 5x5"),
             (["--method", "pg", "--loop", "generations"], "actors and a learner at once"),
             (["--method", "pg", "--baseline", "median"], "--baseline must be one of"),
             (["--method", "ac", "--ratio-clip", "1.5"], "--ratio-clip in [0, 1)"),
             (["--method", "q", "--random-moves", "1.5"], "--random-moves in [0, 1]")]
    for i, (extra, message) in enumerate(cases):
        r = _rl(tmp_path / f"r{i}", "--generations", "1", *extra, check=False)
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, (extra, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / f"r{i}").exists()
    r = subprocess.run([*GOTK, "rl", "--out", str(tmp_path / "n"), "--method", "pg"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "--hours" in r.stderr


def test_every_loop_option_reaches_the_run_s_options() -> None:
    """One options object from the command line to the run: each field of the command's groups is a field of
    ZeroOptions (by name, or the few spelt otherwise), so no option can be dropped on the way."""
    from dataclasses import fields

    from gotk.cli.selfplay import _RENAMED, GameOptions, LearnerOptions, LoopOptions, zero_options
    from gotk.zero.options import ZeroOptions

    names = {f.name for f in fields(ZeroOptions)}
    converted = {"no_aux": "aux_targets"}
    for f in fields(LoopOptions) + fields(LearnerOptions):
        assert converted.get(f.name, _RENAMED.get(f.name, f.name)) in names, f.name
    game = GameOptions()
    run = LoopOptions()
    opts = zero_options(game, run, method="q", out="x", hours=1.0, opponents="pool")
    assert opts.method == "q" and opts.opponents == "pool" and opts.reuse == 1.0 and opts.train_steps == 32
    assert opts.selfplay.experience and opts.selfplay.temperature == 0.0 and opts.selfplay.random_moves == 0.01
    zero = zero_options(game, run, out="x", hours=1.0)
    assert zero.reuse == 4.0 and zero.train_steps == 300 and not zero.selfplay.policy_only
