"""PUCT search: invariants on hand-made positions (a winning capture is found, a winning pass is played,
visits sum to playouts, tree reuse keeps the subtree, a seed makes it deterministic), resignation, the clock,
refusals, and short searched games against ``gotk gtp --random`` and GNU Go."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import material_agent_file, tiny_agent_file

from gotk import coords
from gotk.game.moves import passing_wins
from gotk.game.state import BLACK, WHITE, GameState
from gotk.play.players import RESIGN
from gotk.search import Search, SearchConfig, SearchPlayer, SearchSetupError, check_agents
from gotk.search import tree as T
from gotk.search.choice import choose
from gotk.search.clock import Clock
from gotk.search.evaluate import NetEvaluator
from tests.test_engine import parse
from tests.test_scoring import EYE_WITH_DEAD_STONE

REPO = Path(__file__).resolve().parents[1]
GNUGO = Path("/usr/games/gnugo")


@pytest.fixture(scope="module")
def agent_path(tmp_path_factory) -> Path:
    return tiny_agent_file(tmp_path_factory.mktemp("search") / "tiny.gotk")


@pytest.fixture(scope="module")
def agent(agent_path):
    from gotk.nets import load_agent

    return load_agent(agent_path)


@pytest.fixture(scope="module")
def material(tmp_path_factory):
    from gotk.nets import load_agent

    return load_agent(material_agent_file(tmp_path_factory.mktemp("search") / "material.gotk"))


@pytest.fixture(scope="module")
def gentle(tmp_path_factory):
    """The material agent with values far from ±1 (scale 0.02): a move that plays on keeps a value above a lost
    game's exact −1 even many stones behind."""
    from gotk.nets import load_agent

    return load_agent(material_agent_file(tmp_path_factory.mktemp("search") / "gentle.gotk", scale=0.02))


def pts(*names: str, size: int = 9) -> list[int]:
    return [coords.from_gtp(v, size) for v in names]


def test_material_agent_counts_stones(material) -> None:
    s = GameState(9).setup(black=pts("A1", "B1", "C1"), white=pts("J9"), to_play=BLACK)
    assert material.value(s) == pytest.approx(np.tanh(0.3 * 2), abs=1e-4)
    s.to_play = WHITE
    assert material.value(s) == pytest.approx(np.tanh(-0.3 * 2), abs=1e-4)


def test_winning_capture_is_found(material) -> None:
    """White's three stones have one liberty (F3); the priors are uniform, only the search finds the capture."""
    state = GameState(9).setup(black=pts("B3", "C2", "D2", "E2", "C4", "D4", "E4"), white=pts("C3", "D3", "E3"),
                               to_play=BLACK)
    probs = material.policy(state)
    assert probs.max() - probs[probs > 0].min() < 1e-9  # the policy does not know
    player = SearchPlayer(material, config=SearchConfig(visits=300, fpu=0.0, seed=0, resign_threshold=None))
    move = player.choose(state)
    assert coords.to_gtp(move, 9) == "F3"
    infos = player.search.infos()
    assert coords.to_gtp(infos[0].move, 9) == "F3" and infos[0].q > 0


def test_pass_when_passing_wins_and_not_when_it_loses(material) -> None:
    """Black owns columns A-E, white F-J; white has just passed. Area: 45 − 36 = 9 for black."""
    black = [coords.from_rc(r, 4, 9) for r in range(9)]
    white = [coords.from_rc(r, 5, 9) for r in range(9)]
    for komi, should_pass in ((7.5, True), (9.5, False)):
        state = GameState(9, komi=komi).setup(black=black, white=white, to_play=WHITE)
        state.play(state.pass_point)  # white passes
        player = SearchPlayer(material, config=SearchConfig(visits=64, seed=1, resign_threshold=None))
        move = player.choose(state)
        assert (move == state.pass_point) == should_pass, (komi, coords.to_gtp(move, 9))
        pass_info = [i for i in player.search.infos(min_moves=100) if i.move == state.pass_point][0]
        assert pass_info.visits > 0 and pass_info.q == (1.0 if should_pass else -1.0)  # exact: the game ends


