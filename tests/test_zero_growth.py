"""A network that grows with the run (``gotk zero --grow``): the grown network computes what the smaller one did
(wider, deeper, both; with global inputs), the refusals, and a short actors run through the CLI that grows at a
share of its budget, is killed with -9 across the step and resumes, and whose grown network plays over GTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from gotk.nets.growth import grow_agent, grow_zero
from gotk.nets.networks import ZeroNet
from gotk.zero.options import ZeroError, ZeroOptions

GOTK = [sys.executable, "-m", "gotk"]


def _trained_like(blocks: int, filters: int, globals_: int = 2) -> ZeroNet:
    """A ZeroNet whose every weight and batch-norm statistic is off its initial value (zero output layers would
    hide a wrong copy)."""
    torch.manual_seed(0)
    m = ZeroNet(10, 7, "both", blocks=blocks, filters=filters, num_globals=globals_)
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.1)
        for mod in m.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.normal_(0, 0.1)
                mod.running_var.uniform_(0.5, 2.0)
    return m.eval()


@pytest.mark.parametrize("blocks, filters", [(4, 8), (3, 12), (6, 16), (7, 9)])
def test_the_grown_network_computes_what_the_smaller_one_did(blocks, filters):
    old = _trained_like(3, 8)
    new = grow_zero(old, blocks, filters, seed=1).eval()
    assert len(new.blocks) == blocks and new.stem[0].out_channels == filters
    assert sum(p.numel() for p in new.parameters()) > sum(p.numel() for p in old.parameters()) or \
        (blocks, filters) == (3, 8)
    x, glob = torch.rand(6, 10, 7, 7), torch.randn(6, 2)
    with torch.no_grad():
        for a, b in zip(old(x, aux=True, glob=glob), new(x, aux=True, glob=glob), strict=True):
            assert torch.allclose(a, b, atol=1e-5), float((a - b).abs().max())
    # the new channels are there to learn: a training step moves the outputs
    new.train()
    p, v = new(x, glob=glob)
    (p.logsumexp(1).sum() + v.sum()).backward()
    grads = [w.grad for w in new.parameters() if w.grad is not None and bool(w.grad.abs().sum() > 0)]
    assert len(grads) > len(list(old.parameters())) // 2


def test_a_network_does_not_shrink_or_grow_into_another_model(tmp_path):
    with pytest.raises(ValueError, match="does not shrink"):
        grow_zero(_trained_like(3, 8), 2, 8)
    with pytest.raises(ValueError, match="does not shrink"):
        grow_zero(_trained_like(3, 8), 3, 6)
    from gotk.selfplay.run import new_agent

    src = new_agent(tmp_path / "r.gotk", 5, model="resnet", encoder="relative", blocks=1, filters=8)
    with pytest.raises(ValueError, match="does not grow"):
        grow_agent(src, tmp_path / "g.gotk", 2, 8)


def test_growth_schedules_are_checked():
    ok = ZeroOptions(out="x", hours=1.0, blocks=4, filters=48, grow=("0.3=6x64", "0.6=zero:8X96"))
    assert ok.validate().growth() == [(0.3, 6, 64), (0.6, 8, 96)]
    assert ok.grown_size(0.1) is None and ok.grown_size(0.3) == (6, 64) and ok.grown_size(0.9) == (8, 96)
    for grow, extra, message in (
            (("0.5=tiny:6x64",), {}, "unknown model 'tiny'"), (("0.5=resnet:6x64",), {}, "models that grow"),
            (("0.5=3x64",), {}, "does not grow"), (("0.5=4x48",), {}, "does not grow"),
            (("0.5=6x64", "0.4=8x96"), {}, "must rise"), (("1.0=6x64",), {}, "must rise"),
            (("0.5=6by64",), {}, "is not AT="), (("half=6x64",), {}, "is not AT="),
            (("0.5=6x64",), {"hours": None, "generations": None}, "give --hours"),
            (("0.5=6x64",), {"loop": "generations"}, "no --loop generations")):
        with pytest.raises(ZeroError, match=message):
            ZeroOptions(**{"out": "x", "hours": 1.0, "blocks": 4, "filters": 48, "grow": grow, **extra}).validate()


TINY = ["--size", "5", "--chunk-games", "2", "--visits", "4", "--fast-visits", "2", "--blocks", "1", "--filters", "8",
        "--train-steps", "3", "--batch-size", "16", "--min-rows", "24", "--window-rows", "300", "--eval-games", "0",
        "--gnugo-levels", "", "--threads", "1", "--seed", "3", "--calibrate-s", "0", "--workers", "2"]


def test_a_run_grows_its_network_and_resumes_across_the_step_after_kill_9(tmp_path):
    out = tmp_path / "grown"
    args = [*GOTK, "zero", "--out", str(out), *TINY, "--generations", "5", "--grow", "0.4=2x12"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    marker = out / "networks" / "net-003.gotk"  # the first grown network (round 2 starts at 2 / 5 of the budget)
    deadline = time.time() + 300
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    assert marker.exists(), "the run never published net-003"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    state = json.loads((out / "zero.json").read_text())
    nets = state["networks"]
    assert [n["version"] for n in nets] == [1, 2, 3, 4, 5]
    assert [n["model"] for n in nets] == ["1x8", "1x8", "2x12", "2x12", "2x12"]
    assert [n.get("grown") for n in nets] == [None, None, {"from": "1x8", "to": "2x12"}, None, None]
    assert len(state["sessions"]) == 2
    # every game once over the chunks, and the chunks' numbers dense
    recs = [json.loads(p.read_text()) for p in sorted((out / "selfplay" / "chunks").glob("chunk-*.json"))]
    indices = [g["index"] for rec in recs for g in rec["games"]]
    assert len(indices) == len(set(indices))
    report = json.loads((out / "report.json").read_text())
    assert [row["grown"] for row in report["generations"]] == [False, False, True, False, False]
    meta, _ = __import__("gotk.nets.agent_file", fromlist=["read_agent_files"]).read_agent_files(
        out / "networks" / "net-003.gotk")
    assert meta["model"]["hparams"] == {"blocks": 2, "filters": 12} and "search" in meta
    # the grown network plays over GTP
    g = subprocess.run([*GOTK, "gtp", "--agent", str(out / "networks" / "net-005.gotk"), "--visits", "4"],
                       input="boardsize 5\nclear_board\ngenmove b\nquit\n", capture_output=True, text=True, timeout=120)
    assert g.returncode == 0 and "= " in g.stdout and "?" not in g.stdout, g.stdout + g.stderr


def test_growth_refusals_are_one_line_before_any_work(tmp_path):
    for i, grow in enumerate(("0.5=tiny:2x8", "0.5=1x4", "0.9=2x8,0.5=3x8")):
        out = tmp_path / f"z{i}"
        r = subprocess.run([*GOTK, "zero", "--out", str(out), *TINY, "--generations", "2", "--grow", grow],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and "--grow" in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and not Path(out).exists()
