"""The rules engine on hand-drawn positions.

Diagrams: ``X`` black, ``O`` white, ``.`` empty, a lowercase letter an empty point named for the test.
Row 0 is the top line of the diagram (gotk's convention, see ``gotk.coords``).
"""

from __future__ import annotations

import numpy as np
import pytest

from gotk import coords
from gotk.errors import IllegalMoveError
from gotk.game import batch as B
from gotk.game import kernels as K
from gotk.game import loops as KL
from gotk.game.handicap import fixed_handicap_points, max_fixed_handicap
from gotk.game.replay import initial_state, iter_positions, replay
from gotk.game.state import BLACK, EMPTY, WHITE, GameState, Rules
from gotk.sgf.reader import read_sgf


def parse(diagram: str) -> tuple[int, list[int], list[int], dict[str, int]]:
    """ASCII diagram → (size, black points, white points, named points)."""
    rows = [line.split() for line in diagram.strip().splitlines()]
    size = len(rows)
    assert all(len(r) == size for r in rows), "diagrams are square"
    black, white, named = [], [], {}
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            p = coords.from_rc(r, c, size)
            if cell == "X":
                black.append(p)
            elif cell == "O":
                white.append(p)
            elif cell.islower():
                named[cell] = p
            else:
                assert cell == ".", cell
    return size, black, white, named


def position(diagram: str, to_play: int = BLACK, rules: Rules | None = None):
    size, black, white, named = parse(diagram)
    state = GameState(size, rules).setup(black, white, to_play=to_play)
    return state, named


def grid_of(diagram: str) -> np.ndarray:
    size, black, white, _ = parse(diagram)
    board = np.zeros(size * size, dtype=np.int8)
    board[black] = BLACK
    board[white] = WHITE
    return board


def assert_consistent(state: GameState) -> None:
    assert state.hash == int(KL.board_hash(state.board, state.zob))


# --- captures -------------------------------------------------------------------------------------

def test_one_move_captures_four_strings():
    state, at = position("""
        . . O . . . .
        . O X O . . .
        O X a X O . .
        . O X O . . .
        . . O . . . .
        . . . . . . .
        . . . . . . .
    """, to_play=WHITE)
    assert state.liberties_at(coords.from_rc(1, 1, 7)) == 2
    state.play(at["a"])
    assert np.array_equal(state.board, grid_of("""
        . . O . . . .
        . O . O . . .
        O . O . O . .
        . O . O . . .
        . . O . . . .
        . . . . . . .
        . . . . . . .
    """))
    assert state.captures == (0, 4)
    assert state.liberties_at(at["a"]) == 4
    assert state.liberties_at(coords.from_rc(1, 1, 7)) == 4  # gained the two freed points
    assert state.ko_point is None  # four stones taken: no ko
    assert_consistent(state)


def test_capture_of_a_big_and_a_small_string_at_once():
    state, at = position("""
        X X X a O
        O O O X O
        . . . O .
        . . . . .
        . . . . .
    """, to_play=WHITE)
    state.play(at["a"])
    assert np.array_equal(state.board, grid_of("""
        . . . O O
        O O O . O
        . . . O .
        . . . . .
        . . . . .
    """))
    assert state.captures == (0, 4)
    assert len(state.string_at(at["a"])) == 3
    assert state.liberties_at(at["a"]) == 3
    assert state.liberties_at(coords.from_rc(1, 0, 5)) == 7  # three freed above, three below, (1,3)
    assert_consistent(state)


def test_snapback():
    state, at = position("""
        . . . . .
        . . . . .
        X X X X X
        X O O O X
        X O a c X
    """)
    state.play(at["a"])  # throw-in: one stone in atari
    assert state.liberties_at(at["a"]) == 1
    assert state.liberties_at(coords.from_rc(3, 1, 5)) == 1  # the white string too
    state.play(at["c"])  # white takes it...
    assert state.captures == (0, 1)
    assert state.ko_point is None  # the capturing stone joined a 5-stone string: not a ko
    assert state.liberties_at(at["c"]) == 1
    state.play(at["a"])  # ...and black takes back five
    assert state.captures == (5, 1)
    assert np.array_equal(state.board, grid_of("""
        . . . . .
        . . . . .
        X X X X X
        X . . . X
        X . X . X
    """))
    assert state.liberties_at(at["a"]) == 3
    assert_consistent(state)


