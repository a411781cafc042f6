"""The komi/handicap value baseline an agent file records: fit on the training games at train time, used by
``gotk eval`` on a held-out dataset with no train split, and compared with the value head's validation MSE so
that ``gotk gtp``, ``gotk match`` and ``gotk serve`` warn about a search leaning on a useless value head."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import invoke, sample_dataset, trained_run

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return sample_dataset(tmp_path_factory)


@pytest.fixture(scope="module")
def agent_path(tmp_path_factory) -> Path:
    return trained_run(tmp_path_factory) / "agent.gotk"


@pytest.fixture(scope="module")
def only_test_split(tmp_path_factory) -> Path:
    """The built-in held-out archive encoded as its own dataset: one split, ``test``."""
    from gotk.data import HELDOUT_ARCHIVE

    out = tmp_path_factory.mktemp("held-out") / "test"
    res = invoke(["encode", str(HELDOUT_ARCHIVE), "--encoder", "sevenplane", "--out", str(out), "--split", "test=1",
                  "--workers", "1", "--no-progress"])
    assert res.exit_code == 0, res.output
    return out


def with_meta(src: Path, dst: Path, change) -> Path:
    """A copy of agent file ``src`` whose agent.json went through ``change(meta)`` (the weights are untouched,
    so the copy loads like the original)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == "agent.json":
                meta = json.loads(data)
                change(meta)
                data = json.dumps(meta).encode()
            zout.writestr(info.filename, data)
    return dst


