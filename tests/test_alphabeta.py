"""Minimax with alpha-beta pruning on the compiled engine (``gotk.search.alphabeta``): a capture that only a
3-ply search sees, the same value as an unpruned minimax written here in Python on ``GameState``, and the CLI; the
same search valued by a value network (a hand-set material network: the capture difference through a tanh) and
ordered by a policy, against an unpruned minimax over the same moves."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from helpers import board, material_agent_file, tiny_agent_file

from gotk import coords
from gotk.game.moves import sensible_moves
from gotk.game.state import BLACK, GameState
from gotk.nets.agent import load_agent
from gotk.search.alphabeta import AlphaBetaPlayer, NetLeaves, alphabeta, alphabeta_net

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
    assert res.stderr.count("nodes/s") == 2
    for args, words in ((["--agent", "alphabeta", "--depth", "0"], "--depth must be from 1 to 12"),
                        (["--agent", "kgs", "--depth", "3"],
                         "--depth, --order-agent and --width go with --agent alphabeta"),
                        (["--agent", "alphabeta", "--visits", "10"], "leave out --visits")):
        res = subprocess.run([*GOTK, "gtp", *args], input="quit\n", capture_output=True, text=True, timeout=120)
        assert res.returncode == 2 and words in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


@pytest.fixture(scope="module")
def nets(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("alphabeta")
    return {"material": material_agent_file(folder / "material.gotk", size=5),
            "policy": tiny_agent_file(folder / "policy.gotk", size=5, head="policy", seed=3),
            "both": tiny_agent_file(folder / "both.gotk", size=5, seed=4)}


def net_minimax(state: GameState, depth: int, value, order=None, width=None) -> float:
    """Plain minimax valued by ``value`` at the leaves over the moves ``order``'s policy ranks first (no pruning)."""
    moves = sensible_moves(state)
    if order is not None and moves.size > 1:
        moves = moves[np.argsort(-order.policy(state)[moves], kind="stable")]
    moves = moves[:width] if width else moves
    if depth == 0 or moves.size == 0:
        return value.value(state)
    best = -np.inf
    for p in moves.tolist():
        state.play(p)
        best = max(best, -net_minimax(state, depth - 1, value, order, width))
        state.undo()
    return best


def test_a_value_network_finds_the_forced_capture(nets) -> None:
    material = load_agent(nets["material"])
    state = board(NET, BLACK)
    move, value, nodes = alphabeta_net(state, 3, NetLeaves(material))
    assert coords.to_gtp(move, 5) in ("B1", "A2")
    assert value == pytest.approx(np.tanh(0.3 * 3), abs=1e-4)  # three stones up: the material network's tanh
    assert value == pytest.approx(net_minimax(state.copy(), 3, material), abs=1e-5)
    assert nodes > 0 and state.board.tolist() == board(NET, BLACK).board.tolist()  # the state is left as it was
    _, one, _ = alphabeta_net(state, 1, NetLeaves(material))
    assert one == pytest.approx(np.tanh(0.3 * 2), abs=1e-4)  # one ply sees no capture


@pytest.mark.parametrize("depth,width", [(1, None), (2, None), (3, 4)])
def test_pruning_and_ordering_keep_the_minimax_value(nets, depth, width) -> None:
    value, order = load_agent(nets["both"]), load_agent(nets["policy"])
    state = GameState(5)
    for v in ("C3", "B3", "C2", "B2", "D2"):
        state.play(coords.from_gtp(v, 5))
    leaves = NetLeaves(value)
    got = alphabeta_net(state, depth, leaves, order, width)[1]
    assert got == pytest.approx(net_minimax(state.copy(), depth, value, order, width), abs=1e-5)
    assert leaves.evals > 0
    if width:  # the width bounds the tree: at most width^depth leaves, and the cuts take some away
        _, _, nodes = alphabeta_net(state, depth, NetLeaves(value), order, width)
        assert nodes <= sum(width ** d for d in range(depth + 1))


def test_alphabeta_with_networks_through_the_cli(nets) -> None:
    res = subprocess.run([*GOTK, "gtp", "--agent", "alphabeta", "--depth", "3", "--value-agent", str(nets["material"]),
                          "--order-agent", str(nets["policy"]), "--width", "6"],
                         input="boardsize 5\nplay b A3\nplay w A1\nplay b C1\ngenmove w\ngenmove b\nquit\n",
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    moves = [line[2:] for line in res.stdout.splitlines() if line.startswith("= ") and line[2:].strip()]
    assert len(moves) == 2 and all(coords.from_gtp(m, 5) is not None for m in moves)
    assert res.stderr.count("nodes/s, ") == 2 and "network values" in res.stderr  # a line a move
    material, policy = str(nets["material"]), str(nets["policy"])
    for args, words in ((["--agent", "alphabeta", "--width", "3"], "--width keeps the moves a policy ranks first"),
                        (["--agent", "alphabeta", "--value-agent", policy], "the value agent has no value head"),
                        (["--agent", "alphabeta", "--order-agent", material, "--value-agent", material,
                          "--width", "0"], "--width must be >= 1"),
                        (["--agent", "kgs", "--width", "3"], "go with --agent alphabeta"),
                        (["--agent", "alphabeta", "--value-agent", "kgs", "--order-agent", policy],
                         "the value agent plays 19x19, the ordering agent 5x5")):
        res = subprocess.run([*GOTK, "gtp", *args], input="quit\n", capture_output=True, text=True, timeout=120)
        assert res.returncode == 2 and words in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