def test_no_pass_into_a_loss_by_the_final_count(gentle) -> None:
    """White has just passed. Black's A2 stone sits in an eye of White's two-eyed (pass-alive) group: every stone
    alive Black wins by 2.5 (45 − 35 − 7.5), with the dead stone removed (GNU Go's count) it loses by 0.5 (44 − 37 −
    7.5; tests/test_scoring.py counts it). The search values the pass exactly by the final count, so it plays on;
    the policy players' pass rule refuses the pass too."""
    _, black, white, _ = parse(EYE_WITH_DEAD_STONE)
    state = GameState(9, komi=7.5).setup(black=black, white=white, to_play=WHITE)
    state.play(state.pass_point)
    assert state.score_area() > 0 > state.score_final(passer=BLACK)
    assert not passing_wins(state)
    player = SearchPlayer(gentle, config=SearchConfig(visits=64, seed=1, resign_threshold=None))
    move = player.choose(state)
    assert move != state.pass_point
    pass_info = [i for i in player.search.infos(min_moves=100) if i.move == state.pass_point][0]
    assert pass_info.visits > 0 and pass_info.q == -1.0


def test_no_pass_with_a_lone_stone_in_the_opponents_framework(gentle) -> None:
    """Black E5, White A9, Black passes (GNU Go at level 1 does this, counting A9 dead: B+73.5). Every stone alive
    White's pass would win by komi; by the final count White's homeless A9 stone is removed and the pass loses, so
    the search plays on."""
    state = GameState(9, komi=7.5)
    for v in ("E5", "A9"):
        state.play(coords.from_gtp(v, 9))
    state.play(state.pass_point)
    player = SearchPlayer(gentle, config=SearchConfig(visits=64, seed=1, resign_threshold=None))
    assert player.choose(state) != state.pass_point
    pass_info = [i for i in player.search.infos(min_moves=100) if i.move == state.pass_point][0]
    assert pass_info.q == -1.0


def test_symmetry_maps_the_policy_back(agent) -> None:
    """Evaluating under symmetry s = the network on the board moved by s, read at the moved points."""
    from gotk.coords import symmetry_permutation
    from gotk.datasets.symmetry import apply_symmetries_

    black, white = np.array(pts("C3", "D4", "A1")), np.array(pts("E5", "G7", "H2"))
    state = GameState(9).setup(black=black, white=white, to_play=BLACK)
    ev = NetEvaluator(agent, seed=0)
    for s in range(8):
        perm = symmetry_permutation(9, s)
        moved = GameState(9).setup(black=perm[black], white=perm[white], to_play=BLACK)
        feats = apply_symmetries_(ev.encoder.encode(state)[None].copy(), np.array([s]))
        assert np.array_equal(feats[0], ev.encoder.encode(moved))
        probs, values = ev.run(np.ascontiguousarray(feats), np.array([s]))
        logp, v = agent.predict(ev.encoder.encode(moved)[None])
        assert np.allclose(probs[0], np.exp(logp[0].astype(np.float64))[perm], atol=1e-6)
        assert values[0] == pytest.approx(float(v[0]), abs=1e-6)


def test_visits_sum_to_playouts_and_no_virtual_loss_left(agent) -> None:
    for batch in (1, 8, 32):
        search = Search(NetEvaluator(agent, seed=0), SearchConfig(visits=100, batch=batch))
        search.set_position(GameState(9))
        done = search.run(visits=100)
        tree = search.tree
        kids = tree.children(0)
        assert done == search.root_visits == 100
        assert tree.N[kids].sum() == 99  # the root's own evaluation is the first playout
        assert not tree.VL[: tree.size].any()
        assert not (tree.status[: tree.size] == T.PENDING).any()
        for node in np.flatnonzero(tree.status[: tree.size] == T.EXPANDED):  # every expanded node: N = 1 + Σ children
            k = tree.children(node)
            assert tree.N[node] == 1 + tree.N[k].sum()


