"""The parts the one search is composed of and the one place a move is chosen: the root rules
(:mod:`gotk.search.roots`), the final choice, temperature sampling, the losing-pass rule and resignation
(:mod:`gotk.search.choice`), and the agent file's search settings derived from :class:`SearchConfig`."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import fields

import numpy as np
import pytest

from gotk import coords
from gotk.game.state import GameState
from gotk.search import Search, SearchConfig
from gotk.search import choice as C
from gotk.search import tree as T
from gotk.search.config import SEARCH_KEYS, agent_settings_error
from gotk.search.roots import GumbelRoot, PuctRoot, root_rule
from tests import test_search as base
from tests.test_search import pts

agent_path, agent = base.agent_path, base.agent  # the module-scoped fixtures of tests/test_search.py


def test_sample_draws_in_proportion_to_weights_to_the_power_one_over_t() -> None:
    """∝ w^(1/T): at T = 1 the weights themselves, at T = 0.5 their squares; a zero weight is never drawn."""
    w = np.array([1.0, 3.0, 0.0])
    for temperature, want in ((1.0, [0.25, 0.75, 0.0]), (0.5, [0.1, 0.9, 0.0])):
        rng = np.random.default_rng(7)
        draws = np.bincount([C.sample(w, temperature, rng) for _ in range(20_000)], minlength=3) / 20_000
        assert draws == pytest.approx(want, abs=0.015)
    # the same stream as numpy's own draw with those probabilities: a seed gives the same moves everywhere
    assert C.sample(w, 1.0, np.random.default_rng(3)) == int(np.random.default_rng(3).choice(3, p=w / w.sum()))


def test_play_on_drops_a_losing_pass_unless_it_is_all_there_is() -> None:
    w = np.array([0.2, 0.5, 0.3])
    losing = np.array([False, False, True])
    assert C.play_on(w, losing).tolist() == [0.2, 0.5, 0.0]
    assert C.play_on(np.array([0.0, 0.0, 1.0]), losing).tolist() == [0.0, 0.0, 1.0]


def test_resignation_counts_consecutive_low_values_from_a_move_on() -> None:
    r = C.Resignation(-0.9, moves=2, min_move=10)
    assert [r.update(v, n) for v, n in ((-0.95, 4), (-0.95, 6), (-0.95, 10), (-0.5, 12), (-0.99, 14))] == \
        [False, False, True, False, False]
    assert r.streak == 1
    r.reset()
    assert r.streak == 0
    never = C.Resignation(None)
    assert not any(never.update(-1.0, 100) for _ in range(5))


def _root(search: Search, moves: list[str], visits: list[int], values: list[float]) -> np.ndarray:
    search.set_position(GameState(9))
    tree = search.tree
    points = pts(*moves)
    tree.expand(0, np.array(points, dtype=np.int32), np.full(len(points), 1.0 / len(points)), 0.0)
    kids = tree.children(0)
    tree.N[kids] = visits
    tree.W[kids] = [n * v for n, v in zip(visits, values, strict=True)]
    tree.W2[kids] = [n * v * v for n, v in zip(visits, values, strict=True)]
    tree.N[0] = 1 + sum(visits)
    return kids


def test_choose_plays_the_most_visited_and_never_a_losing_pass() -> None:
    """The final choice at T = 0 is the ranking's first; a pass whose exact value is a loss comes last and is not
    played while another visited move is left, however many visits it has."""
    search = Search(None, SearchConfig())
    kids = _root(search, ["E5", "C3"], [6, 3], [0.1, 0.2])
    rng = np.random.default_rng(0)
    assert coords.to_gtp(C.choose(search, 0.0, rng), 9) == "E5"
    search = Search(None, SearchConfig())
    search.set_position(GameState(9))
    tree = search.tree
    tree.expand(0, np.array([40, 81], dtype=np.int32), np.array([0.5, 0.5]), 0.0)
    kids = tree.children(0)
    tree.N[kids] = [2, 9]
    tree.W[kids] = [0.2, -9.0]
    tree.status[kids[1]] = T.TERMINAL
    tree.TV[kids[1]] = -1.0
    assert C.choose(search, 0.0, rng) == 40
    assert {C.choose(search, 1.0, rng) for _ in range(20)} == {40}  # sampling leaves it out too
    assert [i.move for i in search.infos()] == [40, 81]


def test_root_rules_are_parts_with_their_own_state(agent) -> None:
    """PUCT's root starts every walk at the root, mixes Dirichlet noise into the priors only when the search asks for
    it and leaves the final choice to the choice module; Gumbel's draws its per-move state, picks the child each walk
    starts from and makes the final choice itself. ``root_rule`` builds the one a config names."""
    from gotk.search import NetEvaluator

    assert isinstance(root_rule(SearchConfig(search="puct")), PuctRoot)
    assert isinstance(root_rule(SearchConfig(search="gumbel")), GumbelRoot)
    for noise in (False, True):
        s = Search(NetEvaluator(agent, seed=0), SearchConfig(visits=2, batch=1, noise_fraction=0.25, seed=1))
        s.set_position(GameState(9))
        s.run(visits=2)
        priors = s.tree.P[s.tree.children(0)].copy()
        s.begin(6, noise=noise)
        s.gather(s.evaluator.leaves(1), 0, 1)
        changed = not np.allclose(priors, s.tree.P[s.tree.children(0)])
        assert changed == noise and not s.root.chooses and s.final_row() == -1
    g = Search(NetEvaluator(agent, seed=0), SearchConfig(visits=24, batch=1, search="gumbel", considered=4, seed=2))
    g.set_position(GameState(9))
    g.run(visits=24)
    assert g.root.chooses and g.root.schedule is not None and g.root.gumbel.shape == (g.tree.nchild[0],)
    row = g.final_row()
    kids = g.tree.children(0)
    assert row in kids and g.tree.N[row] == g.tree.N[kids].max()
    assert C.ranking(g)[0][C.ranking(g)[1][0]] == row  # the ranking leads with the rule's own choice


def test_agent_search_keys_derive_from_the_search_settings() -> None:
    """The settings an agent file may carry are SearchConfig's fields of those names, with their types; anything
    else is refused in one line where a search takes them."""
    types = {f.name: f.type for f in fields(SearchConfig)}
    assert set(SEARCH_KEYS) <= set(types)
    assert SEARCH_KEYS == {"search": str, "batch": int, "c_puct": float, "fpu": float, "lcb": float,
                           "considered": int, "c_visit": float, "c_scale": float, "pass_rule": str}
    assert agent_settings_error({"search": "gumbel", "considered": 4, "c_puct": 2}) is None
    assert "unknown key 'visits'" in agent_settings_error({"visits": 100})
    assert "batch takes an integer" in agent_settings_error({"batch": 1.5})
    assert "takes a number" in agent_settings_error({"lcb": float("nan")})
    with pytest.raises(Exception, match="the agent's search settings"):
        SearchConfig().with_agent({"mystery": 1})


def test_reading_a_setting_imports_no_torch() -> None:
    code = ("import sys; from gotk.search.config import SearchConfig, SEARCH_KEYS; "
            "from gotk.selfplay.config import SelfPlayConfig; SelfPlayConfig().search_config(); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
