"""gotk.game.rules against the engine itself: the liberties a move would give, counted without playing, equal
the liberties of the string once the move is played; empty neighbours are counted as the board shows them."""

from __future__ import annotations

import numpy as np

from gotk.game import rules as R
from gotk.game.state import GameState


def _random_position(size: int, moves: int, rng: np.random.Generator) -> GameState:
    s = GameState(size)
    for _ in range(moves):
        legal = s.legal_moves()
        legal = legal[legal != s.pass_point]
        if legal.size == 0:
            break
        s.play(int(rng.choice(legal)))
    return s


def test_liberties_after_equals_the_played_move() -> None:
    rng = np.random.default_rng(3)
    heads = np.empty(8, dtype=np.int32)
    checked = 0
    for size in (5, 9):
        for _ in range(12):
            s = _random_position(size, int(rng.integers(5, 3 * size * size // 4)), rng)
            e = s.e
            for color in (1, 2):
                for p in s.legal_moves(color):
                    if p == s.pass_point:
                        continue
                    for cap in (3, 8):
                        got = R.liberties_after(e.board, e.head, e.nxt, e.libs, e.nbr, e.mark, e.meta, int(p),
                                                color, cap, heads)
                        after = s.copy()
                        after.play(int(p), color)
                        want = int(after.e.libs[after.e.head[p]])
                        assert got == min(want, cap), (size, int(p), color, cap)
                    checked += 1
    assert checked > 500


def test_empty_neighbours_counts_the_empty_points_next_to_a_point() -> None:
    rng = np.random.default_rng(4)
    s = _random_position(7, 30, rng)
    for p in range(49):
        want = sum(1 for q in s.nbr[p] if q >= 0 and s.board[q] == 0)
        assert R.empty_neighbours(s.board, s.nbr, p) == want
