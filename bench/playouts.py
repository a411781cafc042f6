"""Playout speed: uniform random playouts per second on one core (``gotk.game.playouts``), 9×9 and 19×19 from the
empty board (9×9: after four opening moves), side by side with the book's Python MCTS agent's rollouts (``dlgo``'s
``MCTSAgent.simulate_random_game``: FastRandomBot for both sides, which fills no own eye either, on
``dlgo.goboard_fast``), and with GNU Go's Monte Carlo mode on 9×9 at the same number of simulations (seconds per
``genmove`` in the same 9×9 position, ``gnugo --mode gtp --monte-carlo --level 1 --mc-games-per-level N``; its playouts
follow 3×3 patterns, heavier than uniform ones). Goal: gotk ≥ 20× dlgo's playouts per second. With
``--rollout-policy``, playouts drawn by the fast rollout policy too: microseconds a move (goal ≤ 5).

    pip install --no-deps dlgo==0.2
    python bench/playouts.py                                # pinned to CPU 0
    python bench/playouts.py --gotk-playouts 20000 --dlgo-playouts 20 --mc-simulations 10000 --json out.json
    python bench/playouts.py --rollout-policy runs/rollout/agent.gotk
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import format_table, machine_info, pin_to_cpu, write_json

GNUGO = "/usr/games/gnugo"


#: the 9x9 position every engine starts from (GNU Go's Monte Carlo mode answers the empty board from its book)
OPENING9 = ["E5", "C3", "G4", "D6"]


def opening(size: int) -> list[str]:
    return OPENING9 if size == 9 else []


def gotk_rate(size: int, n: int, rounds: int, policy=None) -> tuple[float, float]:
    """Best playouts/s of ``rounds`` calls of ``n`` playouts (uniform, or by a rollout ``policy``), and the moves
    per playout."""
    from gotk import coords
    from gotk.game.playouts import Playouts
    from gotk.game.state import GameState

    state = GameState(size)
    for v in opening(size):
        state.play(coords.from_gtp(v, size))
    po = Playouts(size, seed=1, policy=policy)
    po.run(state, 8)  # compile / load the cache
    best = 0.0
    for _ in range(rounds):
        t = time.perf_counter()
        po.run(state, n)
        best = max(best, n / (time.perf_counter() - t))
    return best, po.moves / n


def dlgo_rate(size: int, n: int) -> float | None:
    """dlgo's rollouts per second from the empty board (None without dlgo)."""
    try:
        from bench._common import install_keras_stub

        install_keras_stub()
        from dlgo import goboard_fast
        from dlgo.mcts.mcts import MCTSAgent
    except ImportError:
        return None
    import random

    from dlgo import gotypes

    random.seed(1)
    game = goboard_fast.GameState.new_game(size)
    for v in opening(size):
        col = "ABCDEFGHJKLMNOPQRST".index(v[0]) + 1
        game = game.apply_move(goboard_fast.Move.play(gotypes.Point(row=int(v[1:]), col=col)))
    MCTSAgent.simulate_random_game(game)
    t = time.perf_counter()
    for _ in range(n):
        MCTSAgent.simulate_random_game(game)
    return n / (time.perf_counter() - t)


def gnugo_seconds(simulations: int) -> float | None:
    """Seconds of one ``genmove`` of GNU Go's Monte Carlo mode on the empty 9x9 board at ``simulations``."""
    if not shutil.which(GNUGO):
        return None
    cmd = [GNUGO, "--mode", "gtp", "--monte-carlo", "--boardsize", "9", "--level", "1", "--mc-games-per-level",
           str(simulations), "--komi", "7.5"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(line: str) -> str:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        out = []
        while True:
            got = proc.stdout.readline()
            if got.strip() == "" and out:
                return "".join(out)
            out.append(got)

    ask("boardsize 9")
    for i, v in enumerate(OPENING9):
        ask(f"play {'bw'[i % 2]} {v}")
    t = time.perf_counter()
    ask("genmove b")
    seconds = time.perf_counter() - t
    ask("quit")
    proc.wait(timeout=30)
    return seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gotk-playouts", type=int, default=20000)
    ap.add_argument("--dlgo-playouts", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mc-simulations", type=int, default=10000)
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--rollout-policy", default=None, help="also time playouts by this fast rollout policy (gotk "
                    "train --model rollout) on its board size: microseconds a move")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    pin_to_cpu(args.cpu)
    info = machine_info()
    rows = []
    for size in (9, 19):
        n = args.gotk_playouts if size == 9 else max(1, args.gotk_playouts // 5)
        g, moves = gotk_rate(size, n, args.rounds)
        d = dlgo_rate(size, args.dlgo_playouts if size == 9 else max(1, args.dlgo_playouts // 4))
        rows.append({"board": f"{size}x{size}", "gotk_playouts_per_s": g, "moves_per_playout": moves,
                     "dlgo_playouts_per_s": d, "ratio": None if d is None else g / d})
    print(format_table(rows, [("board", "board"), ("gotk_playouts_per_s", "gotk playouts/s"),
                              ("moves_per_playout", "moves/playout"), ("dlgo_playouts_per_s", "dlgo playouts/s"),
                              ("ratio", "gotk / dlgo")]))
    if args.rollout_policy:
        from gotk.train.rollout import load_rollout_policy

        pol = load_rollout_policy(args.rollout_policy)
        size = pol.board_size
        n = max(1, args.gotk_playouts // (5 if size == 19 else 1))
        g, moves = gotk_rate(size, n, args.rounds, pol)
        u = next(r for r in rows if r["board"] == f"{size}x{size}")
        uniform_us = 1e6 / (u["gotk_playouts_per_s"] * u["moves_per_playout"])
        policy = {"board": f"{size}x{size}", "policy": pol.name, "playouts_per_s": g, "moves_per_playout": moves,
                  "us_per_move": 1e6 / (g * moves), "uniform_us_per_move": uniform_us}
        print(f"{size}x{size} playouts by the rollout policy {pol.name}: {g:.0f} playouts/s, {moves:.0f} moves each, "
              f"{policy['us_per_move']:.2f} us a move (uniform: {uniform_us:.2f} us)")
    else:
        policy = None
    gnu = gnugo_seconds(args.mc_simulations)
    gotk9 = rows[0]["gotk_playouts_per_s"]
    mc = {"simulations": args.mc_simulations, "gnugo_genmove_s": gnu,
          "gotk_playouts_s": args.mc_simulations / gotk9}
    print(f"9x9, {args.mc_simulations} simulations: GNU Go Monte Carlo genmove {gnu} s; gotk's playouts alone "
          f"{mc['gotk_playouts_s']:.3f} s")
    write_json({"machine": info, "args": vars(args), "rows": rows, "rollout_policy": policy,
                "gnugo_monte_carlo": mc}, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