def test_a_full_tree_folds_its_least_visited_expansions_and_keeps_growing(agent, material) -> None:
    """With ``max_nodes`` rows the tree never holds more, yet the root's visits keep growing (a long analysis
    does not freeze): the least visited expansions are folded, their statistics kept, so the root still has
    ``N = 1 + Σ children`` and the children's visits never go down across a fold."""
    cfg = SearchConfig(visits=3000, batch=8, max_nodes=2000, seed=0)
    search = Search(NetEvaluator(agent, seed=0), cfg)
    search.set_position(GameState(9))
    sizes: list[int] = []
    kid_visits: list[np.ndarray] = []

    def watch() -> None:
        sizes.append(search.tree.size)
        kid_visits.append(search.tree.N[search.tree.children(0)].copy())

    done = search.run(visits=3000, on_batch=watch)
    tree = search.tree
    assert done == search.root_visits == 3000  # far more than the 2000 rows hold at 82 children an expansion
    assert search.folds >= 2 and max(sizes) <= 2000
    assert tree.N[tree.children(0)].sum() == 2999
    assert not tree.VL[: tree.size].any()
    # the root keeps its children rows across folds, and their visits only grow
    assert all((b >= a).all() for a, b in zip(kid_visits, kid_visits[1:], strict=False))
    folded = (tree.status[1: tree.size] == T.UNEXPANDED) & (tree.N[1: tree.size] > 1)
    assert folded.any()  # folded nodes kept their visits
    # a fold keeps the search sound: the winning capture is still found with a tree of 1000 rows
    state = GameState(9).setup(black=pts("B3", "C2", "D2", "E2", "C4", "D4", "E4"), white=pts("C3", "D3", "E3"),
                               to_play=BLACK)
    player = SearchPlayer(material, config=SearchConfig(visits=600, fpu=0.0, seed=0, resign_threshold=None,
                                                        max_nodes=1000))
    assert coords.to_gtp(player.choose(state), 9) == "F3" and player.search.folds > 0
    with pytest.raises(SearchSetupError, match="max nodes"):
        SearchConfig(max_nodes=10).validate()


def test_tree_reuse_keeps_the_subtree(agent) -> None:
    player = SearchPlayer(agent, config=SearchConfig(visits=200, seed=2, resign_threshold=None))
    state = GameState(9)
    move = player.choose(state)
    tree = player.search.tree
    child = int(tree.children(0)[tree.move[tree.children(0)] == move][0])
    kept_n = tree.N[child]
    grand = tree.children(child)
    reply = int(tree.move[grand[np.argmax(tree.N[grand])]])
    grand_n = tree.N[grand].max()
    size = tree.subtree_size(child)
    state.play(move)
    assert player.search.set_position(state) and player.search.root_visits == kept_n
    assert player.search.tree.size == size
    state.play(reply)  # the opponent's move: the grandchild's subtree is kept too
    assert player.search.set_position(state) and player.search.root_visits == grand_n
    other = GameState(9)
    other.play(pts("A1")[0])
    assert not player.search.set_position(other) and player.search.root_visits == 0  # not a continuation


def test_t_quantile_matches_closed_forms_and_tables() -> None:
    import math

    from gotk.search.lcb import t_quantile

    p = 1 - 1e-5
    assert t_quantile(1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-9)  # Cauchy
    assert t_quantile(2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-9)
    assert t_quantile(5, 0.025) == pytest.approx(2.5706, abs=1e-4)  # the textbook table
    assert t_quantile(30, 0.05) == pytest.approx(1.6973, abs=1e-4)
    assert 4.26 < t_quantile(5000) < t_quantile(100) < t_quantile(10)  # towards the normal 4.265


