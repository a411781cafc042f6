"""``gotk analysis``: KataGo's JSON analysis protocol (KataGo's docs/Analysis_Engine.md) on gotk's one search:
queries, answers and their layouts, the actions, priorities and limits, bad input, and agreement with ``gotk gtp``'s
own analysis of the same position."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from serve_helpers import make_conditioned_agent

from gotk import coords
from gotk.encoders import metadata_inputs as MI
from gotk.game.state import BLACK, WHITE, GameState
from gotk.play.analysis_answer import ownership_estimate, position_hashes
from gotk.play.analysis_engine import AnalysisEngine
from gotk.play.factory import build_analysis_engine
from gotk.search.config import SearchConfig

GOTK = [sys.executable, "-m", "gotk"]
MOVES19 = [["B", "Q16"], ["W", "D4"], ["B", "Q3"], ["W", "D16"], ["B", "R5"]]


def zero_agent(path: Path, size: int = 9) -> Path:
    """A real (untrained, seeded) ``zero`` agent with ownership and score heads, on gotk's self-play planes."""
    import torch

    from gotk.encoders import get_encoder
    from gotk.nets import build_model, save_agent
    from gotk.selfplay import DEFAULT_ENCODER

    torch.manual_seed(3)
    enc = get_encoder(DEFAULT_ENCODER, size)
    model = build_model("zero", enc.num_planes, size, head="both", blocks=1, filters=8)
    with torch.no_grad():  # the heads start at zero: give them something to say
        for m in (model.value_out, model.score_out, model.ownership_out, model.policy_out):
            m.weight.normal_(std=0.5)
    return save_agent(path, model, "zero", {"blocks": 1, "filters": 8}, enc.describe())


class Engine:
    """An engine run in process: ``send`` queries, ``run`` until idle, the answers as parsed lines."""

    def __init__(self, agent: str, visits: int = 16, human: str | None = None, seed: int | None = 1,
                 **options) -> None:
        self.lines: list[dict] = []
        self.engine: AnalysisEngine = build_analysis_engine(
            agent, SearchConfig(visits=visits, seed=seed, resign_threshold=None), human_agent=human,
            write=lambda line: self.lines.append(json.loads(line)), log=lambda line: None, **options)

    def send(self, obj) -> None:
        self.engine.handle_line(obj if isinstance(obj, str) else json.dumps(obj))

    def run(self) -> list[dict]:
        while self.engine.busy:
            self.engine.step()
        return self.lines

    def finals(self, qid: str | None = None) -> list[dict]:
        return [a for a in self.lines if "turnNumber" in a and not a["isDuringSearch"]
                and (qid is None or a["id"] == qid)]


def query(qid: str = "q", moves=MOVES19, size: int = 19, **fields) -> dict:
    return {"id": qid, "moves": moves, "rules": "tromp-taylor", "komi": 7.5, "boardXSize": size,
            "boardYSize": size, **fields}


@pytest.fixture(scope="module")
def kgs() -> Engine:
    return Engine("kgs", visits=16)


@pytest.fixture(scope="module")
def zero9(tmp_path_factory) -> str:
    return str(zero_agent(tmp_path_factory.mktemp("zero") / "zero9.gotk"))


