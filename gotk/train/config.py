"""The settings of a training run (:class:`TrainConfig`, stored in ``config.json``), devices, optimizers and
learning-rate schedules.

A run's length: ``--epochs`` when given; else the budget, ``--max-steps`` and/or ``--max-minutes`` (no epoch
limit: a budget larger than one epoch is used in full); else one epoch. The time budget covers validation too.

Learning-rate schedules are pure functions of the step (``cosine``: linear warm-up then cosine decay
to 0 over the horizon; ``step``: x0.1 at 1/3 and 2/3 of the horizon; ``none``). The horizon is
``--schedule-steps`` when given, else ``--max-steps``, else ``epochs x batches per epoch``; a run bounded by
``--max-minutes`` alone spans its schedule over the time budget instead.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import torch

from gotk.distributed import DEFAULT_DIST_TIMEOUT
from gotk.nets.networks import HEADS, MODELS, model_hparams
from gotk.train.objectives import BASELINES, DEFAULT_ENTROPY_WEIGHT, DEFAULT_RATIO_CLIP, objective

OPTIMIZERS = ("sgd", "adagrad", "adadelta", "adam", "adamw")
SCHEDULES = ("cosine", "step", "none")
DEFAULT_OPTIMIZER = "sgd"
DEFAULT_LR = {"sgd": 0.05, "adagrad": 0.01, "adadelta": 1.0, "adam": 1e-3, "adamw": 1e-3}
DEFAULT_POSITIONS_PER_GAME = 8
#: learning from experience: the default rate whatever the model (imitation's 1e-3..3e-3 make a policy gradient
#: diverge: the log-probabilities of lost games' moves run to minus infinity; the book trains its policy-gradient
#: agents at 1e-4), and the gradient's norm capped at 1 (the book's clipnorm)
EXPERIENCE_LR = 1e-4
EXPERIENCE_CLIP_GRAD_NORM = 1.0


@dataclass
class TrainConfig:
    """Every setting of a run (stored in ``config.json``)."""

    data: str
    out: str
    model: str = "resnet"
    head: str | None = None  # None: the model's default head
    hparams: dict = field(default_factory=dict)
    epochs: int | None = None  # None: 1, or no limit when max_steps or max_minutes is the budget
    max_steps: int | None = None
    max_minutes: float | None = None  # wall-clock budget of the whole run, its validations included
    batch_size: int = 256
    optimizer: str | None = None  # None: the model's train_defaults, else sgd
    lr: float | None = None  # None: the model's train_defaults rate for its optimizer, else DEFAULT_LR[optimizer]
    momentum: float = 0.9
    weight_decay: float = 1e-4
    schedule: str = "cosine"
    schedule_steps: int | None = None
    warmup_steps: int = 0
    amp: bool | None = None  # None: on with CUDA, off on CPU
    channels_last: bool | None = None  # NHWC weights and inputs; None: on with CUDA (tensor cores), off on CPU
    compile: str | None = None  # a torch.compile backend for the training forward/backward ("inductor"); None: eager
    device: str = "auto"
    workers: int = 0
    threads: int | None = None  # torch intra-op threads on CPU; None: torch's default
    seed: int = 0
    symmetries: str = "random"
    shuffle_buffer: int = 16384
    positions_per_game: int | None = None  # None: 8 when the value head is trained, else all
    value_weight: float = 1.0
    # on self-play data: the value target mixes the game's result with the search's root value, (1 - m) z + m v
    # (KataGo's short-term value targets, in one term); 0: the result alone
    value_mix: float = 0.0
    # the auxiliary losses of a model with ownership and score outputs (``zero``) on data with self-play targets;
    # None: KataGo's weights (gotk.train.losses), 1.5 / size² for the ownership (its sum over the points) and 0.0015
    # for the score (Huber, delta 12 points)
    ownership_weight: float | None = None
    score_weight: float | None = None
    # what the network learns (gotk.train.objectives): supervised imitation, or from experience (policy-gradient,
    # actor-critic, q-learning) on data with the experience columns
    objective: str = "supervised"
    entropy_weight: float = DEFAULT_ENTROPY_WEIGHT  # actor-critic: the entropy bonus's weight
    baseline: str = "none"  # policy-gradient: none, mean (the batch's return) or play-value (recorded at play)
    # policy-gradient and actor-critic: PPO's clip of the ratio of a move's probability now to its probability at
    # play time (gotk.train.objectives; 0: the book's plain gradient)
    ratio_clip: float = DEFAULT_RATIO_CLIP
    # KL(pi || pi_anchor) per row times this joins the loss, pi_anchor the policy of the agent file ``anchor`` (the
    # start a learner from experience should not walk away from; 0: none)
    anchor: str | None = None
    anchor_weight: float = 0.0
    # the gradient's norm capped at this before each step (None: no cap; learning from experience: 1.0, the book's
    # clipnorm: a policy gradient's steps are as large as its returns and rare moves' log-probabilities make them)
    clip_grad_norm: float | None = None
    # one optimizer step per this many batches, their gradients summed (each batch's loss / accumulate): a step over
    # more rows than one batch holds (a learner's step over whole games)
    accumulate: int = 1
    init_agent: str | None = None  # an agent file whose weights the new model starts from (same model and shape)
    # an optimizer state file (gotk.train.checkpoint.save_optimizer_state) the new optimizer starts from: the same
    # optimizer over the same model (what gotk zero carries from one generation to the next)
    init_optimizer: str | None = None
    # the model takes the shards' global inputs (komi, side to move: gotk.encoders.global_inputs); None: when the
    # training data has the globals column and the model can take them (docs/training.md)
    globals: bool | None = None
    # condition the model on the shards' metadata column (KataGo's human-SL inputs), through an encoder of
    # metadata_channels units (docs/human.md)
    metadata: bool = False
    metadata_channels: int = 64
    log_every: int = 50
    checkpoint_every: int = 1000
    patience: int | None = None
    val_split: str = "val"  # "": no validation (and no warning that the data has no such split)
    max_val_positions: int | None = None
    train_split: str = "train"
    progress: bool = True
    dist_timeout: float = DEFAULT_DIST_TIMEOUT  # seconds a collective may wait for the other ranks
    storage_options: dict = field(default_factory=dict)  # fsspec options when ``data`` is a URL (s3://...)
    where: str | None = None  # train and validate only on games this --where expression keeps (gotk.shards.where)
    tensorboard: bool | None = None  # TensorBoard event files in the run folder; None: when the package is installed

    def resolved(self) -> TrainConfig:
        """A copy with defaults filled in and every choice validated (raises ``ValueError``)."""
        c = dataclasses.replace(self, hparams=dict(self.hparams))
        if c.model not in MODELS:
            raise ValueError(f"unknown model {c.model!r}; choose from {', '.join(MODELS)}")
        c.hparams = model_hparams(c.model, **c.hparams)
        c.head = c.head or MODELS[c.model].default_head
        if c.head not in HEADS:
            raise ValueError(f"--head must be one of {', '.join(HEADS)}")
        defaults = MODELS[c.model].train_defaults
        if c.optimizer is None:
            c.optimizer = defaults.get("optimizer", DEFAULT_OPTIMIZER)
        if c.optimizer not in OPTIMIZERS:
            raise ValueError(f"--optimizer must be one of {', '.join(OPTIMIZERS)}")
        if c.schedule not in SCHEDULES:
            raise ValueError(f"--schedule must be one of {', '.join(SCHEDULES)}")
        if c.device not in ("auto", "cpu", "cuda") and not c.device.startswith("cuda:"):
            raise ValueError("--device must be auto, cpu or cuda")
        obj = objective(c.objective)  # ValueError for an unknown one
        experience = obj.experience
        if c.lr is None and obj.fine_tunes:
            c.lr = EXPERIENCE_LR
        if c.lr is None:
            own = c.optimizer == defaults.get("optimizer", DEFAULT_OPTIMIZER) and "lr" in defaults
            c.lr = defaults["lr"] if own else DEFAULT_LR[c.optimizer]
        c.lr = float(c.lr)
        # imitation caps a game's correlated positions for the value head; experience learns from every move
        if c.positions_per_game is None and c.head in ("value", "both") and not experience:
            c.positions_per_game = DEFAULT_POSITIONS_PER_GAME
        if c.epochs is None and c.max_steps is None and c.max_minutes is None:
            c.epochs = 1
        for name in ("epochs", "batch_size", "log_every", "checkpoint_every", "metadata_channels", "accumulate"):
            if getattr(c, name) is not None and getattr(c, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be >= 1")
        if c.max_steps is not None and c.max_steps < 1:
            raise ValueError("--max-steps must be >= 1")
        if c.max_minutes is not None and not (c.max_minutes > 0 and math.isfinite(c.max_minutes)):
            raise ValueError(f"--max-minutes must be a positive number of minutes, not {c.max_minutes}")
        if c.compile in ("", "none"):
            c.compile = None
        for name in ("value_weight", "ownership_weight", "score_weight"):
            v = getattr(c, name)
            if v is not None and not (math.isfinite(v) and v >= 0):
                raise ValueError(f"--{name.replace('_', '-')} must be a number >= 0, not {v}")
        if not 0 <= c.value_mix <= 1:
            raise ValueError(f"--value-mix must be in 0..1, not {c.value_mix}")
        if c.baseline not in BASELINES:
            raise ValueError(f"--baseline must be one of {', '.join(BASELINES)}, not {c.baseline!r}")
        if obj.fine_tunes and c.patience is not None:
            raise ValueError("--patience stops on the validation top-1, which learning from a start's own games "
                             "does not aim at: leave it out with --objective " + c.objective)
        if not (math.isfinite(c.ratio_clip) and 0 <= c.ratio_clip < 1):
            raise ValueError(f"--ratio-clip must be in [0, 1), not {c.ratio_clip}")
        if not (math.isfinite(c.entropy_weight) and c.entropy_weight >= 0):
            raise ValueError(f"--entropy-weight must be a number >= 0, not {c.entropy_weight}")
        if not (math.isfinite(c.anchor_weight) and c.anchor_weight >= 0) or (c.anchor_weight > 0 and not c.anchor):
            raise ValueError(f"--anchor-weight must be a number >= 0 with an --anchor agent, not {c.anchor_weight}")
        if c.clip_grad_norm is None and obj.fine_tunes:
            c.clip_grad_norm = EXPERIENCE_CLIP_GRAD_NORM
        if c.clip_grad_norm is not None and not (math.isfinite(c.clip_grad_norm) and c.clip_grad_norm > 0):
            raise ValueError(f"--clip-grad-norm must be a number > 0, not {c.clip_grad_norm}")
        if c.workers < 0:
            raise ValueError("--workers must be >= 0")
        if c.dist_timeout <= 0:
            raise ValueError("--dist-timeout must be > 0")
        return c

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


def amp_dtype(device: torch.device) -> torch.dtype:
    """bf16 where supported (CUDA Ampere+, CPU), else fp16 (which needs a GradScaler)."""
    if device.type == "cuda" and not torch.cuda.is_bf16_supported():
        return torch.float16
    return torch.bfloat16


def make_optimizer(cfg: TrainConfig, params) -> torch.optim.Optimizer:
    wd = cfg.weight_decay
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=wd, nesterov=cfg.momentum > 0)
    if cfg.optimizer == "adagrad":
        return torch.optim.Adagrad(params, lr=cfg.lr, weight_decay=wd)
    if cfg.optimizer == "adadelta":
        return torch.optim.Adadelta(params, lr=cfg.lr, weight_decay=wd)
    if cfg.optimizer == "adam":
        # learning from experience: decoupled decay (a weight shrinks by lr * wd a step), not Adam's coupled L2 term,
        # which Adam's normalisation turns into a step of about the learning rate towards 0 wherever the objective's
        # gradient is small
        return torch.optim.Adam(params, lr=cfg.lr, weight_decay=wd,
                                decoupled_weight_decay=objective(cfg.objective).fine_tunes)
    return torch.optim.AdamW(params, lr=cfg.lr, weight_decay=wd)


def lr_factor(schedule: str, step: int, horizon: int, warmup: int = 0) -> float:
    """Multiplier of the base learning rate for the update number ``step`` (0-based)."""
    if warmup and step < warmup:
        return (step + 1) / warmup
    if horizon <= 0:
        return 1.0
    return lr_factor_at(schedule, (step - warmup) / max(1, horizon - warmup))


def lr_factor_at(schedule: str, progress: float) -> float:
    """Multiplier of the base learning rate after ``progress`` (0..1) of the schedule: by steps, or by the
    wall-clock budget when a run is bounded by ``--max-minutes`` only."""
    if schedule == "none":
        return 1.0
    t = min(1.0, max(0.0, progress))
    if schedule == "step":
        return 0.1 ** min(2, int(3 * t))
    return 0.5 * (1.0 + math.cos(math.pi * t))
