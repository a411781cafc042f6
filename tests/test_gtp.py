"""GTP engine: protocol framing, every command, rules answers, move choice, and fuzzing (in process
and through the real ``gotk gtp`` subprocess)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import tiny_agent_file
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gotk
from gotk import coords
from gotk.game.moves import own_eye_mask, passing_wins, sensible_moves
from gotk.game.state import BLACK, WHITE, GameState
from gotk.play.gtp import GtpEngine, preprocess
from gotk.play.players import RESIGN, PolicyPlayer, RandomPlayer

REPO = Path(__file__).resolve().parents[1]
ANSWER = re.compile(r"^[=?][0-9]*( [^\n]*)?(\n[^\n]+)*\n\n$")
REQUIRED = ("protocol_version", "name", "version", "known_command", "list_commands", "quit", "boardsize",
            "clear_board", "komi", "play", "genmove", "undo", "showboard", "fixed_handicap", "place_free_handicap",
            "set_free_handicap", "final_score", "time_settings", "time_left", "gotk-policy")


@pytest.fixture(scope="module")
def agent_file(tmp_path_factory) -> Path:
    return tiny_agent_file(tmp_path_factory.mktemp("gtp-agent") / "agent.gotk")


def ask(engine: GtpEngine, line: str) -> str:
    answer = engine.handle(line)
    assert answer is not None and ANSWER.match(answer), repr(answer)
    return answer


def ok(engine: GtpEngine, line: str) -> str:
    answer = ask(engine, line)
    assert answer.startswith("="), f"{line!r} → {answer!r}"
    return re.sub(r"^=[0-9]* ?", "", answer).rstrip("\n")


def err(engine: GtpEngine, line: str) -> str:
    answer = ask(engine, line)
    assert answer.startswith("?"), f"{line!r} → {answer!r}"
    return re.sub(r"^\?[0-9]* ?", "", answer).rstrip("\n")


def random_engine(size: int = 9) -> GtpEngine:
    return GtpEngine(RandomPlayer(seed=0), size=size)


# --- framing -------------------------------------------------------------------------------------


def test_preprocess_follows_the_spec() -> None:
    assert preprocess("play\tb\x01 d4 # a comment\r\n") == "play b d4"
    assert preprocess("# only a comment") == ""
    assert preprocess(" \t \x07\n") == ""


def test_ids_errors_and_blank_lines() -> None:
    e = random_engine()
    assert e.handle("") is None and e.handle("   # nothing") is None and e.handle("\x00\x1f") is None
    assert e.handle("12 protocol_version") == "=12 2\n\n"
    assert e.handle("protocol_version") == "= 2\n\n"
    assert e.handle("7 no_such_command") == "?7 unknown command\n\n"
    assert e.handle("no_such_command x") == "? unknown command\n\n"
    assert e.handle("3 play black") == "?3 syntax error (missing argument)\n\n"
    assert e.handle("4 play purple d4") == "?4 syntax error (color)\n\n"
    assert e.handle("99999999999999999999999999 name") == "=99999999999999999999999999 gotk\n\n"
    assert e.handle("5") == "?5 missing command\n\n"


def test_list_and_known_commands() -> None:
    e = random_engine()
    listed = ok(e, "list_commands").split("\n")
    assert set(REQUIRED) <= set(listed)
    for c in REQUIRED:
        assert ok(e, f"known_command {c}") == "true"
    assert ok(e, "known_command frobnicate") == "false"
    version = ok(e, "version")
    assert int(version.split(".")[1]) >= 15  # what Lizzie requires of a Leela Zero version
    assert version.endswith(f"+gotk.{gotk.__version__}")  # and gotk's own version is still there


def test_boardsize_range_and_clear() -> None:
    e = random_engine()
    for bad in ("1", "26", "0", "-3", "999999999999999999999"):
        assert err(e, f"boardsize {bad}") in ("unacceptable size", "syntax error (size)")
    assert err(e, "boardsize 26") == "unacceptable size"
    assert err(e, "boardsize nine").startswith("syntax error")
    for size in (2, 5, 19, 25):
        assert ok(e, f"boardsize {size}") == ""
        assert e.state.size == size and not e.state.board.any()
        g = ok(e, "genmove b")
        assert coords.from_gtp(g, size) in range(size * size + 1)
    ok(e, "clear_board")
    assert not e.state.board.any() and not e.state.history


def test_play_illegal_moves_and_undo() -> None:
    e = random_engine(5)
    ok(e, "komi 0.5")
    ok(e, "play b c3")
    assert err(e, "play w c3") == "illegal move"  # occupied
    assert err(e, "play w z9") in ("invalid coordinate", "syntax error (vertex)")
    assert err(e, "play w c6") == "invalid coordinate"
    assert err(e, "play w xyz") == "syntax error (vertex)"
    # suicide: white into a black-surrounded corner
    ok(e, "play b a2")
    ok(e, "play b b1")
    assert err(e, "play w a1") == "illegal move"
    # simple ko: black c3 takes b3, white may not retake at once
    e = random_engine(5)
    for mv in ("b b4", "b a3", "b b2", "w c4", "w d3", "w c2", "w b3"):
        ok(e, f"play {mv}")
    ok(e, "play b c3")  # captures b3
    assert e.state.board[coords.from_gtp("B3", 5)] == 0
    assert err(e, "play w b3") == "illegal move"  # ko
    ok(e, "play w pass")
    ok(e, "play b pass")
    ok(e, "play w b3")  # ko lifted after the passes
    n = len(e.state.history)
    ok(e, "undo")
    assert len(e.state.history) == n - 1 and e.state.board[coords.from_gtp("B3", 5)] == 0
    while e.state.history:
        ok(e, "undo")
    assert err(e, "undo") == "cannot undo"


def test_playing_same_colour_twice_and_genmove_for_either() -> None:
    e = random_engine(9)
    ok(e, "play b e5")
    ok(e, "play b d5")
    mv = ok(e, "genmove b")
    p = coords.from_gtp(mv, 9)
    assert e.state.board[p] == BLACK or p == 81
    mv = ok(e, "genmove white")
    assert e.state.history[-1][0] == WHITE


def test_showboard_and_final_score() -> None:
    e = random_engine(5)
    ok(e, "komi 2.5")
    assert ok(e, "final_score") == "W+2.5"
    for mv in ("b c1", "b c2", "b c3", "b c4", "b c5"):  # a wall: black owns columns A..C
        ok(e, f"play {mv}")
    assert ok(e, "final_score") == "B+22.5"  # 25 points, all black's area
    for mv in ("w d1", "w d2", "w d3", "w d4", "w d5"):  # white owns D..E
        ok(e, f"play {mv}")
    assert ok(e, "final_score") == "B+2.5"  # 15 - 10 - 2.5
    ok(e, "komi 5")
    assert ok(e, "final_score") == "0"
    board = ok(e, "showboard")
    assert board.startswith("\n") and "A B C D E" in board and " 5 . . X O .  5" in board


def test_handicap_commands() -> None:
    e = random_engine(19)
    assert ok(e, "fixed_handicap 4") == "D4 Q16 D16 Q4"
    assert e.state.to_play == WHITE and int((e.state.board == BLACK).sum()) == 4
    assert err(e, "fixed_handicap 2") == "board not empty"
    ok(e, "clear_board")
    assert err(e, "fixed_handicap 10") == "invalid number of stones"
    assert err(e, "fixed_handicap 1") == "invalid number of stones"
    assert ok(e, "fixed_handicap 9").split() == ["D4", "Q16", "D16", "Q4", "D10", "Q10", "K4", "K16", "K10"]
    ok(e, "clear_board")
    free = ok(e, "place_free_handicap 12").split()
    assert len(free) == 12 and len(set(free)) == 12 and int((e.state.board == BLACK).sum()) == 12
    ok(e, "clear_board")
    assert ok(e, "set_free_handicap a1 t19 k10") == ""
    assert int((e.state.board == BLACK).sum()) == 3 and e.state.to_play == WHITE
    ok(e, "clear_board")
    for bad in ("a1", "a1 a1", "a1 pass", "a1 z99", ""):
        assert err(e, f"set_free_handicap {bad}") == "bad vertex list"
    ok(e, "boardsize 2")
    assert err(e, "set_free_handicap a1 a2 b1 b2") == "bad vertex list"  # a full board
    assert ok(e, "set_free_handicap a1 b2") == ""
    ok(e, "boardsize 7")
    assert len(ok(e, "place_free_handicap 48").split()) >= 2  # may place fewer
    assert e.state.to_play == WHITE and all(e.state.liberties_at(int(p)) > 0 for p in np.flatnonzero(e.state.board))
    ok(e, "genmove w")


def test_time_commands_accepted() -> None:
    e = random_engine()
    assert ok(e, "time_settings 600 30 5") == ""
    assert ok(e, "time_left b 100 0") == ""
    assert err(e, "time_settings 600").startswith("syntax error")
    assert err(e, "time_left x 1 2").startswith("syntax error")


def test_gotk_policy_random() -> None:
    e = random_engine(9)
    lines = ok(e, "gotk-policy 5").split("\n")
    assert len(lines) == 5
    probs = [float(line.split()[1]) for line in lines]
    assert all(abs(p - 1 / 81) < 1e-6 for p in probs)
    assert err(e, "gotk-policy 0").startswith("syntax error")


# --- move choice -------------------------------------------------------------------------------


def _position_with_eyes() -> GameState:
    """5x5: black owns the left with eyes at A5 (corner) and A3 (edge); white the right, eyes E4 and E2."""
    s = GameState(5, komi=0.5)
    black = ["B5", "A4", "B4", "B3", "A2", "B2", "B1", "A1"]
    white = ["D5", "D4", "D3", "D2", "D1", "E5", "E3", "E1"]
    s.setup(black=[coords.from_gtp(v, 5) for v in black], white=[coords.from_gtp(v, 5) for v in white])
    return s


def test_own_eyes_match_the_alphago_definition() -> None:
    """``own_eye_mask`` (the rules' compiled ``is_own_eye``) against the definition written out in Python: every
    on-board neighbour is the player's, at most one opponent diagonal in the centre, none on the edge."""
    rng = np.random.default_rng(0)
    for size in (3, 5, 9, 19):
        for _ in range(40):
            s = GameState(size)
            s.board[:] = rng.choice([0, 0, 1, 1, 1, 2], size=size * size).astype(np.int8)
            for color in (BLACK, WHITE):
                mine = own_eye_mask(s, color)
                ref = []
                for p in range(size * size):
                    nbrs = [q for q in s.nbr[p] if q >= 0]
                    bad = sum(s.board[q] == 3 - color for q in s.diag[p] if q >= 0)
                    ref.append(bool(s.board[p] == 0 and all(s.board[q] == color for q in nbrs)
                                    and (bad == 0 if len(nbrs) < 4 else bad <= 1)))
                assert mine.tolist() == ref


def test_sensible_moves_compiled_path_matches_the_definition() -> None:
    """The compiled path (simple ko) equals legal moves minus own eyes, on positions from random play."""
    rng = np.random.default_rng(1)
    for size in (5, 9):
        s = GameState(size)
        for _ in range(120):
            for color in (BLACK, WHITE):
                legal = s.legal_moves(color)
                legal = legal[legal != s.pass_point]
                want = legal[~own_eye_mask(s, color)[legal]]
                assert sensible_moves(s, color).tolist() == want.tolist()
            moves = sensible_moves(s)
            s.play(int(rng.choice(moves)) if moves.size else s.pass_point)
            if s.passes >= 2:
                break


def test_players_never_fill_own_eyes_and_pass_when_only_eyes_are_left() -> None:
    s = _position_with_eyes()
    s.to_play = BLACK
    eyes = {coords.from_gtp(v, 5) for v in ("A5", "A3")}
    assert eyes <= set(np.flatnonzero(own_eye_mask(s, BLACK)))
    sens = set(sensible_moves(s).tolist())
    assert not sens & eyes and coords.from_gtp("C3", 5) in sens
    # fill everything but the eyes for black: only eye-filling moves remain → pass
    for v in ("C5", "C4", "C3", "C2", "C1"):
        s.play(coords.from_gtp(v, 5), BLACK)
    s.to_play = BLACK
    assert sensible_moves(s).size == 0
    assert RandomPlayer(seed=1).choose(s) == s.pass_point


def test_pass_after_opponent_pass_only_when_winning() -> None:
    s = GameState(9, komi=7.5)
    s.play(s.pass_point)  # black passes on an empty board: white is 7.5 ahead
    assert s.to_play == WHITE and passing_wins(s)
    assert RandomPlayer(seed=0).choose(s) == s.pass_point
    s = GameState(9, komi=7.5)
    s.play(s.pass_point, WHITE)
    s.to_play = BLACK
    assert not passing_wins(s)
    assert RandomPlayer(seed=0).choose(s) != s.pass_point


def test_policy_player_argmax_sampling_and_resign(agent_file: Path) -> None:
    from gotk.nets import load_agent

    agent = load_agent(agent_file)
    s = GameState(9)
    for v in ("E5", "D4", "F6"):
        s.play(coords.from_gtp(v, 9))
    p = PolicyPlayer(agent, temperature=0)
    probs = agent.policy(s)
    sens = sensible_moves(s)
    assert p.choose(s) == int(sens[np.argmax(probs[sens])])
    hot = PolicyPlayer(agent, temperature=1.0, seed=3)
    picks = {hot.choose(s) for _ in range(30)}
    assert len(picks) > 1 and picks <= set(sens.tolist())
    # a value below +1.01 always: resigns on the third consecutive move, not before
    r = PolicyPlayer(agent, resign_threshold=1.01, resign_moves=3)
    assert r.choose(s) != RESIGN and r.choose(s) != RESIGN and r.choose(s) == RESIGN
    r.reset()
    assert r.choose(s) != RESIGN
    never = PolicyPlayer(agent, resign_threshold=None)
    assert all(never.choose(s) != RESIGN for _ in range(5))
    # a pass threshold above every probability makes it pass
    assert PolicyPlayer(agent, pass_threshold=1.1).choose(s) == s.pass_point


def test_two_sampling_policy_players_end_their_game_by_two_passes() -> None:
    """Players that sample their policy (``--visits 0 --temperature 1``; a profile plays the same way) end their
    game as the human games they learned from end: the shipped ``kgs`` network's pass comes on top once the
    boundaries are closed, and the first pass comes while sensible moves are still left (before it, such players
    passed only when none was), the second answers it; well under the cap of 2 x 361 moves."""
    from gotk.nets import load_agent
    from gotk.nets.agent_file import resolve_agent

    agent = load_agent(resolve_agent("kgs"))
    players = {BLACK: PolicyPlayer(agent, temperature=1.0, seed=1, resign_threshold=None),
               WHITE: PolicyPlayer(agent, temperature=1.0, seed=11, resign_threshold=None)}
    state = GameState(19, komi=7.5)
    first_pass = None
    while state.passes < 2 and state.move_number < 2 * 361:
        move = players[state.to_play].choose(state)
        if move == state.pass_point and first_pass is None:
            first_pass = (state.move_number, sensible_moves(state).size)
        state.play(move)
    assert state.passes == 2, f"no natural end within {state.move_number} moves"
    assert first_pass is not None and first_pass[1] > 0, first_pass
    assert state.move_number < 500


def test_agent_engine(agent_file: Path) -> None:
    from gotk.nets import load_agent

    e = GtpEngine(PolicyPlayer(load_agent(agent_file)))
    assert e.state.size == 9
    assert err(e, "boardsize 19") == "unacceptable size"
    ok(e, "boardsize 9")
    lines = ok(e, "gotk-policy 4").split("\n")
    assert len(lines) == 5 and lines[-1].startswith("value ")
    probs = [float(x.split()[1]) for x in lines[:4]]
    assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1 + 1e-9
    for color in "bwbwbw":
        mv = ok(e, f"genmove {color}")
        assert mv == "pass" or e.state.board[coords.from_gtp(mv, 9)] == (BLACK if color == "b" else WHITE)


def test_agent_with_global_inputs_plays_through_gotk_gtp_at_the_komi_set(tmp_path: Path) -> None:
    """An agent that takes the komi as a global input, through the real ``gotk gtp``: its policy after ``komi K``
    is the agent's own on a position of komi K, and it plays with a search too."""
    from gotk.encoders import get_encoder
    from gotk.encoders import global_inputs as GI
    from gotk.nets import build_model, load_agent, save_agent

    torch.manual_seed(3)
    enc = get_encoder("relative", 9)
    model = build_model("resnet", enc.num_planes, 9, head="both", num_globals=GI.size(), blocks=1, filters=8)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.3)
    path = save_agent(tmp_path / "glob.gotk", model, "resnet", {"blocks": 1, "filters": 8}, enc.describe())
    agent = load_agent(path)

    def expected(komi: float) -> list[str]:
        state = GameState(9, komi=komi)
        state.play(coords.from_gtp("E5", 9))
        probs = agent.policy(state)
        top = np.argsort(-probs, kind="stable")[:3]
        return [f"{coords.to_gtp(int(p), 9)} {probs[p]:.6f}" for p in top] + [f"value {agent.value(state):.6f}"]

    script = "boardsize 9\nclear_board\nplay b E5\nkomi 7.5\ngotk-policy 3\nkomi -20\ngotk-policy 3\nquit\n"
    proc = subprocess.run([sys.executable, "-m", "gotk", "gtp", "--agent", str(path), "--threads", "1"],
                          input=script, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    answers = [a.removeprefix("=").strip() for a in proc.stdout.split("\n\n") if a]
    assert answers[4].split("\n") == expected(7.5)
    assert answers[6].split("\n") == expected(-20)
    assert expected(7.5) != expected(-20)
    script = "boardsize 9\nkomi 6.5\ngenmove b\ngenmove w\nquit\n"
    proc = subprocess.run([sys.executable, "-m", "gotk", "gtp", "--agent", str(path), "--threads", "1",
                           "--visits", "8"], input=script, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    moves = [a.removeprefix("=").strip() for a in proc.stdout.split("\n\n") if a][2:4]
    assert all(re.fullmatch(r"[A-HJ][1-9]|pass|resign", m) for m in moves), moves


# --- fuzzing ---------------------------------------------------------------------------------------

_WORDS = st.sampled_from(list(REQUIRED) + ["b", "w", "black", "white", "pass", "A1", "T19", "Z0", "i5", "-1", "0",
                                         "2", "9", "25", "26", "1e400", "nan", "inf", "9" * 40, "#", "\t", "é", "ß"])
_LINES = st.one_of(
    st.text(max_size=40),
    st.binary(max_size=40).map(lambda b: b.decode("utf-8", "replace")),
    st.lists(_WORDS, min_size=1, max_size=5).map(" ".join),
    st.tuples(st.integers(0, 10 ** 30), st.lists(_WORDS, min_size=1, max_size=4)).map(
        lambda t: f"{t[0]} " + " ".join(t[1])),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_LINES, min_size=1, max_size=12))
def test_fuzz_engine_answers_every_line(lines: list[str]) -> None:
    e = random_engine(9)
    for line in lines:
        if e.quit:
            break
        answer = e.handle(line)
        if answer is None:
            assert preprocess(line) == ""
            continue
        assert ANSWER.match(answer), (line, answer)
        assert "internal error" not in answer, (line, answer)
        # the board stays consistent
        assert set(np.unique(e.state.board).tolist()) <= {0, 1, 2}


def _independent_preprocess(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    text = "".join(ch for ch in text if ch in "\t\n" or not (ord(ch) < 32 or ord(ch) == 127))
    return text.split("#", 1)[0].replace("\t", " ").strip()


def test_fuzz_subprocess_stays_alive() -> None:
    """Random bytes through the real ``gotk gtp --random``: one answer per non-empty line, then quit."""
    rng = np.random.default_rng(7)
    words = [w.encode() for w in REQUIRED] + [b"b", b"w", b"d4", b"pass", b"99999999999999999999", b"\xff\xfe",
                                              "\u00e9\u4e2d".encode(), b"\x00", b"\t", b"#x", b"-5", b"1e999"]
    lines: list[bytes] = []
    for _ in range(300):
        if rng.random() < 0.3:
            line = bytes(rng.integers(0, 256, size=int(rng.integers(0, 30)), dtype=np.uint8))
            line = line.replace(b"\n", b" ")
        else:
            line = b" ".join(words[int(i)] for i in rng.integers(0, len(words), size=int(rng.integers(1, 5))))
        if _independent_preprocess(line).split()[:1] in (["quit"],) or b"quit" in line:
            continue
        lines.append(line)
    lines.append(b"quit")
    payload = b"\n".join(lines) + b"\n"
    proc = subprocess.run([sys.executable, "-m", "gotk", "gtp", "--random", "--seed", "1"], input=payload,
                          capture_output=True, timeout=60, cwd=REPO)
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout.decode("utf-8")
    answers = [a for a in out.split("\n\n") if a]
    expected = sum(1 for line in lines if _independent_preprocess(line))
    assert len(answers) == expected
    assert all(a[0] in "=?" for a in answers)
    assert "internal error" not in out
