"""Helpers shared by several test modules (not tests): the CLI runner, a tiny training recipe, the built-in sample
encoded once per session and a tiny network trained on it."""

from __future__ import annotations

from pathlib import Path

import torch
from typer.testing import CliRunner

from gotk import coords
from gotk.cli.main import app
from gotk.game.state import BLACK, GameState, Rules

runner = CliRunner()

# tiny and fast: one torch thread (robust on a busy 2-core machine), a 2-block residual net
TINY = ["--model", "resnet", "--blocks", "2", "--filters", "16", "--batch-size", "64", "--optimizer", "adam",
        "--lr", "3e-3", "--threads", "1", "--no-progress", "--device", "cpu"]


def invoke(args: list[str]):
    res = runner.invoke(app, args)
    return res


def sample_dataset(tmp_path_factory) -> Path:
    """The built-in held-out archive (525 real KGS games) encoded once per session with `gotk encode`."""
    from gotk.data import HELDOUT_ARCHIVE

    out = tmp_path_factory.getbasetemp() / "models-sample"
    if not (out / "manifest.json").is_file():
        res = invoke(["encode", str(HELDOUT_ARCHIVE), "--encoder", "sevenplane", "--out", str(out),
                      "--split", "train=0.8,val=0.1,test=0.1", "--workers", "1"])
        assert res.exit_code == 0, res.output
    return out


def trained_run(tmp_path_factory) -> Path:
    """A tiny policy+value network trained for 4 epochs (8 positions per game each) on the sample."""
    data = sample_dataset(tmp_path_factory)
    run = tmp_path_factory.getbasetemp() / "models-run"
    if not (run / "agent.gotk").is_file():
        res = invoke(["train", "--data", str(data), "--out", str(run), *TINY, "--head", "both", "--epochs", "4",
                      "--log-every", "20", "--max-val-positions", "1500"])
        assert res.exit_code == 0, res.output
    return run


def tiny_agent_file(path: Path, size: int = 9, head: str = "both", encoder: str = "sevenplane", seed: int = 0) -> Path:
    """A real (untrained, seeded) agent package: resnet 1 block × 8 filters."""
    from gotk.encoders import get_encoder
    from gotk.nets import build_model, save_agent

    torch.manual_seed(seed)
    enc = get_encoder(encoder, size)
    model = build_model("resnet", enc.num_planes, size, head=head, blocks=1, filters=8)
    return save_agent(path, model, "resnet", {"blocks": 1, "filters": 8}, enc.describe())


def material_agent_file(path: Path, size: int = 9, scale: float = 0.3) -> Path:
    """A resnet whose weights are set by hand: a uniform policy and the value ``tanh(scale · (own stones −
    opponent stones))`` read off the sevenplane planes (stones are a capture's gain). A real agent package."""
    from gotk.encoders import get_encoder
    from gotk.nets import build_model, save_agent

    enc = get_encoder("sevenplane", size)
    model = build_model("resnet", enc.num_planes, size, head="both", blocks=1, filters=8)
    n = size * size
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.zero_()
                m.running_var.fill_(1.0)
                m.weight.fill_(1.0)
                m.bias.zero_()
        stem = model.stem[0].weight  # (8, 7, 3, 3): channel 0 = own stones, 1 = opponent stones
        stem[0, 0:3, 1, 1] = 1.0
        stem[1, 3:6, 1, 1] = 1.0
        model.blocks[0].b2.weight.zero_()  # the residual branch adds nothing: the block passes its input on
        conv, bn, _, _, fc1, _, fc2 = model.value_head
        conv.weight[0, 0, 0, 0] = 1.0
        conv.weight[0, 1, 0, 0] = -1.0
        bn.bias.fill_(1.0)  # own 2, empty 1, opponent 0 (all ≥ 0 through the ReLU)
        fc1.weight[0, :] = 1.0
        fc1.bias[0] = -n  # own − opponent
        fc1.weight[1, :] = -1.0
        fc1.bias[1] = n  # opponent − own
        fc2.weight[0, 0] = scale
        fc2.weight[0, 1] = -scale
    return save_agent(path, model, "resnet", {"blocks": 1, "filters": 8}, enc.describe())


SETTLED = [  # 5x5: Black owns the two left columns with three one-point eyes, White the three right ones
    ". B W . W",
    "B B W W W",
    ". B W . W",
    "B B W W W",
    ". B W . W",
]


def board(rows: list[str], to_play: int = BLACK, komi: float = 0.0, suicide: bool = False) -> GameState:
    size = len(rows)
    black, white = [], []
    for r, row in enumerate(rows):
        for c, ch in enumerate(row.split()):
            (black if ch == "B" else white if ch == "W" else []).append(coords.from_rc(r, c, size))
    return GameState(size, Rules(suicide=suicide), komi).setup(black, white, to_play=to_play)