def test_answer_fields_layouts_and_turns(kgs) -> None:
    kgs.lines.clear()
    kgs.send(query(analyzeTurns=[0, 2, 5], includeOwnership=True, includeMovesOwnership=True, includePolicy=True,
                   includePVVisits=True))
    answers = kgs.run()
    assert sorted(a["turnNumber"] for a in answers) == [0, 2, 5]
    for a in answers:
        assert a["id"] == "q" and a["isDuringSearch"] is False
        root = a["rootInfo"]
        assert root["visits"] >= 16 and 0 <= root["winrate"] <= 1
        for key in ("scoreLead", "scoreSelfplay", "utility", "rawWinrate", "thisHash", "symHash", "currentPlayer"):
            assert key in root
        infos = a["moveInfos"]
        assert [m["order"] for m in infos] == list(range(len(infos)))
        assert sum(m["visits"] for m in infos) == root["visits"] - 1  # the root's own evaluation is one visit
        state = GameState(19)
        for color, vertex in MOVES19[:a["turnNumber"]]:
            state.play(coords.from_gtp(vertex, 19), BLACK if color == "B" else WHITE)
        legal = set(state.legal_moves().tolist())
        for m in infos:
            assert coords.from_gtp(m["move"], 19) in legal
            assert m["pv"][0] == m["move"] and len(m["pvVisits"]) == len(m["pv"])
            assert m["pvVisits"][0] == m["visits"] and len(m["ownership"]) == 361
            for key in ("winrate", "scoreLead", "scoreMean", "scoreStdev", "prior", "lcb", "utility", "utilityLcb"):
                assert np.isfinite(m[key])
        policy = np.array(a["policy"])
        assert policy.shape == (362,) and abs(policy[policy >= 0].sum() - 1) < 1e-4
        assert set(np.flatnonzero(policy >= 0).tolist()) == legal  # -1 exactly on the illegal points
        assert len(a["ownership"]) == 361 and all(-1 <= v <= 1 for v in a["ownership"])
        # every stone is its own colour's in the estimate, Black positive (reportAnalysisWinratesAs BLACK)
        own = np.array(a["ownership"])
        assert (own[state.board == BLACK] == 1).all() and (own[state.board == WHITE] == -1).all()
    # the winrate follows the best move's value, and its lead the documented estimate of it
    a = answers[0]
    best = a["moveInfos"][0]
    assert best["scoreLead"] == pytest.approx(19 * 19 / 40 * np.arctanh(2 * best["winrate"] - 1), rel=1e-6)


#: what KaTrain reads of every answer (its engine and AI code), never to be missing
KATRAIN_ROOT = {"visits", "winrate", "scoreLead"}
KATRAIN_MOVE = {"move", "order", "visits", "winrate", "scoreLead", "pv", "prior", "ownership"}


def test_every_shipped_search_agent_gives_what_katrain_reads() -> None:
    for agent in ("kgs", "kgs-lz"):
        eng = Engine(agent, visits=6)
        eng.send(query(includeOwnership=True, includeMovesOwnership=True, includePolicy=True))
        a = eng.run()[-1]
        assert KATRAIN_ROOT <= set(a["rootInfo"]) and a["moveInfos"], agent
        assert all(KATRAIN_MOVE <= set(m) for m in a["moveInfos"]), agent
        assert len(a["policy"]) == 362 and len(a["ownership"]) == 361


def test_perspectives_agree(kgs) -> None:
    out = {}
    for side in ("BLACK", "WHITE", "SIDETOMOVE"):
        kgs.lines.clear()
        kgs.send(query(qid=side, overrideSettings={"reportAnalysisWinratesAs": side}, includeOwnership=True))
        out[side] = kgs.run()[-1]
    to_move_is_white = True  # five moves: White to play
    assert to_move_is_white
    b, w, s = (out[k]["rootInfo"] for k in ("BLACK", "WHITE", "SIDETOMOVE"))
    assert b["winrate"] == pytest.approx(1 - w["winrate"]) and w["winrate"] == pytest.approx(s["winrate"])
    assert b["scoreLead"] == pytest.approx(-w["scoreLead"])
    assert out["BLACK"]["moveInfos"][0]["move"] == out["WHITE"]["moveInfos"][0]["move"]
    assert out["BLACK"]["ownership"] == [-v for v in out["WHITE"]["ownership"]]
    assert b["currentPlayer"] == "W"


