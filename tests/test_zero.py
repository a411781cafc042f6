"""``gotk zero``: the loop end to end on a small board, resumed after a kill with the same generations, its report,
its refusals; and (slow) a short 9x9 loop from scratch that learns to beat the random player."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from gotk.nets.agent_file import read_agent_files

TINY = ["--loop", "generations",
        "--size", "5", "--games", "4", "--chunk-games", "2", "--visits", "4", "--fast-visits", "2", "--blocks", "1",
        "--filters", "8", "--train-steps", "3", "--batch-size", "16", "--eval-games", "1", "--eval-visits", "4",
        "--gnugo-levels", "", "--threads", "1", "--seed", "3"]


def _zero(out: Path, *extra: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "gotk", "zero", "--out", str(out), *TINY, *extra], capture_output=True,
                       text=True, timeout=600)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def _weights(path: Path) -> dict:
    return {k: v.numpy() for k, v in read_agent_files(path)[1].items()}


def test_killed_run_resumes_with_the_same_generations(tmp_path):
    whole = tmp_path / "whole"
    _zero(whole, "--generations", "2")
    state = json.loads((whole / "zero.json").read_text())
    assert [g["generation"] for g in state["generations"]] == [0, 1]
    report = json.loads((whole / "report.json").read_text())
    assert [r["network"] for r in report["generations"]] == ["net-001", "net-002"]
    assert {r["name"] for r in report["ratings"]} >= {"random", "net-002"}
    assert (whole / "report.png").stat().st_size > 10_000
    # the window of generation 1 lists generation 0's and 1's shards without copying them
    window = json.loads((whole / "gen-001" / "window" / "manifest.json").read_text())
    files = [e["file"] for s in window["splits"].values() for e in s["shards"]]
    assert any(f.startswith("../../gen-000/") for f in files) and any(f.startswith("../selfplay/") for f in files)
    # each network carries the search it was trained with, and is evaluated with it at the run's komi
    meta = read_agent_files(whole / "gen-001" / "candidate.gotk")[0]
    assert meta["search"]["search"] == "gumbel" and meta["search"]["pass_rule"] == "answer"
    # by default the network reads own / opponent planes and the komi and side to move as global inputs
    assert meta["encoder"]["name"] == "relative" and meta["globals"]["names"] == ["komi", "white_to_move"]
    chunk = next((whole / "gen-001" / "selfplay" / "chunks").glob("*.parquet"))
    assert pq.read_schema(chunk).names[-1] == "globals"
    evaluation = json.loads((whole / "gen-001" / "eval" / "vs-random.json").read_text())
    assert evaluation["komi"] == 7.5 and evaluation["agent"].startswith("net-")
    # both counts of every scored game; the report's row gives the games whose winners differ, per opponent
    scored = [g for g in evaluation["per_game"] if g["score_source"] == "opponent"]
    assert all(g["gotk_score"] is not None and g["opponent_score"] is not None for g in scored)
    assert evaluation["scores_checked"] == len(scored)
    assert report["generations"][1]["vs_random_score_disagreements"] == evaluation["winner_disagreements"]

    # the same run killed in generation 1's self-play, then resumed by the same command
    killed = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "gotk", "zero", "--out", str(killed), *TINY, "--generations", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    marker = killed / "gen-001" / "selfplay" / "chunks" / "chunk-00000.json"
    deadline = time.time() + 300
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert marker.exists(), "the run never reached generation 1"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert len(json.loads((killed / "zero.json").read_text())["generations"]) == 1
    _zero(killed, "--generations", "2")
    for g in (0, 1):
        a = whole / f"gen-{g:03d}"
        b = killed / f"gen-{g:03d}"
        for chunk in sorted((a / "selfplay" / "chunks").glob("*.parquet")):
            assert (b / "selfplay" / "chunks" / chunk.name).read_bytes() == chunk.read_bytes()
        wa, wb = _weights(a / "candidate.gotk"), _weights(b / "candidate.gotk")
        assert wa.keys() == wb.keys() and all(np.array_equal(wa[k], wb[k]) for k in wa)
    assert len(json.loads((killed / "zero.json").read_text())["generations"]) == 2
    # a further rerun with a larger budget goes on from there; other settings are refused in one line
    r = _zero(killed, "--generations", "2", "--games", "5", check=False)
    assert r.returncode == 2 and "other settings" in r.stderr and "Traceback" not in r.stderr


def _tiny_opts(out: Path, generations: int, **over):
    from gotk.selfplay.config import SelfPlayConfig
    from gotk.zero.options import ZeroOptions

    kw = dict(loop="generations", size=5, generations=generations, games=4, chunk_games=2, blocks=1, filters=8,
              train_steps=3,
              batch_size=16, eval_games=0, gnugo_levels=(), threads=1, device="cpu", seed=3,
              selfplay=SelfPlayConfig.make(size=5, visits=4, fast_visits=2))
    kw.update(over)
    return ZeroOptions(out=str(out), **kw)


def _adam_steps(path: Path) -> set[int]:
    import torch

    state = torch.load(path, weights_only=True)["state"]["state"]
    return {int(s["step"]) for s in state.values()}


@pytest.fixture(scope="module")
def two_sessions(tmp_path_factory) -> Path:
    """A tiny run: generation 0 in one session, generation 1 in a second one (a resumed run)."""
    from gotk.zero.run import zero

    out = tmp_path_factory.mktemp("zero") / "run"
    zero(_tiny_opts(out, 1), log=lambda *_: None)
    assert not (out / "gen-001" / "selfplay").exists()
    zero(_tiny_opts(out, 2), log=lambda *_: None)
    return out


def test_the_window_trains_on_every_chunk(two_sessions):
    """Every self-play chunk of the window's generations is in its training split, the newest one included."""
    from gotk.datasets import SplitIndex

    m = json.loads((two_sessions / "gen-001" / "window" / "manifest.json").read_text())
    assert set(m["splits"]) == {"train"}
    chunks = sorted(str(p.relative_to(two_sessions)) for p in two_sessions.glob("gen-00[01]/selfplay/chunks/*.parquet"))
    assert len(chunks) == 4  # two chunks a generation
    listed = sorted(os.path.normpath(os.path.join("gen-001/window", e["file"])) for e in m["splits"]["train"]["shards"])
    assert listed == chunks
    positions = sum(json.loads((two_sessions / f"gen-00{g}" / "selfplay" / "report.json").read_text())["positions"]
                    for g in (0, 1))
    assert SplitIndex(two_sessions / "gen-001" / "window", "train").num_rows == positions
    conf = json.loads((two_sessions / "gen-001" / "train" / "config.json").read_text())
    assert conf["data"]["train_rows"] == positions and conf["data"]["val_rows"] is None