# --- ko --------------------------------------------------------------------------------------------

KO = """
    . X O . .
    X a X O .
    . X O . .
    . . . . f
    g . . . .
"""


def test_ko_forbidden_at_once_then_lifted_by_a_move_elsewhere():
    state, at = position(KO, to_play=WHITE)
    retake = coords.from_rc(1, 2, 5)
    state.play(at["a"])
    assert state.captures == (0, 1)
    assert state.ko_point == retake
    assert not state.is_legal(retake)
    assert retake not in state.legal_moves()
    with pytest.raises(IllegalMoveError) as e:
        state.play(retake)
    assert e.value.reason == "ko"
    assert state.to_play == BLACK and state.board[retake] == EMPTY  # refused move changed nothing
    state.play(at["f"])  # ko threat elsewhere
    assert state.ko_point is None  # white to play: no ko for white
    state.play(at["g"])  # white answers elsewhere
    assert state.ko_point is None and state.is_legal(retake)
    state.play(retake)  # now black may retake
    assert state.captures == (1, 1)
    assert state.ko_point == at["a"]  # and white may not retake at once
    with pytest.raises(IllegalMoveError) as e:
        state.play(at["a"])
    assert e.value.reason == "ko"


def test_ko_lifted_by_a_pass():
    state, at = position(KO, to_play=WHITE)
    retake = coords.from_rc(1, 2, 5)
    state.play(at["a"])
    state.play(state.pass_point)
    state.play(state.pass_point)
    assert state.passes == 2
    state.play(retake)
    assert state.board[at["a"]] == EMPTY


def test_capturing_several_single_stones_is_no_ko():
    state, at = position("""
        . X O X .
        X O a O X
        . X O X .
        . . . . .
        . . . . .
    """)
    state.play(at["a"])
    assert state.captures == (3, 0)  # (2,2) keeps a liberty below
    assert state.liberties_at(at["a"]) == 3
    assert state.ko_point is None


# --- superko ---------------------------------------------------------------------------------------

def _ko_cycle(rules: Rules) -> tuple[GameState, int]:
    """White takes the ko, both pass (which lifts simple ko), black retakes: the position before
    white's capture comes back."""
    state, at = position(KO, to_play=WHITE, rules=rules)
    state.play(at["a"])
    state.play(state.pass_point)
    state.play(state.pass_point)
    return state, coords.from_rc(1, 2, 5)


def test_superko_refuses_a_repeated_position():
    state, retake = _ko_cycle(Rules(superko=True))
    before = state.copy()
    assert not state.is_legal(retake)
    assert retake not in state.legal_moves()
    with pytest.raises(IllegalMoveError) as e:
        state.play(retake)
    assert e.value.reason == "superko"
    assert np.array_equal(state.board, before.board)  # refused: nothing changed
    assert state.captures == before.captures and state.to_play == BLACK and state.hash == before.hash
    assert len(state.history) == len(before.history)
    assert_consistent(state)


def test_repetition_allowed_without_superko():
    state, retake = _ko_cycle(Rules())
    assert state.is_legal(retake)
    state.play(retake)
    size, black, white, _ = parse(KO)
    assert state.hash == GameState(size).setup(black, white).hash  # the very position of the start


def test_superko_in_compiled_replay_stops_before_the_repeat():
    # same cycle as an SGF record: the setup is KO's stones
    data = b"(;GM[1]SZ[5]AB[ba][ab][bc][cb]AW[ca][db][cc]PL[W];W[bb];B[];W[];B[cb];W[ee])"
    (rec,) = read_sgf(data)
    free = replay(rec)
    assert free.error is None and free.moves_played == 5
    out = replay(rec, Rules(superko=True))
    assert out.moves_played == 3
    assert out.error is not None and "superko" in str(out.error)
    # the state is the position before the refused move, consistent with its hashes
    step = initial_state(rec, Rules(superko=True))
    for color, point in rec.moves[:3]:
        step.play(point, color)
    assert np.array_equal(out.state.board, step.board)
    assert out.state.captures == step.captures
    assert out.state.hash == step.hash == int(out.hashes[-1])
    assert out.state.to_play == BLACK
    assert_consistent(out.state)
    # and the engine agrees move by move
    with pytest.raises(IllegalMoveError) as e:
        step.play(rec.points[3], rec.colors[3])
    assert e.value.reason == "superko"


