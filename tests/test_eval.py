"""``gotk eval``: report keys and consistency, SGF input, baselines, metric arithmetic, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import invoke, sample_dataset, trained_run

from gotk.train.evaluate import Metrics, empty_points, phase_index


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return sample_dataset(tmp_path_factory)


@pytest.fixture(scope="module")
def agent_path(tmp_path_factory) -> Path:
    return trained_run(tmp_path_factory) / "agent.gotk"


def _eval(*args: str) -> dict:
    res = invoke(["eval", *args, "--json", "--device", "cpu", "--threads", "1"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_eval_json_on_shards(agent_path: Path, dataset: Path) -> None:
    r = _eval("--agent", str(agent_path), "--data", str(dataset), "--split", "val")
    manifest = json.loads((dataset / "manifest.json").read_text())
    assert r["positions"] == manifest["splits"]["val"]["rows"]
    for key in ("top1", "top5", "nll", "by_phase", "baselines", "value_mse", "value_sign_accuracy"):
        assert key in r, key
    assert 0 < r["top1"] <= r["top5"] <= 1
    assert r["nll"] > 0
    assert 0 <= r["value_mse"] <= 4 and 0 <= r["value_sign_accuracy"] <= 1
    assert list(r["by_phase"]) == ["1-50", "51-150", "151+"]
    assert sum(p["positions"] for p in r["by_phase"].values()) == r["positions"]
    # the overall top-1 is the position-weighted mean of the phases'
    weighted = sum(p["top1"] * p["positions"] for p in r["by_phase"].values()) / r["positions"]
    assert weighted == pytest.approx(r["top1"])
    for name in ("frequency", "random"):
        b = r["baselines"][name]
        assert 0 < b["top1"] <= b["top5"] < 0.1
    capped = _eval("--agent", str(agent_path), "--data", str(dataset), "--split", "val", "--max-positions", "1000")
    assert capped["positions"] == 1000


def test_eval_on_sgf_archive(agent_path: Path) -> None:
    from gotk.data import TRAIN_ARCHIVE

    r = _eval("--agent", str(agent_path), "--data", str(TRAIN_ARCHIVE), "--max-positions", "1500")
    assert r["positions"] == 1500
    assert r["source"]["kind"] == "sgf" and r["source"]["games"] >= 5
    assert 0 < r["top1"] <= r["top5"]
    assert r["top1"] > r["baselines"]["frequency"]["top1"]
    assert "value_mse" in r


def test_text_report(agent_path: Path, dataset: Path) -> None:
    res = invoke(["eval", "--agent", str(agent_path), "--data", str(dataset), "--max-positions", "300",
                  "--device", "cpu"])
    assert res.exit_code == 0, res.output
    assert "top-1" in res.output and "baseline frequency" in res.output and "151+" in res.output


def test_refusals(agent_path: Path, dataset: Path, tmp_path: Path) -> None:
    from gotk.encoders import get_encoder
    from gotk.nets import build_model, save_agent

    enc = get_encoder("simple", 19)
    other = save_agent(tmp_path / "simple.gotk", build_model("resnet", enc.num_planes, 19, blocks=1, filters=4),
                       "resnet", {"blocks": 1, "filters": 4}, enc.describe())
    res = invoke(["eval", "--agent", str(other), "--data", str(dataset), "--device", "cpu"])
    assert res.exit_code == 2 and "encoded with 'sevenplane', the agent uses 'simple'" in res.output
    bad = tmp_path / "bad.gotk"
    bad.write_bytes(agent_path.read_bytes()[:-100])
    res = invoke(["eval", "--agent", str(bad), "--data", str(dataset), "--device", "cpu"])
    assert res.exit_code == 2 and "bad_agent" in res.output
    res = invoke(["eval", "--agent", str(agent_path), "--data", str(dataset), "--split", "nope", "--device", "cpu"])
    assert res.exit_code == 2 and "nope" in res.output


def test_metrics_arithmetic() -> None:
    m = Metrics(num_moves=10)  # a 3x3 board: 9 points + pass
    logp = np.log(np.array([
        [0.5, 0.2, 0.1, 0.05, 0.05, 0.04, 0.03, 0.02, 0.01, 0.0001],  # label 0: top-1
        [0.5, 0.2, 0.1, 0.05, 0.05, 0.04, 0.03, 0.02, 0.01, 0.0001],  # label 4: top-5, not top-1
        [0.5, 0.2, 0.1, 0.05, 0.05, 0.04, 0.03, 0.02, 0.01, 0.0001],  # label 9 (pass): neither
    ]))
    labels = np.array([0, 4, 9])
    m.update(labels, np.array([0, 60, 200]), logp, np.array([0.5, -0.5, 0.0]), np.array([1.0, 1.0, 0.0]),
             empty=np.array([9, 4, 2]))
    r = m.summary()
    assert r["positions"] == 3
    assert r["top1"] == pytest.approx(1 / 3) and r["top5"] == pytest.approx(2 / 3)
    assert r["nll"] == pytest.approx(-(logp[0, 0] + logp[1, 4] + logp[2, 9]) / 3)
    # value metrics skip the row with target 0 (unknown result)
    assert r["value_positions"] == 2
    assert r["value_mse"] == pytest.approx((0.25 + 2.25) / 2)
    assert r["value_sign_accuracy"] == pytest.approx(0.5)
    assert [p["positions"] for p in r["by_phase"].values()] == [1, 1, 1]
    assert r["baselines"]["frequency"]["top1"] == pytest.approx(1 / 3)
    # random: 1/empty for moves that are not a pass; the pass row counts 0
    assert r["baselines"]["random"]["top1"] == pytest.approx((1 / 9 + 1 / 4) / 3)
    assert r["baselines"]["random"]["top5"] == pytest.approx((5 / 9 + 1) / 3)
    assert list(phase_index(np.array([0, 49, 50, 149, 150, 400]))) == [0, 0, 1, 1, 2, 2]


@pytest.mark.parametrize("encoder", ["sevenplane", "simple", "oneplane", "alphago"])
def test_empty_points_match_the_board(encoder: str) -> None:
    """Empty points counted from the planes equal those of the replayed board."""
    from gotk.data import HELDOUT_ARCHIVE
    from gotk.encoders import get_encoder
    from gotk.game.state import GameState
    from gotk.sgf.reader import read_sgf
    from gotk.sources.archives import SgfSource, iter_sources

    enc = get_encoder(encoder, 19)
    src = next(s for s in iter_sources([HELDOUT_ARCHIVE]) if isinstance(s, SgfSource))
    rec = read_sgf(src.data, src.archive, src.member)[0]
    state = GameState.new(19)
    state.setup(rec.setup_black, rec.setup_white)
    feats, expected = [], []
    for color, point in rec.moves[:80]:
        state.to_play = color
        feats.append(enc.encode(state))
        expected.append(int((state.board == 0).sum()))
        state.play(point)
    got = empty_points(np.stack(feats), enc.describe())
    assert list(got) == expected


def test_value_report_calibration_and_baselines(agent_path: Path, dataset: Path, tmp_path: Path) -> None:
    """An agent with a value head: calibration table (its rows add up to the value positions), winner accuracy
    by phase, the always-0 baseline (MSE exactly 1) and the komi/handicap baseline, and the PNG plot."""
    plot = tmp_path / "cal.png"
    r = _eval("--agent", str(agent_path), "--data", str(dataset), "--split", "test", "--plot", str(plot))
    assert sum(row["positions"] for row in r["calibration"]) == r["value_positions"] > 0
    for row in r["calibration"]:
        lo, hi = (float(x) for x in row["bin"].split("-"))
        if row["positions"]:
            assert lo <= row["predicted"] <= hi and 0 <= row["observed"] <= 1
    assert 0 <= r["calibration_ece"] <= 1
    value = r["baselines"]["value"]
    assert value["always_0"]["value_mse"] == 1.0
    kh = value["komi_handicap"]
    # a few hundred KGS games: the group means stay small, so the MSE stays near 1 (noisy on ~50 test games)
    assert 0.5 < kh["value_mse"] < 1.5 and kh["value_mse"] == r["komi_handicap_mse"]
    for phase in r["by_phase"].values():
        assert 0 <= phase["value_sign_accuracy"] <= 1
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and r["calibration_plot"] == str(plot)


def test_calibration_and_komi_handicap_arithmetic() -> None:
    import pyarrow as pa

    from gotk.train.value_eval import Calibration, KomiHandicapBaseline

    cal = Calibration(bins=4)
    # win probabilities 0.1, 0.1, 0.6, 0.9 (values -0.8, -0.8, 0.2, 0.8); the 0-target row is ignored
    cal.update(np.array([-0.8, -0.8, 0.2, 0.8, 0.5]), np.array([-1, 1, 1, 1, 0]))
    t = cal.table()
    assert [row["positions"] for row in t] == [2, 0, 1, 1]
    assert t[0]["predicted"] == pytest.approx(0.1) and t[0]["observed"] == pytest.approx(0.5)
    assert cal.ece() == pytest.approx((2 * 0.4 + 1 * 0.4 + 1 * 0.1) / 4)

    # handicap-2 games that Black wins 3 times in 4; even games split evenly
    games = pa.table({"game_id": [f"{i:015x}" for i in range(8)],
                      "handicap": [2, 2, 2, 2, 0, 0, 0, 0], "komi": [0.5] * 4 + [6.5] * 4,
                      "winner": ["b", "b", "b", "w", "b", "w", None, "w"]})
    base = KomiHandicapBaseline.fit(games, prior=0.0)
    assert base.value(2, 0.5, 1) == pytest.approx(0.5) and base.value(2, 0.5, -1) == pytest.approx(-0.5)
    assert base.value(0, 6.5, 1) == pytest.approx(-1 / 3)  # b, w, w: the game without a winner is left out
    shrunk = KomiHandicapBaseline.fit(games, prior=4.0)
    assert 0 < shrunk.value(2, 0.5, 1) < 0.5  # pulled towards the coarser group's mean
    base.index_games(games)
    from gotk.datasets import game_index

    pred = base.predict(np.array([game_index("0" * 15), game_index(f"{5:015x}"), 12345]), np.array([1, -1, 1]))
    assert pred.tolist() == pytest.approx([0.5, 1 / 3, 0.0])