def test_the_optimizer_goes_on_from_generation_to_generation(two_sessions, tmp_path):
    """Generation 1's optimizer continues generation 0's (Adam's step count goes on from 3 to 6), loaded from
    gen-000/optimizer.pt by the resumed session; generation 0's warms up, generation 1's does not."""
    from gotk.zero.run import zero

    assert _adam_steps(two_sessions / "gen-000" / "optimizer.pt") == {3}
    assert _adam_steps(two_sessions / "gen-001" / "optimizer.pt") == {6}
    t0 = json.loads((two_sessions / "gen-000" / "train.json").read_text())
    t1 = json.loads((two_sessions / "gen-001" / "train.json").read_text())
    assert t0["optimizer_from"] is None and t1["optimizer_from"] == "gen-000"
    c0 = json.loads((two_sessions / "gen-000" / "train" / "config.json").read_text())["config"]
    c1 = json.loads((two_sessions / "gen-001" / "train" / "config.json").read_text())["config"]
    assert c0["warmup_steps"] == 3 and c0["init_optimizer"] is None
    assert c1["warmup_steps"] == 0 and c1["init_optimizer"] == str(two_sessions / "gen-000" / "optimizer.pt")
    lrs = [r["lr"] for r in map(json.loads, (two_sessions / "gen-000" / "train" / "metrics.jsonl").read_text()
                                .splitlines()) if r["kind"] == "step"]
    assert lrs == pytest.approx([0.003 / 3, 0.003 * 2 / 3, 0.003])  # linear warm-up to the zero model's rate
    # --fresh-optimizer: every generation starts over, with a warm-up
    fresh = tmp_path / "fresh"
    zero(_tiny_opts(fresh, 2, carry_optimizer=False, warmup_steps=2), log=lambda *_: None)
    assert not (fresh / "gen-000" / "optimizer.pt").exists()
    c1 = json.loads((fresh / "gen-001" / "train" / "config.json").read_text())["config"]
    assert c1["warmup_steps"] == 2 and c1["init_optimizer"] is None
    ckpt = torch_load(fresh / "gen-001" / "train" / "checkpoint.pt")
    assert {int(s["step"]) for s in ckpt["optimizer"]["state"].values()} == {3}


