"""The learner's schedules over a ``gotk zero`` run: the learning rate over the budget (``--lr-schedule``) and a
window that grows with the rows played (``--window-growth``, KataGo's power law), their arithmetic, a short run
through the CLI that records both per network, and the refusals."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from gotk.zero.learner import LR_FLOOR, LearnerSettings
from gotk.zero.options import ZeroError, ZeroOptions

BASE = LearnerSettings(reuse=4, batch_size=128, steps=100, window_rows=10_000, min_rows=500, lr=None,
                       optimizer=None, warmup=10, aux_targets=True, threads=1, device="cpu", seed=0)


def test_a_fixed_window_by_default_and_kataGo_s_power_law_when_it_grows():
    assert [BASE.window_size(n) for n in (0, 10_000, 640_000)] == [10_000] * 3
    s = replace(BASE, window_growth=0.4, window_exponent=0.65)
    assert s.window_size(5_000) == 10_000 and s.window_size(10_000) == 10_000
    # c (1 + b ((N / c)^a - 1) / a) at N = 64 c, worked by hand: 64^0.65 = 14.929
    assert s.window_size(640_000) == pytest.approx(10_000 * (1 + 0.4 * (64 ** 0.65 - 1) / 0.65), abs=1)
    assert 95_000 < s.window_size(640_000) < 96_000
    sizes = [s.window_size(n) for n in range(10_000, 2_000_000, 50_000)]
    assert all(b >= a for a, b in zip(sizes, sizes[1:], strict=False))  # never shrinks
    steps = [b - a for a, b in zip(sizes, sizes[1:], strict=False)]
    assert steps[-1] < steps[1]  # ever slower: sub-linear in the rows played
    # exponent 1: linear, b new window rows per row played
    lin = replace(BASE, window_growth=0.5, window_exponent=1.0)
    assert lin.window_size(30_000) == 10_000 + 10_000


def test_gotk_zero_anneals_by_default_and_a_run_recorded_before_the_schedule_kept_a_constant_rate(tmp_path):
    from gotk.cli.selfplay import GameOptions, LoopOptions, zero_options

    assert zero_options(GameOptions(), LoopOptions(), out="x", hours=1.0).lr_schedule == "cosine"
    assert zero_options(GameOptions(), LoopOptions(), method="pg", out="x", hours=1.0).lr_schedule == "constant"
    out = tmp_path / "old"
    r = _zero(out, "--generations", "1", "--lr-schedule", "constant")
    assert r.returncode == 0, r.stderr
    state = json.loads((out / "zero.json").read_text())
    del state["options"]["lr_schedule"]  # as a run of an earlier gotk recorded it
    (out / "zero.json").write_text(json.dumps(state))
    r = _zero(out, "--generations", "2")  # today's default: another run
    assert r.returncode == 2 and "lr_schedule" in r.stderr
    r = _zero(out, "--generations", "2", "--lr-schedule", "constant")
    assert r.returncode == 0, r.stderr


def test_the_learning_rate_over_the_budget():
    assert [BASE.lr_factor(p) for p in (0.0, 0.5, 1.0)] == [1.0, 1.0, 1.0]
    cos = replace(BASE, lr_schedule="cosine")
    assert cos.lr_factor(0.0) == pytest.approx(1.0)
    assert cos.lr_factor(1.0) == pytest.approx(LR_FLOOR)
    assert cos.lr_factor(0.5) == pytest.approx(LR_FLOOR + (1 - LR_FLOOR) * 0.5)
    f = [cos.lr_factor(p / 20) for p in range(21)]
    assert all(b < a for a, b in zip(f, f[1:], strict=False))
    assert cos.lr_factor(1.7) == pytest.approx(LR_FLOOR)  # a budget overrun stays at the floor


def test_the_budget_s_share_spent():
    o = ZeroOptions(out="x", hours=2.0)
    assert o.progress(0.5, 3) == pytest.approx(0.25) and o.progress(3.0, 3) == 1.0
    assert ZeroOptions(out="x", generations=10).progress(5.0, 4) == pytest.approx(0.4)
    assert ZeroOptions(out="x", hours=1.0, generations=10).progress(0.2, 5) == pytest.approx(0.5)


def test_bad_schedules_are_refused():
    for kw, message in (({"window_growth": -0.1}, "--window-growth"), ({"window_exponent": 0.0}, "--window-growth"),
                        ({"window_exponent": 1.5}, "never shrinks"), ({"lr_schedule": "step"}, "--lr-schedule must"),
                        ({"lr_schedule": "cosine", "hours": None}, "spans the run's budget")):
        with pytest.raises(ZeroError, match=message):
            ZeroOptions(**{"out": "x", "hours": 1.0, **kw}).validate()


TINY = ["--size", "5", "--chunk-games", "2", "--visits", "4", "--fast-visits", "2", "--blocks", "1", "--filters", "8",
        "--train-steps", "3", "--batch-size", "16", "--min-rows", "24", "--window-rows", "40", "--eval-games", "0",
        "--gnugo-levels", "", "--threads", "1", "--seed", "3", "--workers", "1", "--calibrate-s", "0"]


def _zero(out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gotk", "zero", "--out", str(out), *TINY, *extra],
                          capture_output=True, text=True, timeout=600)


def test_a_run_records_each_round_s_learning_rate_and_window(tmp_path):
    out = tmp_path / "run"
    r = _zero(out, "--generations", "4", "--lr", "0.002", "--lr-schedule", "cosine", "--window-growth", "1.0",
              "--window-exponent", "1.0")
    assert r.returncode == 0, r.stderr
    rounds = [json.loads((out / "learner" / f"round-{v:04d}.json").read_text()) for v in range(4)]
    lrs = [rec["lr"] for rec in rounds]
    # round v starts after v of the 4 networks: 0.002 x the cosine at v / 4 (the floor beneath it)
    want = [0.002 * (LR_FLOOR + (1 - LR_FLOOR) * 0.5 * (1 + math.cos(math.pi * v / 4))) for v in range(4)]
    assert lrs == pytest.approx(want)
    state = json.loads((out / "zero.json").read_text())
    for rec, net in zip(rounds, state["networks"], strict=True):
        # the window holds at least the power law's rows of those committed when the round began (exponent 1:
        # 40 + (rows - 40)), whole chunks, and never more than were committed
        need = 40 + max(0, net["rows"] - 40)
        assert min(need, net["rows"]) <= rec["window"]["rows"] <= net["rows"]
    assert rounds[-1]["window"]["rows"] > 40  # it grew past --window-rows
    # the run's settings are its identity: another schedule in the same folder is refused
    r = _zero(out, "--generations", "5", "--lr", "0.002", "--lr-schedule", "constant", "--window-growth", "1.0",
              "--window-exponent", "1.0")
    assert r.returncode == 2 and "lr_schedule" in r.stderr and "Traceback" not in r.stderr


def test_refusals_are_one_line_before_any_work(tmp_path):
    for i, extra in enumerate((["--window-growth", "-1"], ["--window-exponent", "2"], ["--lr-schedule", "warm"])):
        r = _zero(tmp_path / f"z{i}", "--generations", "1", *extra)
        assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, \
            r.stderr
        assert not (tmp_path / f"z{i}").exists()
