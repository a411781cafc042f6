"""``gotk zero --loop actors``: actors and a learner at once on a small board, end to end through the CLI: networks
published and picked up by the actors, training sized by the data, fresh losses, evaluation after the learning,
the report; a resume after kill -9 that loses no game and counts no row twice; the actors on a Dask LocalCluster;
the learner's arithmetic; the refusals."""

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

TINY = ["--size", "5", "--chunk-games", "2", "--visits", "4", "--fast-visits", "2", "--blocks", "1", "--filters", "8",
        "--train-steps", "3", "--batch-size", "16", "--min-rows", "24", "--window-rows", "300", "--eval-visits", "4",
        "--gnugo-levels", "", "--threads", "1", "--seed", "3"]
GOTK = [sys.executable, "-m", "gotk"]


def _zero(out: Path, *extra: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run([*GOTK, "zero", "--out", str(out), *TINY, *extra], capture_output=True, text=True, timeout=600)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def _chunk_records(run: Path) -> dict[int, dict]:
    return {int(p.stem.split("-")[1]): json.loads(p.read_text())
            for p in (run / "selfplay" / "chunks").glob("chunk-*.json")}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("actors") / "run"
    _zero(out, "--generations", "3", "--workers", "2", "--eval-games", "2", "--eval-every", "2", "--calibrate-s", "1")
    return out


def test_actors_and_a_learner_publish_networks_the_actors_play(run):
    state = json.loads((run / "zero.json").read_text())
    nets = state["networks"]
    assert [n["network"] for n in nets] == ["net-001", "net-002", "net-003"]
    for k in range(4):
        meta = read_agent_files(run / "networks" / f"net-{k:03d}.gotk")[0]
        assert meta["encoder"]["name"] == "relative" and meta["globals"]["names"] == ["komi", "white_to_move"]
        if k:  # a trained network carries the search it was trained with
            assert meta["search"]["search"] == "gumbel" and meta["search"]["pass_rule"] == "answer"
    records = _chunk_records(run)
    assert sorted(records) == list(range(len(records)))  # dense chunk numbers
    # the actors moved on to the published networks between chunks
    assert {r["network"] for r in records.values()} >= {0, 1}
    for r in records.values():
        assert [g["index"] for g in r["games"]] == [r["chunk"] * 2, r["chunk"] * 2 + 1]
        assert r["cpu_s"] > 0 and r["rows"] == pq.read_metadata(
            run / "selfplay" / "chunks" / f"chunk-{r['chunk']:05d}.parquet").num_rows
    # training sized by the data: never more than --reuse (4) samples per committed position
    for n in nets:
        assert n["steps_done"] * 16 <= 4 * n["rows"] + 1e-9
        assert n["train"]["steps"] == 3 and 0 < n["window"]["rows"]
        assert n["window"]["rows"] >= min(300, n["rows"]) or n["window"]["first_chunk"] == 0
    assert [n["steps_done"] for n in nets] == [3, 6, 9]
    # fresh losses: the network before, on rows it never trained on (the first round: every row so far)
    assert nets[0]["fresh"]["positions"] == min(nets[0]["rows"], 1024)
    # the first network's value output starts at 0 (a zero output layer): its squared error on results of +-1 is 1
    assert nets[0]["fresh"]["value_mse"] == pytest.approx(1.0)
    assert all(0 < n["fresh"]["policy_soft_ce"] < 10 for n in nets if n["fresh"])
    # the optimizer went on from round to round: Adam's step count is the learner's
    import torch

    opt = torch.load(run / "learner" / "optimizer-003.pt", weights_only=True)["state"]["state"]
    assert {int(s["step"]) for s in opt.values()} == {9}
    assert sorted(p.name for p in (run / "learner").glob("optimizer-*.pt")) == ["optimizer-003.pt"]


def test_the_report_the_selfplay_dataset_and_the_evaluation(run):
    report = json.loads((run / "report.json").read_text())
    assert report["loop"] == "actors"
    rows = report["generations"]
    assert [r["network"] for r in rows] == ["net-001", "net-002", "net-003"]
    assert all(r["fresh_policy_loss"] is not None and r["games_per_hour"] > 0 for r in rows)
    cpu = report["cpu"]
    assert cpu["actors_s"] > 0 and cpu["learner_s"] > 0 and 0 < cpu["selfplay_share"] < 1
    (session,) = report["sessions"]
    cal = session["calibration"]
    assert session["actors"] == 2 and cal["evals_per_s_batch32"] > 0 and cal["tree_walks_per_s"] > 0
    assert cal["cores"] == os.cpu_count() and len(cal["load_average"]) == 3
    # evaluation after the learning, off the clock: every second network and the last
    assert sorted(p.name for p in (run / "eval").iterdir()) == ["net-002", "net-003"]
    assert report["eval_hours"] > 0
    rep = json.loads((run / "eval" / "net-003" / "vs-random.json").read_text())
    assert rep["agent"] == "net-003" and rep["games"] == 2 and rep["komi"] == 7.5
    assert {r["name"] for r in report["ratings"]} == {"random", "net-002", "net-003"}
    assert rows[1]["elo"] is not None and rows[0]["elo"] is None
    assert (run / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # RUN/selfplay is a dataset over every committed chunk
    from gotk.datasets import SplitIndex

    records = _chunk_records(run)
    assert SplitIndex(run / "selfplay", "train").num_rows == sum(r["rows"] for r in records.values())
    sgfs = list((run / "selfplay" / "sgf").glob("game-*.sgf"))
    assert len(sgfs) == 2 * len(records)


def test_zero_eval_plays_more_games_with_a_run_s_networks(run, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    shutil.rmtree(copy / "eval" / "net-003")
    r = subprocess.run([*GOTK, "zero-eval", str(copy), "--games", "1"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert json.loads((copy / "eval" / "net-003" / "vs-random.json").read_text())["games"] == 1
    # the report already there is kept (a rerun resumes)
    assert (copy / "eval" / "net-002" / "vs-random.json").read_bytes() == (run / "eval" / "net-002" /
                                                                          "vs-random.json").read_bytes()
    r = subprocess.run([*GOTK, "zero-eval", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "not a gotk zero run" in r.stderr and "Traceback" not in r.stderr


def test_a_run_killed_anywhere_resumes_without_losing_a_game_or_counting_a_row_twice(tmp_path):
    out = tmp_path / "killed"
    args = [*GOTK, "zero", "--out", str(out), *TINY, "--generations", "4", "--workers", "2", "--eval-games", "0",
            "--calibrate-s", "0"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    marker = out / "networks" / "net-002.gotk"
    deadline = time.time() + 300
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    assert marker.exists(), "the run never published net-002"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = {c: (r, (out / "selfplay" / "chunks" / f"chunk-{c:05d}.parquet").read_bytes())
              for c, r in _chunk_records(out).items()}
    state = json.loads((out / "zero.json").read_text())
    assert 1 <= len(state["networks"]) < 4
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    after = _chunk_records(out)
    # every chunk committed before the kill is there unchanged; the numbers are dense (in-flight ones played again)
    for c, (rec, data) in before.items():
        assert after[c] == rec and (out / "selfplay" / "chunks" / f"chunk-{c:05d}.parquet").read_bytes() == data
    assert sorted(after) == list(range(len(after)))
    # no row twice: every game id and index once over the chunks, and the dataset holds each chunk once
    indices = [g["index"] for r in after.values() for g in r["games"]]
    assert len(indices) == len(set(indices))
    m = json.loads((out / "selfplay" / "manifest.json").read_text())
    files = [e["file"] for e in m["splits"]["train"]["shards"]]
    assert len(files) == len(set(files)) == sum(1 for r in after.values() if r["rows"])
    state = json.loads((out / "zero.json").read_text())
    assert [n["version"] for n in state["networks"]] == [1, 2, 3, 4]
    assert [n["steps_done"] for n in state["networks"]] == [3, 6, 9, 12]
    assert len(state["sessions"]) == 2
    # another setting is refused in one line; the actors' count is not part of the run
    r = _zero(out, "--generations", "4", "--reuse", "2", check=False)
    assert r.returncode == 2 and "other settings" in r.stderr and "Traceback" not in r.stderr
    _zero(out, "--generations", "4", "--workers", "1", "--eval-games", "0", "--calibrate-s", "0")


def test_actors_on_a_dask_local_cluster(tmp_path):
    pytest.importorskip("distributed")
    out = tmp_path / "dask"
    _zero(out, "--generations", "2", "--workers", "2", "--executor", "dask", "--eval-games", "0", "--calibrate-s", "0",
          "--value-mix", "0.5")
    state = json.loads((out / "zero.json").read_text())
    assert state["options"]["value_mix"] == 0.5  # the value target mixed with the root value (KataGo's short-term)
    assert [n["network"] for n in state["networks"]] == ["net-001", "net-002"]
    assert state["sessions"][0]["executor"] == "dask"
    records = _chunk_records(out)
    assert sorted(records) == list(range(len(records))) and all(r["rows"] > 0 for r in records.values())
    # the actors ran in the cluster's worker processes, not in the learner's
    assert state["cpu"]["actors_s"] > 0


def test_the_learner_trains_by_the_data():
    from gotk.zero.learner import LearnerSettings, window_records

    s = LearnerSettings(reuse=4, batch_size=128, steps=100, window_rows=1000, min_rows=500, lr=None, optimizer=None,
                        warmup=10, aux_targets=True, threads=1, device="cpu", seed=0)
    assert s.allowed_steps(3200) == 100 and s.allowed_steps(3199) == 99
    assert s.ready(3200, 0) and not s.ready(3199, 0) and not s.ready(6399, 100) and s.ready(6400, 100)
    assert not LearnerSettings(**{**s.__dict__, "min_rows": 4000}).ready(3200, 0)
    recs = [{"chunk": c, "rows": r} for c, r in enumerate([400, 0, 300, 500, 200])]
    assert [r["chunk"] for r in window_records(recs, 1000)] == [2, 3, 4]
    assert [r["chunk"] for r in window_records(recs, 700)] == [3, 4]
    assert [r["chunk"] for r in window_records(recs, 10**6)] == [0, 2, 3, 4]


def test_refusals_are_one_line(tmp_path):
    cases = [(["--reuse", "0"], "--reuse"), (["--loop", "rounds"], "--loop must be"),
             (["--scheduler", "tcp://127.0.0.1:1"], "--scheduler needs --executor dask"),
             (["--workers", "0"], "--workers must be"), (["--calibrate-s", "-1"], "--calibrate-s"),
             (["--loop", "generations", "--executor", "dask"], "--loop actors"),
             (["--value-mix", "1.5"], "--value-mix")]
    for i, (extra, message) in enumerate(cases):
        r = _zero(tmp_path / f"z{i}", "--generations", "1", *extra, check=False)
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, (extra, r.stderr)
        assert not (tmp_path / f"z{i}").exists()
