"""The settings of a ``gotk zero`` run (:class:`ZeroOptions`, stored in ``zero.json``) and what both loops share:
the networks' names, the losses a training run logged last."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gotk.errors import GotkError
from gotk.selfplay import DEFAULT_ENCODER
from gotk.selfplay.config import SelfPlayConfig

STATE_NAME = "zero.json"
DEFAULT_WARMUP_STEPS = 100  # at most: a run of fewer --train-steps warms up over its first generation
LOOPS = ("actors", "generations")
#: The loop's learners: what the actors record and which objective the learner applies (gotk.train.objectives).
#: ``zero``: searched self-play and AlphaZero's targets (``gotk zero``); the others learn from policy games recorded
#: as experience (``gotk rl``).
METHODS = {"zero": "supervised", "pg": "policy-gradient", "ac": "actor-critic", "q": "q-learning"}
OPPONENTS = ("self", "pool")
#: The learner's settings of ``gotk rl`` where the command line leaves them (``gotk zero`` keeps ZeroOptions'):
#: on-policy learning uses each new move about once, soon after it was played, in short rounds
RL_DEFAULTS = {"reuse": 1.0, "window_rows": 8192, "min_rows": 4096, "train_steps": 32}
NO_AUX = {"ownership_weight": 0.0, "score_weight": 0.0}  # --no-aux: the ownership and score outputs untrained


class ZeroError(GotkError):
    """The loop cannot start or go on (``bad_zero``)."""

    def __init__(self, message: str) -> None:
        super().__init__("bad_zero", message)


@dataclass
class ZeroOptions:
    """Every setting of a run (stored in ``zero.json``; a resumed run must match, except the budget)."""

    out: str
    size: int = 9
    hours: float | None = None  # total budget over every session of the run
    generations: int | None = None
    games: int = 96  # self-play games per generation
    selfplay: SelfPlayConfig = field(default_factory=SelfPlayConfig)
    model: str = "zero"
    blocks: int = 4  # small: it learns faster in a CPU budget (BENCHMARKS.md, "Zero loop")
    filters: int = 48
    encoder: str = DEFAULT_ENCODER  # gotk.selfplay.run's: own / opponent planes
    globals: bool = True  # the network takes the komi and the side to move as global inputs
    init_agent: str | None = None
    window: int = 4  # generations of self-play in the training window
    train_steps: int = 300
    batch_size: int = 128
    lr: float | None = None
    optimizer: str | None = None
    carry_optimizer: bool = True  # each generation's optimizer goes on from the previous one's state
    warmup_steps: int | None = None  # warm-up of a fresh optimizer; None: min(DEFAULT_WARMUP_STEPS, train_steps)
    gating: bool = False
    gate: float = 0.55
    gating_games: int = 20
    eval_games: int = 20  # per anchor
    eval_every: int = 2  # evaluate against the anchors every this many generations (and the last one)
    aux_targets: bool = True  # train the ownership and score outputs (KataGo's auxiliary targets)
    value_mix: float = 0.0  # the value target: (1 - m) * the game's result + m * the search's root value
    threads: int | None = None  # torch threads of self-play and training (None: cores / workers)
    device: str = "auto"  # self-play and training (not part of the run's identity: a run may resume elsewhere)
    eval_visits: int | None = None  # None: self-play's full-search visits (the search the network was trained with)
    gnugo_levels: tuple[int, ...] = (1,)
    gnugo_anchors: tuple[str, ...] = ()  # further GNU Go anchors: mcN (Monte Carlo mode), LhH (handicap games)
    gnugo: str | None = None  # the GNU Go binary; None: ``gnugo`` on PATH, else /usr/games/gnugo (Debian)
    workers: int | None = None  # self-play processes (None: one per core for actors, 1 for the generations)
    chunk_games: int = 48
    seed: int = 0
    loop: str = "actors"  # "actors": actors and a learner at once; "generations": self-play, train, evaluate in turn
    reuse: float = 4.0  # actors: samples trained per new position (KataGo caps it at 8)
    window_rows: int = 10_000  # actors: the newest rows trained on (a few networks' games: fresher wins)
    window_growth: float = 0.0  # actors: the window grows with the rows played (KataGo's power law; 0: fixed)
    window_exponent: float = 0.65  # actors: the power law's exponent (KataGo's taper-window-exponent)
    lr_schedule: str = "constant"  # the learning rate over the run's budget (gotk.zero.learner.LR_SCHEDULES)
    min_rows: int = 2_000  # actors: rows before the first training round
    executor: str = "local"  # actors: local processes or a Dask cluster (not part of the run's identity)
    scheduler: str | None = None  # actors: the Dask scheduler's address (None: a LocalCluster)
    calibrate_s: float = 60.0  # actors: seconds of host calibration at each session's start (0: none)
    method: str = "zero"  # METHODS: zero, or a learner from experience (gotk rl)
    opponents: str = "self"  # experience: the other colour is the same network, or one of the run's earlier ones
    entropy_weight: float = 0.01  # ac: the entropy bonus's weight
    baseline: str = "none"  # pg: none, mean or play-value (gotk.train.objectives)
    ratio_clip: float = 0.2  # pg and ac: PPO's clip of a move's probability ratio (gotk.train.objectives; 0: none)

    def validate(self) -> ZeroOptions:
        if self.hours is not None and not self.hours > 0:
            raise ZeroError(f"--hours must be > 0, not {self.hours}")
        if self.generations is not None and self.generations < 1:
            raise ZeroError(f"--generations must be >= 1, not {self.generations}")
        if self.games < 1 or self.window < 1 or self.train_steps < 1 or self.batch_size < 1:
            raise ZeroError("--games, --window, --train-steps and --batch-size must be >= 1")
        if self.loop not in LOOPS:
            raise ZeroError(f"--loop must be one of {', '.join(LOOPS)}, not {self.loop!r}")
        if self.workers is not None and self.workers < 1:
            raise ZeroError(f"--workers must be >= 1, not {self.workers}")
        if not 0 < self.reuse <= 64:
            raise ZeroError(f"--reuse must be in (0, 64], not {self.reuse}")
        if self.window_rows < 1 or self.min_rows < 1:
            raise ZeroError("--window-rows and --min-rows must be >= 1")
        if self.window_growth < 0 or not 0 < self.window_exponent <= 1:
            raise ZeroError(f"--window-growth must be >= 0 and --window-exponent in (0, 1] (a window that never "
                            f"shrinks), not {self.window_growth} and {self.window_exponent}")
        from gotk.zero.learner import LR_SCHEDULES

        if self.lr_schedule not in LR_SCHEDULES:
            raise ZeroError(f"--lr-schedule must be one of {', '.join(LR_SCHEDULES)}, not {self.lr_schedule!r}")
        if self.lr_schedule != "constant" and self.hours is None and self.generations is None:
            raise ZeroError(f"--lr-schedule {self.lr_schedule} spans the run's budget: give --hours or --generations")
        if not 0 <= self.value_mix <= 1:
            raise ZeroError(f"--value-mix must be in 0..1, not {self.value_mix}")
        if self.calibrate_s < 0:
            raise ZeroError(f"--calibrate-s must be >= 0, not {self.calibrate_s}")
        from gotk.zero.evaluation import parse_anchor

        for spec in self.gnugo_anchors:
            try:
                parse_anchor(spec)
            except ValueError as e:
                raise ZeroError(f"--gnugo-anchors: {e}") from None
        if self.loop == "generations" and self.executor != "local":
            raise ZeroError("--executor dask runs the actors of --loop actors")
        from gotk.executors import ExecutorError, require

        try:
            require(self.executor, self.scheduler)
        except ExecutorError as e:
            raise ZeroError(e.message) from None
        if self.warmup_steps is not None and self.warmup_steps < 0:
            raise ZeroError(f"--warmup-steps must be >= 0, not {self.warmup_steps}")
        if not 0.5 <= self.gate <= 1:
            raise ZeroError(f"--gate must be in 0.5..1, not {self.gate}")
        if self.eval_games < 0 or self.gating_games < 1 or (self.eval_visits is not None and self.eval_visits < 2) \
                or self.eval_every < 1:
            raise ZeroError("--eval-games must be >= 0, --gating-games >= 1, --eval-visits >= 2, --eval-every >= 1")
        self.selfplay.size = self.size
        self.selfplay.validate()
        if self.method not in METHODS:
            raise ZeroError(f"--method must be one of {', '.join(METHODS)}, not {self.method!r}")
        if self.method == "zero":
            if self.selfplay.policy_only:
                raise ZeroError("--policy-only games record no search targets: the loop trains on searched games")
            if self.opponents != "self":
                raise ZeroError("--opponents pool is for the learners from experience (gotk rl)")
        else:
            if not (self.selfplay.policy_only and self.selfplay.experience):
                raise ZeroError(f"--method {self.method} learns from policy games recorded as experience")
            if self.loop != "actors" or self.gating:
                raise ZeroError("gotk rl runs actors and a learner at once (no --loop generations, no --gating)")
        if self.opponents not in OPPONENTS:
            raise ZeroError(f"--opponents must be self or pool, not {self.opponents!r}")
        from gotk.train.objectives import BASELINES

        if self.baseline not in BASELINES or not self.entropy_weight >= 0 or not 0 <= self.ratio_clip < 1:
            raise ZeroError(f"--baseline must be one of {', '.join(BASELINES)}, --entropy-weight >= 0 and "
                            f"--ratio-clip in [0, 1)")
        from gotk.devices import resolve_device

        try:
            resolve_device(self.device)
        except ValueError as e:
            raise ZeroError(str(e)) from None
        if self.init_agent:
            self._check_init_agent()
        return self

    def _check_init_agent(self) -> None:
        """ZeroError unless ``init_agent`` plays this board size with the heads the method trains."""
        from gotk.nets.agent_file import AgentError, read_agent_files
        from gotk.train.objectives import needs

        try:
            meta, _ = read_agent_files(self.init_agent)
        except AgentError as e:
            raise ZeroError(str(e)) from None
        heads = ("policy", "value") if self.method == "zero" else needs(self.objective)[0]
        head = meta["model"]["head"]
        have = {"policy": head in ("policy", "both"), "value": head in ("value", "both")}
        if meta["board_size"] != self.size or not all(have[h] for h in heads):
            raise ZeroError(f"{self.init_agent}: --init-agent must play {self.size}x{self.size} with "
                            f"{' and '.join(heads)} head{'s' if len(heads) > 1 else ''} (it plays "
                            f"{meta['board_size']}x{meta['board_size']}, head {head})")
        if meta.get("metadata"):
            raise ZeroError(f"{self.init_agent}: an agent conditioned on metadata plays as a profile, not here")

    @property
    def objective(self) -> str:
        """The learner's objective (:data:`METHODS`)."""
        return METHODS[self.method]

    @property
    def warmup(self) -> int:
        """Steps of learning-rate warm-up of a generation whose optimizer starts fresh."""
        return self.warmup_steps if self.warmup_steps is not None else min(DEFAULT_WARMUP_STEPS, self.train_steps)

    def progress(self, hours: float, networks: int) -> float:
        """The share of the run's budget spent after ``hours`` of learning and ``networks`` networks (the larger
        of the two when both bound it): what the learning-rate schedule follows."""
        shares = [hours / self.hours] if self.hours else []
        shares += [networks / self.generations] if self.generations else []
        return min(1.0, max(shares, default=0.0))

    def record(self) -> dict:
        d = asdict(self)
        d.pop("hours")
        d.pop("generations")
        d.pop("threads")
        d.pop("device")
        d.pop("executor")
        d.pop("scheduler")
        d.pop("calibrate_s")
        if self.loop == "generations":
            d["workers"] = self.workers or 1
        else:  # the actors' count changes no game (chunk c's games draw from (seed, c)): a run may resume elsewhere
            d.pop("workers")
        d["gnugo_levels"] = list(self.gnugo_levels)
        d["gnugo_anchors"] = list(self.gnugo_anchors)
        if self.method == "zero":  # a zero run's record reads as before these settings existed
            for k in ("method", "opponents", "entropy_weight", "baseline", "ratio_clip"):
                d.pop(k)
        return d


