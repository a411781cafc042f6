"""Leela Zero's network in gotk: the ``leelazero`` encoder's planes, the ``leelaz`` model, ``gotk agent export --format
leela-zero``, and the exported file in the real ``leelaz`` (its ``heatmap`` against gotk's forward pass)."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from gotk import coords
from gotk.cli.main import app
from gotk.encoders import get_encoder
from gotk.export import leelaz_check as LC
from gotk.export.leelaz_weights import check_exportable, export_agent_weights, fold_conv_bn, weights_lines
from gotk.game.state import BLACK, WHITE, GameState
from gotk.nets.agent_file import save_agent
from gotk.nets.networks import build_model
from gotk.sgf.record import GameRecord

runner = CliRunner()


@pytest.fixture(scope="module")
def leelaz() -> str:
    """The ``leelaz`` executable, installed with apt-get (Debian's ``leela-zero``) when it is missing."""
    exe = LC.find_leelaz()
    if exe is None and shutil.which("apt-get") and os.geteuid() == 0:
        subprocess.run(["apt-get", "install", "-y", "-q", "leela-zero"], capture_output=True, timeout=600)
        exe = LC.find_leelaz()
    if exe is None:
        pytest.skip("leelaz is not installed and apt-get could not install leela-zero (not root, no apt-get, or "
                    "no package index)")
    return exe


def distinctive_model(blocks: int = 1, filters: int = 8, size: int = 19, head: str = "both", seed: int = 0):
    """A ``leelaz`` model with large random weights and batch-norm statistics: far from uniform outputs."""
    torch.manual_seed(seed)
    model = build_model("leelaz", 18, size, head=head, blocks=blocks, filters=filters)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.5 if p.dim() > 1 else 0.3)
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.normal_(0.0, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    return model.eval()


def save(path: Path, model, model_name: str = "leelaz", encoder: str = "leelazero", hparams=None) -> Path:
    enc = get_encoder(encoder, board_size=model.board_size)
    return save_agent(path, model, model_name, hparams or {"blocks": 1, "filters": 8}, enc.describe())


def real_records(count: int):
    from gotk.data import HELDOUT_ARCHIVE
    from gotk.sgf.reader import read_sgf
    from gotk.sources.archives import iter_sources

    out = []
    for src in iter_sources([HELDOUT_ARCHIVE]):
        if hasattr(src, "data"):
            out += [r for r in read_sgf(src.data) if r.size == 19 and not r.setup_black and r.num_moves >= 60]
        if len(out) >= count:
            break
    return out[:count]


# --- the encoder ------------------------------------------------------------------------------------------------


def test_planes_of_a_hand_made_position_with_a_capture_in_its_history():
    """5x5: B b5, W a5, B a4 takes a5; then white to move. T-1 still has the white stone the last move took."""
    size = 5
    b5, a5, a4, c3 = (coords.from_gtp(v, size) for v in ("B5", "A5", "A4", "C3"))
    moves = [(BLACK, b5), (WHITE, a5), (BLACK, a4)]
    state = GameState(size)
    for color, point in moves:
        state.play(point, color)
    enc = get_encoder("leelazero", board_size=size)
    assert enc.plane_names[:2] == ["own_stones_t0", "own_stones_t1"] and enc.plane_names[16:] == [
        "black_to_move", "white_to_move"]
    planes = enc.encode(state).reshape(18, -1)
    expected = np.zeros((18, size * size), dtype=np.uint8)
    expected[1, a5] = 1  # white (to move) at T-1: the stone a4 took
    expected[8, [b5, a4]] = 1  # black at T
    expected[9, b5] = expected[10, b5] = 1  # black at T-1, T-2; T-3 is the empty first position
    expected[17] = 1  # white to move
    assert np.array_equal(planes, expected)
    # the same position through the game loop, and as the mover's opponent sees it (colour overridden)
    rec = GameRecord(size=size, colors=np.array([c for c, _ in moves] + [WHITE], np.int8),
                     points=np.array([p for _, p in moves] + [c3], np.int16))
    game = enc.encode_game(rec)
    assert np.array_equal(game.features[3].reshape(18, -1), expected)
    other = enc.encode(state, color=BLACK).reshape(18, -1)
    assert np.array_equal(other[:8], expected[8:16]) and np.array_equal(other[8:16], expected[:8])
    assert other[16].all() and not other[17].any()


def test_history_spans_moves_that_give_no_row():
    """Skipped first moves and passes give no row but are still in the history of the rows after them, and a
    history longer than eight positions keeps the last eight."""
    rec = real_records(1)[0]
    enc = get_encoder("leelazero")
    full = enc.encode_game(rec, include_passes=True)
    part = enc.encode_game(rec, include_passes=True, skip_first=20)
    assert np.array_equal(part.features, full.features[20:])
    size = 9
    moves = [(BLACK, 10), (WHITE, 81), (BLACK, 20), (WHITE, 81), (BLACK, 30), (WHITE, 40), (BLACK, 81),
             (WHITE, 50), (BLACK, 60), (WHITE, 70), (BLACK, 11)]
    rec = GameRecord(size=size, colors=np.array([c for c, _ in moves], np.int8),
                     points=np.array([p for _, p in moves], np.int16))
    small = get_encoder("leelazero", board_size=size)
    with_passes = small.encode_game(rec, include_passes=True)
    without = small.encode_game(rec)
    keep = [i for i, (_, p) in enumerate(moves) if p != 81]
    assert np.array_equal(without.features, with_passes.features[keep])
    last = with_passes.features[-1]  # position 10, black to move: its T-7 is position 3 (after B 10, W pass, B 20)
    assert last[7].reshape(-1)[[10, 20]].all() and last[7].sum() == 2 and last[15].sum() == 0


# --- the model and its weights file -----------------------------------------------------------------------------


def test_fold_conv_bn_computes_what_pytorch_does():
    model = distinctive_model()
    conv, bn = model.stem[0], model.stem[1]
    x = torch.randn(2, 18, 19, 19)
    want = bn(conv(x)).double()
    w, b, mean, var = fold_conv_bn(conv, bn)
    z = torch.nn.functional.conv2d(x.double(), torch.as_tensor(w), padding=1)
    got = (z + torch.as_tensor(b)[:, None, None] - torch.as_tensor(mean)[:, None, None]) / torch.sqrt(
        torch.as_tensor(var)[:, None, None] + 1e-5)
    assert torch.allclose(got, want, atol=1e-4)


def test_weights_file_has_leela_zero_layout(tmp_path):
    model = distinctive_model(blocks=2, filters=4)
    agent = save(tmp_path / "a.gotk", model, hparams={"blocks": 2, "filters": 4})
    info = export_agent_weights(agent, tmp_path / "w.txt.gz")
    lines = gzip.decompress((tmp_path / "w.txt.gz").read_bytes()).decode().splitlines()
    assert lines == weights_lines(model) and info["lines"] == len(lines)
    assert lines[0] == "1" and len(lines) == 1 + 4 + 8 * 2 + 14  # what load_v1_network counts
    sizes = [len(line.split()) for line in lines[1:]]
    assert sizes[:4] == [4 * 18 * 9, 4, 4, 4] and sizes[4:8] == [4 * 4 * 9, 4, 4, 4]
    assert sizes[-14:] == [2 * 4, 2, 2, 2, 362 * 722, 362, 1 * 4, 1, 1, 1, 256 * 361, 256, 256, 1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.gotk", "w.txt.gz"]  # no temp file left


def bad_agents(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    return {
        "model": (save(tmp_path / "resnet.gotk", build_model("resnet", 18, 19, blocks=1, filters=4), "resnet",
                       hparams={"blocks": 1, "filters": 4}), "model 'resnet'"),
        "encoder": (save(tmp_path / "seven.gotk", build_model("leelaz", 7, 19, blocks=1, filters=4),
                         encoder="sevenplane", hparams={"blocks": 1, "filters": 4}), "encoder 'sevenplane'"),
        "size": (save(tmp_path / "nine.gotk", build_model("leelaz", 18, 9, blocks=1, filters=4),
                      hparams={"blocks": 1, "filters": 4}), "board size 9"),
        "value": (save(tmp_path / "policy.gotk", build_model("leelaz", 18, 19, head="policy", blocks=1, filters=4),
                       hparams={"blocks": 1, "filters": 4}), "no value head"),
    }


def test_export_refuses_an_agent_leela_zero_cannot_run_in_one_line(tmp_path):
    for kind, (path, words) in bad_agents(tmp_path).items():
        out = tmp_path / f"{kind}.txt.gz"
        res = runner.invoke(app, ["agent", "export", str(path), "--format", "leela-zero", "-o", str(out)])
        assert res.exit_code == 2, (kind, res.output)
        lines = res.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], (kind, res.output)
        assert "Traceback" not in res.output and not out.exists()
    res = runner.invoke(app, ["agent", "export", str(tmp_path / "nine.gotk"), "--format", "katago", "-o", "x"])
    assert res.exit_code == 2 and res.output.strip().count("\n") == 0 and "leela-zero" in res.output
    with pytest.raises(Exception, match="no policy head"):
        check_exportable({"model": {"name": "leelaz", "head": "value"}, "encoder": {"name": "leelazero"},
                          "board_size": 19})


# --- against the real leelaz ------------------------------------------------------------------------------------


def test_leelaz_heatmap_matches_gotk_forward_pass(leelaz, tmp_path):
    """The CLI's file in ``leelaz``: every probability within the heatmap's print resolution, the same top move,
    the winrate within 0.5 points, on positions of real games (history, captures, both colours to move)."""
    model = distinctive_model(blocks=1, filters=8, seed=3)
    agent = save(tmp_path / "a.gotk", model)
    weights = tmp_path / "weights.txt.gz"
    res = runner.invoke(app, ["agent", "export", str(agent), "--format", "leela-zero", "-o", str(weights)])
    assert res.exit_code == 0, res.output
    report = LC.check_agent(agent, weights, real_records(2), positions=16, every=7, exe=leelaz)
    assert report.positions == 16 and not report.failures
    assert report.mean_top_prob > 0.1  # outputs far from uniform (1/362): the check means something
    assert report.top_agree == report.positions
    assert report.points_outside == 0 and report.max_abs_diff < 1e-3
    assert report.max_winrate_diff < 0.5
