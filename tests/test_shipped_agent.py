"""The agents gotk ships (``kgs``, ``kgs-lz``): float16 files inside the package that every command takes by name,
``gotk agent convert`` that writes such files, and ``kgs-lz`` exported into the real ``leelaz``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from test_leelaz_net import distinctive_model, leelaz, real_records, save  # noqa: F401 (leelaz: a fixture)
from typer.testing import CliRunner

from gotk.cli.main import app
from gotk.export import leelaz_check as LC
from gotk.nets.agent import load_agent
from gotk.nets.agent_file import BUILTIN_AGENTS, BUILTIN_DIR, AgentError, read_agent_files, resolve_agent

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()


def _dtypes(path: Path) -> set[str]:
    """The dtypes in the agent's safetensors header, read with zipfile and json (not through gotk)."""
    import zipfile

    with zipfile.ZipFile(path) as z:
        blob = z.read("weights.safetensors")
    n = int.from_bytes(blob[:8], "little")
    return {v["dtype"] for k, v in json.loads(blob[8:8 + n]).items() if k != "__metadata__"}


def _gotk(*args: str, cwd: Path, stdin: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "gotk", *args], cwd=cwd, input=stdin, capture_output=True,
                          text=True, timeout=timeout, env=env)


NETWORKS = sorted(n for n in BUILTIN_AGENTS if n != "kgs-rollout")


def test_kgs_rollout_is_the_fast_rollout_policy_learnt_from_the_same_games():
    from gotk.train.rollout import load_rollout_policy

    path = resolve_agent("kgs-rollout")
    assert path == BUILTIN_DIR / "kgs-rollout.gotk" and path.stat().st_size <= 200_000 and _dtypes(path) == {"F16"}
    pol = load_rollout_policy("kgs-rollout")
    assert pol.board_size == 19 and pol.name == "kgs-rollout"
    # AlphaGo's rollout policy: 24.2% on held-out KGS games; this one measured on the 2017-03 games (BENCHMARKS.md)
    assert pol.meta["metrics"]["test_top1"] > 0.242 and pol.meta["metrics"]["top1"] > 0.242
    with pytest.raises(AgentError, match="not a network"):
        load_agent("kgs-rollout")


@pytest.mark.parametrize("name", NETWORKS)
def test_the_builtin_agents_ship_in_the_package_as_float16_under_5_mb(name):
    path = resolve_agent(name)
    assert path == BUILTIN_DIR / BUILTIN_AGENTS[name] and path.is_file()
    assert path.stat().st_size <= 5_000_000
    assert _dtypes(path) <= {"F16", "I64"} and "F16" in _dtypes(path)  # I64: batch norm's step counters
    agent = load_agent(name)
    assert agent.meta["model"]["head"] == "both" and agent.board_size == 19
    assert next(agent.model.parameters()).dtype == torch.float32  # float16 on disk, float32 in play
    assert agent.meta["metrics"]["val_top1"] > 0.40  # trained on the KGS archives, measured on held-out games


def test_kgs_lz_is_leela_zeros_network_and_kgs_the_stronger_one():
    lz, kgs = load_agent("kgs-lz").meta, load_agent("kgs").meta
    assert lz["model"]["name"] == "leelaz" and lz["encoder"]["name"] == "leelazero"
    assert resolve_agent("kgs") != resolve_agent("kgs-lz")
    # kgs is the strongest CPU agent: better on held-out games on both heads (docs/recipes.md, (c))
    assert kgs["metrics"]["val_top1"] > lz["metrics"]["val_top1"]
    assert kgs["metrics"]["val_value_mse"] < lz["metrics"]["val_value_mse"]


def test_the_wheel_carries_the_shipped_agent(tmp_path):
    """What ``pip install`` installs: the wheel built from this tree holds the agent file, byte for byte."""
    import zipfile

    pytest.importorskip("setuptools")
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--no-build-isolation", "-q",
                          "-w", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    (wheel,) = tmp_path.glob("gotk-*.whl")
    with zipfile.ZipFile(wheel) as z:
        for name, file in BUILTIN_AGENTS.items():
            assert z.read(f"gotk/data/agents/{file}") == resolve_agent(name).read_bytes()