def test_a_run_recorded_before_the_optimizer_options_resumes(two_sessions, tmp_path):
    """A zero.json without the options added since (an older run's) reads as having had their defaults."""
    from gotk.zero.loop import ZeroRun
    from gotk.zero.options import ZeroError

    state = json.loads((two_sessions / "zero.json").read_text())
    for key in ("carry_optimizer", "warmup_steps", "loop", "reuse", "window_rows", "min_rows"):
        del state["options"][key]  # a run recorded before the actors loop ran generations
    old = tmp_path / "old"
    old.mkdir()
    state["options"]["out"] = str(old)
    (old / "zero.json").write_text(json.dumps(state))
    ZeroRun(_tiny_opts(old, 2))._load_state()
    with pytest.raises(ZeroError, match="carry_optimizer"):
        ZeroRun(_tiny_opts(old, 2, carry_optimizer=False))._load_state()


def torch_load(path: Path) -> dict:
    import torch

    return torch.load(path, weights_only=True)


def test_zero_refuses_bad_options(tmp_path):
    r = subprocess.run([sys.executable, "-m", "gotk", "zero", "--out", str(tmp_path / "z")], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "--hours" in r.stderr
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x.txt").write_text("mine")
    r = _zero(tmp_path / "full", "--generations", "1", check=False)
    assert r.returncode == 2 and "not a gotk zero run" in r.stderr and "Traceback" not in r.stderr
    r = _zero(tmp_path / "z2", "--generations", "1", "--gnugo-levels", "x", check=False)
    assert r.returncode == 2 and "--gnugo-levels" in r.stderr
    r = _zero(tmp_path / "z3", "--generations", "1", "--device", "gpu", check=False)
    assert r.returncode == 2 and "--device must be" in r.stderr and not (tmp_path / "z3").exists()
    r = _zero(tmp_path / "z4", "--generations", "1", "--warmup-steps", "-1", check=False)
    assert r.returncode == 2 and "--warmup-steps must be" in r.stderr and not (tmp_path / "z4").exists()


@pytest.mark.slow
def test_short_9x9_loop_learns_to_beat_random(tmp_path):
    out = tmp_path / "z9"
    r = subprocess.run([sys.executable, "-m", "gotk", "zero", "--out", str(out), "--loop", "generations", "--size", "9",
                        "--generations", "4",
                        "--games", "48", "--chunk-games", "48", "--visits", "16", "--fast-visits", "4",
                        "--blocks", "2", "--filters", "32", "--train-steps", "120", "--batch-size", "64",
                        "--eval-games", "20", "--eval-every", "4", "--eval-visits", "16", "--gnugo-levels", "",
                        # one torch thread: with two, a host whose other core is busy runs this ~4x slower
                        # (OpenMP threads wait on each other), and the test is about learning, not threading
                        "--threads", "1", "--seed", "1"], capture_output=True, text=True, timeout=3000)
    assert r.returncode == 0, r.stderr
    report = json.loads((out / "report.json").read_text())
    last = report["generations"][-1]
    assert last["vs_random"] >= 0.75, report["generations"]


@pytest.mark.slow
def test_13x13_from_scratch_and_19x19_from_a_supervised_agent(tmp_path, sample_archive):
    from conftest import archive_slice

    small = ["--loop", "generations", "--games", "2", "--chunk-games", "2", "--visits", "2", "--fast-visits", "2",
             "--blocks", "1",
             "--filters", "8", "--train-steps", "2", "--batch-size", "16", "--eval-games", "0", "--threads", "1",
             "--generations", "1"]
    run = [sys.executable, "-m", "gotk", "zero"]
    r = subprocess.run([*run, "--out", str(tmp_path / "z13"), "--size", "13", *small], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "z13" / "gen-000" / "selfplay" / "report.json").read_text())["games"] == 2
    # a supervised agent (human games, policy and value heads) as network 0 of a 19x19 run
    src = archive_slice(sample_archive, tmp_path, 12)
    gotk = [sys.executable, "-m", "gotk"]
    for cmd in (["encode", str(src), "-e", "simple", "-o", str(tmp_path / "ds"), "--no-progress"],
                ["train", "--data", str(tmp_path / "ds"), "--out", str(tmp_path / "sl"), "--model", "zero",
                 "--blocks", "1", "--filters", "8", "--max-steps", "3", "--batch-size", "32", "--no-progress"]):
        r = subprocess.run([*gotk, *cmd], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
    r = subprocess.run([*run, "--out", str(tmp_path / "z19"), "--size", "19", "--init-agent",
                        str(tmp_path / "sl" / "agent.gotk"), *small], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    w0, w_sl = _weights(tmp_path / "z19" / "gen-000" / "agent.gotk"), _weights(tmp_path / "sl" / "agent.gotk")
    assert all(np.array_equal(w0[k], w_sl[k]) for k in w_sl)
    assert (tmp_path / "z19" / "gen-000" / "candidate.gotk").is_file()
    # a 9x9 run cannot start from it
    r = subprocess.run([*run, "--out", str(tmp_path / "z9"), "--size", "9", "--init-agent",
                        str(tmp_path / "sl" / "agent.gotk"), *small], capture_output=True, text=True, timeout=600)
    assert r.returncode == 2 and "must play 9x9" in r.stderr and "Traceback" not in r.stderr


def test_report_picture_lays_out_when_the_first_generation_has_no_elo(tmp_path) -> None:
    """An early run: the first generation not yet rated, one rated network and two anchors far from it. The picture
    is drawn without a layout warning (an anchor's label placed at a data x the Elo points do not span pushed
    matplotlib's layout off the page) and is a real PNG."""
    import warnings

    from gotk.zero.report import plot

    def row(g, hours, elo):
        return {"generation": g, "hours": hours, "elo": elo, "policy_loss": 3.2, "value_mse": 0.55,
                "games_per_hour": 1800.0, "selfplay_positions_per_s": 11.0}

    rows = [row(0, 0.125, None), row(1, 0.285, 321.7), row(2, 0.377, None)]
    ratings = {"gnugo-1": {"elo": 836.2}, "net-002": {"elo": 321.7}, "random": {"elo": 0.0}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plot(tmp_path / "report.png", rows, ratings)
    assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_gnugo_anchors_parse_and_bad_ones_are_refused(tmp_path):
    from gotk.zero.evaluation import parse_anchor
    from gotk.zero.options import ZeroError

    assert parse_anchor("mc8000") == ("gnugo-mc8000", ["--monte-carlo", "--level", "1", "--mc-games-per-level",
                                                       "8000"], 0)
    assert parse_anchor(" 1H2 ") == ("gnugo-1-h2", ["--level", "1"], 2)
    for bad in ("mc", "mc10", "0h2", "1h1", "1h10", "level1", "11h2"):
        with pytest.raises(ValueError, match="mcN"):
            parse_anchor(bad)
    with pytest.raises(ZeroError, match="--gnugo-anchors"):
        _tiny_opts(tmp_path / "x", 1, gnugo_anchors=("mc5",)).validate()
    assert _tiny_opts(tmp_path / "x", 1, gnugo_anchors=("mc500", "1h2")).record()["gnugo_anchors"] == ["mc500", "1h2"]


@pytest.mark.skipif(not Path("/usr/games/gnugo").exists(), reason="needs GNU Go (apt-get install gnugo)")
def test_gnugo_monte_carlo_and_handicap_anchors_play_real_matches(tmp_path):
    """A 9x9 network's anchors: GNU Go's Monte Carlo mode and level 1 in two-stone handicap games, each a real
    match report (the handicap's stones and komi 0.5 in it) that gotk elo reads with the other anchors."""
    from test_leelaz_net import distinctive_model, save

    from gotk.zero.evaluation import play_anchors

    agent = save(tmp_path / "net.gotk", distinctive_model(size=9))
    out = play_anchors(agent, "net", tmp_path / "eval", 2, (), "/usr/games/gnugo", 9, 7.5, 2, 1, lambda *_: None,
                       anchors=("mc200", "1h2"))
    assert set(out) >= {"vs_random", "vs_gnugo-mc200", "vs_gnugo-1-h2"}
    mc = json.loads((tmp_path / "eval" / "vs-gnugo-mc200.json").read_text())
    hc = json.loads((tmp_path / "eval" / "vs-gnugo-1-h2.json").read_text())
    assert mc["opponent"] == "gnugo-mc200" and len(mc["per_game"]) == 2
    assert hc["handicap"] == 2 and hc["komi"] == 0.5 and len(hc["per_game"]) == 2
    reports = [str(p) for p in (tmp_path / "eval").glob("vs-*.json")]
    res = subprocess.run([sys.executable, "-m", "gotk", "elo", *reports, "--anchor", "random"], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0 and "gnugo-mc200" in res.stdout and "gnugo-1-h2" in res.stdout, res.stderr