def test_same_best_move_and_winrate_as_gtp_lz_analyze() -> None:
    """The same position, visits and seed: gotk analysis and gotk gtp's lz-genmove_analyze give the same candidates,
    visits and win rates (the same search, leaf by leaf)."""
    gtp = subprocess.run([*GOTK, "gtp", "--agent", "kgs", "--visits", "24", "--seed", "5"],
                         input="".join(f"play {c} {v}\n" for c, v in MOVES19) + "lz-genmove_analyze W 0\nquit\n",
                         capture_output=True, text=True, timeout=300)
    info = next(line for line in gtp.stdout.splitlines() if line.startswith("info"))
    first = info.split(" info ")[0].split()
    gtp_move, gtp_visits, gtp_win = first[2], int(first[4]), int(first[6])
    eng = Engine("kgs", visits=24, seed=5)
    eng.send(query(overrideSettings={"reportAnalysisWinratesAs": "SIDETOMOVE"}))
    best = eng.run()[-1]["moveInfos"][0]
    assert (best["move"], best["visits"], round(10000 * best["winrate"])) == (gtp_move, gtp_visits, gtp_win)


def test_batching_does_not_change_a_position_s_search() -> None:
    """A position searched beside many others (their leaves in the same network calls) gets exactly the answer it
    gets alone: each position draws its symmetries from its own generator."""
    alone = Engine("kgs", visits=20, seed=2, max_active=1)
    alone.send(query(qid="x", analyzeTurns=[3]))
    one = alone.run()[-1]
    crowd = Engine("kgs", visits=20, seed=2, max_active=8)
    crowd.send(query(qid="other", analyzeTurns=[0, 1, 2, 4, 5]))
    crowd.send(query(qid="x", analyzeTurns=[3]))
    many = crowd.run()
    assert crowd.engine.positions_done == 6
    two = next(a for a in many if a["id"] == "x")
    # the same leaves and visits; the values equal up to the float rounding of a larger batch in the network
    key = ("move", "visits", "pv", "order")
    assert [{k: m[k] for k in key} for m in two["moveInfos"]] == [{k: m[k] for k in key} for m in one["moveInfos"]]
    for m1, m2 in zip(one["moveInfos"], two["moveInfos"], strict=True):
        assert m1["winrate"] == pytest.approx(m2["winrate"], abs=1e-5)
    assert two["rootInfo"]["visits"] == one["rootInfo"]["visits"]


def test_priorities_order_and_limit(kgs) -> None:
    eng = Engine("kgs", visits=4, max_active=1, max_queued=6)
    eng.send(query(qid="low", analyzeTurns=[0, 1], priority=-5))
    eng.send(query(qid="high", analyzeTurns=[2, 3], priorities=[10, 20]))
    eng.send(query(qid="mid", analyzeTurns=[4]))
    eng.send(query(qid="over", analyzeTurns=[0, 5]))  # 5 waiting + 2 > 6: refused whole
    answers = eng.run()
    err = next(a for a in answers if "error" in a)
    assert err["id"] == "over" and err["field"] == "analyzeTurns" and "--max-queued" in err["error"]
    order = [(a["id"], a["turnNumber"]) for a in eng.finals()]
    assert order == [("high", 3), ("high", 2), ("mid", 4), ("low", 0), ("low", 1)]


