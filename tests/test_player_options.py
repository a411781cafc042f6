"""``gotk gtp`` and ``gotk match`` take the player's options from one definition (gotk.cli.player_options)."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import fields

import typer

from gotk.cli.main import app
from gotk.cli.player_options import PlayerOptions

EXPECTED = {  # flag(s), default, help: what users saw before the options were defined once
    "temperature": (["--temperature"], 0.0, "0 plays the most probable sensible move; >0 samples from p^(1/T)."),
    "pass_threshold": (["--pass-threshold"], 1e-3, "Pass when no sensible move has at least this policy "
                       "probability."),
    "epsilon": (["--epsilon"], 0.0, "Play this share of moves uniformly at random among the sensible ones "
                "(epsilon-greedy, as a Q-learning agent plays; docs/rl.md); the policy alone."),
    "resign": (["--resign", "--no-resign"], True, "Allow resignation (only agents with a value head resign)."),
    "resign_threshold": (["--resign-threshold"], -0.95, "Resign when the value (mover's view, -1..1) stays below "
                         "this."),
    "resign_moves": (["--resign-moves"], 3, "... for this many consecutive own moves."),
    "threads": (["--threads"], 1, "torch CPU threads for inference (0: torch's default)."),
    "value_agent": (["--value-agent"], None, "Agent giving the search's leaf values (same encoder and board size; "
                    "--agent alphabeta: its leaves'); default: the agent's own value head."),
    "visits": (["--visits", "--playouts"], 0, "Search with this many root visits per move (--agent mcts: playouts); 0 "
               "or 1 plays the policy alone."),
    "seconds": (["--seconds"], None, "Search for this many seconds per move (with --visits: whichever comes "
                "first)."),
    "search": (["--search"], None, "The search's root rule: puct (AlphaGo Zero) or gumbel (Gumbel AlphaZero, as "
               "gotk selfplay trains with it) [the agent's own, else puct]."),
    "batch": (["--batch"], None, "Leaves evaluated per network call (virtual loss) [the agent's own, else 8]."),
    "c_puct": (["--c-puct"], None, "PUCT exploration constant [the agent's own, else 5.0]."),
    "fpu": (["--fpu"], None, "First-play-urgency reduction for unvisited moves [the agent's own, else 0.0]."),
    "lcb": (["--lcb"], None, "0 plays the most visited move; R > 0 the move with the best lower confidence bound on "
            "its value among those with more than R x the most visits (Leela Zero: 0.1) [the agent's own, else 0.0]."),
    "gumbel_scale": (["--gumbel-scale"], None, "Gumbel root: the scale of its noise on the priors; 0 picks "
                     "deterministically, 1 explores as self-play does [0.0]."),
    "pass_rule": (["--pass-rule"], None, "answer: pass only when no sensible move is left or to answer a pass; "
                  "always: pass is a candidate at every move [the agent's own, else answer]."),
    "resign_min_move": (["--resign-min-move"], 30, "A searching agent never resigns before this move number."),
    "leaf_lambda": (["--lambda"], None, "The leaf value: 0 the value head, 1 rollouts alone, between them AlphaGo's "
                    "mix (1 - lambda) v + lambda z [0; 1 with --agent mcts] (docs/gtp.md, rollouts)."),
    "rollouts": (["--rollouts"], None, "Playouts per leaf where rollouts take part [1]."),
    "rollout_policy": (["--rollout-policy"], None, "A fast rollout policy (gotk train --model rollout) plays the "
                       "rollouts, and gives --agent mcts its priors; 'uniform': uniform ones [--agent mcts: "
                       "kgs-rollout, on any board size; else none] (docs/rollouts.md)."),
    "depth": (["--depth"], None, "--agent alphabeta: the plies its minimax searches, alpha-beta pruned, valued by the "
              "capture difference (the book's chapter 4) or by --value-agent's value head [3]."),
    "order_agent": (["--order-agent"], None, "--agent alphabeta: the agent whose policy orders the moves at every "
                    "node [--value-agent's policy, else board order]."),
    "width": (["--width"], None, "--agent alphabeta: each node tries only the moves its order ranks first [all]."),
    "profile": (["--profile"], None, "Play as this human-SL profile (rank_<20k..9d>, preaz_<rank>, "
                "proyear_<1800..2023>) an agent trained with --metadata; its policy is sampled at temperature 1 (or "
                "--temperature), policy only (docs/human.md)."),
    "profile_argmax": (["--profile-argmax"], False, "With --profile: play the profile's most probable move instead of "
                       "sampling."),
    "bf16": (["--bf16"], False, "Run the network under bf16 autocast: faster on CPUs with AVX512-BF16 or AMX and on "
             "GPUs, not bit-exact (BENCHMARKS.md, search speed)."),
}


def _params(name: str) -> dict:
    command = typer.main.get_command(app).commands[name]
    return {p.name: p for p in command.params}


def test_gtp_and_match_list_the_same_player_options():
    assert [f.name for f in fields(PlayerOptions)] == list(EXPECTED)
    gtp, match = _params("gtp"), _params("match")
    for name, (flags, default, help_text) in EXPECTED.items():
        for params in (gtp, match):
            p = params[name]
            assert p.opts + p.secondary_opts == flags, name
            assert p.default == default, name
            assert p.help == help_text, name
    # after each command's own options, in the order of the dataclass
    assert list(gtp)[-len(EXPECTED):] == list(EXPECTED)
    assert list(match)[-len(EXPECTED):] == list(EXPECTED)
    assert list(gtp)[:-len(EXPECTED)] == ["agent", "random", "seed", "size", "komi"]


def test_player_options_reach_the_player():
    """The values parsed from the command line are the ones the search gets (an unknown --value-agent file is
    refused with its one-line error, after the options were parsed)."""
    opts = PlayerOptions(temperature=0.5, resign=False, visits=16, seconds=2.0, batch=4, c_puct=2.0, fpu=0.1,
                         resign_min_move=5)
    cfg = opts.search_config(seed=7)
    assert (cfg.visits, cfg.seconds, cfg.batch, cfg.c_puct, cfg.fpu, cfg.temperature, cfg.resign_threshold,
            cfg.resign_min_move, cfg.seed) == (16, 2.0, 4, 2.0, 0.1, 0.5, None, 5, 7)
    assert PlayerOptions().bf16 is False
    r = subprocess.run([sys.executable, "-m", "gotk", "gtp", "--random", "--visits", "8", "--value-agent",
                        "/nonexistent/agent.gotk"], input="quit\n", capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("error: ") and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_gtp_random_plays_with_the_shared_options():
    r = subprocess.run([sys.executable, "-m", "gotk", "gtp", "--random", "--seed", "1", "--size", "9",
                        "--temperature", "0.3", "--no-resign"], input="boardsize 9\ngenmove b\nquit\n",
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    replies = [line for line in r.stdout.splitlines() if line]
    assert replies[0] == "=" and re.fullmatch(r"= ([A-HJ][1-9]|pass)", replies[1]), r.stdout


def test_search_options_default_to_the_search_defaults():
    """``gotk gtp`` / ``gotk match`` search with :class:`SearchConfig`'s defaults unless told otherwise (or the
    agent says otherwise: below), and the help texts name those defaults."""
    from gotk.search.config import SearchConfig

    cfg = PlayerOptions().search_config(seed=None)
    default = SearchConfig()
    names = ("search", "batch", "c_puct", "fpu", "lcb", "pass_rule")
    assert [getattr(cfg, n) for n in names] == [getattr(default, n) for n in names]
    for name in names:
        assert EXPECTED[name][2].endswith(f"[the agent's own, else {getattr(default, name)}].")
    # the Gumbel noise is not the agent's to carry: play is deterministic unless told (self-play explores with 1)
    assert cfg.gumbel_scale == default.gumbel_scale == 0.0
    assert EXPECTED["gumbel_scale"][2].endswith(f"[{default.gumbel_scale}].")


def _agent_with_search(tmp_path, search: dict | None):
    import torch

    from gotk.encoders import get_encoder
    from gotk.nets import build_model, save_agent

    enc = get_encoder("simple", 5)
    torch.manual_seed(0)
    return save_agent(tmp_path / "a.gotk", build_model("resnet", enc.num_planes, 5, head="both", blocks=1, filters=8),
                      "resnet", {"blocks": 1, "filters": 8}, enc.describe(),
                      extra={"search": search} if search is not None else None)


def test_an_agents_own_search_constants_apply_unless_given(tmp_path):
    path = str(_agent_with_search(tmp_path, {"batch": 1, "c_puct": 1.6, "fpu": 0.5}))
    cfg = PlayerOptions(visits=8).make_player(path, seed=1).search.cfg
    assert (cfg.batch, cfg.c_puct, cfg.fpu, cfg.visits) == (1, 1.6, 0.5, 8)
    cfg = PlayerOptions(visits=8, c_puct=2.5, batch=4).make_player(path, seed=1).search.cfg
    assert (cfg.batch, cfg.c_puct, cfg.fpu) == (4, 2.5, 0.5)


def test_an_agent_without_search_constants_gets_the_defaults(tmp_path):
    from gotk.search.config import SearchConfig

    cfg = PlayerOptions(visits=8).make_player(str(_agent_with_search(tmp_path, None)), seed=1).search.cfg
    assert (cfg.batch, cfg.c_puct, cfg.fpu) == (SearchConfig().batch, SearchConfig().c_puct, SearchConfig().fpu)


def test_bad_search_constants_in_an_agent_file_are_refused_in_one_line(tmp_path):
    for bad in ({"c_puct": "high"}, {"temperature": 1.0}, {"batch": 1.5}, [1]):
        path = _agent_with_search(tmp_path, bad)
        r = subprocess.run([sys.executable, "-m", "gotk", "gtp", "--agent", str(path), "--visits", "8"],
                           input="quit\n", capture_output=True, text=True, timeout=120)
        assert r.returncode == 2, (bad, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "'search'" in r.stderr, r.stderr
    path = _agent_with_search(tmp_path, {"batch": 0})  # well-formed, out of range: refused when a search is built
    r = subprocess.run([sys.executable, "-m", "gotk", "gtp", "--agent", str(path), "--visits", "8"],
                       input="quit\n", capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "the agent's search settings" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_bf16_reaches_the_networks(tmp_path):
    """``--bf16`` turns on the agents' bf16 autocast, for the search (policy and value agents) and the policy player,
    and they still choose legal moves."""
    import torch

    from gotk.encoders import get_encoder
    from gotk.game.state import GameState
    from gotk.nets import build_model, save_agent

    enc = get_encoder("simple", 5)
    torch.manual_seed(0)
    path = save_agent(tmp_path / "a.gotk", build_model("resnet", enc.num_planes, 5, head="both", blocks=1, filters=8),
                      "resnet", {"blocks": 1, "filters": 8}, enc.describe())
    search = PlayerOptions(visits=8, bf16=True).make_player(str(path), seed=1)
    assert search.agent.amp is True
    policy = PlayerOptions(bf16=True).make_player(str(path), seed=1)
    assert policy.agent.amp is True and PlayerOptions().make_player(str(path), seed=1).agent.amp is False
    state = GameState(5)
    for player in (search, policy):
        assert state.is_legal(player.choose(state))