def test_backups_keep_the_squared_values(agent) -> None:
    """``W2`` sums the squares of what ``W`` sums: between W²/N (all values equal) and N (values in −1..1), and a
    node of one visit holds the square of its value."""
    search = Search(NetEvaluator(agent, seed=0), SearchConfig(visits=200, batch=4))
    search.set_position(GameState(9))
    search.run(visits=200)
    tree = search.tree
    seen = np.flatnonzero(tree.N[: tree.size] > 0)
    n, w, w2 = tree.N[seen], tree.W[seen], tree.W2[seen]
    assert (w2 >= w * w / n - 1e-9).all() and (w2 <= n + 1e-9).all()
    one = n == 1
    assert one.any() and np.allclose(w2[one], w[one] ** 2)
    assert (w2[n > 1] > w[n > 1] ** 2 / n[n > 1] + 1e-12).any()  # the values do differ along a move's visits


def _two_move_search(lcb: float) -> Search:
    """A root with moves A (10 visits, mean 0.2, widely spread values) and B (8 visits, mean 0.15, all equal), and
    C (2 visits, both 0.9)."""
    search = Search(None, SearchConfig(lcb=lcb))
    search.set_position(GameState(9))
    tree = search.tree
    a, b, c = pts("E5", "C3", "G7")
    tree.expand(0, np.array([a, b, c, 81], dtype=np.int32), np.array([0.4, 0.3, 0.2, 0.1]), 0.0)
    kids = tree.children(0)
    tree.N[kids] = [10, 8, 2, 0]
    tree.W[kids] = [2.0, 1.2, 1.8, 0.0]
    tree.W2[kids] = [10.0, 8 * 0.15 ** 2, 2 * 0.81, 0.0]  # A: values ±1; B: 0.15 each time
    tree.N[0] = 21
    return search


def test_lcb_prefers_a_move_whose_values_agree() -> None:
    rng = np.random.default_rng(0)
    assert coords.to_gtp(choose(_two_move_search(0.0), 0.0, rng), 9) == "E5"  # most visits
    lcb = _two_move_search(0.1)
    lower = lcb.lower_bounds(lcb.tree.children(0))
    assert lower[1] == pytest.approx(0.15) and lower[0] < -1 and lower[3] == -np.inf
    assert coords.to_gtp(choose(lcb, 0.0, rng), 9) == "C3"  # B's bound beats A's; C has too few visits (2)
    assert [coords.to_gtp(i.move, 9) for i in lcb.infos()] == ["C3", "E5", "G7"]  # analysis leads with it too
    assert coords.to_gtp(choose(_two_move_search(0.9), 0.0, rng), 9) == "E5"  # B (8 < 0.9 x 10) is not eligible
    assert coords.to_gtp(choose(_two_move_search(0.1), 1e-3, rng), 9) == "E5"  # sampling ignores the bound


def test_lcb_through_the_cli_and_agent_files(tmp_path: Path, agent_path: Path) -> None:
    proc = gotk("gtp", "--agent", str(agent_path), "--visits", "40", "--lcb", "0.1",
                stdin="boardsize 9\ngenmove b\ngenmove w\nquit\n")
    assert proc.returncode == 0 and len([ln for ln in proc.stdout.splitlines() if ln.startswith("= ")]) == 2, \
        (proc.stdout, proc.stderr)
    proc = gotk("gtp", "--agent", str(agent_path), "--visits", "40", "--lcb", "2", stdin="quit\n")
    assert proc.returncode == 2 and "--lcb must be in 0..1" in proc.stderr, proc.stderr
    tuned = tmp_path / "tuned.gotk"
    proc = gotk("agent", "convert", str(agent_path), "-o", str(tuned), "--search", "lcb=0.1")
    assert proc.returncode == 0, proc.stderr
    from gotk.cli.player_options import PlayerOptions

    assert PlayerOptions(visits=8).make_player(str(tuned), seed=1).search.cfg.lcb == 0.1
    assert PlayerOptions(visits=8, lcb=0.0).make_player(str(tuned), seed=1).search.cfg.lcb == 0.0