def test_kgs_plays_and_analyses_over_gtp_from_any_folder(tmp_path):
    commands = "boardsize 19\nkomi 7.5\nplay B Q16\nplay W D4\ngenmove B\nlz-genmove_analyze W 1\nquit\n"
    res = _gotk("gtp", "--agent", "kgs", "--visits", "16", cwd=tmp_path, stdin=commands)
    assert res.returncode == 0, res.stderr[-2000:]
    answers = [a for a in res.stdout.split("\n\n") if a.strip()]
    assert len(answers) == 7 and all(a.startswith("=") for a in answers), res.stdout
    assert answers[4].split()[-1][0] in "ABCDEFGHJKLMNOPQRST"  # a move, not a pass or a resignation
    assert "info move" in answers[5] and "play " in answers[5]


def test_a_file_named_kgs_wins_over_the_builtin_and_unknown_names_list_the_builtins(tmp_path):
    mine = save(tmp_path / "kgs", distinctive_model(blocks=1, filters=8))
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        assert resolve_agent("kgs") == Path("kgs")
        meta, _ = read_agent_files("kgs")
        assert meta["model"]["hparams"] == {"blocks": 1, "filters": 8} and mine.is_file()
    finally:
        os.chdir(cwd)
    with pytest.raises(AgentError, match="built-in agents: kgs, kgs-human, kgs-lz"):
        load_agent(tmp_path / "kgz")
    res = _gotk("gtp", "--agent", "kgz", cwd=tmp_path, stdin="quit\n", timeout=120)
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert "kgz" in res.stderr and "built-in agents: kgs, kgs-human, kgs-lz" in res.stderr


def test_serve_names_the_builtin_agent():
    from gotk.serve.agents import load_slots

    slots = load_slots(["kgs"])
    assert [s.ident for s in slots[:2]] == ["random", "mcts"]  # the built-in players, then the files
    assert [s.name for s in slots[2:]] == ["kgs · resnet 4x48 · 19x19"]
    assert slots[2].size == 19 and slots[2].has_value


