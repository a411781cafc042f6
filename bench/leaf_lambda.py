"""What AlphaGo's mixed leaf value costs a search at equal seconds: the playouts a move of ``kgs`` with the value
head alone (λ = 0) and with the mix (λ = 0.5, its rollouts played by ``kgs-rollout``), over the first ten moves of a
fixed 19×19 opening, a fresh tree each move.

    python bench/leaf_lambda.py [SECONDS]        # default 0.25
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

OPENING = ["Q16", "D4", "Q3", "D16", "R5", "C10", "K4", "F3", "O17", "R14"]


def main(argv: list[str] | None = None) -> int:
    from gotk import coords
    from gotk.game.state import GameState
    from gotk.nets.agent import load_agent
    from gotk.play.factory import search_player
    from gotk.search.config import SearchConfig
    from gotk.train.rollout import load_rollout_policy

    args = sys.argv[1:] if argv is None else argv
    seconds = float(args[0]) if args else 0.25
    kgs = load_agent("kgs")
    policy = load_rollout_policy("kgs-rollout")
    out = {}
    for lam in (0.0, 0.5):
        player = search_player(kgs, SearchConfig(visits=10_000_000, seconds=seconds, seed=1, leaf_lambda=lam),
                               keep={"leaf_lambda"}, rollout_policy=policy if lam else None, warn=lambda _: None)
        playouts = []
        state = GameState(19)
        for vertex in OPENING:
            player.reset()
            player.think(state)
            playouts.append(player.search.playouts)
            state.play(coords.from_gtp(vertex, 19))
        out[str(lam)] = sum(playouts) / len(playouts)
    print(json.dumps({"seconds": seconds, "mean_playouts_per_move": out}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
