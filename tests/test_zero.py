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

from gotk.nets.agent import read_agent_files

TINY = ["--size", "5", "--games", "4", "--chunk-games", "2", "--visits", "4", "--fast-visits", "2", "--blocks", "1",
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


@pytest.mark.slow
def test_short_9x9_loop_learns_to_beat_random(tmp_path):
    out = tmp_path / "z9"
    r = subprocess.run([sys.executable, "-m", "gotk", "zero", "--out", str(out), "--size", "9", "--generations", "4",
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

    small = ["--games", "2", "--chunk-games", "2", "--visits", "2", "--fast-visits", "2", "--blocks", "1",
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