def test_deterministic_with_a_seed(agent) -> None:
    def game(seed: int) -> list[tuple[int, int]]:
        player = SearchPlayer(agent, config=SearchConfig(visits=40, seed=seed, temperature=1.0,
                                                         resign_threshold=None))
        state = GameState(9)
        out = []
        for _ in range(6):
            move = player.choose(state)
            out.append((move, player.search.root_visits))
            state.play(move)
        return out

    assert game(5) == game(5)


def test_resigns_on_the_search_value_only_after_min_moves(material) -> None:
    state = GameState(9).setup(black=pts("A1"), white=pts(*[f"{c}{r}" for c in "CDEFG" for r in (3, 5, 7)]),
                               to_play=BLACK)
    cfg = dict(visits=16, seed=0, resign_threshold=-0.9, resign_moves=2)
    early = SearchPlayer(material, config=SearchConfig(**cfg, resign_min_move=30))
    assert early.choose(state) != RESIGN and early.choose(state) != RESIGN  # move number 0 < 30
    player = SearchPlayer(material, config=SearchConfig(**cfg, resign_min_move=0))
    assert player.choose(state) != RESIGN  # one low value is not enough
    assert player.last_value < -0.9
    assert player.choose(state) == RESIGN


def test_clock_budgets() -> None:
    c = Clock(safety=0.5, margin=0.1, min_moves=20)
    assert c.budget(BLACK, 50) is None  # no time settings: no limit
    c.settings(600, 0, 0)  # 10 minutes absolute
    assert c.budget(BLACK, 50) == pytest.approx(600 / 50 * 0.5 - 0.1)
    c.left(BLACK, 10, 0)
    assert c.budget(BLACK, 50) == pytest.approx(10 / 50 * 0.5 - 0.1)
    c.settings(0, 30, 10)  # byo-yomi only: 30 s for 10 stones
    assert c.budget(WHITE, 50) == pytest.approx(3 * 0.5 - 0.1)
    c.used(WHITE, 2.0)
    assert c.sides[WHITE].left == pytest.approx(28) and c.sides[WHITE].stones == 9
    c.settings(0, 5, 0)  # byo-yomi time > 0 with 0 stones: no limit (GTP 2)
    assert c.budget(BLACK, 50) is None
    c.settings(1, 0, 0)
    c.left(BLACK, 0, 0)
    assert c.budget(BLACK, 50) == 0.0  # never negative
    with pytest.raises(ValueError):
        c.settings(-1, 0, 0)


def test_seconds_limit_search(agent) -> None:
    player = SearchPlayer(agent, config=SearchConfig(visits=0, seconds=0.5, seed=0))
    player.choose(GameState(9))  # warm-up (first network call)
    player.reset()
    player.choose(GameState(9))
    assert 0.5 <= player.search.seconds < 0.5 + 2.0  # stops at the first batch boundary past the budget
    assert player.search.root_visits >= 1


def test_config_and_agent_refusals(tmp_path: Path, agent) -> None:
    from gotk.nets import load_agent

    for bad in (dict(visits=-1), dict(visits=10**12), dict(batch=0), dict(c_puct=0), dict(fpu=-1),
                dict(seconds=0), dict(temperature=-1), dict(resign_threshold=2), dict(lcb=-0.1), dict(lcb=1.5)):
        with pytest.raises(SearchSetupError):
            SearchConfig(**bad).validate()
    policy_only = load_agent(tiny_agent_file(tmp_path / "p.gotk", head="policy"))
    with pytest.raises(SearchSetupError, match="search needs a value head"):
        check_agents(policy_only)
    check_agents(policy_only, agent)  # a separate value agent makes it searchable
    other_size = load_agent(tiny_agent_file(tmp_path / "s7.gotk", size=7))
    with pytest.raises(SearchSetupError, match="7x7"):
        check_agents(agent, other_size)
    other_enc = load_agent(tiny_agent_file(tmp_path / "o.gotk", encoder="oneplane"))
    with pytest.raises(SearchSetupError, match="encoder"):
        check_agents(agent, other_enc)
    with pytest.raises(SearchSetupError, match="no value head"):
        check_agents(agent, policy_only)