def test_superko_history_starts_at_the_setup_position():
    # a 2x2 board set up with three white stones; white fills its last liberty (suicide allowed) and
    # the board is empty: a position this game never had, so superko must not refuse it
    state = GameState(2, Rules(suicide=True, superko=True)).setup(white=[0, 1, 2], to_play=WHITE)
    state.play(3)
    assert not state.board.any()
    assert state.captures == (4, 0)
    # while the set-up position itself does count: white cannot recreate it by the same stones
    state2, at = position(KO, to_play=WHITE, rules=Rules(superko=True))
    start = state2.hash
    state2.play(at["a"])
    state2.play(state2.pass_point)
    state2.play(state2.pass_point)
    assert not state2.is_legal(coords.from_rc(1, 2, 5))
    assert start == GameState(5).setup(*parse(KO)[1:3]).hash


# --- suicide ---------------------------------------------------------------------------------------

SUICIDE = """
    O X . . .
    a X . . .
    X . . . .
    . . . . .
    . . . . .
"""


def test_suicide_illegal_by_default():
    state, at = position(SUICIDE, to_play=WHITE)
    assert not state.is_legal(at["a"])
    with pytest.raises(IllegalMoveError) as e:
        state.play(at["a"])
    assert e.value.reason == "suicide"
    single, at1 = position("""
        . X . . .
        X a X . .
        . X . . .
        . . . . .
        . . . . .
    """, to_play=WHITE)
    assert at1["a"] not in single.legal_moves()
    with pytest.raises(IllegalMoveError) as e:
        single.play(at1["a"])
    assert e.value.reason == "suicide"


@pytest.mark.parametrize("rules", [Rules(suicide=True), Rules.from_sgf("NZ"), Rules.from_sgf("Tromp-Taylor"),
                                   Rules.from_sgf("New Zealand")])
def test_suicide_legal_removes_own_string(rules):
    assert rules.suicide
    state, at = position(SUICIDE, to_play=WHITE, rules=rules)
    assert state.is_legal(at["a"])
    state.play(at["a"])
    assert np.array_equal(state.board, grid_of("""
        . X . . .
        . X . . .
        X . . . .
        . . . . .
        . . . . .
    """))
    assert state.captures == (2, 0)  # the suicided stones count as taken by black
    assert state.to_play == BLACK
    assert state.liberties_at(coords.from_rc(0, 1, 5)) == 5
    assert_consistent(state)


@pytest.mark.parametrize("ru", ["Japanese", "Chinese", "AGA", "", None, "Korean"])
def test_rulesets_without_suicide(ru):
    assert not Rules.from_sgf(ru).suicide


def test_capture_is_not_suicide():
    state, at = position("""
        . X O . .
        X O a O .
        . X O . .
        . . . . .
        . . . . .
    """)
    # a has no empty neighbour, but taking the white stone in the middle gives it one
    assert state.is_legal(at["a"])
    state.play(at["a"])
    assert state.captures == (1, 0)


# --- liberties, strings, edges ---------------------------------------------------------------------

def test_corner_edge_and_centre_liberties():
    state, at = position("""
        X . . . O
        . . . . .
        . . X . .
        . . . . .
        . . X . .
    """)
    assert state.liberties_at(coords.from_rc(0, 0, 5)) == 2
    assert state.liberties_at(coords.from_rc(0, 4, 5)) == 2
    assert state.liberties_at(coords.from_rc(2, 2, 5)) == 4
    assert state.liberties_at(coords.from_rc(4, 2, 5)) == 3
    assert state.liberties_at(coords.from_rc(1, 1, 5)) == 0  # empty point


