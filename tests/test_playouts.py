"""Random playouts on the compiled engine (``gotk.game.playouts``): hand-scored settled positions, the final
positions' invariants (no legal move left that fills no own eye, two passes, the count of every stone alive),
the root left untouched, and reproducibility."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import SETTLED, board

from gotk import coords
from gotk.game import kernels as K
from gotk.game.moves import sensible_moves
from gotk.game.playouts import Playouts, playout
from gotk.game.scoring import area_score
from gotk.game.state import BLACK, WHITE, GameState, new_engine, position_arrays


@pytest.mark.parametrize("to_play, suicide", [(BLACK, False), (WHITE, False), (BLACK, True)])
def test_a_settled_position_scores_exactly(to_play, suicide) -> None:
    """Every empty point is an eye of its owner: no playout move is possible, two passes, the hand count: Black
    7 stones + 3 eyes, White 12 + 3 → −5 − komi. (With suicide legal, a move into the other's eye is a suicide
    of one stone, which removes itself and changes nothing.)"""
    state = board(SETTLED, to_play, komi=0.5, suicide=suicide)
    scores = Playouts(5, seed=3).run(state, 64)
    assert np.all(scores == -5.5)


def final_positions(state: GameState, n: int, seed: int = 0):
    """The final engines of ``n`` playouts from ``state`` (the kernel driven one playout at a time)."""
    size = state.size
    root = state.e
    np.random.seed(seed)
    out = []
    for _ in range(n):
        w = new_engine(size)
        owner = np.empty(size * size, dtype=np.int8)
        moves = playout(root, w, state.rules.suicide, 3 * size * size, np.empty(size * size, dtype=np.int64), owner,
                        np.empty(size * size, dtype=np.uint8), np.empty(size * size, dtype=np.int32),
                        np.empty(size * size, dtype=np.int32))
        out.append((w, owner.copy(), moves))
    return out


@pytest.mark.parametrize("size", [9, 13])
def test_playouts_end_settled_and_are_counted_with_every_stone_alive(size) -> None:
    state = GameState(size)
    for v in ("C3", "E5", "G7")[: 3 if size == 9 else 2]:
        state.play(coords.from_gtp(v, size))
    before = [a.copy() for a in position_arrays(state.e)]
    for w, owner, moves in final_positions(state, 12, seed=size):
        assert w.meta[K.M_PASSES] == 2 and moves < 3 * size * size
        final = GameState(size)
        final.e = new_engine(size, tuple(a.copy() for a in position_arrays(w)))
        for color in (BLACK, WHITE):
            final.to_play = color
            assert sensible_moves(final).size == 0  # nothing left but own eyes and illegal points
        assert int(owner.sum()) == area_score(final.board, final.nbr)
        assert set(np.unique(owner).tolist()) <= {-1, 1}  # every point someone's: stones and eyes
    for a, b in zip(before, position_arrays(state.e), strict=True):
        assert np.array_equal(a, b)  # the root is untouched


def test_seeded_and_sensible() -> None:
    state = GameState(9)
    a = Playouts(9, seed=11).run(state, 200)
    b = Playouts(9, seed=11).run(state, 200)
    c = Playouts(9, seed=12).run(state, 200)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert np.all(np.abs(a + 7.5) <= 81) and np.all((a + 7.5) % 1 == 0)  # whole points, komi 7.5 taken off
    po = Playouts(9, seed=1)
    po.run(state, 100)
    assert 60 < po.moves / 100 < 200 and np.all(np.abs(po.ownership) <= 1)
    with pytest.raises(ValueError, match="9x9"):
        po.run(GameState(19), 1)
    with pytest.raises(ValueError, match=">= 1"):
        po.run(state, 0)


def test_a_dead_stone_is_taken_and_the_larger_area_wins() -> None:
    """Two walls across the board: Black's four rows above (a lone White stone in them, with no room to live), White's
    three below. Uniform playouts are noisy (a wall without eyes yet often dies to random filling), but their most
    frequent result is the hand count, Black by 45 to 36 with the White stone taken, and the areas lean to their
    owners, the White stone's point to Black."""
    rows = [". " * 9] * 4 + ["B " * 9, "W " * 9] + [". " * 9] * 3
    rows = [r.strip() for r in rows]
    rows[1] = ". W . . . . . . ."
    state = board(rows, BLACK, komi=0)
    po = Playouts(9, seed=5)
    scores = po.run(state, 400)
    values, counts = np.unique(scores, return_counts=True)
    assert values[np.argmax(counts)] == 9 and counts.max() > 0.3 * scores.size
    assert po.ownership[coords.from_rc(1, 1, 9)] > 0.1
    assert po.ownership[: 4 * 9].mean() > 0.2 and po.ownership[6 * 9:].mean() < -0.2