def _eval_json(*args: str) -> dict:
    res = invoke(["eval", *args, "--json", "--device", "cpu", "--threads", "1", "--no-plot"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_agent_records_its_baseline_and_both_validation_mses(agent_path: Path, dataset: Path) -> None:
    from gotk.nets import load_agent
    from gotk.train.value_eval import KomiHandicapBaseline

    meta = load_agent(agent_path).meta
    rec = meta["value_baseline"]
    assert rec["fit_on"] == "train"
    assert rec["val_value_mse"] == meta["metrics"]["val_value_mse"]
    assert rec["val_komi_handicap_mse"] == meta["metrics"]["val_komi_handicap_mse"]
    assert all(math.isfinite(rec[k]) and 0 < rec[k] < 4 for k in ("val_value_mse", "val_komi_handicap_mse"))
    # the record is the baseline fit on the dataset's train split, group for group
    from gotk.train.evaluate import baseline_games, fit_baseline

    refit = fit_baseline(baseline_games(dataset), ["train"])
    stored = KomiHandicapBaseline.from_dict(rec)
    for colour in (1, -1):
        for handicap, komi in ((0, 6.5), (0, 0.5), (2, 0.5), (5, 0.0)):
            assert stored.value(handicap, komi, colour) == pytest.approx(refit.value(handicap, komi, colour))


def test_eval_on_a_test_only_dataset_uses_the_recorded_baseline(agent_path: Path, only_test_split: Path,
                                                                 tmp_path: Path) -> None:
    r = _eval_json("--agent", str(agent_path), "--data", str(only_test_split), "--split", "test")
    assert r["positions"] > 0 and "notes" not in r
    kh = r["baselines"]["value"]["komi_handicap"]
    assert 0.5 < kh["value_mse"] < 1.5
    # an agent file without the record: one note says why the baseline is left out, no traceback
    bare = with_meta(agent_path, tmp_path / "bare.gotk", lambda m: m.pop("value_baseline"))
    r = _eval_json("--agent", str(bare), "--data", str(only_test_split), "--split", "test", "--max-positions", "500")
    assert "komi_handicap" not in r["baselines"]["value"] and r["value_mse"] is not None
    assert len(r["notes"]) == 1 and "komi/handicap baseline left out" in r["notes"][0]
    res = invoke(["eval", "--agent", str(bare), "--data", str(only_test_split), "--split", "test", "--max-positions",
                  "500", "--device", "cpu", "--no-plot"])
    assert res.exit_code == 0 and "Traceback" not in res.output
    assert "komi/handicap baseline left out" in res.output


def test_eval_input_errors_are_one_clear_line(agent_path: Path, dataset: Path, tmp_path: Path) -> None:
    res = invoke(["eval", "--agent", str(agent_path), "--data", str(tmp_path / "no" / "such"), "--device", "cpu"])
    assert res.exit_code == 2
    assert "no such dataset folder, SGF file or archive" in res.output and "no positions" not in res.output
    from gotk.encoders import get_encoder
    from gotk.nets import build_model, save_agent

    enc = get_encoder("simple", 19)
    other = save_agent(tmp_path / "simple.gotk", build_model("resnet", enc.num_planes, 19, blocks=1, filters=4),
                       "resnet", {"blocks": 1, "filters": 4}, enc.describe())
    res = invoke(["eval", "--agent", str(other), "--data", str(dataset), "--device", "cpu"])
    assert res.exit_code == 2
    assert "the data was encoded with 'sevenplane', the agent uses 'simple'" in res.output


def _weak(meta: dict) -> None:
    rec = meta["value_baseline"]
    rec["val_value_mse"] = rec["val_komi_handicap_mse"] + 0.01


def test_a_value_head_no_better_than_the_baseline_is_warned_about(agent_path: Path, tmp_path: Path) -> None:
    from gotk.nets import load_agent
    from gotk.nets.agent import value_head_warning

    good = with_meta(agent_path, tmp_path / "good.gotk", lambda m: m["value_baseline"].update(
        val_value_mse=0.5, val_komi_handicap_mse=0.9))
    weak = with_meta(agent_path, tmp_path / "weak.gotk", _weak)
    assert value_head_warning(load_agent(good)) is None
    line = value_head_warning(load_agent(weak))
    assert line and "no better than the komi/handicap baseline" in line and "\n" not in line

    def gtp(agent: Path, *extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "gotk", "gtp", "--agent", str(agent), *extra],
                              input="name\nquit\n", capture_output=True, text=True, timeout=120, cwd=REPO)

    searching = gtp(weak, "--visits", "8")
    assert searching.returncode == 0 and searching.stderr.count("warning:") == 1, searching.stderr
    assert "no better than the komi/handicap baseline" in searching.stderr
    assert gtp(weak).stderr.count("warning:") == 0  # the policy alone relies on no value head
    assert gtp(good, "--visits", "8").stderr.count("warning:") == 0
    # gotk serve: the agent's description carries the line
    from gotk.serve.agents import load_slots

    slots = load_slots([weak, good])
    assert [s.describe()["warning"] is not None for s in slots] == [False, False, True, False]  # random, mcts, ...


def synthetic_games(folder: Path, games: int, black_always: bool, seed: int = 0) -> Path:
    """Real 9x9 SGF records of random moves in which the winner is known from the board: the loser passes at 60 %
    of its turns, so the winner has more stones (the material on the planes, from the player to move's view),
    while komi and colour say nothing (winners alternate: the komi/handicap baseline is useless). With
    ``black_always`` Black wins every game instead: the colour alone (the baseline) predicts every outcome."""
    import numpy as np

    from gotk.game.state import BLACK, WHITE, GameState
    from gotk.sgf.writer import game_sgf

    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(games):
        state = GameState(9, komi=7.5)
        winner = BLACK if black_always or i % 2 == 0 else WHITE
        for _ in range(int(rng.integers(16, 40))):
            if state.to_play != winner and rng.random() < 0.6:
                state.play(state.pass_point)
                continue
            legal = state.legal_moves()
            state.play(int(rng.choice(legal[legal != state.pass_point])))
        result = "B+R" if winner == BLACK else "W+R"
        (folder / f"g{i:04d}.sgf").write_text(game_sgf(9, 7.5, "b", "w", result, list(state.history)))
    return folder


def _train_value(tmp_path: Path, name: str, black_always: bool, steps: int) -> tuple[str, dict]:
    """``gotk encode`` of the synthetic games, a tiny value network trained ``steps`` steps: the summary printed and
    the agent's value_baseline record."""
    from gotk.nets.agent_file import read_agent_files

    data = tmp_path / f"{name}-data"
    res = invoke(["encode", str(synthetic_games(tmp_path / name, 300, black_always)), "--encoder", "sevenplane",
                  "--board-size", "9", "--split", "train=0.8,val=0.2", "--out", str(data), "--workers", "1",
                  "--no-progress"])
    assert res.exit_code == 0, res.output
    run = tmp_path / f"{name}-run"
    res = invoke(["train", "--data", str(data), "--out", str(run), "--model", "resnet", "--blocks", "1", "--filters",
                  "16", "--head", "value", "--batch-size", "64", "--optimizer", "adam", "--lr", "3e-3", "--max-steps",
                  str(steps), "--threads", "1", "--no-progress", "--device", "cpu"])
    assert res.exit_code == 0, res.output
    return res.output, read_agent_files(run / "agent.gotk")[0]["value_baseline"]


def test_train_summary_warns_about_a_value_head_no_better_than_the_baseline(tmp_path: Path) -> None:
    """Real tiny trainings: a head that learned the material signal ends far below the useless baseline and gets no
    warning; a head trained two steps on games Black always wins (the colour alone, the baseline, knows every
    outcome) ends above it, and the summary says so in the line gotk gtp warns with."""
    out, rec = _train_value(tmp_path, "learnable", black_always=False, steps=100)
    assert rec["val_value_mse"] < 0.7 < 0.9 < rec["val_komi_handicap_mse"], rec
    assert "warning:" not in out
    out, rec = _train_value(tmp_path, "colour", black_always=True, steps=2)
    assert rec["val_komi_handicap_mse"] < 0.1 < 0.5 < rec["val_value_mse"], rec
    lines = [line for line in out.splitlines() if line.startswith("warning:")]
    assert len(lines) == 1 and "no better than the komi/handicap baseline" in lines[0], out
    assert f"{rec['val_value_mse']:.4f}" in lines[0] and f"{rec['val_komi_handicap_mse']:.4f}" in lines[0]