def test_string_at_and_shared_liberties_counted_once():
    state, _ = position("""
        . . . . .
        . X X . .
        . X . . .
        . . . . O
        . . . O O
    """)
    s = coords.from_rc(1, 1, 5)
    expected = sorted(coords.from_rc(r, c, 5) for r, c in ((1, 1), (1, 2), (2, 1)))
    assert state.string_at(s).tolist() == expected
    assert state.string_at(coords.from_rc(1, 2, 5)).tolist() == expected
    assert state.liberties_at(s) == 7  # (2,2) touches two stones of the string, counted once
    corner = state.string_at(coords.from_rc(4, 4, 5)).tolist()
    assert corner == sorted(coords.from_rc(r, c, 5) for r, c in ((3, 4), (4, 3), (4, 4)))
    assert state.liberties_at(coords.from_rc(4, 3, 5)) == 3
    assert state.string_at(coords.from_rc(0, 0, 5)).size == 0
    grid = state.liberty_grid()
    assert grid[s] == 7 and grid[0] == 0


def test_merge_through_a_move_joins_strings_and_liberties():
    state, at = position("""
        . . . . .
        X a X . .
        . . . . .
        . . . . .
        . . . . .
    """)
    state.play(at["a"])
    assert len(state.string_at(coords.from_rc(1, 0, 5))) == 3
    assert state.liberties_at(coords.from_rc(1, 2, 5)) == 7


def test_occupied_and_off_board():
    state, _ = position("""
        X . .
        . . .
        . . .
    """)
    for bad in (-1, 10, 100):
        with pytest.raises(IllegalMoveError) as e:
            state.play(bad)
        assert e.value.reason == "off_board"
    with pytest.raises(IllegalMoveError) as e:
        state.play(0, WHITE)
    assert e.value.reason == "occupied"
    assert not state.is_legal(0)


def test_legal_moves_matches_is_legal_point_by_point():
    state, at = position(KO, to_play=WHITE)
    state.play(at["a"])
    moves = state.legal_moves().tolist()
    assert moves[-1] == state.pass_point
    brute = [p for p in range(25) if state.board[p] == EMPTY and state.is_legal(p)]
    assert moves[:-1] == brute
    assert coords.from_rc(1, 2, 5) not in moves  # the ko point
    assert len(brute) == int((state.board == EMPTY).sum()) - 1


# --- undo, copy ------------------------------------------------------------------------------------

def _snapshot(state: GameState):
    return (state.board.copy(), state.ko_point, state.to_play, state.captures, state.hash, state.move_number,
            list(state.history), state.liberty_grid().copy())


def _same(a, b) -> bool:
    return (np.array_equal(a[0], b[0]) and a[1:7] == b[1:7] and np.array_equal(a[7], b[7]))


def test_undo_restores_board_ko_turn_and_captures():
    state, at = position(KO, to_play=WHITE)
    snaps = [_snapshot(state)]
    for p in (at["a"], at["f"], at["g"], coords.from_rc(1, 2, 5), state.pass_point):
        state.play(p)
        snaps.append(_snapshot(state))
    assert state.captures == (1, 1)
    for k in range(len(snaps) - 1, 0, -1):
        assert _same(_snapshot(state), snaps[k])
        state.undo()
        assert _same(_snapshot(state), snaps[k - 1]), f"undo back to step {k - 1}"
    assert state.to_play == WHITE
    with pytest.raises(IndexError):
        state.undo()
    # after an undo of a ko capture the ko point is back
    state.play(at["a"])
    state.play(at["f"])
    state.undo()
    assert state.ko_point == coords.from_rc(1, 2, 5)


def test_copy_is_independent():
    state, at = position(KO, to_play=WHITE)
    original = _snapshot(state)
    other = state.copy()
    other.play(at["a"])
    other.play(at["f"])
    assert _same(_snapshot(state), original)
    state.play(at["g"])
    assert other.board[at["g"]] == EMPTY and other.captures == (0, 1)
    assert other.nbr is state.nbr  # tables are shared, arrays are not
    for name in ("board", "head", "nxt", "libs", "ssize", "meta", "hashv"):
        assert not np.shares_memory(getattr(other, name), getattr(state, name))


# --- handicap --------------------------------------------------------------------------------------

KGS_HANDICAP = b"""(;GM[1]FF[4]CA[UTF-8]SZ[19]KM[0.50]HA[3]RU[Japanese]PB[b]PW[w]AB[dd]
[pp]

[pd]
;W[dp];B[jd];W[qf])"""


