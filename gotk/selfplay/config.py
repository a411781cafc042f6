"""The settings of self-play, readable without torch or the compiled search: how games are played
(:class:`SelfPlayConfig`, which holds the search's :class:`~gotk.search.config.SearchConfig`) and a run of them
(:class:`SelfPlayOptions`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from gotk.errors import GotkError
from gotk.search.config import ROOTS, SEARCH_RESIGN_THRESHOLD, SearchConfig, SearchSetupError

SEARCHES = ROOTS


class SelfPlayError(GotkError):
    """Self-play cannot start with these options or this agent (``bad_selfplay``)."""

    def __init__(self, message: str) -> None:
        super().__init__("bad_selfplay", message)


#: self-play's search, where it differs from play's (:class:`SearchConfig`'s defaults): Gumbel AlphaZero with the root
#: noise that explores, 32 simulations of a full search, one leaf per game and step (the batch is the games), no
#: first-play-urgency reduction, PUCT's AlphaZero constants and Dirichlet noise when ``search`` is ``puct``; a game's
#: resignation is self-play's own (:attr:`SelfPlayConfig.resign_threshold`), not the search's
SELFPLAY_SEARCH: dict = {"search": "gumbel", "visits": 32, "batch": 1, "c_puct": 1.5, "fpu": 0.0,
                         "gumbel_scale": 1.0, "noise_fraction": 0.25, "resign_threshold": None}


def selfplay_search(**settings) -> SearchConfig:
    """The search of self-play games: :data:`SELFPLAY_SEARCH` over :class:`SearchConfig`'s defaults, ``settings``
    over both."""
    return SearchConfig(**{**SELFPLAY_SEARCH, **settings})


@dataclass
class SelfPlayConfig:
    """How games are played: the board, the search (``tree``: one :class:`SearchConfig`, the schema play uses too,
    its ``visits`` those of a full search) and what self-play adds to it (fast searches, sampled openings,
    resignation with its check, the move cap, policy-only games). :meth:`validate` raises :class:`SelfPlayError`
    on a value out of range. :meth:`make` builds one from flat keywords (the command line's)."""

    size: int = 9
    komi: float = 7.5
    tree: SearchConfig = field(default_factory=selfplay_search)
    fast_visits: int = 8  # simulations of a fast search (not recorded)
    full_fraction: float = 0.25  # share of moves searched fully
    sample_moves: int | None = None  # None: size² / 8
    resign_threshold: float | None = SEARCH_RESIGN_THRESHOLD
    resign_moves: int = 2
    resign_min_move: int | None = None  # None: size² / 2 (no resignation in the opening)
    resign_disabled: float = 0.2
    max_moves: int | None = None  # None: 2 · size²
    policy_only: bool = False
    temperature: float = 1.0  # policy-only mode
    # policy-only mode records experience (gotk.shards.experience_column): every move with ``experience``, else
    # AlphaGo's one position a game; moves drawn from gotk.search.choice.behaviour (clip, random_moves), returns
    # discounted
    experience: bool = False
    clip: float = 0.0
    random_moves: float = 0.0
    discount: float = 1.0

    @classmethod
    def make(cls, early_pass: bool = False, **settings) -> SelfPlayConfig:
        """A config from flat keywords: this class's own fields, and :class:`SearchConfig`'s (self-play's defaults,
        :data:`SELFPLAY_SEARCH`, for those not given); ``early_pass`` is the ``always`` pass rule. A keyword of
        neither raises :class:`SelfPlayError`."""
        own = {f.name for f in fields(cls)} - {"tree"}
        searchable = {f.name for f in fields(SearchConfig)}
        unknown = sorted(set(settings) - own - searchable)
        if unknown:
            raise SelfPlayError(f"unknown self-play settings: {', '.join(unknown)}")
        tree = {k: v for k, v in settings.items() if k in searchable and k not in own}
        if early_pass:
            tree["pass_rule"] = "always"
        return cls(tree=selfplay_search(**tree), **{k: v for k, v in settings.items() if k in own})

    @classmethod
    def from_record(cls, record: dict) -> SelfPlayConfig:
        """The config a run recorded (``dataclasses.asdict`` of one), or the flat record of an earlier gotk (the
        search's settings beside the game's, ``early_pass`` for the pass rule)."""
        if isinstance(record.get("tree"), dict):
            return cls(tree=SearchConfig(**record["tree"]), **{k: v for k, v in record.items() if k != "tree"})
        return cls.make(**record)

    def validate(self) -> SelfPlayConfig:
        def bad(msg: str) -> None:
            raise SelfPlayError(msg)

        t = self.tree
        if not 2 <= self.size <= 25:
            bad(f"--size must be 2..25, not {self.size}")
        if t.search not in SEARCHES:
            bad(f"--search must be one of {', '.join(SEARCHES)}, not {t.search!r}")
        if not 1 <= t.visits <= 100_000 or not 1 <= self.fast_visits <= 100_000:
            bad(f"--visits and --fast-visits must be 1..100000, not {t.visits} and {self.fast_visits}")
        try:
            t.validate()
        except SearchSetupError as e:
            bad(str(e).removeprefix(f"{e.reason}: "))
        if not 0 < self.full_fraction <= 1:
            bad(f"--full-fraction must be in (0, 1], not {self.full_fraction}")
        if self.resign_threshold is not None and not -1 <= self.resign_threshold <= 1:
            bad(f"--resign-threshold must be in -1..1, not {self.resign_threshold}")
        if not 0 <= self.resign_disabled <= 1 or self.resign_moves < 1:
            bad("--resign-disabled must be in 0..1 and resign moves >= 1")
        if self.max_moves is not None and self.max_moves < 1:
            bad(f"--max-moves must be >= 1, not {self.max_moves}")
        if not (0 <= self.temperature <= 100 if self.experience else 0 < self.temperature <= 100):
            bad(f"--temperature must be in (0, 100] (0 with --experience: greedy), not {self.temperature}")
        if (self.experience or self.clip or self.random_moves or self.discount != 1.0) and not self.policy_only:
            bad("--experience, --clip, --random-moves and --discount are for policy games: add --policy-only")
        if (self.clip or self.random_moves or self.discount != 1.0) and not self.experience:
            bad("--clip, --random-moves and --discount shape recorded experience: add --experience")
        if not 0 <= self.clip < 0.5 or not 0 <= self.random_moves <= 1 or not 0 < self.discount <= 1:
            bad(f"--clip must be in [0, 0.5), --random-moves in [0, 1], --discount in (0, 1]; not {self.clip}, "
                f"{self.random_moves}, {self.discount}")
        return self

    def search_config(self) -> SearchConfig:
        """The search these games are played with: :attr:`tree` (its root noise applies to full searches only)."""
        return self.tree

    def agent_search(self) -> dict:
        """The search settings an agent trained on these games carries (agent.json ``search``, keys of
        :data:`gotk.search.config.SEARCH_KEYS`), so that it is played, and evaluated, with the search it was
        trained with."""
        t = self.tree
        keys = ("considered", "c_visit", "c_scale") if t.search == "gumbel" else ("c_puct", "fpu")
        return {"search": t.search, "pass_rule": t.pass_rule, **{k: getattr(t, k) for k in keys}}

    def chunk_columns(self) -> tuple[bool, float | None]:
        """What these games' shards hold beside the position columns, as :func:`gotk.selfplay.run.write_chunk`
        takes it: ``(targets, experience)``: the self-play target columns (searched games, and AlphaGo's value
        recipe with policy weight 0) and the discount of the experience columns (policy games; None without)."""
        return (not self.experience, self.discount if self.policy_only else None)

    @property
    def move_cap(self) -> int:
        return self.max_moves if self.max_moves is not None else 2 * self.size * self.size

    @property
    def sampled_moves(self) -> int:
        return self.sample_moves if self.sample_moves is not None else self.size * self.size // 8

    @property
    def resign_from(self) -> int:
        return self.resign_min_move if self.resign_min_move is not None else self.size * self.size // 2


@dataclass
class SelfPlayOptions:
    """A self-play run: ``games`` games by the agent file ``agent`` into ``out``."""

    agent: str
    out: str
    games: int
    config: SelfPlayConfig = field(default_factory=SelfPlayConfig)
    chunk_games: int = 32  # games played together (one batch) in a process
    workers: int = 1
    executor: str = "local"
    scheduler: str | None = None
    seed: int = 0
    threads: int | None = None  # torch threads per worker (default: cores / workers)
    device: str = "auto"  # cpu, cuda, cuda:N or auto (CUDA when torch sees a GPU); bf16 autocast on CUDA

    def validate(self) -> SelfPlayOptions:
        if not 1 <= self.games <= 10_000_000:
            raise SelfPlayError(f"--games must be 1..10000000, not {self.games}")
        if not 1 <= self.chunk_games <= 4096:
            raise SelfPlayError(f"--chunk-games must be 1..4096, not {self.chunk_games}")
        if self.workers < 1:
            raise SelfPlayError(f"--workers must be >= 1, not {self.workers}")
        self.config.validate()
        from gotk.devices import resolve_device

        try:
            self.device = str(resolve_device(self.device))
        except ValueError as e:
            raise SelfPlayError(str(e)) from None
        return self


__all__ = ["SEARCHES", "SELFPLAY_SEARCH", "SelfPlayConfig", "SelfPlayError", "SelfPlayOptions", "selfplay_search"]
