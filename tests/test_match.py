"""``gotk match``: real games against ``gotk gtp --random`` and GNU Go as subprocesses, SGF records,
faulty opponents (scripted GTP engines run as real subprocesses) and the summary statistics."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sgfmill import sgf

from gotk import coords
from gotk.game.state import BLACK, WHITE, GameState
from gotk.play.gtp_client import GtpClient, OpponentTimeout
from gotk.play.match import Match, MatchConfig, OpponentUnavailable
from gotk.play.players import RandomPlayer
from gotk.play.results import parse_score, summarize, wilson_interval

REPO = Path(__file__).resolve().parents[1]
GNUGO = Path("/usr/games/gnugo")
RANDOM_ENGINE = [sys.executable, "-m", "gotk", "gtp", "--random", "--seed", "5"]


def check_sgf(path: Path, moves: int, result: str, size: int = 9, komi: float = 7.5) -> None:
    """The record parses, carries the header fields, and its moves replay legally."""
    game = sgf.Sgf_game.from_bytes(path.read_bytes())
    root = game.get_root()
    assert game.get_size() == size and game.get_komi() == komi
    assert root.get("RE") == result and root.get("RU") == "Chinese"
    assert root.get("PB") and root.get("PW") and root.get("DT")
    state = GameState(size, komi=komi)
    seq = game.get_main_sequence()[1:]
    assert len(seq) == moves
    for node in seq:
        colour, move = node.get_move()
        state.play(coords.from_sgfmill(move, size), 1 if colour == "b" else 2)


def test_wilson_and_summary() -> None:
    lo, hi = wilson_interval(5, 10)
    assert abs(lo - 0.2366) < 1e-4 and abs(hi - 0.7634) < 1e-4
    assert wilson_interval(0, 0) == (0.0, 1.0)
    lo, hi = wilson_interval(10, 10)
    assert abs(lo - 0.7225) < 1e-4 and hi == 1.0


def test_parse_score() -> None:
    assert parse_score("B+3.5") == ("B", "B+3.5")
    assert parse_score("w+12") == ("W", "W+12")
    assert parse_score("W+Resign") == ("W", "W+R")
    assert parse_score("0") == (None, "0")
    assert parse_score("") is None and parse_score("hello") is None


def test_gtp_client_timeout_kills_a_silent_engine(tmp_path: Path) -> None:
    script = tmp_path / "silent.py"
    script.write_text("import time\ntime.sleep(60)\n")
    c = GtpClient([sys.executable, str(script)], timeout=0.5)
    with pytest.raises(OpponentTimeout):
        c.send("name")
    assert c.proc.poll() is not None


def test_match_against_random_subprocess(tmp_path: Path) -> None:
    cfg = MatchConfig(size=9, komi=7.5, games=2, max_moves=400, timeout=30, sgf_out=tmp_path / "sgf")
    seen = []
    m = Match(RandomPlayer(seed=1), RANDOM_ENGINE, cfg, on_game=seen.append)
    results = m.run()
    assert [r.agent_colour for r in results] == ["B", "W"] and seen == results
    assert m.opponent_name.startswith("gotk-random")
    for r in results:
        assert r.reason == "two_passes" and r.score_source == "opponent"
        assert r.result[:2] in ("B+", "W+") and r.winner == r.result[0]
        check_sgf(Path(r.sgf), r.moves, r.result)
    s = summarize(results)
    assert s.wins + s.losses == 2 and s.ci95[0] <= s.win_rate <= s.ci95[1]


def test_cli_match_json_with_agent_file(tmp_path: Path) -> None:
    """``gotk match --agent FILE --json`` end to end, the opponent being ``gotk gtp --agent FILE``."""
    from helpers import tiny_agent_file

    agent = tiny_agent_file(tmp_path / "agent.gotk", size=9, head="policy")
    out = tmp_path / "games"
    opponent = shlex.join([sys.executable, "-m", "gotk", "gtp", "--agent", str(agent), "--temperature", "1", "--seed",
                           "3"])  # the gtp CLI with an agent
    cmd = [sys.executable, "-m", "gotk", "match", "--agent", str(agent), "--opponent", opponent, "--games", "2",
           "--size", "9", "--max-moves", "40", "--sgf-out", str(out), "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["games"] == 2 and d["wins"] + d["losses"] + d["draws"] == 2
    assert d["agent"] == "gotk-resnet" and d["opponent"].startswith("gotk-resnet")
    assert 0 <= d["ci95"][0] <= d["win_rate"] <= d["ci95"][1] <= 1
    assert [g["agent_colour"] for g in d["per_game"]] == ["B", "W"]
    for g in d["per_game"]:
        assert g["reason"] in ("max_moves", "two_passes") and g["moves"] <= 40
        check_sgf(Path(g["sgf"]), g["moves"], g["result"])
    assert "game" in proc.stderr and "max_moves" in proc.stderr  # the live table goes to stderr with --json


def test_cli_match_agent_first_white(tmp_path: Path) -> None:
    """``--agent-first white``: the agent takes white in game 1 and colours alternate from there (split runs of
    one match start on both colours); the records name the agent on its own side."""
    out = tmp_path / "games"
    cmd = [sys.executable, "-m", "gotk", "match", "--agent", "random", "--seed", "2", "--opponent",
           shlex.join(RANDOM_ENGINE), "--games", "3", "--size", "5", "--max-moves", "12", "--agent-first", "white",
           "--sgf-out", str(out), "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert [g["agent_colour"] for g in d["per_game"]] == ["W", "B", "W"]
    for g in d["per_game"]:
        root = sgf.Sgf_game.from_bytes(Path(g["sgf"]).read_bytes()).get_root()
        mine = root.get("PW" if g["agent_colour"] == "W" else "PB")
        assert mine == d["agent"] and root.get("PB" if g["agent_colour"] == "W" else "PW") == d["opponent"]
    bad = subprocess.run([*cmd[:-3], "--agent-first", "red"], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert bad.returncode == 2 and "--agent-first must be black or white, not 'red'" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_cli_match_names_the_players_for_elo(tmp_path: Path) -> None:
    """``--name`` / ``--opponent-name`` name the players in the report, the table and the SGF records, so two
    matches of one model's networks rate them apart in ``gotk elo``; empty or equal names are refused first."""
    reports = []
    for k, (me, them) in enumerate((("a:net-002", "b:net-002"), ("a:net-004", "b:net-002"))):
        out = tmp_path / f"games-{k}"
        cmd = [sys.executable, "-m", "gotk", "match", "--agent", "random", "--seed", str(k), "--opponent",
               shlex.join(RANDOM_ENGINE), "--games", "2", "--size", "5", "--max-moves", "12", "--sgf-out", str(out),
               "--name", me, "--opponent-name", them, "--json"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO)
        assert proc.returncode == 0, proc.stderr
        d = json.loads(proc.stdout)
        assert (d["agent"], d["opponent"]) == (me, them)
        for g in d["per_game"]:
            root = sgf.Sgf_game.from_bytes(Path(g["sgf"]).read_bytes()).get_root()
            assert {root.get("PB"), root.get("PW")} == {me, them}
        reports.append(tmp_path / f"m{k}.json")
        reports[-1].write_text(proc.stdout)
    proc = subprocess.run([sys.executable, "-m", "gotk", "elo", *map(str, reports), "--anchor", "b:net-002",
                           "--json"], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    rated = {r["name"] for r in json.loads(proc.stdout)["ratings"]}
    assert rated >= {"a:net-002", "a:net-004", "b:net-002"}, rated
    base = [sys.executable, "-m", "gotk", "match", "--agent", "random", "--opponent", "no-such-engine"]
    for extra, message in ((["--name", " "], "--name is empty"),
                           (["--name", "x", "--opponent-name", "x"], "--name and --opponent-name are the same")):
        bad = subprocess.run([*base, *extra], capture_output=True, text=True, timeout=60, cwd=REPO)
        assert bad.returncode == 2 and message in bad.stderr and "Traceback" not in bad.stderr, bad.stderr


@pytest.mark.skipif(not GNUGO.exists(), reason="GNU Go is not installed at /usr/games/gnugo")
def test_match_against_gnugo(tmp_path: Path) -> None:
    cfg = MatchConfig(size=9, komi=7.5, games=2, max_moves=30, timeout=60, sgf_out=tmp_path)
    m = Match(RandomPlayer(seed=2), [str(GNUGO), "--mode", "gtp", "--level", "1"], cfg)
    results = m.run()
    assert m.opponent_name.startswith("GNU Go")
    for r in results:
        assert r.reason in ("max_moves", "two_passes", "opponent_resigned"), r
        if r.reason != "opponent_resigned":
            assert r.score_source == "opponent"
        check_sgf(Path(r.sgf), r.moves, r.result)
        root = sgf.Sgf_game.from_bytes(Path(r.sgf).read_bytes()).get_root()
        assert "GNU Go" in root.get("PW" if r.agent_colour == "B" else "PB")


@pytest.mark.skipif(not GNUGO.exists(), reason="GNU Go is not installed at /usr/games/gnugo")
def test_searched_game_ends_with_gnugos_count(tmp_path: Path) -> None:
    """An evaluation game as gotk zero plays it (a search, no resignation) against GNU Go level 1 (seeded). GNU Go
    opens E5; the agent's first move is A9, after which GNU Go passes, counting A9 dead (B+73.5). Every stone alive,
    a pass would win White the game by komi; by the final count it loses, so the search plays on, and the game,
    played out to two passes, ends with both counts naming the same winner."""
    from helpers import material_agent_file

    from gotk.play.factory import make_search_player
    from gotk.search import SearchConfig

    search = make_search_player(str(material_agent_file(tmp_path / "material.gotk")),
                                SearchConfig(visits=16, seed=1, resign_threshold=None), warn=lambda _: None)

    class OpensAtA9:
        name = "gotk-opens-a9"

        def reset(self) -> None:
            search.reset()

        def choose(self, state: GameState) -> int:
            return coords.from_gtp("A9", 9) if state.move_number == 1 else search.choose(state)

    cfg = MatchConfig(size=9, komi=7.5, games=1, timeout=60, agent_first=WHITE, sgf_out=tmp_path / "sgf")
    (r,) = Match(OpensAtA9(), [str(GNUGO), "--mode", "gtp", "--level", "1", "--chinese-rules", "--seed", "1"],
                 cfg).run()
    pass_point = 81
    assert [coords.to_gtp(p, 9) for _, p in r.move_list[:2]] == ["E5", "A9"]
    assert r.move_list[2] == (BLACK, pass_point) and r.move_list[3][1] != pass_point  # no answer to that pass
    assert r.reason == "two_passes" and r.score_source == "opponent", r
    assert r.scores_agree, (r.gotk_score, r.opponent_score, r.sgf)
    assert summarize([r]).winner_disagreements == 0


@pytest.mark.skipif(not GNUGO.exists(), reason="GNU Go is not installed at /usr/games/gnugo")
def test_cli_match_gnugo_table(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "gotk", "match", "--agent", "random", "--opponent", f"{GNUGO} --mode gtp --level 1",
           "--games", "1", "--size", "9", "--max-moves", "10"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().split("\n")
    assert lines[0].split()[:5] == ["game", "agent", "result", "moves", "reason"]
    assert "GNU Go" in lines[-1] and "win rate" in lines[-1] and "95% CI" in lines[-1]


FAKE_ENGINE = textwrap.dedent('''
    """A scripted GTP engine: MODE ok | illegal | crash | hang | garbage | slowscore; counts its starts in STARTS."""
    import sys, time
    mode, starts = sys.argv[1], sys.argv[2]
    with open(starts, "a") as f:
        f.write("x")
    genmoves = 0
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "quit":
            print("=\\n", flush=True)
            break
        if cmd[0] == "name":
            print("= fake-" + mode + "\\n", flush=True)
        elif cmd[0] == "genmove":
            genmoves += 1
            if mode == "illegal":
                print("= C3\\n", flush=True)  # legal once, then occupied
            elif mode == "crash" and genmoves == 3:
                sys.stdout.write("= D")
                sys.stdout.flush()
                sys.exit(3)
            elif mode == "hang" and genmoves == 2:
                time.sleep(60)
            elif mode == "garbage":
                print("= xyzzy\\n", flush=True)
            else:
                print("= " + "ABCDEFGHJ"[genmoves % 9] + str(1 + genmoves // 9) + "\\n", flush=True)
        elif cmd[0] == "final_score":
            if mode == "slowscore":
                time.sleep(60)
            if mode == "blackwins":
                print("= B+100\\n", flush=True)  # a count that ignores the board
            else:
                print("? cannot score\\n", flush=True)
        else:
            print("=\\n", flush=True)
''')


@pytest.mark.parametrize("mode, reason", [("illegal", "opponent_illegal_move"), ("crash", "opponent_crashed"),
                                          ("hang", "opponent_timeout"), ("garbage", "opponent_illegal_move")])
def test_faulty_opponent_forfeits_the_game_not_the_match(tmp_path: Path, mode: str, reason: str) -> None:
    script = tmp_path / "fake_gtp.py"
    script.write_text(FAKE_ENGINE)
    starts = tmp_path / "starts"
    cfg = MatchConfig(size=9, games=2, max_moves=60, timeout=1.0, sgf_out=tmp_path / "sgf")
    results = Match(RandomPlayer(seed=0), [sys.executable, str(script), mode, str(starts)], cfg).run()
    assert [r.reason for r in results] == [reason, reason]
    for r in results:
        assert r.winner == r.agent_colour and r.result == f"{r.agent_colour}+F" and r.detail
        check_sgf(Path(r.sgf), r.moves, r.result)
    assert starts.read_text() == "xx"  # restarted for the second game
    s = summarize(results)
    assert (s.wins, s.losses) == (2, 0)


def test_opponent_that_cannot_start(tmp_path: Path) -> None:
    """No engine at all, or one that dies before its first answer: an error, never forfeits counted as wins."""
    cfg = MatchConfig(size=9, games=2, max_moves=10, timeout=5)
    with pytest.raises(OpponentUnavailable, match="no-such-engine"):
        Match(RandomPlayer(seed=0), [str(tmp_path / "no-such-engine")], cfg).run()
    with pytest.raises(OpponentUnavailable, match="No module named"):
        Match(RandomPlayer(seed=0), [sys.executable, "-m", "no_such_module_gotk"], cfg).run()


def test_cli_match_with_an_opponent_that_cannot_start(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "gotk", "match", "--agent", "random", "--games", "3", "--size", "9",
           "--opponent", f"{sys.executable} -m no_such_module_gotk", "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 2
    assert "opponent_unavailable" in proc.stderr and "No module named" in proc.stderr
    assert proc.stdout == ""  # no result object claiming wins


def test_scoring_falls_back_to_our_area_score(tmp_path: Path) -> None:
    """The fake engine refuses ``final_score``: the game is scored by gotk at max moves (its final count; with six
    stones on the board and no pass every stone counts)."""
    script = tmp_path / "fake_gtp.py"
    script.write_text(FAKE_ENGINE)
    cfg = MatchConfig(size=9, games=1, max_moves=6, timeout=5)
    (r,) = Match(RandomPlayer(seed=0), [sys.executable, str(script), "ok", str(tmp_path / "s")], cfg).run()
    assert r.reason == "max_moves" and r.moves == 6 and r.score_source == "gotk" and "refused" in r.detail
    state = GameState(9, komi=7.5)
    for colour, point in r.move_list:
        state.play(point, colour)
    score = state.score_area()
    assert r.result == (f"B+{score:g}" if score > 0 else f"W+{-score:g}")
    assert r.gotk_score == score and r.opponent_score is None and r.scores_agree is None


def test_both_counts_of_every_scored_game_and_their_disagreements(tmp_path: Path) -> None:
    """An opponent whose ``final_score`` always says B+100: each game records both counts, and the summary (and the
    CLI's ``scores:`` line) counts the games where gotk's count names White, with six random stones and komi."""
    script = tmp_path / "fake_gtp.py"
    script.write_text(FAKE_ENGINE)
    cmd = [sys.executable, "-m", "gotk", "match", "--agent", "random", "--seed", "0", "--opponent",
           shlex.join([sys.executable, str(script), "blackwins", str(tmp_path / "s")]), "--games", "2", "--size", "9",
           "--max-moves", "6", "--sgf-out", str(tmp_path / "sgf"), "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    white_by_gotk = 0
    for g in d["per_game"]:
        state = GameState(9, komi=7.5)
        for node in sgf.Sgf_game.from_bytes(Path(g["sgf"]).read_bytes()).get_main_sequence()[1:]:
            colour, move = node.get_move()
            state.play(coords.from_sgfmill(move, 9), 1 if colour == "b" else 2)
        assert g["result"] == "B+100" and g["score_source"] == "opponent" and g["opponent_score"] == 100.0
        assert g["gotk_score"] == state.score_final() == state.score_area()  # no pass-alive group, no pass
        assert g["scores_agree"] == (state.score_final() > 0)
        white_by_gotk += state.score_final() < 0
    assert white_by_gotk >= 1  # three stones each and 7.5 komi
    assert (d["scores_checked"], d["winner_disagreements"], d["margin_disagreements"]) == (2, white_by_gotk, 2)
    assert f"name different winners in {white_by_gotk} of 2 scored games (different margins in 2)" in proc.stderr


def test_agent_resignation_ends_the_game(tmp_path: Path) -> None:
    from helpers import tiny_agent_file

    from gotk.nets import load_agent
    from gotk.play.players import PolicyPlayer

    agent = load_agent(tiny_agent_file(tmp_path / "agent.gotk", size=9, head="both"))
    script = tmp_path / "fake_gtp.py"
    script.write_text(FAKE_ENGINE)
    player = PolicyPlayer(agent, resign_threshold=1.01, resign_moves=2)  # the value is always below 1.01
    cfg = MatchConfig(size=9, games=2, max_moves=50, timeout=5, sgf_out=tmp_path / "sgf")
    results = Match(player, [sys.executable, str(script), "ok", str(tmp_path / "s")], cfg).run()
    assert [(r.reason, r.result) for r in results] == [("agent_resigned", "W+R"), ("agent_resigned", "B+R")]
    assert [r.moves for r in results] == [2, 3]  # resigns at its second move, each game (the streak resets)
    check_sgf(Path(results[0].sgf), 2, "W+R")


def test_cli_errors_are_clean(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from gotk.cli.main import app

    runner = CliRunner()
    r = runner.invoke(app, ["gtp"])
    assert r.exit_code == 2 and "exactly one of --agent" in r.output
    r = runner.invoke(app, ["match", "--agent", str(tmp_path / "missing.gotk"), "--opponent", "x"])
    assert r.exit_code == 2 and "bad_agent" in r.output
    r = runner.invoke(app, ["match", "--agent", "random", "--opponent", "  "])
    assert r.exit_code == 2 and "empty" in r.output


def test_final_score_timeout_falls_back_without_forfeit(tmp_path: Path) -> None:
    script = tmp_path / "fake_gtp.py"
    script.write_text(FAKE_ENGINE)
    starts = tmp_path / "starts"
    cfg = MatchConfig(size=9, games=2, max_moves=4, timeout=1.0)
    results = Match(RandomPlayer(seed=0), [sys.executable, str(script), "slowscore", str(starts)], cfg).run()
    for r in results:
        assert r.reason == "max_moves" and r.score_source == "gotk" and "opponent_timeout" in r.detail
        assert r.result[1] == "+" and r.result[2:] not in ("F", "R")
    assert starts.read_text() == "xx"  # the killed engine was restarted for game 2


def test_a_reports_game_reads_back_with_its_derived_keys_recomputed() -> None:
    """A ``per_game`` entry of a ``--json`` report (with ``scores_agree``, which is derived) reads back as the game."""
    from gotk.play.results import GameResult

    g = GameResult(3, "B", "W", "W+2.5", 120, "two_passes", "opponent", gotk_score=1.5, opponent_score=-2.5)
    d = json.loads(json.dumps(g.as_dict()))
    assert d["scores_agree"] is False
    back = GameResult.from_dict(d)
    assert back == g and back.scores_agree is False


@pytest.mark.parametrize("opponent", ["gnugo", "gotk"])
def test_cli_handicap_match(tmp_path: Path, opponent: str) -> None:
    """--handicap 3 on 9x9: Black's stones on GTP's fixed points on both boards (GNU Go places them by
    fixed_handicap; gotk's own engine too), White first, komi 0.5 by default, the SGF's HA/AB; every move legal on
    the opponent's board (a rejected or illegal move would void or forfeit the game)."""
    if opponent == "gnugo" and not GNUGO.exists():
        pytest.skip("GNU Go is not installed at /usr/games/gnugo")
    engine = f"{GNUGO} --mode gtp --level 1 --chinese-rules" if opponent == "gnugo" else shlex.join(RANDOM_ENGINE)
    cmd = [sys.executable, "-m", "gotk", "match", "--agent", "random", "--opponent", engine, "--games", "2",
           "--size", "9", "--handicap", "3", "--seed", "3", "--max-moves", "60", "--sgf-out", str(tmp_path),
           "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["komi"] == 0.5 and report["handicap"] == 3
    assert {g["reason"] for g in report["per_game"]} <= {"two_passes", "max_moves", "agent_resigned",
                                                        "opponent_resigned"}
    for g in report["per_game"]:
        game = sgf.Sgf_game.from_bytes(Path(g["sgf"]).read_bytes())
        root = game.get_root()
        assert root.get("HA") == 3 and game.get_komi() == 0.5
        black, white, _ = root.get_setup_stones()
        assert sorted(coords.from_sgfmill(p, 9) for p in black) == sorted(
            coords.from_gtp(v, 9) for v in ("C3", "G7", "C7")) and not white
        seq = game.get_main_sequence()[1:]
        assert seq[0].get_move()[0] == "w"
        state = GameState(9, komi=0.5).setup([coords.from_sgfmill(p, 9) for p in black], to_play=WHITE)
        for node in seq:
            colour, move = node.get_move()
            state.play(coords.from_sgfmill(move, 9), BLACK if colour == "b" else WHITE)
    bad = subprocess.run([*cmd[:-1], "--handicap", "12"], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert bad.returncode == 2 and "--handicap must be from 2 to 9" in bad.stderr


@pytest.mark.skipif(not GNUGO.exists(), reason="GNU Go is not installed at /usr/games/gnugo")
def test_gnugo_monte_carlo_is_an_opponent_and_mcts_plays_it(tmp_path: Path) -> None:
    """GNU Go's Monte Carlo mode (9x9) as the peer of the network-free search: a short match of gotk's Monte Carlo
    tree search against it, every move legal on both boards, and its report read by gotk elo."""
    out = tmp_path / "mc.json"
    cmd = [sys.executable, "-m", "gotk", "match", "--agent", "mcts", "--visits", "200", "--opponent",
           f"{GNUGO} --mode gtp --monte-carlo --level 1 --mc-games-per-level 500 --chinese-rules", "--games", "2",
           "--size", "9", "--seed", "1", "--max-moves", "40", "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    out.write_text(proc.stdout)
    report = json.loads(proc.stdout)
    assert report["agent"] == "gotk-mcts-200v-kgs-rollout" and "GNU Go" in report["opponent"]
    assert {g["reason"] for g in report["per_game"]} <= {"max_moves", "two_passes", "agent_resigned",
                                                        "opponent_resigned"}
    elo = subprocess.run([sys.executable, "-m", "gotk", "elo", str(out), "--anchor", report["opponent"]],
                         capture_output=True, text=True, timeout=120, cwd=REPO)
    assert elo.returncode == 0 and "gotk-mcts-200v" in elo.stdout, elo.stderr