def test_kgs_handicap_record_white_moves_first():
    (rec,) = read_sgf(KGS_HANDICAP)
    assert rec.handicap == 3
    state = initial_state(rec)
    assert state.to_play == WHITE
    stones = sorted(np.flatnonzero(state.board == BLACK).tolist())
    assert stones == sorted(coords.from_gtp(v, 19) for v in ("D16", "Q4", "Q16"))
    positions = list(iter_positions(rec))
    assert [(c, i) for _, i, c, _ in positions] == [(WHITE, 0), (BLACK, 1), (WHITE, 2)]
    out = replay(rec)
    assert out.error is None and out.moves_played == 3
    assert out.state.board[coords.from_gtp("D4", 19)] == WHITE
    assert out.state.to_play == BLACK


def test_handicap_setup_without_moves_gives_white_the_move():
    (rec,) = read_sgf(b"(;GM[1]SZ[19]HA[2]AB[dp][pd])")
    assert initial_state(rec).to_play == WHITE
    (rec,) = read_sgf(b"(;GM[1]SZ[19]AB[dp][pd]PL[B])")
    assert initial_state(rec).to_play == BLACK
    (rec,) = read_sgf(b"(;GM[1]SZ[19])")
    assert initial_state(rec).to_play == BLACK


GTP_FIXED_19 = {
    2: "D4 Q16",
    3: "D4 Q16 D16",
    4: "D4 Q16 D16 Q4",
    5: "D4 Q16 D16 Q4 K10",
    6: "D4 Q16 D16 Q4 D10 Q10",
    7: "D4 Q16 D16 Q4 D10 Q10 K10",
    8: "D4 Q16 D16 Q4 D10 Q10 K4 K16",
    9: "D4 Q16 D16 Q4 D10 Q10 K4 K16 K10",
}


@pytest.mark.parametrize("n", sorted(GTP_FIXED_19))
def test_fixed_handicap_19(n):
    assert fixed_handicap_points(19, n) == [coords.from_gtp(v, 19) for v in GTP_FIXED_19[n].split()]


def test_fixed_handicap_small_and_even_boards():
    assert fixed_handicap_points(9, 5) == [coords.from_gtp(v, 9) for v in "C3 G7 C7 G3 E5".split()]
    assert fixed_handicap_points(13, 4) == [coords.from_gtp(v, 13) for v in "D4 K10 D10 K4".split()]
    assert fixed_handicap_points(8, 4) == [coords.from_gtp(v, 8) for v in "C3 F6 C6 F3".split()]
    assert max_fixed_handicap(18) == 4 and max_fixed_handicap(7) == 4 and max_fixed_handicap(5) == 0
    for size, n in ((19, 1), (19, 10), (18, 5), (7, 5), (5, 2), (19, 0)):
        with pytest.raises(ValueError):
            fixed_handicap_points(size, n)
    # placed stones are distinct star points and a legal setup
    for n in range(2, 10):
        pts = fixed_handicap_points(19, n)
        assert len(set(pts)) == n
        state = GameState(19).setup(black=pts, to_play=WHITE)
        assert int((state.board == BLACK).sum()) == n


# --- replay of records with illegal moves -----------------------------------------------------------

@pytest.mark.parametrize("moves, reason, detail, played", [
    (b";W[bb];B[cb]", "illegal_move", "ko", 1),  # immediate ko retake
    (b";W[aa]", "illegal_move", "suicide", 0),  # the corner: both black neighbours keep a liberty
    (b";W[bb];B[ba]", "occupied", "occupied", 1),
])
def test_replay_reports_illegal_moves(moves, reason, detail, played):
    data = b"(;GM[1]SZ[5]AB[ba][ab][bc][cb]AW[ca][db][cc]" + moves + b")"
    (rec,) = read_sgf(data)
    out = replay(rec)
    assert out.moves_played == played
    assert out.error.reason == reason and detail in str(out.error)
    step = initial_state(rec)
    for color, point in rec.moves[:played]:
        step.play(point, color)
    assert np.array_equal(out.state.board, step.board) and out.state.hash == step.hash
    with pytest.raises(IllegalMoveError) as e:
        step.play(int(rec.points[played]), int(rec.colors[played]))
    assert e.value.reason == detail


