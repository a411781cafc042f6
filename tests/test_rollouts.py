"""Rollouts as the search's leaf evaluation (``gotk.search.rollouts``): the rollout value of hand-counted positions,
AlphaGo's mix of a value head and rollouts, Monte Carlo tree search without a network through the CLI, and the
one-line refusals of settings that cannot be searched."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import SETTLED, board
from serve_helpers import make_agent

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


def test_threads_play_fixed_shares_from_their_own_generators() -> None:
    """The batch's leaves shared among threads (the playouts release the GIL): thread t plays leaves t, t + k, ...
    from its own generator (seed + 1000 t), so the values for a seed are the same run after run whatever the
    threads' timing, and each thread's share is exactly what one thread with that generator plays."""
    states = [GameState(9).play(p) for p in (10, 20, 30, 40, 50)]

    def values(threads: int, seed: int, which: list[int]) -> np.ndarray:
        ev = RolloutEvaluator(9, playouts=6, seed=seed, threads=threads)
        leaves = ev.leaves(len(which))
        for i, k in enumerate(which):
            ev.write(leaves, i, states[k])
        return ev.evaluate_leaves(leaves, len(which))[1]

    every = list(range(5))
    a, b = values(2, 4, every), values(2, 4, every)
    assert np.array_equal(a, b) and np.all(np.abs(a) <= 1) and len(set(a.tolist())) > 1
    assert np.array_equal(a[0::2], values(1, 4, [0, 2, 4]))  # thread 0's share, one thread, its generator
    assert np.array_equal(a[1::2], values(1, 4 + 1000, [1, 3]))  # thread 1's


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
    assert report["agent"].startswith("gotk-mcts-300v") and report["wins"] == 2


def test_gtp_with_mixed_leaves_and_mcts_genmove() -> None:
    for args in (["--agent", "kgs", "--visits", "12", "--lambda", "0.5", "--rollouts", "2"],
                 ["--agent", "mcts", "--visits", "60"]):
        res = subprocess.run([*GOTK, "gtp", *args, "--seed", "1"], input="boardsize 19\ngenmove b\ngenmove w\nquit\n",
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr
        moves = [line[2:] for line in res.stdout.splitlines() if line.startswith("= ") and line[2:].strip()]
        # two moves on the board, on two points (GTP vertices of 19x19: no I column), neither pass nor resign
        assert len(moves) == 2 and moves[0] != moves[1], res.stdout
        assert all(re.fullmatch(r"[A-HJ-T](1[0-9]|[1-9])", m.upper()) for m in moves), moves


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


def test_mcts_plays_the_shipped_pattern_policy_on_every_board_size_unless_asked_for_uniform() -> None:
    from gotk.play.factory import make_search_player

    player = make_search_player("mcts", SearchConfig(visits=20, seed=1))
    assert player.rollout_policy is not None and player.rollout_policy.any_size and player.board_size is None
    for size in (9, 13, 19):
        p = player.policy(GameState(size).play(size + 1))
        assert p.shape == (size * size + 1,) and abs(p.sum() - 1) < 1e-6 and p.max() > 2.0 / (size * size)
    uniform = make_search_player("mcts", SearchConfig(visits=20, seed=1), rollout_policy="uniform")
    assert uniform.rollout_policy is None and uniform.name == "gotk-mcts-20v"
    res = subprocess.run([*GOTK, "gtp", "--agent", "mcts", "--playouts", "30", "--seed", "1"],
                         input="boardsize 9\nclear_board\ngenmove b\nboardsize 13\nclear_board\ngenmove b\nquit\n",
                         capture_output=True, text=True, timeout=300)
    answers = [line for line in res.stdout.splitlines() if line.startswith(("=", "?"))]
    assert res.returncode == 0 and not any(a.startswith("?") for a in answers), res.stdout + res.stderr
    moves = [a[2:] for a in answers if a[2:].strip()]
    assert len(moves) == 2 and all(re.fullmatch(r"[A-HJ-T](1[0-9]|[1-9])", m.upper()) for m in moves), moves
