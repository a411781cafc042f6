"""The settings of the one search (:class:`SearchConfig`) and the agent keys that carry an agent's own.

The parts a search is composed of (as mctx composes its searches) are settings here:

* the **root** rule, ``search``: ``"puct"`` (PUCT, with optional Dirichlet noise on the root's priors,
  ``noise_fraction``) or ``"gumbel"`` (Gumbel-top-k with sequential halving and completed Q: ``considered``,
  ``c_visit``, ``c_scale``, ``gumbel_scale``);
* the **interior** rule, ``interior``: PUCT with ``c_puct`` and ``fpu``, or Gumbel's π' rule (default: the root's);
* the **final choice**: the most visits, Leela Zero's lower confidence bound (``lcb`` > 0), or Gumbel's (the root's
  argmax among the most visited), or sampled at ``temperature``;
* the **pass rule**, ``pass_rule``: ``"answer"`` (pass is a candidate only when no sensible move is left or to
  answer the opponent's pass; a pass that would end the game gets at least ``pass_prior``) or ``"always"``
  (a candidate at every move);
* **batching**: ``batch`` leaves of one tree under virtual loss per network call (a player), or one leaf each of
  many games (self-play drives the same search that way);
* the **leaf evaluation**, ``leaf_lambda``: the value head (0), rollouts (1; a search with no network), or
  AlphaGo's mix of the two (``rollouts`` playouts a leaf; :mod:`gotk.search.rollouts`).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, fields, replace

from gotk.errors import GotkError

#: Resignation's thresholds (the mover's value, −1..1), each named once. Self-play's searches resign at
#: SEARCH_RESIGN_THRESHOLD to save the games' compute, their false resignations measured on the games played on
#: (docs/zero.md); the players a user meets (gtp, match, analysis, serve; a policy player's single value-head
#: evaluation per move is noisier than a search's) resign only when surer, at PLAYER_RESIGN_THRESHOLD.
SEARCH_RESIGN_THRESHOLD = -0.9
PLAYER_RESIGN_THRESHOLD = -0.95

MAX_VISITS = 10_000_000
ROOTS = ("puct", "gumbel")
PASS_RULES = ("answer", "always")



class SearchSetupError(GotkError):
    """The agents or settings given cannot search (``bad_search``): no value head, mismatched value agent, bad
    options."""

    def __init__(self, message: str) -> None:
        super().__init__("bad_search", message)


@dataclass
class SearchConfig:
    """Search settings (module docstring); :meth:`validate` raises :class:`SearchSetupError` for values out of
    range."""

    visits: int = 200  # root visits per move (reused ones count); 0 or 1: play the policy, no search
    seconds: float | None = None  # thinking time per move (cap); with a clock, the smaller budget wins
    batch: int = 8  # leaves per network call
    search: str = "puct"  # the root rule: puct | gumbel
    interior: str | None = None  # the interior rule: puct | gumbel (None: the root's)
    # tuned so that a briefly trained network (its value head barely better than komi and handicap) does not
    # search below its own raw policy at tens of visits: the prior weighs more (c_puct), and an unvisited move
    # starts at its parent's value rather than below it (no first-play-urgency reduction)
    c_puct: float = 5.0
    fpu: float = 0.0  # first-play-urgency reduction
    lcb: float = 0.0  # 0: play the most visited move; r > 0: the best lower confidence bound above r x those visits
    considered: int = 16  # Gumbel: moves sampled at the root (m)
    c_visit: float = 50.0  # Gumbel: σ's constants
    c_scale: float = 1.0
    # Gumbel: the root noise's scale. Play, analysis and evaluation use 0 (the deterministic argmax of log π + σ(q):
    # mctx's advice for evaluation on perfect-information games); self-play explores with 1 (SelfPlayConfig)
    gumbel_scale: float = 0.0
    noise_fraction: float = 0.0  # PUCT root: the share of Dirichlet noise in the root's priors
    dirichlet_alpha: float | None = None  # None: 0.03 · 361 / size² (AlphaZero's 0.03 on 19x19)
    temperature: float = 0.0
    pass_rule: str = "answer"
    pass_prior: float = 0.1  # least prior of a pass that would end the game (the opponent just passed)
    resign_threshold: float | None = SEARCH_RESIGN_THRESHOLD  # resign when the search's value stays below this...
    resign_moves: int = 3  # ... at this many consecutive own moves ...
    resign_min_move: int = 30  # ... and never before this move number
    symmetries: bool = True  # a random board symmetry per evaluation
    reuse: bool = True  # keep the subtree between moves
    seed: int | None = None
    max_nodes: int = 4_000_000  # tree rows; when full, the least visited expansions are folded (memory bound)
    # the leaf evaluation (gotk.search.rollouts): the value head (0), AlphaGo's mix (1 − λ)·v + λ·z with
    # rollouts' result z (0 < λ < 1), or the rollouts alone (1; a search without a network always)
    leaf_lambda: float = 0.0
    rollouts: int = 1  # uniform playouts per leaf when rollouts take part

    def validate(self) -> SearchConfig:
        def bad(msg: str) -> None:
            raise SearchSetupError(msg)

        if not isinstance(self.visits, int) or self.visits < 0:
            bad(f"--visits must be >= 0, not {self.visits}")
        if self.visits > MAX_VISITS:
            bad(f"--visits {self.visits} is more than the {MAX_VISITS} a search may hold; use --seconds for long "
                f"searches")
        if self.seconds is not None and not (0 < self.seconds <= 86400):
            bad(f"--seconds must be in (0, 86400], not {self.seconds}")
        if not 1 <= self.batch <= 1024:
            bad(f"--batch must be 1..1024, not {self.batch}")
        if self.search not in ROOTS:
            bad(f"--search must be one of {', '.join(ROOTS)}, not {self.search!r}")
        if self.interior is not None and self.interior not in ROOTS:
            bad(f"the interior rule must be one of {', '.join(ROOTS)}, not {self.interior!r}")
        if not (self.c_puct > 0 and math.isfinite(self.c_puct)):
            bad(f"--c-puct must be > 0, not {self.c_puct}")
        if not (0 <= self.fpu <= 2):
            bad(f"--fpu must be in 0..2, not {self.fpu}")
        if not (0 <= self.lcb <= 1):
            bad(f"--lcb must be in 0..1, not {self.lcb}")
        if not isinstance(self.considered, int) or self.considered < 1:
            bad(f"--considered must be >= 1, not {self.considered}")
        if not (self.c_visit >= 0 and math.isfinite(self.c_visit) and self.c_scale > 0 and math.isfinite(self.c_scale)):
            bad(f"c_visit must be >= 0 and c_scale > 0, not {self.c_visit} and {self.c_scale}")
        if not 0 <= self.gumbel_scale <= 10:
            bad(f"the Gumbel scale must be in 0..10, not {self.gumbel_scale}")
        if not 0 <= self.noise_fraction <= 1:
            bad(f"noise fraction must be in 0..1, not {self.noise_fraction}")
        if self.dirichlet_alpha is not None and not self.dirichlet_alpha > 0:
            bad(f"the Dirichlet alpha must be > 0, not {self.dirichlet_alpha}")
        if not (0 <= self.temperature <= 100):
            bad(f"--temperature must be in 0..100, not {self.temperature}")
        if self.pass_rule not in PASS_RULES:
            bad(f"--pass-rule must be one of {', '.join(PASS_RULES)}, not {self.pass_rule!r}")
        if not 0 <= self.pass_prior <= 1:
            bad(f"pass prior must be in 0..1, not {self.pass_prior}")
        if self.resign_threshold is not None and not -1 <= self.resign_threshold <= 1:
            bad(f"--resign-threshold must be in -1..1, not {self.resign_threshold}")
        if not isinstance(self.max_nodes, int) or self.max_nodes < 1000:
            bad(f"max nodes must be >= 1000, not {self.max_nodes}")
        if not (isinstance(self.leaf_lambda, (int, float)) and 0 <= self.leaf_lambda <= 1):
            bad(f"--lambda must be from 0 to 1, not {self.leaf_lambda}")
        if not isinstance(self.rollouts, int) or not 1 <= self.rollouts <= 10_000:
            bad(f"--rollouts must be 1..10000, not {self.rollouts}")
        if self.resign_moves < 1 or self.resign_min_move < 0:
            bad("--resign-moves must be >= 1 and --resign-min-move >= 0")
        return self

    @property
    def searches(self) -> bool:
        return self.visits > 1 or self.seconds is not None

    @property
    def interior_rule(self) -> str:
        return self.interior or self.search

    def alpha(self, size: int) -> float:
        """The Dirichlet noise's alpha on a ``size`` board."""
        return self.dirichlet_alpha if self.dirichlet_alpha is not None else 0.03 * 361 / (size * size)

    def with_agent(self, settings: Mapping[str, object], keep: Collection[str] = ()) -> SearchConfig:
        """This config with an agent's own search settings (agent.json ``search``: :data:`SEARCH_KEYS`) in place of
        its own, except the fields named in ``keep`` (those a user gave). An unknown key, a value of the wrong type
        or out of range raises :class:`SearchSetupError` that names the agent's settings."""
        bad = agent_settings_error(settings)
        if bad:
            raise SearchSetupError(f"the agent's search settings (agent.json 'search') {dict(settings)}: {bad}")
        taken = {k: v for k, v in settings.items() if k not in keep}
        if not taken:
            return self
        try:
            return replace(self, **taken).validate()
        except SearchSetupError as e:
            raise SearchSetupError(f"the agent's search settings {dict(settings)}: {e}") from None


