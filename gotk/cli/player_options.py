"""The options of the player that ``gotk gtp`` and ``gotk match`` both build (policy, resignation, search),
defined once: :class:`PlayerOptions` holds one field per option with its flag and help beside it, and
:func:`with_player_options` adds those options to a command and hands it their values as one
:class:`PlayerOptions`, so the two commands cannot drift apart."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gotk.cli.common import fail
from gotk.cli.options import option, with_options
from gotk.search.config import PLAYER_RESIGN_THRESHOLD


@dataclass(frozen=True)
class PlayerOptions:
    """How the agent plays: the policy player's choices, when it resigns, and the search (``gotk.search``;
    docs/gtp.md "Search"). Every field is a command-line option of ``gotk gtp`` and ``gotk match``."""

    temperature: float = option(0.0, help="0 plays the most probable sensible move; >0 samples from p^(1/T).")
    pass_threshold: float = option(1e-3, "--pass-threshold",
                                    help="Pass when no sensible move has at least this policy probability.")
    epsilon: float = option(0.0, "--epsilon", help="Play this share of moves uniformly at random among the sensible "
                            "ones (epsilon-greedy, as a Q-learning agent plays; docs/rl.md); the policy alone.")
    resign: bool = option(True, "--resign/--no-resign",
                           help="Allow resignation (only agents with a value head resign).")
    resign_threshold: float = option(PLAYER_RESIGN_THRESHOLD, "--resign-threshold",
                                      help="Resign when the value (mover's view, -1..1) stays below this.")
    resign_moves: int = option(3, "--resign-moves", help="... for this many consecutive own moves.")
    threads: int = option(1, help="torch CPU threads for inference (0: torch's default).")
    value_agent: Path | None = option(None, "--value-agent", help="Agent giving the search's leaf values (same "
                                       "encoder and board size; --agent alphabeta: its leaves'); default: the "
                                       "agent's own value head.")
    visits: int = option(0, "--visits", "--playouts", help="Search with this many root visits per move (--agent "
                          "mcts: playouts); 0 or 1 plays the policy alone.")
    seconds: float | None = option(None, "--seconds", help="Search for this many seconds per move (with --visits: "
                                    "whichever comes first).")
    # unset: the agent's own (agent.json "search"), else the search's defaults (gotk.search.config.SearchConfig;
    # tests/test_player_options.py holds the help texts equal to them)
    search: str | None = option(None, "--search", help="The search's root rule: puct (AlphaGo Zero) or gumbel "
                                 "(Gumbel AlphaZero, as gotk selfplay trains with it) [the agent's own, else puct].")
    batch: int | None = option(None, "--batch", help="Leaves evaluated per network call (virtual loss) "
                                "[the agent's own, else 8].")
    c_puct: float | None = option(None, "--c-puct", help="PUCT exploration constant [the agent's own, else 5.0].")
    fpu: float | None = option(None, "--fpu", help="First-play-urgency reduction for unvisited moves [the agent's "
                                "own, else 0.0].")
    lcb: float | None = option(None, "--lcb", help="0 plays the most visited move; R > 0 the move with the best "
                                "lower confidence bound on its value among those with more than R x the most visits "
                                "(Leela Zero: 0.1) [the agent's own, else 0.0].")
    gumbel_scale: float | None = option(None, "--gumbel-scale", help="Gumbel root: the scale of its noise on the "
                                         "priors; 0 picks deterministically, 1 explores as self-play does [0.0].")
    pass_rule: str | None = option(None, "--pass-rule", help="answer: pass only when no sensible move is left or "
                                    "to answer a pass; always: pass is a candidate at every move [the agent's own, "
                                    "else answer].")
    resign_min_move: int = option(30, "--resign-min-move",
                                   help="A searching agent never resigns before this move number.")
    leaf_lambda: float | None = option(None, "--lambda", help="The leaf value: 0 the value head, 1 rollouts "
                                        "alone, between them AlphaGo's mix (1 - lambda) v + lambda z [0; 1 with "
                                        "--agent mcts] (docs/gtp.md, rollouts).")
    rollouts: int | None = option(None, "--rollouts", help="Playouts per leaf where rollouts take part "
                                  "[1].")
    rollout_policy: Path | None = option(None, "--rollout-policy", help="A fast rollout policy (gotk train --model "
                                         "rollout) plays the rollouts, and gives --agent mcts its priors; "
                                         "'uniform': uniform ones [--agent mcts: kgs-rollout, on any board size; "
                                         "else none] (docs/rollouts.md).")
    depth: int | None = option(None, "--depth", help="--agent alphabeta: the plies its minimax searches, alpha-beta "
                               "pruned, valued by the capture difference (the book's chapter 4) or by --value-agent's "
                               "value head [3].")
    order_agent: Path | None = option(None, "--order-agent", help="--agent alphabeta: the agent whose policy orders "
                                      "the moves at every node [--value-agent's policy, else board order].")
    width: int | None = option(None, "--width", help="--agent alphabeta: each node tries only the moves its order "
                               "ranks first [all].")
    profile: str | None = option(None, "--profile", help="Play as this human-SL profile (rank_<20k..9d>, "
                                  "preaz_<rank>, proyear_<1800..2023>) an agent trained with --metadata; its policy "
                                  "is sampled at temperature 1 (or --temperature), policy only (docs/human.md).")
    profile_argmax: bool = option(False, "--profile-argmax", help="With --profile: play the profile's most "
                                   "probable move instead of sampling.")
    bf16: bool = option(False, "--bf16", help="Run the network under bf16 autocast: faster on CPUs with "
                         "AVX512-BF16 or AMX and on GPUs, not bit-exact (BENCHMARKS.md, search speed).")

    @property
    def given_search_constants(self) -> dict:
        """The search constants given on the command line (the others come from the agent or the defaults)."""
        return {k: v for k in ("search", "batch", "c_puct", "fpu", "lcb", "gumbel_scale", "pass_rule", "leaf_lambda",
                               "rollouts") if (v := getattr(self, k)) is not None}

    def search_config(self, seed: int | None):
        """The :class:`gotk.search.config.SearchConfig` of these options (no resignation under ``--no-resign``);
        constants not given keep the search's defaults (the agent's own replace them in :meth:`make_player`)."""
        from gotk.search.config import SearchConfig

        return SearchConfig(visits=self.visits, seconds=self.seconds, temperature=self.temperature,
                            resign_threshold=self.resign_threshold if self.resign else None,
                            resign_moves=self.resign_moves, resign_min_move=self.resign_min_move, seed=seed,
                            **self.given_search_constants)

    def make_player(self, agent: str | None, seed: int | None):
        """The player of ``agent`` (an agent file; None or ``"random"``: the random player) under these options
        (:func:`gotk.play.factory.make_search_player`); its refusals are a one-line error (exit 2)."""
        from gotk.errors import GotkError
        from gotk.play.factory import alphabeta_from_files, make_search_player

        if agent == "alphabeta" or self.depth is not None or self.order_agent or self.width is not None:
            if agent != "alphabeta":
                fail("--depth, --order-agent and --width go with --agent alphabeta")
            if self.search_config(seed).searches or self.profile or self.rollout_policy:
                fail("--agent alphabeta searches by --depth: leave out --visits, --seconds, --profile, "
                     "--rollout-policy")
            try:
                return alphabeta_from_files(3 if self.depth is None else self.depth,
                                            str(self.value_agent) if self.value_agent else None,
                                            str(self.order_agent) if self.order_agent else None, self.width,
                                            seed=seed, threads=self.threads, amp=self.bf16)
            except GotkError as e:
                fail(str(e))
        human = {"profile": self.profile, "profile_argmax": self.profile_argmax} if self.profile else {}
        if self.epsilon:
            if self.search_config(seed).searches:
                fail("--epsilon plays the policy with random moves: leave out --visits/--seconds")
            human["epsilon"] = self.epsilon
        if self.profile_argmax and self.profile is None:
            fail("--profile-argmax goes with --profile")
        if self.profile is not None and self.search_config(seed).searches:
            fail("--profile plays the conditioned policy alone: leave out --visits/--seconds")
        try:
            return make_search_player(agent, self.search_config(seed),
                                      str(self.value_agent) if self.value_agent else None, self.threads,
                                      temperature=self.temperature, pass_threshold=self.pass_threshold,
                                      resign=self.resign, resign_threshold=self.resign_threshold,
                                      resign_moves=self.resign_moves, amp=self.bf16,
                                      keep=set(self.given_search_constants),
                                      rollout_policy=str(self.rollout_policy) if self.rollout_policy else None,
                                      **human)
        except GotkError as e:
            fail(str(e))


def with_player_options(command: Callable) -> Callable:
    """``command`` (which takes a ``player: PlayerOptions`` parameter) as a typer command with every
    :class:`PlayerOptions` field as an option after its own options, their values handed to it as ``player``."""
    return with_options(player=PlayerOptions)(command)