def test_replay_suicide_allowed_by_the_record_rules():
    # white's corner stone fills its own last liberty: illegal in general, legal under RU[NZ]
    data = b"(;GM[1]SZ[5]RU[%s]AB[ba][bb][ac]AW[aa];W[ab];B[ee])"
    (strict,) = read_sgf(data % b"Japanese")
    out = replay(strict)
    assert out.moves_played == 0 and "suicide" in str(out.error)
    (nz,) = read_sgf(data % b"NZ")
    out = replay(nz)
    assert out.error is None and out.moves_played == 2
    assert out.state.board[coords.from_sgf("aa", 5)] == EMPTY and out.state.captures == (2, 0)


def test_replay_of_a_hand_built_record_with_an_off_board_point():
    from gotk.sgf.record import GameRecord

    for bad in (999, -1, 362):
        rec = GameRecord(size=19, colors=np.array([BLACK, WHITE], dtype=np.int8),
                         points=np.array([60, bad], dtype=np.int16))
        out = replay(rec)
        assert out.moves_played == 1 and out.error.reason == "bad_move"


def test_area_score_and_diagram():
    size, black, white, _ = parse("""
        . X O . .
        . X O . .
        . X . O .
        . X O . .
        . X O . .
    """)
    state = GameState(size, komi=0.5).setup(black, white)
    # black: 5 stones + 5 points of territory; white: 5 stones + 9 points; (2,2) touches both: neutral
    assert state.score_area() == (10 - 14) - 0.5
    lines = str(state).splitlines()
    assert lines[0].split() == list("ABCDE")
    assert lines[1].split() == ["5", ".", "X", "O", ".", ".", "5"]
    assert lines[3].split() == ["3", ".", "X", ".", "O", ".", "3"]


def test_undo_after_replay_of_a_handicap_game():
    (rec,) = read_sgf(KGS_HANDICAP)
    out = replay(rec)
    start = initial_state(rec)
    for _ in range(rec.num_moves):
        out.state.undo()
    assert np.array_equal(out.state.board, start.board)
    assert out.state.to_play == WHITE and out.state.hash == start.hash and out.state.captures == (0, 0)


def test_iter_positions_stops_at_an_illegal_move():
    (rec,) = read_sgf(b"(;GM[1]SZ[9];B[aa];W[bb];B[aa];W[cc])")
    seen = [(i, c, p) for _, i, c, p in iter_positions(rec)]
    assert seen == [(0, BLACK, 0), (1, WHITE, 10)]


def test_replay_batch_equals_replay_game_by_game():
    """``replay_batch`` (every game of a batch in one compiled call) plays each game as ``replay`` does: the
    same moves played and stop, suicide per each game's rules, and ``SETUP_FAILED`` exactly where
    ``replay`` raises (a string without liberties, a point off the board)."""
    from gotk.sgf.record import GameRecord

    def rec(data: bytes):
        return read_sgf(data)[0]

    base = b"(;GM[1]SZ[5]AB[ba][ab][bc][cb]AW[ca][db][cc]%s)"
    suicide = b"(;GM[1]SZ[5]RU[%s]AB[ba][bb][ac]AW[aa];W[ab];B[ee])"
    records = [
        rec(base % b";W[bb];B[cb]"),  # ko retake
        rec(suicide % b"NZ"),  # suicide allowed: plays on
        rec(base % b";W[aa]"),  # suicide
        rec(suicide % b"Japanese"),
        GameRecord(size=5, setup_black=(0, 1, 5), setup_white=(6,)),  # no moves
        GameRecord(size=5, setup_black=(1, 5), setup_white=(0,), colors=np.array([BLACK], dtype=np.int8),
                   points=np.array([12], dtype=np.int16)),  # white's corner stone has no liberty
        rec(base % b";W[bb];B[ba]"),  # occupied
        GameRecord(size=5, setup_white=(30,), colors=np.array([BLACK], dtype=np.int8),
                   points=np.array([3], dtype=np.int16)),  # a setup point off the board
        GameRecord(size=5, colors=np.array([BLACK, WHITE], dtype=np.int8), points=np.array([6, 99], np.int16)),
        rec(b"(;GM[1]SZ[5]AB[aa]AE[aa];B[aa];W[bb];B[])"),  # AE empties a point set up black
    ]
    from gotk.game.replay import GameBatch, replay_batch, stop_error

    result = replay_batch(GameBatch.from_records(records))
    assert result[:, 1].tolist().count(B.SETUP_FAILED) == 2
    for r, (played, status) in zip(records, result.tolist(), strict=True):
        try:
            want = replay(r, min_moves=0, keep_history=False)
        except Exception as e:  # noqa: BLE001 - compared below
            assert status == B.SETUP_FAILED and getattr(e, "reason", "") == "bad_setup"
            continue
        error = stop_error(r, status, played, r.colors, r.points)
        assert played == want.moves_played and str(error) == str(want.error)
    assert len(replay_batch(GameBatch.from_records([]))) == 0


