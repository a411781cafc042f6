"""``gotk train`` under torchrun: real processes, gloo on CPU, a tiny net on the built-in sample encoded by
`gotk encode`. Two processes see the same rows per epoch as one, learn, resume exactly after a rank dies,
and a dead or hung rank makes the run fail loudly instead of hanging."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gotk.cli.main import app

runner = CliRunner()

# 2 positions per game (874 train rows, 14 batches of 64 in one process), checkpoints every 4 steps
ARGS = ["--model", "resnet", "--blocks", "2", "--filters", "16", "--batch-size", "64", "--optimizer", "adam",
        "--lr", "3e-3", "--threads", "1", "--no-progress", "--device", "cpu", "--head", "both",
        "--positions-per-game", "2", "--epochs", "3", "--log-every", "2", "--checkpoint-every", "4",
        "--max-val-positions", "300"]
LIMIT = 120  # seconds: no launch may take longer (a hang fails the test instead of blocking it)


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env.update(OMP_NUM_THREADS="1", **extra)
    return env


def torchrun(data: Path, out: Path, *extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m", "gotk",
           "train", "--data", str(data), "--out", str(out), *ARGS, *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=LIMIT, env=env or _env())


def records(run: Path, kind: str) -> list[dict]:
    recs = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return [r for r in recs if r["kind"] == kind]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """The built-in held-out archive (525 real KGS games) encoded with `gotk encode` (shared with other tests)."""
    from gotk.data import HELDOUT_ARCHIVE

    out = tmp_path_factory.getbasetemp() / "models-sample"
    if not (out / "manifest.json").is_file():
        res = runner.invoke(app, ["encode", str(HELDOUT_ARCHIVE), "--encoder", "sevenplane", "--out", str(out),
                                  "--split", "train=0.8,val=0.1,test=0.1", "--workers", "1"])
        assert res.exit_code == 0, res.output
    return out


@pytest.fixture(scope="module")
def one_process(dataset: Path, tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("ddp") / "one"
    res = runner.invoke(app, ["train", "--data", str(dataset), "--out", str(run), *ARGS])
    assert res.exit_code == 0, res.output
    return run


@pytest.fixture(scope="module")
def two_processes(dataset: Path, tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("ddp") / "two"
    res = torchrun(dataset, run)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count("steps ") == 1  # the summary is printed by rank 0 only
    return run


def test_two_processes_use_every_row_once_and_learn(one_process: Path, two_processes: Path) -> None:
    cfg = json.loads((two_processes / "config.json").read_text())
    assert cfg["world_size"] == 2
    one, two = records(one_process, "epoch"), records(two_processes, "epoch")
    assert [r["epoch"] for r in two] == [1, 2, 3]
    # every kept row exactly once per epoch over both ranks: the same count as one process
    assert [r["train_positions"] for r in two] == [r["train_positions"] for r in one]
    assert 0.9 * 437 * 2 <= two[0]["train_positions"] <= 437 * 2
    # validation split across ranks and summed: the same number of positions as one process
    assert [r["val_positions"] for r in two] == [r["val_positions"] for r in one] == [300] * 3
    # both ranks take the same steps: one process's batches, about halved (each rank ends a partial batch)
    steps = two[-1]["step"]
    assert one[-1]["step"] / 2 <= steps <= one[-1]["step"] / 2 + 3
    logged = [r["step"] for r in records(two_processes, "step")]
    assert logged == list(range(2, steps + 1, 2))  # one writer, no duplicate records
    assert two[-1]["train_loss"] < two[0]["train_loss"]
    assert two[-1]["val_nll"] < two[0]["val_nll"]
    assert all(r["samples_per_s"] > 0 for r in records(two_processes, "step"))
    assert (two_processes / "agent.gotk").is_file() and (two_processes / "curves.png").is_file()


def test_dead_rank_fails_loudly_and_resume_continues_exactly(dataset: Path, two_processes: Path,
                                                             tmp_path: Path) -> None:
    run = tmp_path / "killed"
    t0 = time.monotonic()
    res = torchrun(dataset, run, env=_env(GOTK_DEBUG_KILL_RANK_AT_STEP="1:6"))
    assert res.returncode != 0
    assert time.monotonic() - t0 < LIMIT
    out = res.stdout + res.stderr
    assert "rank 1 exits after step 6" in out and "exitcode" in out and "13" in out
    assert not (run / "agent.gotk").exists()
    assert max(r["step"] for r in records(run, "step")) <= 6
    # restart: continues from the step-4 checkpoint and ends exactly where the uninterrupted run did
    res = torchrun(dataset, run, "--resume")
    assert res.returncode == 0, res.stdout + res.stderr
    want = [(r["step"], r["loss"]) for r in records(two_processes, "step")]
    assert [(r["step"], r["loss"]) for r in records(run, "step")] == want
    untimed = [{k: v for k, v in r.items() if k != "val_seconds"} for r in records(two_processes, "epoch")]
    assert [{k: v for k, v in r.items() if k != "val_seconds"} for r in records(run, "epoch")] == untimed


def test_hung_rank_hits_the_timeout(dataset: Path, tmp_path: Path) -> None:
    """Without torchrun's agent (as for a rank on another node), a rank that stops answering makes the other
    fail once --dist-timeout has passed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = tmp_path / "hung"
    procs = []
    for rank in (0, 1):
        env = _env(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", LOCAL_WORLD_SIZE="2",
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GOTK_DEBUG_KILL_RANK_AT_STEP="1:3:hang")
        cmd = [sys.executable, "-m", "gotk", "train", "--data", str(dataset), "--out", str(run), *ARGS,
               "--dist-timeout", "10"]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        t0 = time.monotonic()
        _, err = procs[0].communicate(timeout=LIMIT)
        assert procs[0].returncode == 1, err
        assert time.monotonic() - t0 < LIMIT
        assert "error: rank 0: distributed training failed" in err and "Timed out" in err
        assert procs[1].poll() is None  # the hung rank is still there: rank 0 did not wait for it
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate()