@pytest.mark.parametrize("line, field, words", [
    ("{not json", None, "could not parse JSON"),
    ('["a list"]', None, "JSON object"),
    (json.dumps({k: v for k, v in query().items() if k != "id"}), "id", "id is required"),
    (json.dumps(query(moves=[["B", "Z99"]])), "moves", "could not read location"),
    (json.dumps(query(moves=[["B", "D4"], ["W", "D4"]])), "moves", "illegal move 2: W D4"),
    (json.dumps(query(moves=[["X", "D4"]])), "moves", "player must be"),
    (json.dumps(query(size=13, moves=[])), "boardXSize", "19x19 only"),
    (json.dumps(query(maxVisits=10**12)), "maxVisits", "from 1 to 10000000"),
    (json.dumps(query(maxVisits=0)), "maxVisits", "from 1 to"),
    (json.dumps(query(komi=7.3)), "komi", "half-integer"),
    (json.dumps(query(komi=float("nan"))), "komi", "finite"),
    (json.dumps(query(rules="chess")), "rules", "unknown rules"),
    (json.dumps(query(analyzeTurns=[9])), "analyzeTurns", "from 0 to 5"),
    (json.dumps(query(overrideSettings={"reportAnalysisWinratesAs": "RED"})), "overrideSettings", "BLACK, WHITE"),
    (json.dumps(query(overrideSettings={"humanSLProfile": "rank_3d"})), "overrideSettings", "--human-agent"),
    (json.dumps({"id": "q", "action": "dance"}), "action", "unknown action"),
    (json.dumps({"id": "q", "action": "terminate"}), "terminateId", "terminateId"),
])
def test_bad_input_is_one_error_line_and_the_engine_goes_on(kgs, line, field, words) -> None:
    kgs.lines.clear()
    kgs.send(line)
    kgs.send(query(qid="next", maxVisits=2))
    answers = kgs.run()
    err = answers[0]
    assert set(err) <= {"error", "field", "id"} and words in err["error"], err
    assert err.get("field") == field
    if field not in (None, "id"):
        assert err["id"] == "q"
    assert answers[-1]["id"] == "next" and answers[-1]["moveInfos"]
    assert len(answers) == 2


def test_warnings_for_what_gotk_reads_otherwise(kgs) -> None:
    kgs.lines.clear()
    kgs.send(query(rules="japanese", maxVisits=2, someNewField=1,
                   overrideSettings={"playoutDoublingAdvantage": 0.5, "ignorePreRootHistory": False,
                                     "wideRootNoise": 0.04, "maxTime": 5}))
    answers = kgs.run()
    warnings = [a for a in answers if "warning" in a]
    assert {w["field"] for w in warnings} == {"rules", "someNewField", "overrideSettings"}
    assert all(set(w) == {"warning", "field", "id"} and w["id"] == "q" for w in warnings)
    assert "area" in next(w for w in warnings if w["field"] == "rules")["warning"]
    assert "playoutDoublingAdvantage" in next(w for w in warnings if w["field"] == "overrideSettings")["warning"]
    assert answers[-1]["moveInfos"]  # the query still ran


def test_actions_terminate_and_partial_reports(kgs) -> None:
    eng = Engine("kgs", visits=4, max_active=1)
    eng.send({"id": "v", "action": "query_version"})
    eng.send({"id": "c", "action": "clear_cache"})
    assert eng.lines[0]["version"] and eng.lines[0]["action"] == "query_version" and eng.lines[1]["id"] == "c"
    # a ponder query: ten million visits, reports every 0.05 s, until terminated
    eng.send(query(qid="ponder", maxVisits=10_000_000, reportDuringSearchEvery=0.05))
    eng.send(query(qid="queued", analyzeTurns=[1, 2]))
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.5:
        eng.engine.step()
    eng.send({"id": "t", "action": "terminate", "terminateId": "ponder"})
    eng.send({"id": "t2", "action": "terminate", "terminateId": "queued", "turnNumbers": [2]})
    answers = eng.run()
    partial = [a for a in answers if a.get("id") == "ponder" and a.get("isDuringSearch")]
    assert partial and all(a["moveInfos"] for a in partial)
    final = eng.finals("ponder")
    assert len(final) == 1 and final[0]["rootInfo"]["visits"] > 4  # what it found so far
    assert {"id": "t", "action": "terminate", "terminateId": "ponder"} in answers
    q = eng.finals("queued")
    assert {(a["turnNumber"], a.get("noResults", False)) for a in q} == {(1, False), (2, True)}
    # terminate_all: every queued position gives exactly one final noResults line
    eng.send(query(qid="a", analyzeTurns=[0, 1, 2]))
    eng.send({"id": "ta", "action": "terminate_all"})
    eng.run()
    assert sorted(a["turnNumber"] for a in eng.finals("a")) == [0, 1, 2]
    assert all(a["noResults"] for a in eng.finals("a"))