def test_convert_writes_float16_and_back_keeping_everything_else(tmp_path):
    hparams = {"blocks": 2, "filters": 16}
    src = save(tmp_path / "a.gotk", distinctive_model(**hparams, seed=5), hparams=hparams)
    half, full = tmp_path / "h.gotk", tmp_path / "f.gotk"
    res = runner.invoke(app, ["agent", "convert", str(src), "-o", str(half)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["agent", "convert", str(half), "--fp32", "-o", str(full)])
    assert res.exit_code == 0, res.output
    assert _dtypes(src) == {"F32", "I64"} and _dtypes(half) == {"F16", "I64"} and _dtypes(full) == {"F32", "I64"}
    assert half.stat().st_size < 0.6 * src.stat().st_size
    (m0, t0), (m1, t1) = read_agent_files(src), read_agent_files(half)
    for key in ("model", "encoder", "board_size", "num_planes", "metrics"):
        assert m0[key] == m1[key]
    for k, v in t0.items():  # each weight is its float16 rounding
        assert torch.equal(t1[k], v.half() if v.is_floating_point() else v)
    a, b = load_agent(src), load_agent(half)
    from gotk.game.state import GameState

    state = GameState(19)
    for move in (72, 288, 60):
        state.play(move)
    pa, pb = a.policy(state), b.policy(state)
    assert int(np.argmax(pa)) == int(np.argmax(pb)) and np.abs(pa - pb).max() < 0.01
    assert abs(a.value(state) - b.value(state)) < 0.01


def test_convert_refuses_weights_that_overflow_float16_in_one_line(tmp_path):
    model = distinctive_model(blocks=1, filters=8)
    with torch.no_grad():
        next(model.parameters())[0].fill_(1e6)
    src = save(tmp_path / "big.gotk", model)
    res = runner.invoke(app, ["agent", "convert", str(src), "-o", str(tmp_path / "out.gotk")])
    assert res.exit_code == 2 and "overflow float16" in res.output
    assert not (tmp_path / "out.gotk").exists()


def test_convert_sets_and_removes_search_constants_and_refuses_bad_ones(tmp_path):
    hparams = {"blocks": 1, "filters": 8}
    src = save(tmp_path / "a.gotk", distinctive_model(**hparams, seed=3), hparams=hparams)
    tuned, less = tmp_path / "t.gotk", tmp_path / "l.gotk"
    res = runner.invoke(app, ["agent", "convert", str(src), "-o", str(tuned), "--search", "batch=1",
                              "--search", "c_puct=1.6", "--search", "fpu=0.5"])
    assert res.exit_code == 0 and "search batch=1, c_puct=1.6, fpu=0.5" in res.output, res.output
    assert read_agent_files(tuned)[0]["search"] == {"batch": 1, "c_puct": 1.6, "fpu": 0.5}
    res = runner.invoke(app, ["agent", "convert", str(tuned), "-o", str(less), "--search", "fpu=default"])
    assert res.exit_code == 0, res.output
    meta, tensors = read_agent_files(less)
    assert meta["search"] == {"batch": 1, "c_puct": 1.6}
    assert all(torch.equal(v, tensors[k]) for k, v in read_agent_files(tuned)[1].items())  # fp16 → fp16: exact
    for bad, says in ((["batch=0"], "batch must be 1..1024"), (["c_puct=x"], "c_puct takes a number"),
                      (["batch=2.5"], "batch takes an integer"), (["depth=3"], "KEY one of search, batch, c_puct, fpu"),
                      (["fpu"], "expected KEY=VALUE"), (["fpu=3"], "fpu must be in 0..2")):
        out = tmp_path / "bad.gotk"
        res = runner.invoke(app, ["agent", "convert", str(src), "-o", str(out), *sum((["--search", b] for b in bad),
                                                                                    [])])
        assert res.exit_code == 2 and says in res.output and len(res.output.strip().splitlines()) == 1, res.output
        assert not out.exists()


SHIPPED_SEARCH = {"kgs": {"batch": 1, "c_puct": 1.6, "fpu": 0.5},  # measured against GNU Go
                  "kgs-lz": {"batch": 1, "c_puct": 1.6, "fpu": 0.5, "lcb": 0.1}}  # measured against leelaz


@pytest.mark.parametrize("name", sorted(SHIPPED_SEARCH))
def test_the_builtin_agents_search_with_their_own_constants(name):
    """The shipped agents that search carry the search constants they were measured with (docs/recipes.md, (c));
    kgs-human, conditioned on metadata, plays as a profile and does not search."""
    from gotk.cli.player_options import PlayerOptions

    expected = {"lcb": 0.0, **SHIPPED_SEARCH[name]}
    assert read_agent_files(resolve_agent(name))[0]["search"] == SHIPPED_SEARCH[name]
    cfg = PlayerOptions(visits=16).make_player(name, seed=1).search.cfg
    assert {k: getattr(cfg, k) for k in expected} == expected


@pytest.mark.slow
def test_kgs_lz_exports_to_weights_the_real_leelaz_plays_the_same(leelaz, tmp_path):  # noqa: F811
    weights = tmp_path / "kgs-lz.txt.gz"
    res = runner.invoke(app, ["agent", "export", "kgs-lz", "--format", "leela-zero", "-o", str(weights)])
    assert res.exit_code == 0, res.output
    report = LC.check_agent("kgs-lz", weights, real_records(2), positions=12, every=9, exe=leelaz)
    assert report.positions == 12 and not report.failures
    assert report.top_agree == report.positions and report.points_outside == 0
    assert report.max_winrate_diff < 0.5


def test_kgs_human_is_kgs_conditioned_on_who_plays():
    """kgs-human: the kgs network with KataGo's metadata encoder, fine-tuned on the KGS archives with their
    metadata; it records what it learnt from, and the profiles it did not learn are answered with the nearest."""
    from gotk.encoders import metadata_inputs as MI
    from gotk.game.state import GameState

    human, kgs = load_agent("kgs-human"), load_agent("kgs")
    assert human.num_metadata == 192 and human.meta["metadata"]["layout"] == "katago-sgfmetadata-v1"
    assert {k: human.meta["encoder"][k] for k in ("name", "version", "options")} == \
        {k: kgs.meta["encoder"][k] for k in ("name", "version", "options")}
    assert human.meta["model"] == kgs.meta["model"]
    trained = human.meta["trained_on"]
    assert set(trained["sources"]) == {"kgs"} and trained["positions"] > 1_000_000
    assert MI.nearest_profile("rank_5d", trained) == ("rank_5d", None)
    assert MI.nearest_profile("proyear_1990", trained)[0] == "rank_9d"  # no professional games in the archives
    state = GameState(19)
    for p in (72, 288, 60):
        state.play(p)
    weak, strong = human.policy(state, "rank_1d"), human.policy(state, "rank_9d")
    assert not np.allclose(weak, strong)
    assert abs(weak.sum() - 1) < 1e-6 and human.meta["metrics"]["val_top1"] > 0.40