def random_record(size: int, seed: int, moves: int, rules: str = "", black=(), white=()):
    """A game of random legal moves (a pass now and then) from these setup stones, as a record: on a small board
    with ``rules`` that allow suicide (``NZ``), full of captures and suicides."""
    from gotk.sgf.record import GameRecord

    rng = np.random.default_rng(seed)
    state = GameState(size, Rules.from_sgf(rules)).setup(list(black), list(white))
    colors, points = [], []
    for _ in range(moves):
        legal = state.legal_moves()
        p = int(legal[-1] if len(legal) == 1 or rng.random() < 0.03 else rng.choice(legal[:-1]))
        colors.append(state.to_play)
        points.append(p)
        state.play(p)
    return GameRecord(size=size, rules=rules, setup_black=tuple(black), setup_white=tuple(white),
                      colors=np.array(colors, np.int8), points=np.array(points, np.int16))


def trace_records() -> list:
    """Games of one board size for the board traces: random ones with captures and suicides (one from setup
    stones), two that stop at an occupied point, one at a ko retake, one with unusable setup stones, one
    without moves."""
    from gotk.sgf.record import GameRecord

    games = [random_record(5, seed, 60, rules) for seed in range(6) for rules in ("NZ", "")]
    games.append(random_record(5, 6, 40, "NZ", black=(0, 6, 12), white=(18, 24)))
    stops = random_record(5, 7, 30)
    games.append(GameRecord(size=5, colors=np.append(stops.colors, [BLACK, WHITE]).astype(np.int8),
                            points=np.append(stops.points, [stops.points[-1], 0]).astype(np.int16)))
    base = b"(;GM[1]SZ[5]AB[ba][ab][bc][cb]AW[ca][db][cc]%s)"
    games += [read_sgf(base % b";W[bb];B[cb];W[aa]")[0], read_sgf(base % b";W[bb];B[bc];W[dd]")[0],
              GameRecord(size=5, setup_black=(1, 5), setup_white=(0,), colors=np.array([BLACK], np.int8),
                         points=np.array([12], np.int16)), GameRecord(size=5)]
    return games


def test_replay_batch_trace_gives_every_board_the_engine_plays():
    """``replay_batch(trace=True)`` replays as without it, and its trace (each move's stone placed, the stones
    it took lifted) gives, over the moves each game played, the engine's board after every move: captures,
    suicides (their own string lifted), setup stones, a game stopped by an illegal move."""
    from gotk.game.replay import GameBatch, replay_batch

    records = trace_records()
    batch = GameBatch.from_records(records)
    result, trace = replay_batch(batch, trace=True)
    assert np.array_equal(result, replay_batch(batch)) and np.array_equal(trace.played, result[:, 0])
    statuses = result[:, 1].tolist()
    assert statuses.count(B.SETUP_FAILED) == 1 and statuses.count(K.OCCUPIED) == 2 and statuses.count(K.KO) == 1
    seen = {"capture": 0, "suicide": 0}
    for g, rec in enumerate(records):
        if statuses[g] == B.SETUP_FAILED:
            continue
        state = initial_state(rec)
        board = state.board.copy()
        m0 = int(batch.games[g, B.G_M0])
        for i in range(int(trace.played[g])):
            p, color = int(rec.points[i]), int(rec.colors[i])
            state.play(p, color)
            if p != 25:
                board[p] = color
            gone = trace.taken[trace.taken_at[m0 + i]:trace.taken_at[m0 + i + 1]]
            board[gone] = EMPTY
            if len(gone):
                seen["suicide" if p in gone else "capture"] += 1
            assert np.array_equal(board, state.board), (g, i)
    assert seen["capture"] > 20 and seen["suicide"] > 5, seen