def test_avoid_and_allow_moves(kgs) -> None:
    kgs.lines.clear()
    banned = ["C3", "C4", "D3", "C16", "C17", "D17", "Q17", "R17", "Q4", "R4", "R3", "Q3", "pass"]
    kgs.send(query(qid="avoid", maxVisits=24, avoidMoves=[{"player": "W", "moves": banned, "untilDepth": 1}]))
    kgs.send(query(qid="allow", maxVisits=24, allowMoves=[{"player": "W", "moves": ["K10", "A1"],
                                                           "untilDepth": 1}]))
    answers = {a["id"]: a for a in kgs.run()}
    moves = {m["move"] for m in answers["avoid"]["moveInfos"]}
    assert moves and not moves & set(banned)
    assert {m["move"] for m in answers["allow"]["moveInfos"]} <= {"K10", "A1", "pass"}


def test_zero_agent_score_and_ownership_heads(zero9) -> None:
    """A network with ownership and score heads: a move's scoreLead and ownership are the heads' at the position
    after it (Black's view), the root's ownership the heads' at the root."""
    from gotk.nets.agent import load_agent

    eng = Engine(zero9, visits=12)
    moves = [["B", "E5"], ["W", "C3"]]
    eng.send(query(moves=moves, size=9, includeOwnership=True, includeMovesOwnership=True, includePolicy=True))
    a = eng.run()[-1]
    agent = load_agent(zero9)
    root = GameState(9)
    root.play(coords.from_gtp("E5", 9), BLACK)
    root.play(coords.from_gtp("C3", 9), WHITE)
    _, _, own, score = agent.predict_aux(agent.encoder.encode(root)[None])
    assert np.allclose(a["ownership"], own[0].reshape(-1), atol=1e-5)  # Black to move: its view is Black's
    m = a["moveInfos"][0]
    child = root.copy().play(coords.from_gtp(m["move"], 9))
    _, _, own_c, score_c = agent.predict_aux(agent.encoder.encode(child)[None])
    assert m["scoreLead"] == pytest.approx(-float(score_c[0]), abs=1e-4)
    assert np.allclose(m["ownership"], -own_c[0].reshape(-1), atol=1e-5)  # White to move there: flip to Black's
    assert np.isfinite(a["rootInfo"]["rawLead"]) and a["rootInfo"]["rawLead"] == pytest.approx(float(score[0]),
                                                                                              abs=1e-4)


def test_human_policy_by_profile_and_nearest_profile(tmp_path) -> None:
    human = make_conditioned_agent(tmp_path / "human.gotk", size=19)
    eng = Engine("kgs", visits=4, human=str(human))
    eng.send(query(qid="h5", includePolicy=True, overrideSettings={"humanSLProfile": "rank_5d"}))
    eng.send(query(qid="h20", includePolicy=True, overrideSettings={"humanSLProfile": "rank_20k"}))
    eng.send(query(qid="bad", overrideSettings={"humanSLProfile": "rank_40k"}))
    answers = eng.run()
    hp = {a["id"]: np.array(a["humanPolicy"]) for a in answers if "humanPolicy" in a}
    state = GameState(19)
    for color, vertex in MOVES19:
        state.play(coords.from_gtp(vertex, 19), BLACK if color == "B" else WHITE)
    from gotk.nets.agent import load_agent

    expect = load_agent(human).policy(state, "rank_5d")
    legal = hp["h5"] >= 0
    assert np.allclose(hp["h5"][legal], expect[legal], atol=1e-6) and (expect[~legal] == 0).all()
    assert not np.allclose(hp["h5"], hp["h20"])  # the profile changes the policy
    err = next(a for a in answers if a.get("id") == "bad")
    assert "unknown human-SL profile" in err["error"] and err["field"] == "overrideSettings"


