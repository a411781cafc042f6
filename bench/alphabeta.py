"""Alpha-beta speed: nodes per second of gotk's compiled negamax (``gotk.search.alphabeta``) against the book's
Python alpha-beta (``dlgo.minimax.alphabeta``, with the book's ``capture_diff`` evaluation on
``dlgo.goboard_fast``), the same depth in plies and the same position, one core. A node is one call of the
recursive search (dlgo's ``alpha_beta_result``, counted by wrapping it; gotk's ``negamax``). Goal: gotk ≥ 100×.

With ``--value-agent A`` it also times the same search valued by a network (``gotk.search.alphabeta
.alphabeta_net``: ``A``'s value at the leaves, its policy ordering the moves, ``--width`` moves a node) on ``A``'s
board after four moves: nodes a second and network positions a second (no peer: the book's alpha-beta takes a
capture count only).

    pip install --no-deps dlgo==0.2
    python bench/alphabeta.py                     # 9x9 after four moves, depth 3
    python bench/alphabeta.py --size 5 --depth 4 --json out.json
    python bench/alphabeta.py --value-agent kgs --net-depth 3 --width 8
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine_info, pin_to_cpu, write_json

OPENING = {5: ["C3", "B3", "C2", "B2"], 9: ["E5", "D5", "E4", "D4"]}


def gotk_rate(size: int, depth: int, rounds: int) -> tuple[float, int, str]:
    from gotk import coords
    from gotk.game.state import GameState
    from gotk.search.alphabeta import alphabeta

    state = GameState(size)
    for v in OPENING[size]:
        state.play(coords.from_gtp(v, size))
    alphabeta(state, 1)  # compile / load the cache
    best, nodes, move = 0.0, 0, ""
    for _ in range(rounds):
        t = time.perf_counter()
        m, _, nodes = alphabeta(state, depth)
        best = max(best, nodes / (time.perf_counter() - t))
        move = coords.to_gtp(m, size)
    return best, nodes, move


def dlgo_rate(size: int, depth: int) -> tuple[float, int] | None:
    try:
        from bench._common import install_keras_stub

        install_keras_stub()
        from dlgo import goboard_fast, gotypes
        from dlgo.minimax import alphabeta as AB
    except ImportError:
        return None
    import random

    def capture_diff(game_state) -> int:  # the book's evaluation (chapter 4)
        black = white = 0
        for r in range(1, game_state.board.num_rows + 1):
            for c in range(1, game_state.board.num_cols + 1):
                color = game_state.board.get(gotypes.Point(r, c))
                if color == gotypes.Player.black:
                    black += 1
                elif color == gotypes.Player.white:
                    white += 1
        diff = black - white
        return diff if game_state.next_player == gotypes.Player.black else -diff

    random.seed(1)
    game = goboard_fast.GameState.new_game(size)
    for v in OPENING[size]:
        col = "ABCDEFGHJKLMNOPQRST".index(v[0]) + 1
        game = game.apply_move(goboard_fast.Move.play(gotypes.Point(row=int(v[1:]), col=col)))
    count = [0]
    inner = AB.alpha_beta_result

    def counted(*args):
        count[0] += 1
        return inner(*args)

    AB.alpha_beta_result = counted
    try:
        agent = AB.AlphaBetaAgent(depth - 1, capture_diff)  # its root loop is one ply: depth - 1 below it
        t = time.perf_counter()
        agent.select_move(game)
        seconds = time.perf_counter() - t
    finally:
        AB.alpha_beta_result = inner
    return count[0] / seconds, count[0]


def net_rate(agent_name: str, depth: int, width: int, threads: int) -> dict:
    import torch

    from gotk import coords
    from gotk.game.state import GameState
    from gotk.nets.agent import load_agent
    from gotk.search.alphabeta import NetLeaves, alphabeta_net

    torch.set_num_threads(threads)
    agent = load_agent(agent_name)
    size = agent.board_size
    state = GameState(size)
    for v in ("D4", "Q16", "Q4", "D16") if size == 19 else OPENING.get(size, []):
        state.play(coords.from_gtp(v, size))
    alphabeta_net(state, 1, NetLeaves(agent), agent, width)  # warm up
    leaves = NetLeaves(agent)
    t = time.perf_counter()
    move, value, nodes = alphabeta_net(state, depth, leaves, agent, width)
    seconds = time.perf_counter() - t
    return {"agent": agent_name, "size": size, "depth": depth, "width": width, "nodes": nodes,
            "nodes_per_s": nodes / seconds, "network_positions_per_s": leaves.evals / seconds, "seconds": seconds,
            "move": coords.to_gtp(move, size), "value": value}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=9, choices=sorted(OPENING))
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--json", default=None)
    ap.add_argument("--value-agent", default=None, help="Also time the search valued by this network.")
    ap.add_argument("--net-depth", type=int, default=3)
    ap.add_argument("--width", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1, help="torch threads of the network search [1].")
    args = ap.parse_args(argv)
    pin_to_cpu(args.cpu)
    info = machine_info()
    g, g_nodes, move = gotk_rate(args.size, args.depth, args.rounds)
    d = dlgo_rate(args.size, args.depth)
    print(f"{args.size}x{args.size}, depth {args.depth}: gotk {g:,.0f} nodes/s ({g_nodes:,} nodes, plays {move})")
    if d is not None:
        print(f"dlgo {d[0]:,.0f} nodes/s ({d[1]:,} nodes); gotk / dlgo = {g / d[0]:.0f}x (goal >= 100x)")
    net = None
    if args.value_agent:
        net = net_rate(args.value_agent, args.net_depth, args.width, args.threads)
        print(f"valued by {net['agent']} ({net['size']}x{net['size']}), depth {net['depth']}, width {net['width']}: "
              f"{net['nodes']:,} nodes in {net['seconds']:.2f} s, {net['nodes_per_s']:,.0f} nodes/s, "
              f"{net['network_positions_per_s']:,.0f} network positions/s (plays {net['move']})")
    write_json({"machine": info, "args": vars(args), "gotk_nodes_per_s": g, "gotk_nodes": g_nodes,
                "dlgo_nodes_per_s": None if d is None else d[0], "dlgo_nodes": None if d is None else d[1],
                "ratio": None if d is None else g / d[0], "network": net}, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