def gotk(*args: str, timeout: float = 120, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gotk", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO, input=stdin)


def test_cli_refusals_are_one_line_errors(tmp_path: Path, agent_path: Path) -> None:
    from gotk.play.factory import make_search_player

    policy_only = tiny_agent_file(tmp_path / "p.gotk", head="policy")
    small = tiny_agent_file(tmp_path / "s7.gotk", size=7)
    for agent, cfg, value, message in (
            (str(agent_path), SearchConfig(visits=-3), None, "--visits must be >= 0"),
            (str(agent_path), SearchConfig(visits=99999999999), None, "more than"),
            ("random", SearchConfig(visits=8), None, "not the random player"),
            (str(policy_only), SearchConfig(seconds=1.0), None, "search needs a value head"),
            (str(agent_path), SearchConfig(visits=0), str(agent_path), "used by the search only")):
        with pytest.raises(SearchSetupError, match=message):
            make_search_player(agent, cfg, value)
    # through the real CLI: exit 2 with the one-line reason, no traceback
    cases = [(["gtp", "--agent", str(policy_only), "--visits", "50"], "search needs a value head"),
             (["gtp", "--agent", str(agent_path), "--visits", "-3"], "--visits must be >= 0"),
             (["match", "--agent", str(agent_path), "--visits", "8", "--value-agent", str(small), "--opponent", "x"],
              "7x7")]
    for args, message in cases:
        proc = gotk(*args, stdin="quit\n")
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    # a policy-only agent searches with a separate value agent; --visits 0 still plays the policy alone
    proc = gotk("gtp", "--agent", str(policy_only), "--value-agent", str(agent_path), "--visits", "8",
                stdin="boardsize 9\ngenmove b\nquit\n")
    assert proc.returncode == 0 and "= " in proc.stdout, proc.stderr


def test_searched_games_against_random_and_gnugo(tmp_path: Path, agent_path: Path) -> None:
    random_engine = shlex.join([sys.executable, "-m", "gotk", "gtp", "--random", "--seed", "4"])
    opponents = [random_engine]
    if GNUGO.exists():
        opponents.append(f"{GNUGO} --mode gtp --level 1")
    for opp in opponents:
        proc = gotk("match", "--agent", str(agent_path), "--visits", "12", "--seed", "1", "--opponent", opp,
                    "--games", "2", "--size", "9", "--max-moves", "24", "--json", "--sgf-out", str(tmp_path / "g"))
        assert proc.returncode == 0, proc.stderr
        d = json.loads(proc.stdout)
        assert d["games"] == 2 and d["wins"] + d["losses"] + d["draws"] == 2, d
        assert d["agent"].startswith("gotk-resnet-puct12v") and [g["agent_colour"] for g in d["per_game"]] == ["B", "W"]
        for g in d["per_game"]:
            assert g["reason"] in ("max_moves", "two_passes", "agent_resigned", "opponent_resigned"), g


@pytest.mark.skipif(not GNUGO.exists(), reason="GNU Go is not installed at /usr/games/gnugo (apt-get install gnugo)")
def test_gnugo_accepts_every_searched_move(agent) -> None:
    """Moves of a searched game replayed into GNU Go: it accepts all of them (same rules)."""
    from gotk.play.gtp_client import GtpClient

    player = SearchPlayer(agent, config=SearchConfig(visits=12, seed=3, resign_threshold=None))
    client = GtpClient([str(GNUGO), "--mode", "gtp", "--level", "1"], timeout=60)
    try:
        client.send("boardsize 9")
        client.send("clear_board")
        state = GameState(9)
        for _ in range(24):
            if state.passes >= 2:
                break
            move = player.choose(state)
            color = "B" if state.to_play == BLACK else "W"
            state.play(move)
            client.send(f"play {color} {coords.to_gtp(move, 9)}")
    finally:
        client.close()
