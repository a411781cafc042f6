"""Minimax with alpha-beta pruning on the compiled engine (``gotk.search.alphabeta``): a capture that only a
3-ply search sees, the same value as an unpruned minimax written here in Python on ``GameState``, and the CLI."""

from __future__ import annotations

import subprocess
import sys

import pytest
from test_playouts import board

from gotk import coords
from gotk.game.moves import sensible_moves
from gotk.game.state import BLACK, GameState
from gotk.search.alphabeta import AlphaBetaPlayer, alphabeta

GOTK = [sys.executable, "-m", "gotk"]
# 5x5: White's corner stone A1 has two liberties (A2, B1); Black's C1 and A3 close the net: B1 (or A2) then the
# capture, whatever White answers
NET = [
    ". . . . .",
    ". . . . .",
    "B . . . .",
    ". . . . .",
    "W . B . .",
]


def minimax(state: GameState, depth: int) -> int:
    """Plain minimax of the capture difference over the same moves (no pruning), on GameState's play/undo."""
    stones = int((state.board == state.to_play).sum() - ((state.board != 0) & (state.board != state.to_play)).sum())
    if depth == 0:
        return stones
    best = None
    for p in sensible_moves(state).tolist():
        state.play(p)
        v = -minimax(state, depth - 1)
        state.undo()
        best = v if best is None else max(best, v)
    return stones if best is None else best


def test_a_forced_capture_at_depth_3() -> None:
    state = board(NET, BLACK)
    move, value, nodes = alphabeta(state, 3)
    assert coords.to_gtp(move, 5) in ("B1", "A2") and value == 3 and nodes > 0
    assert value == minimax(state.copy(), 3)
    one_move, one_value, _ = alphabeta(state, 1)
    assert one_value == 2 and coords.to_gtp(one_move, 5) == "A5"  # one ply sees no capture: the first move tried
    before = state.board.copy()
    alphabeta(state, 4)
    assert (state.board == before).all()


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_pruning_keeps_the_minimax_value(depth) -> None:
    state = GameState(5)
    for v in ("C3", "B3", "C2", "B2", "D2"):
        state.play(coords.from_gtp(v, 5))
    assert alphabeta(state, depth)[1] == minimax(state.copy(), depth)


def test_player_and_cli() -> None:
    player = AlphaBetaPlayer(2, seed=1)
    state = board(NET, BLACK)
    assert state.is_legal(player.choose(state)) and player.nodes_per_s > 0
    res = subprocess.run([*GOTK, "gtp", "--agent", "alphabeta", "--depth", "2", "--seed", "1"],
                         input="boardsize 9\ngenmove b\ngenmove w\nquit\n", capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    moves = [line[2:] for line in res.stdout.splitlines() if line.startswith("= ") and line[2:].strip()]
    assert len(moves) == 2 and moves[0] != moves[1]
    for args, words in ((["--agent", "alphabeta", "--depth", "0"], "--depth must be from 1 to 12"),
                        (["--agent", "kgs", "--depth", "3"], "--depth goes with --agent alphabeta"),
                        (["--agent", "alphabeta", "--visits", "10"], "leave out --visits")):
        res = subprocess.run([*GOTK, "gtp", *args], input="quit\n", capture_output=True, text=True, timeout=120)
        assert res.returncode == 2 and words in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
