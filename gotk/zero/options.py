"""The settings of a ``gotk zero`` run (:class:`ZeroOptions`, stored in ``zero.json``) and what both loops share:
the networks' names, the losses a training run logged last."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gotk.errors import GotkError
from gotk.selfplay import DEFAULT_ENCODER
from gotk.selfplay.config import SelfPlayConfig
from gotk.zero.methods import METHODS, RL_DEFAULTS, Method, find_method

STATE_NAME = "zero.json"
DEFAULT_WARMUP_STEPS = 100  # at most: a run of fewer --train-steps warms up over its first generation
LOOPS = ("actors", "generations")
OPPONENTS = ("self", "pool")
#: The learner's learning-rate schedules over the run's budget (gotk.zero.learner.LearnerSettings.lr_factor)
LR_SCHEDULES = ("constant", "cosine")
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
    lr_schedule: str = "cosine"  # the learning rate over the run's budget (LR_SCHEDULES): the last
    # networks at a low rate beat those of a constant one 27 of 40 at equal compute (BENCHMARKS.md, "Zero loop")
    grow: tuple[str, ...] = ()  # actors: AT=[MODEL:]BLOCKSxFILTERS, the network grown at that share of the budget
    min_rows: int = 2_000  # actors: rows before the first training round
    executor: str = "local"  # actors: local processes or a Dask cluster (not part of the run's identity)
    scheduler: str | None = None  # actors: the Dask scheduler's address (None: a LocalCluster)
    calibrate_s: float = 60.0  # actors: seconds of host calibration at each session's start (0: none)
    method: str = "zero"  # gotk.zero.methods.METHODS: zero, or a learner from experience (gotk rl)
    opponents: str = "self"  # experience: the other colour is the same network, or one of the run's earlier ones
    entropy_weight: float = 0.01  # ac: the entropy bonus's weight
    baseline: str = "none"  # pg: none, mean or play-value (gotk.train.objectives)
    ratio_clip: float = 0.2  # pg and ac: PPO's clip of a move's probability ratio (gotk.train.objectives; 0: none)
    games_per_step: int | None = None  # actors: a learner step over this many whole new games (AlphaGo's 128)
    positions_per_game: int | None = None  # actors, with games_per_step: at most this many rows of a game
    epochs_per_batch: int = 1  # actors, with games_per_step: passes over each round's games
    heldout: str | None = None  # a dataset (its test split) or SGF files each network is scored on (not identity)
    heldout_positions: int = 2000  # at most this many of its positions per network
    kl_target: float | None = None  # rl: KL(pi || pi_start) on the probe set the anchor's weight aims at (None: none)
    kl_weight: float = 0.1  # rl: the anchor's weight in the first round (gotk.zero.learner.DEFAULT_KL_WEIGHT)

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
        if self.lr_schedule not in LR_SCHEDULES:
            raise ZeroError(f"--lr-schedule must be one of {', '.join(LR_SCHEDULES)}, not {self.lr_schedule!r}")
        if self.lr_schedule != "constant" and self.hours is None and self.generations is None:
            raise ZeroError(f"--lr-schedule {self.lr_schedule} spans the run's budget: give --hours or --generations")
        self.growth()
        if self.heldout is not None:
            from gotk.storage import is_url

            if not is_url(self.heldout) and not Path(self.heldout).exists():
                raise ZeroError(f"--heldout {self.heldout}: no such dataset or SGF file")
            if self.heldout_positions < 1:
                raise ZeroError(f"--heldout-positions must be >= 1, not {self.heldout_positions}")
        if self.games_per_step is not None:
            per_game = self.positions_per_game or self.size * self.size
            if self.games_per_step < 1 or (self.positions_per_game is not None and self.positions_per_game < 1) \
                    or self.epochs_per_batch < 1:
                raise ZeroError("--games-per-step, --positions-per-game and --epochs-per-batch must be >= 1")
            if self.games_per_step * per_game > self.window_rows:
                raise ZeroError(f"--games-per-step {self.games_per_step} games of up to {per_game} rows "
                                f"(--positions-per-game) do not fit --window-rows {self.window_rows}: raise "
                                f"--window-rows or lower them")
        elif self.positions_per_game is not None or self.epochs_per_batch != 1:
            raise ZeroError("--positions-per-game and --epochs-per-batch shape a step over whole games: give "
                            "--games-per-step")
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
        try:
            m = find_method(self.method)
        except ValueError as e:
            raise ZeroError(str(e)) from None
        if not m.experience:
            if self.selfplay.policy_only:
                raise ZeroError("--policy-only games record no search targets: the loop trains on searched games")
            if self.opponents != "self":
                raise ZeroError("--opponents pool is for the learners from experience (gotk rl)")
        elif not (self.selfplay.policy_only and self.selfplay.experience):
            raise ZeroError(f"--method {self.method} learns from policy games recorded as experience")
        if m.against_start and (self.loop != "actors" or self.gating):
            raise ZeroError("gotk rl runs actors and a learner at once (no --loop generations, no --gating)")
        if self.kl_target is not None and (not self.kl_target > 0 or not m.against_start):
            raise ZeroError(f"--kl-target anchors a learner to its start (gotk rl): it must be > 0 nats, not "
                            f"{self.kl_target}")
        if not 0 < self.kl_weight <= 100:
            raise ZeroError(f"--kl-weight must be in (0, 100], not {self.kl_weight}")
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

        try:
            meta, _ = read_agent_files(self.init_agent)
        except AgentError as e:
            raise ZeroError(str(e)) from None
        heads = self.recipe.init_heads
        head = meta["model"]["head"]
        have = {"policy": head in ("policy", "both"), "value": head in ("value", "both")}
        if meta["board_size"] != self.size or not all(have[h] for h in heads):
            raise ZeroError(f"{self.init_agent}: --init-agent must play {self.size}x{self.size} with "
                            f"{' and '.join(heads)} head{'s' if len(heads) > 1 else ''} (it plays "
                            f"{meta['board_size']}x{meta['board_size']}, head {head})")
        if meta.get("metadata"):
            raise ZeroError(f"{self.init_agent}: an agent conditioned on metadata plays as a profile, not here")
        steps = self.growth()
        if steps:
            hp = meta["model"]["hparams"]
            first = steps[0]
            if meta["model"]["name"] != self.model or not (hp.get("blocks", 0) <= first[1]
                                                          and hp.get("filters", 0) <= first[2]):
                raise ZeroError(f"{self.init_agent}: --grow grows a {self.model} network no larger than "
                                f"{first[1]}x{first[2]} (it is {meta['model']['name']} "
                                f"{hp.get('blocks')}x{hp.get('filters')})")

    @property
    def recipe(self) -> Method:
        """The run's method (:data:`gotk.zero.methods.METHODS`)."""
        return METHODS[self.method]

    @property
    def objective(self) -> str:
        """The name of the learner's objective (the method's)."""
        return self.recipe.objective_name

    @property
    def warmup(self) -> int:
        """Steps of learning-rate warm-up of a generation whose optimizer starts fresh."""
        return self.warmup_steps if self.warmup_steps is not None else min(DEFAULT_WARMUP_STEPS, self.train_steps)

    def growth(self) -> list[tuple[float, int, int]]:
        """The ``--grow`` steps as ``(share of the budget, blocks, filters)`` in order; ZeroError for a step that
        cannot be parsed, names an unknown model or one that does not grow, shrinks the network, or comes without a
        budget or outside the actors loop."""
        from gotk.nets.growth import GROWABLE
        from gotk.nets.networks import MODELS

        steps, size = [], (self.blocks, self.filters)
        for spec in self.grow:
            at, _, shape = spec.partition("=")
            name, _, dims = shape.rpartition(":")
            try:
                share = float(at)
                blocks, filters = (int(n) for n in dims.lower().split("x"))
            except ValueError:
                raise ZeroError(f"--grow: {spec!r} is not AT=[MODEL:]BLOCKSxFILTERS (e.g. 0.5=zero:6x64)") from None
            name = name or self.model
            if name not in MODELS:
                raise ZeroError(f"--grow: unknown model {name!r}; choose from {', '.join(MODELS)}")
            if name != self.model or name not in GROWABLE:
                raise ZeroError(f"--grow: the run's {self.model!r} network grows into a larger one of its model "
                                f"(models that grow: {', '.join(GROWABLE)}), not into {name!r}")
            if not 0 < share < 1 or (steps and share <= steps[-1][0]):
                raise ZeroError(f"--grow: the shares of the budget must rise within (0, 1): {spec!r}")
            if blocks < size[0] or filters < size[1] or (blocks, filters) == size:
                raise ZeroError(f"--grow: {spec!r} does not grow the {size[0]}x{size[1]} network before it")
            steps.append((share, blocks, filters))
            size = (blocks, filters)
        if steps and (self.loop != "actors" or (self.hours is None and self.generations is None)):
            raise ZeroError("--grow is a step of the actors loop at a share of its budget: give --hours or "
                            "--generations, and no --loop generations")
        return steps

    def grown_size(self, progress: float) -> tuple[int, int] | None:
        """The ``(blocks, filters)`` the network has grown to after ``progress`` of the budget (None: no step
        yet)."""
        reached = [(b, f) for at, b, f in self.growth() if progress >= at]
        return reached[-1] if reached else None

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
        d.pop("heldout")  # what the networks are scored on, not how they are made: a resumed run may change it
        d.pop("heldout_positions")
        if self.loop == "generations":
            d["workers"] = self.workers or 1
        else:  # the actors' count changes no game (chunk c's games draw from (seed, c)): a run may resume elsewhere
            d.pop("workers")
        d["gnugo_levels"] = list(self.gnugo_levels)
        d["grow"] = list(self.grow)
        d["gnugo_anchors"] = list(self.gnugo_anchors)
        if self.recipe.bare_record:  # a zero run's record reads as before these settings existed
            for k in ("method", "opponents", "entropy_weight", "baseline", "ratio_clip", "kl_target", "kl_weight"):
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
