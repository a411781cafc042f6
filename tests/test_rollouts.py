"""Rollouts as the search's leaf evaluation (``gotk.search.rollouts``): the rollout value of hand-counted positions,
AlphaGo's mix of a value head and rollouts, Monte Carlo tree search without a network through the CLI, and the
one-line refusals of settings that cannot be searched."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from serve_helpers import make_agent
from test_playouts import SETTLED, board

from gotk.game.state import BLACK, WHITE, GameState
from gotk.nets.agent import load_agent
from gotk.search.config import SearchConfig, SearchSetupError
from gotk.search.core import Search
from gotk.search.evaluate import NetEvaluator
from gotk.search.rollouts import MixedEvaluator, RolloutEvaluator, make_evaluator

GOTK = [sys.executable, "-m", "gotk"]


@pytest.mark.parametrize("to_play, value", [(BLACK, -1.0), (WHITE, 1.0)])
def test_rollout_value_of_a_settled_position(to_play, value) -> None:
    """White's area is larger by 5: every playout says so, from the mover's view."""
    ev = RolloutEvaluator(5, playouts=16, seed=1)
    assert ev.value(board(SETTLED, to_play, komi=0.5)) == value
    leaves = ev.leaves(3)
    for row in range(3):
        ev.write(leaves, row, board(SETTLED, to_play, komi=0.5))
    probs, values = ev.evaluate_leaves(leaves, 3)  # two threads share the three leaves
    assert (values == value).all() and probs.shape == (3, 26) and np.allclose(probs.sum(axis=1), 1)
    with pytest.raises(ValueError, match="5x5"):
        ev.value(GameState(9))
    with pytest.raises(ValueError, match="5x5"):
        ev.write(leaves, 0, GameState(9))


def test_threads_do_not_change_the_values() -> None:
    """The batch's leaves shared among threads (the playouts release the GIL): the same values for a seed, run after
    run, and every thread's share played."""
    states = [GameState(9).play(p) for p in (10, 20, 30, 40, 50)]

    def values(threads: int) -> np.ndarray:
        ev = RolloutEvaluator(9, playouts=6, seed=4, threads=threads)
        leaves = ev.leaves(5)
        for i, st in enumerate(states):
            ev.write(leaves, i, st)
        return ev.evaluate_leaves(leaves, 5)[1]

    a, b = values(2), values(2)
    assert np.array_equal(a, b) and np.all(np.abs(a) <= 1) and len(set(a.tolist())) > 1
    assert np.all(np.abs(values(1)) <= 1)


def test_mixed_leaf_value_is_alphagos_mix(tmp_path: Path) -> None:
    agent = load_agent(make_agent(tmp_path / "a.gotk", size=9))
    states = [GameState(9), GameState(9).play(40), GameState(9).play(40).play(41)]
    net = NetEvaluator(agent, symmetries=False, seed=0)
    roll = RolloutEvaluator(9, playouts=8, seed=3)
    mixed = MixedEvaluator(NetEvaluator(agent, symmetries=False, seed=0), RolloutEvaluator(9, playouts=8, seed=3),
                           0.5)
    leaves, mleaves, rleaves = net.leaves(3), mixed.leaves(3), roll.leaves(3)
    for i, st in enumerate(states):
        net.write(leaves, i, st)
        roll.write(rleaves, i, st)
        mixed.write(mleaves, i, st)
    p_net, v_net = net.evaluate_leaves(leaves, 3)
    _, z = roll.evaluate_leaves(rleaves, 3)
    p_mix, v_mix = mixed.evaluate_leaves(mleaves, 3)
    assert np.allclose(p_mix, p_net) and np.allclose(v_mix, 0.5 * v_net + 0.5 * z)
    assert not np.allclose(z, 0)  # the rollouts said something
    # the settings choose the evaluator, in one place
    assert isinstance(make_evaluator(agent, None, SearchConfig()), NetEvaluator)
    assert isinstance(make_evaluator(agent, None, SearchConfig(leaf_lambda=0.5)), MixedEvaluator)
    assert isinstance(make_evaluator(None, None, SearchConfig()), RolloutEvaluator)
    # and the one search runs on each
    for ev in (mixed, RolloutEvaluator(9, seed=1)):
        search = Search(ev, SearchConfig(visits=40, batch=4, seed=1))
        search.set_position(GameState(9))
        search.run(visits=40)
        assert search.root_visits >= 40 and search.infos()


def test_mcts_beats_random_through_the_cli() -> None:
    cmd = [*GOTK, "match", "--agent", "mcts", "--visits", "300", "--opponent",
           " ".join([*GOTK, "gtp", "--random", "--seed", "2"]), "--size", "9", "--games", "2", "--seed", "1", "--json"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    import json

    report = json.loads(res.stdout)
    assert report["agent"] == "gotk-mcts-300v" and report["wins"] == 2


def test_gtp_with_mixed_leaves_and_mcts_genmove() -> None:
    for args in (["--agent", "kgs", "--visits", "12", "--lambda", "0.5", "--rollouts", "2"],
                 ["--agent", "mcts", "--visits", "60"]):
        res = subprocess.run([*GOTK, "gtp", *args, "--seed", "1"], input="boardsize 19\ngenmove b\ngenmove w\nquit\n",
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr
        moves = [line[2:] for line in res.stdout.splitlines() if line.startswith("= ") and line[2:].strip()]
        assert len(moves) == 2 and moves[0] != moves[1] and "pass" not in moves


@pytest.mark.parametrize("args, words", [
    (["--agent", "kgs", "--visits", "8", "--lambda", "1.5"], "--lambda must be from 0 to 1"),
    (["--agent", "kgs", "--visits", "8", "--rollouts", "0"], "--rollouts must be 1..10000"),
    (["--agent", "mcts"], "--agent mcts searches with rollouts"),
    (["--agent", "mcts", "--playouts", "0"], "give --playouts N (N >= 2)"),
    (["--agent", "mcts", "--playouts", "50", "--rollout-policy", "kgs-rollout", "--size", "9"],
     "the agent plays 19x19, not 9x9"),
    (["--agent", "mcts", "--visits", "8", "--value-agent", "kgs"], "has no network"),
    (["--agent", "kgs", "--lambda", "0.5"], "the search's leaf evaluation"),
])
def test_refusals_are_one_line_before_any_move(args, words) -> None:
    res = subprocess.run([*GOTK, "gtp", *args], input="genmove b\nquit\n", capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and words in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_rollout_evaluator_refuses_bad_settings() -> None:
    with pytest.raises(SearchSetupError, match="--rollouts"):
        RolloutEvaluator(9, playouts=0)
    with pytest.raises(SearchSetupError, match="--lambda"):
        SearchConfig(leaf_lambda=-0.1).validate()