def test_nearest_profile_follows_what_the_agent_learnt() -> None:
    trained = {"positions": 1000, "sources": {"kgs": 1000},
               "mover_inverse_rank": {"0": 10, "1": 300, "2": 300, "4": 200, "8": 150, "9": 40, "12": 0}}
    assert MI.nearest_profile("rank_8d", trained) == ("rank_8d", None)
    name, why = MI.nearest_profile("rank_5k", trained)  # inverse 14: nearest learnt 9 (1d)
    assert name == "rank_1d" and "rank_5k" in why and "9d" in why
    name, why = MI.nearest_profile("preaz_3d_20k", trained)
    assert name == "preaz_2d_1d" and why
    name, why = MI.nearest_profile("proyear_1990", trained)
    assert name == "rank_9d" and "professional" in why
    assert MI.nearest_profile("proyear_1990", {**trained, "sources": {"gogod": 900, "kgs": 100}}) == \
        ("proyear_1990", None)
    assert MI.nearest_profile("rank_5k", None) == ("rank_5k", None)


def test_hashes_and_ownership_estimate() -> None:
    a, b = GameState(19), GameState(19)
    a.play(coords.from_gtp("D4", 19))
    b.play(coords.from_gtp("Q16", 19))  # the same position turned
    ha, hb = position_hashes(a), position_hashes(b)
    assert ha[0] != hb[0] and ha[1] == hb[1] and len(ha[0]) == 32
    own = ownership_estimate(a)
    assert own[coords.from_gtp("D4", 19)] == 1 and own[coords.from_gtp("E4", 19)] > 0.3
    assert abs(own[coords.from_gtp("Q16", 19)]) < 0.01


