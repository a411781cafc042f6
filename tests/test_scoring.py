"""The final count a finished game is scored by (:mod:`gotk.game.scoring`): every stone alive, the stones dead inside
the opponent's pass-alive area removed, the passer's homeless stones removed; hand-counted positions."""

from __future__ import annotations

from gotk import coords
from gotk.game.state import BLACK, WHITE, GameState
from tests.test_engine import parse

EYE_WITH_DEAD_STONE = """
    O O O O X . . . .
    . O O O X . . . .
    O O O O X . . . .
    O O O O X . . . .
    O O O O X . . . .
    O O O O X . . . .
    . O O O X . . . .
    X O O O X . . . .
    O O O O O X . . .
"""


def test_final_count_removes_a_stone_dead_in_a_pass_alive_eye():
    """White's group has two eyes (A8; A3-A2), so it is pass-alive, and Black's A2 stone in the second eye is dead.
    Every stone alive: Black 44 + the A2 stone = 45, White 34 stones + A8 = 35 (A3 touches both: neutral), 10 − 7.5.
    Final count: A2 removed, A3-A2 is White's: Black 44, White 37, 7 − 7.5."""
    size, black, white, _ = parse(EYE_WITH_DEAD_STONE)
    state = GameState(size, komi=7.5).setup(black, white)
    assert state.score_area() == 2.5
    assert state.score_final() == -0.5
    for passer in (BLACK, WHITE):  # every other stone touches its own area: nothing homeless
        assert state.score_final(passer=passer) == -0.5
    score, owner = state.ownership_final()
    assert score == -0.5 and owner[coords.from_gtp("A2", size)] == -1 and owner[coords.from_gtp("A3", size)] == -1
    assert (owner == 1).sum() == 44 and (owner == -1).sum() == 37


def test_final_count_removes_the_passers_homeless_stones():
    """Black E5, White A9, Black passes. Every stone alive the one region touches both: 1 − 1 − 7.5. A pass by White
    would end the game with its A9 stone touching none of White's area: removed, the board is Black's, 81 − 7.5
    (what GNU Go's final_score says here). Black's lone stone is removed when Black ends the game: −81 − 7.5."""
    state = GameState(9, komi=7.5)
    for v in ("E5", "A9"):
        state.play(coords.from_gtp(v, 9))
    state.play(state.pass_point)
    assert state.score_area() == -7.5
    assert state.score_final() == -7.5  # one pass: nobody has ended the game
    assert state.score_final(passer=WHITE) == 73.5
    assert state.score_final(passer=BLACK) == -88.5
    state.play(state.pass_point)  # White's pass ends it: White is the passer
    assert state.score_final() == 73.5
    assert state.ownership_final()[1].tolist() == [1] * 81