_KINDS = {"int": int, "float": float, "str": str, "str | None": str}
#: the search settings an agent file may carry (agent.json ``search``), with their types: the fields of
#: :class:`SearchConfig` that describe how a network is best searched (its root rule, batch, constants, pass rule),
#: not how long (visits, seconds) or how a game is played (resignation, temperature)
SEARCH_KEYS: dict[str, type] = {name: _KINDS[str({f.name: f.type for f in fields(SearchConfig)}[name])]
                                for name in ("search", "batch", "c_puct", "fpu", "lcb", "considered", "c_visit",
                                             "c_scale", "pass_rule")}


def agent_settings_error(settings: object) -> str | None:
    """Why ``settings`` (an agent's ``search`` record) is not a map of :data:`SEARCH_KEYS` to values of their
    types (finite numbers), or None when it is."""
    if not isinstance(settings, Mapping):
        return f"expected a map of {', '.join(SEARCH_KEYS)} to values, not {settings!r}"
    for key, value in settings.items():
        kind = SEARCH_KEYS.get(key)
        if kind is None:
            return f"unknown key {key!r} (one of {', '.join(SEARCH_KEYS)})"
        if kind is str:
            ok = isinstance(value, str)
        else:
            ok = isinstance(value, int if kind is int else (int, float)) and not isinstance(value, bool) \
                and math.isfinite(value)
        if not ok:
            kind_name = "text" if kind is str else "an integer" if kind is int else "a number"
            return f"{key} takes {kind_name}, not {value!r}"
    return None


__all__ = ["MAX_VISITS", "PASS_RULES", "ROOTS", "SEARCH_KEYS", "SearchConfig", "SearchSetupError",
           "agent_settings_error"]