def run_cli(lines: list[str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*GOTK, "analysis", *args], input="".join(line + "\n" for line in lines),
                          capture_output=True, text=True, timeout=timeout, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def test_cli_end_of_input_finishes_queued_work_and_exits_cleanly() -> None:
    res = run_cli([json.dumps(query(qid="a", maxVisits=3, analyzeTurns=[0, 1])), "{bad", ""],
                  "--agent", "kgs", "--seed", "1")
    assert res.returncode == 0, res.stderr
    out = [json.loads(line) for line in res.stdout.splitlines()]
    assert sorted(a["turnNumber"] for a in out if "turnNumber" in a) == [0, 1]
    assert any("error" in a for a in out)
    assert "Traceback" not in res.stderr and "ready" in res.stderr
    res = run_cli([json.dumps(query(qid="b", maxVisits=10_000_000))], "--agent", "kgs", "--quit-without-waiting")
    assert res.returncode == 0 and json.loads(res.stdout.splitlines()[-1])["id"] == "b"


@pytest.mark.parametrize("args, words", [
    (["--agent", "nope.gotk"], "no such file"),
    (["--agent", "kgs", "--human-agent", "kgs"], "not conditioned on metadata"),
    (["--agent", "HUMAN"], "give it as --human-agent"),
    (["--agent", "kgs", "--visits", "0"], "--visits must be >= 1"),
    (["--agent", "kgs", "--report-as", "RED"], "--report-as"),
    (["--agent", "kgs", "--board-size", "9"], "--board-size is for --agent mcts"),
    (["--agent", "mcts", "--value-agent", "kgs"], "has no network"),
    (["--agent", "mcts", "--rollout-policy", "kgs-rollout", "--board-size", "9"], "19x19, --board-size 9"),
])
def test_cli_refusals_are_one_line(args, words, tmp_path) -> None:
    if "HUMAN" in args:
        args = [str(make_conditioned_agent(tmp_path / "h.gotk")) if a == "HUMAN" else a for a in args]
    res = run_cli([], *args, timeout=120)
    assert res.returncode == 2 and words in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_engine_ends_when_the_shell_that_started_it_is_gone() -> None:
    """A client that runs the engine through a shell without exec and stops the shell alone (KaTrain on dash):
    the engine, its input still open, exits by itself instead of searching on as an orphan."""
    import signal

    cmd = " ".join([sys.executable, "-m", "gotk", "analysis", "--agent", "kgs"])
    # (a background command's input is /dev/null unless it is handed the shell's own, kept on fd 3)
    sh = subprocess.Popen(["/bin/sh", "-c", f"exec 3<&0; {cmd} <&3 3<&- & echo $!; wait"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid = int(sh.stdout.readline())
    sh.stdin.write(json.dumps(query(qid="p", maxVisits=10_000_000)) + "\n")
    sh.stdin.flush()
    time.sleep(3)
    os.kill(pid, 0)  # searching
    sh.send_signal(signal.SIGKILL)
    sh.wait()
    t0 = time.monotonic()
    while time.monotonic() - t0 < 20:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        os.kill(pid, signal.SIGKILL)
        pytest.fail("the orphaned engine kept running")
    sh.stdin.close()


def test_mcts_answers_with_rollouts_and_the_gtp_search() -> None:
    """``--agent mcts``: the search without a network answers KaTrain's fields on its board size, its best move the
    one ``gotk gtp --agent mcts`` plays for the same seed and visits; the root's raw value and ownership come from
    playouts."""
    from gotk.search.player import SearchPlayer

    moves = [["B", "E5"], ["W", "C3"], ["B", "G4"]]
    eng = Engine("mcts", visits=120, board_size=9, rollout_policy="uniform")
    # Chinese rules: no suicide, as a GameState's own (Tromp-Taylor's would let the playouts play suicides)
    eng.send(query(moves=moves, size=9, rules="chinese", includeOwnership=True, includeMovesOwnership=True,
                   includePolicy=True))
    (a,) = eng.run()
    assert KATRAIN_ROOT <= set(a["rootInfo"]) and all(KATRAIN_MOVE <= set(m) for m in a["moveInfos"])
    assert a["rootInfo"]["visits"] >= 120 and 0 <= a["rootInfo"]["rawWinrate"] <= 1
    policy = np.array(a["policy"])
    legal = policy[policy >= 0]
    assert legal.size > 70 and np.allclose(legal[:-1], legal[0])  # uniform priors (pass 0: moves are left)
    own = np.array(a["ownership"])
    assert len(own) == 81 and np.all(np.abs(own) <= 1) and np.abs(own).sum() > 1
    state = GameState(9)
    for color, vertex in moves:
        state.play(coords.from_gtp(vertex, 9), BLACK if color == "B" else WHITE)
    player = SearchPlayer(None, None, SearchConfig(visits=120, seed=1, resign_threshold=None))
    assert coords.to_gtp(player.choose(state), 9) == a["moveInfos"][0]["move"]
    eng.lines.clear()
    eng.send(query(moves=moves, size=19))
    (err,) = eng.lines
    assert err["field"] == "boardXSize" and "9x9" in err["error"]
    pat = Engine("mcts", visits=24, rollout_policy="kgs-rollout")
    pat.send(query(moves=MOVES19, includePolicy=True))
    (b,) = pat.run()
    p19 = np.array(b["policy"])
    assert p19.shape == (362,) and p19.max() > 5 * p19[p19 > 0].min()  # the pattern priors are not uniform
    # by default the shipped pattern policy, on any board size
    dflt = Engine("mcts", visits=24, board_size=9)
    dflt.send(query(moves=moves, size=9, rules="chinese", includePolicy=True))
    (c,) = dflt.run()
    p9 = np.array(c["policy"])
    assert p9.shape == (82,) and p9.max() > 5 * p9[p9 > 0].min()
