"""The one search core: its plugged-in parts (Gumbel at play time, the pass rule, batching), leaves reached by
play/undo without copies, tree reuse in self-play's fast searches, and an agent played with the search it was
trained with (agent.json ``search``) through ``gotk gtp`` and ``gotk zero``'s evaluations."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from gotk import coords
from gotk.game.state import BLACK, GameState
from gotk.search import NetEvaluator, Search, SearchConfig, SearchPlayer, SearchSetupError
from gotk.search import tree as T
from gotk.search.core import candidates
from tests import test_search as base
from tests.test_search import pts

agent_path, agent, material = base.agent_path, base.agent, base.material  # the same module-scoped fixtures


def _capture_position() -> GameState:
    return GameState(9).setup(black=pts("B3", "C2", "D2", "E2", "C4", "D4", "E4"), white=pts("C3", "D3", "E3"),
                              to_play=BLACK)


@pytest.mark.parametrize("batch", [1, 8])
def test_gumbel_at_play_time_finds_the_capture_and_keeps_the_invariants(material, batch) -> None:
    """``--search gumbel`` in a player: the capture only the search sees is the move played and the first of the
    analysis; visits add up and no virtual visit is left, with one walk in flight or eight. (The agent's policy is
    uniform: the root's Gumbel noise is what brings the capture among the moves considered.)"""
    cfg = SearchConfig(visits=200, batch=batch, search="gumbel", seed=0, resign_threshold=None, gumbel_scale=1.0)
    player = SearchPlayer(material, config=cfg)
    state = _capture_position()
    move = player.choose(state)
    assert coords.to_gtp(move, 9) == "F3"
    search = player.search
    assert search.infos()[0].move == move
    tree = search.tree
    assert search.root_visits == 200 and tree.N[tree.children(0)].sum() == 199
    assert not tree.VL[: tree.size].any() and not (tree.status[: tree.size] == T.PENDING).any()
    for node in np.flatnonzero(tree.status[: tree.size] == T.EXPANDED):
        assert tree.N[node] == 1 + tree.N[tree.children(node)].sum()
    target = search.policy_target()
    assert target.sum() == pytest.approx(1.0) and tree.move[tree.children(0)][np.argmax(target)] == move
    assert player.name.endswith("gumbel200v")


def test_gumbel_plays_without_noise_and_self_play_explores_with_it(agent) -> None:
    """A Gumbel player (gtp, match, analysis, gotk zero's evaluations) picks its move without the root's Gumbel
    noise, so different seeds play the same move; with the noise self-play explores with, they do not."""
    from gotk.selfplay.config import SelfPlayConfig

    def moves(**kw) -> set[int]:
        return {SearchPlayer(agent, config=SearchConfig(visits=16, search="gumbel", symmetries=False, seed=s,
                                                        resign_threshold=None, **kw)).choose(_capture_position())
                for s in range(6)}

    assert len(moves()) == 1
    assert len(moves(gumbel_scale=1.0)) > 1
    assert SelfPlayConfig.make(size=9).search_config().gumbel_scale == 1.0


def test_gumbel_halving_visits_the_considered_moves_by_the_schedule(agent) -> None:
    """Sequential halving at the root: with m considered moves, exactly m root children are visited, and the
    visits of the others stay 0 (the schedule, not PUCT, picks the root child)."""
    search = Search(NetEvaluator(agent, seed=1), SearchConfig(visits=65, batch=1, search="gumbel", considered=8,
                                                              seed=1))
    search.set_position(GameState(9))
    search.run(visits=65)
    n = search.tree.N[search.tree.children(0)]
    assert (n > 0).sum() == 8 and n.sum() == 64
    top = np.sort(n)[::-1]
    assert top[0] - top[1] <= 1 and top[1] > top[2]  # the last two candidates share the last phases


def test_the_pass_rule_sets_the_root_children(agent) -> None:
    state = GameState(9)
    assert state.pass_point not in candidates(state, "answer")
    assert candidates(state, "always")[-1] == state.pass_point
    for rule, has_pass in (("answer", False), ("always", True)):
        search = Search(NetEvaluator(agent, seed=0), SearchConfig(visits=16, pass_rule=rule))
        search.set_position(state)
        search.run(visits=16)
        assert (state.pass_point in search.tree.move[search.tree.children(0)]) == has_pass, rule
    state.play(state.pass_point)  # the opponent passed: pass answers it under both rules, with a floor on its prior
    search = Search(NetEvaluator(agent, seed=0), SearchConfig(visits=16, pass_prior=0.3))
    search.set_position(state)
    search.run(visits=16)
    kids = search.tree.children(0)
    # at least 0.3 of the others' total before normalising: at least 0.3 / 1.3 after
    assert search.tree.move[kids[-1]] == state.pass_point and search.tree.P[kids[-1]] >= 0.3 / 1.3 - 1e-9
    with pytest.raises(SearchSetupError, match="--pass-rule"):
        SearchConfig(pass_rule="never").validate()
    with pytest.raises(SearchSetupError, match="--search"):
        SearchConfig(search="mcts").validate()


def test_leaves_are_played_and_taken_back_on_one_position(agent) -> None:
    """A search leaves its root position as it found it (every walk's moves undone), and never copies it per
    leaf: the position's own object is the one the walks play on."""
    state = GameState(9)
    for m in pts("E5", "C3", "G7"):
        state.play(m)
    search = Search(NetEvaluator(agent, seed=0), SearchConfig(visits=120, batch=4))
    search.set_position(state)
    root = search.root_state
    before = (root.hash, root.move_number, list(root.history), root.board.copy())
    copies = []
    original = GameState.copy
    GameState.copy = lambda self: copies.append(1) or original(self)  # noqa: E731 - counting the copies
    try:
        search.run(visits=120)
    finally:
        GameState.copy = original
    assert search.root_state is root and not copies
    assert (root.hash, root.move_number, list(root.history)) == before[:3] and np.array_equal(root.board, before[3])


def test_an_agents_search_settings_choose_the_search(tmp_path, agent_path) -> None:
    """An agent trained by gotk zero carries its search (agent.json ``search``): gtp plays it with Gumbel and its
    constants unless ``--search`` says otherwise."""
    from gotk.cli.player_options import PlayerOptions
    from gotk.nets.agent import convert_agent

    zero = convert_agent(agent_path, tmp_path / "zero.gotk", fp16=False,
                         search={"search": "gumbel", "considered": 4, "c_visit": 30.0, "pass_rule": "answer",
                                 "batch": 1})
    cfg = PlayerOptions(visits=16).make_player(str(zero), seed=1).search.cfg
    assert (cfg.search, cfg.considered, cfg.c_visit, cfg.batch) == ("gumbel", 4, 30.0, 1)
    cfg = PlayerOptions(visits=16, search="puct").make_player(str(zero), seed=1).search.cfg
    assert (cfg.search, cfg.considered) == ("puct", 4)
    proc = subprocess.run([sys.executable, "-m", "gotk", "gtp", "--agent", str(zero), "--visits", "24", "--seed", "3"],
                          input="boardsize 9\ngenmove b\ngenmove w\nlz-analyze 0\n\nquit\n", capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    moves = re.findall(r"^= ([A-HJ][1-9]|pass)$", proc.stdout, flags=re.M)
    assert len(moves) == 2 and moves[0] != moves[1], proc.stdout
    assert "info move" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "gotk", "gtp", "--agent", str(zero), "--visits", "8", "--search",
                           "mcts"], input="quit\n", capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "--search" in proc.stderr


def _fast_visits_seen(agent, reuse: bool) -> list[int]:
    from gotk.selfplay.config import SelfPlayConfig
    from gotk.selfplay.games import SelfPlayBatch

    # two moves considered: the one played has had several of the simulations (with 16 of 8 simulations each
    # would have one at most, and a kept subtree would hold one visit)
    cfg = SelfPlayConfig.make(size=9, visits=16, fast_visits=8, full_fraction=0.3, max_moves=30, reuse=reuse,
                         considered=2, resign_threshold=None)
    (game,) = SelfPlayBatch(agent, cfg, [(0, 5)], seed=5).run()
    return [int(m.group(1)) for c in game.comments if (m := re.search(r"fast n=(\d+)", c))]


def test_self_play_fast_searches_reuse_the_tree(agent) -> None:
    """A fast search adds ``fast_visits`` simulations to the subtree the previous move left: its root ends with
    more visits than a fresh one's whenever something was kept; without reuse every fast root has exactly
    ``fast_visits`` simulations."""
    fresh = _fast_visits_seen(agent, reuse=False)
    kept = _fast_visits_seen(agent, reuse=True)
    assert fresh and set(fresh) == {8}
    assert kept and min(kept) >= 8 and max(kept) > 8