def recorded_selfplay(record: object) -> object:
    """A run's recorded self-play settings as today's record reads them (an earlier gotk recorded the search's
    settings flat beside the game's: :meth:`SelfPlayConfig.from_record`); a record that cannot be read is returned
    as it is, to differ."""
    if not isinstance(record, dict):
        return record
    try:
        return json.loads(json.dumps(asdict(SelfPlayConfig.from_record(record))))
    except (TypeError, ValueError, GotkError):
        return record


def net_name(k: int) -> str:
    """The name of network ``k`` in the run's match reports and Elo table (0: the first, random or given)."""
    return f"net-{k:03d}"


def defaults() -> dict:
    """The recorded options (:meth:`ZeroOptions.record`) at their defaults."""
    return json.loads(json.dumps(ZeroOptions(out="").record()))


def last_step_record(run: Path) -> dict:
    """The losses of a training run's last logged step (``metrics.jsonl``)."""
    path = run / "metrics.jsonl"
    last: dict = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if rec.get("kind") == "step":
                last = rec
    keep = ("loss", "policy_loss", "policy_soft_ce", "value_mse", "ownership_loss", "score_loss", "top1",
            "samples_per_s")
    return {k: last[k] for k in keep if k in last}


__all__ = ["LOOPS", "METHODS", "NO_AUX", "OPPONENTS", "RL_DEFAULTS", "STATE_NAME", "ZeroError", "ZeroOptions",
           "defaults", "last_step_record", "net_name", "recorded_selfplay"]
