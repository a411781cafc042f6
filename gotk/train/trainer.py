"""The training loop behind ``gotk train``: streaming shards → a policy and/or value network → an agent.

A run directory holds ``config.json`` (everything needed to reproduce the run), ``metrics.jsonl``
(:mod:`gotk.train.metrics`), ``curves.png`` (:mod:`gotk.train.curves`), ``checkpoint.pt``
(:mod:`gotk.train.checkpoint`: ``--resume`` continues exactly) and ``agent.gotk`` (the best model by
validation, or the last one without a ``val`` split). Settings: :mod:`gotk.train.config`; what the run starts
from (data checks, datasets, baseline, ``--init-agent``, ``config.json``): :mod:`gotk.train.setup`; the
validation pass: :mod:`gotk.train.validation`.

When the value head is trained, at most ``positions_per_game`` positions (default 8) of each game
are drawn per epoch, so long games do not dominate and the value net does not memorise outcomes;
policy-only runs use every position. Rows with value 0 (draw, void or unknown result) are left out of
the value loss.

The loss terms (the policy against the move played or the search's policy, the value, ownership and score) are
:mod:`gotk.train.losses`. ``init_agent`` starts the model from an agent file's weights (each self-play generation
continues from the previous network); ``init_optimizer`` starts the optimizer from a saved state
(:mod:`gotk.train.checkpoint`: each generation continues the previous one's Adam moments and step count).

Distributed (``torchrun --nproc_per_node N -m gotk train ...``, see ``docs/scaling.md``): the process
group is set up from torchrun's environment (:mod:`gotk.distributed`), the model is wrapped in DDP and each
rank reads its share of the row groups. Every rank takes the same number of steps per epoch, the largest
per-rank batch count: a rank whose rows are used up takes *empty* steps (a zero-weight forward/backward that
only joins the gradient all-reduce), so every row is still used exactly once per epoch. Losses are weighted
by rows, so one step's gradient is the mean over all the rows of all ranks. Logged metrics and validation are
summed over ranks; only rank 0 writes files; the checkpoint holds every rank's loader position, RNG states
and metric sums.
"""

from __future__ import annotations

import gc
import json
import random
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from gotk.devices import resolve_device
from gotk.distributed import debug_kill, debug_kill_step, dist_info, init_distributed
from gotk.nets.networks import build_model, count_parameters
from gotk.shards.experience_column import has_play_view
from gotk.shards.manifest import read_manifest
from gotk.train.checkpoint import CHECKPOINT, load_checkpoint, rng_state, save_checkpoint, set_rng_state
from gotk.train.config import TrainConfig, amp_dtype, lr_factor, lr_factor_at, make_optimizer
from gotk.train.curves import plot_curves
from gotk.train.losses import LossWeights, batch_losses
from gotk.train.metrics import (
    STAT_FIELDS,
    TENSORBOARD_MISSING,
    EventLog,
    append_record,
    summarise,
    tensorboard_available,
    trim_after,
)
from gotk.train.objectives import kl_sum, objective
from gotk.train.setup import (
    check_data,
    check_objective,
    fit_value_baseline,
    freeze_batch_norm,
    freeze_untrained,
    load_anchor,
    load_init_agent,
    load_init_optimizer,
    make_datasets,
    metadata_coverage,
    train_globals,
    train_metadata,
    write_run_config,
)
from gotk.train.validation import VAL_SHARE, Validation, val_score

AGENT = "agent.gotk"
class Trainer:
    """One training run; ``Trainer(cfg, resume=...).run()`` returns the final summary dict."""

    def __init__(self, cfg: TrainConfig, resume: bool = False) -> None:
        self.cfg = cfg = cfg.resolved()
        self.out = Path(cfg.out)
        self.rank, self.world = dist_info()
        self.main = self.rank == 0
        ckpt_path = self.out / CHECKPOINT
        if resume and not ckpt_path.is_file():
            raise FileNotFoundError(f"--resume: no {CHECKPOINT} in {self.out}")
        if not resume and ckpt_path.exists():
            raise FileExistsError(f"{self.out} already holds a run ({CHECKPOINT}); pass --resume to continue it "
                                  "or choose another --out")
        self.tensorboard = cfg.tensorboard
        if cfg.tensorboard is None:
            self.tensorboard = tensorboard_available()
            if not self.tensorboard and self.main:
                print(f"note: no TensorBoard event files: {TENSORBOARD_MISSING} (--no-tensorboard: no note)",
                      file=sys.stderr)
        elif cfg.tensorboard and not tensorboard_available():
            raise ValueError(f"--tensorboard: {TENSORBOARD_MISSING}")
        # a local folder or an fsspec URL; format and schema version checked
        self.manifest, self.manifest_sha256 = read_manifest(cfg.data, cfg.storage_options)
        check_data(cfg, self.manifest, self.main)
        self.device = resolve_device(cfg.device)
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        self.amp = cfg.amp if cfg.amp is not None else self.device.type == "cuda"
        self.amp_dtype = amp_dtype(self.device)
        torch.manual_seed(cfg.seed)
        random.seed(cfg.seed)
        np.random.seed(cfg.seed)

        self.train_ds, self.val_ds = make_datasets(cfg, self.manifest, self.rank, self.world)
        self.encoder = self.train_ds.encoder
        c, h, w = (int(x) for x in self.encoder["shape"])
        if h != w:
            raise ValueError(f"square boards only, the data is {h}x{w}")
        self.board_size = h
        self.num_globals = train_globals(cfg, self.train_ds.index, self.val_ds.index if self.val_ds else None)
        self.num_metadata = train_metadata(cfg, self.train_ds.index, self.val_ds.index if self.val_ds else None)
        self.model = build_model(cfg.model, c, h, head=cfg.head, num_globals=self.num_globals,
                                 num_metadata=self.num_metadata, metadata_channels=cfg.metadata_channels,
                                 **cfg.hparams)
        if cfg.init_agent and not resume:  # a resumed run's weights come from its checkpoint
            load_init_agent(self.model, cfg.init_agent, cfg, self.encoder)
        self.model = self.model.to(self.device)
        self.targets = bool(self.train_ds.index.targets)  # the data has the self-play target columns
        check_objective(cfg, self.train_ds.index.experience is not None)  # the shards themselves
        self.loss_weights = LossWeights.of(cfg, h)
        self.baseline = fit_value_baseline(cfg) if self.model.has_value else None
        self._coverage: dict | None = None  # agent.json trained_on of a conditioned model, read once
        self.channels_last = cfg.channels_last if cfg.channels_last is not None else self.device.type == "cuda"
        if self.channels_last:
            self.model = self.model.to(memory_format=torch.channels_last)
        self.net = self.model
        if self.world > 1:
            self.net = torch.nn.parallel.DistributedDataParallel(
                self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None)
        if cfg.compile:  # the training forward only: validation and the agent use the plain module
            self.net = torch.compile(self.net, backend=cfg.compile)
        # learning from experience: the weights of heads the objective does not train stay as they are, and batch
        # norm keeps its statistics (train_step)
        self.experience = objective(cfg.objective).experience  # rows with the experience columns
        self.fine_tunes = objective(cfg.objective).fine_tunes
        freeze_untrained(self.model, cfg.objective)
        self.anchor = load_anchor(cfg.anchor, self.model, self.device) if cfg.anchor_weight > 0 else None
        self.optimizer = make_optimizer(cfg, [w for w in self.model.parameters() if w.requires_grad])
        if cfg.init_optimizer and not resume:  # a resumed run's optimizer comes from its checkpoint
            load_init_optimizer(self.optimizer, cfg.init_optimizer, cfg)
        use_scaler = self.amp and self.device.type == "cuda" and self.amp_dtype == torch.float16
        self.scaler = torch.amp.GradScaler("cuda", enabled=use_scaler)
        self.horizon = cfg.schedule_steps or cfg.max_steps or (cfg.epochs or 1) * self.batches_per_epoch()
        self.budget_s = cfg.max_minutes * 60.0 if cfg.max_minutes else None
        # with a validation split, training stops at (1 - VAL_SHARE) of the time budget: the last validation
        # has the rest, and every validation is timed (see validate)
        self.train_budget_s = None
        if self.budget_s is not None:
            self.train_budget_s = self.budget_s * (1.0 - VAL_SHARE if self.val_ds is not None else 1.0)
        self.validation = None
        if self.val_ds is not None:
            self.validation = Validation(self.val_ds, self.model, self.device, self.loss_weights, self.baseline,
                                         self._autocast, self._all_reduce, self.rank, self.world,
                                         cfg.max_val_positions, self.budget_s)
        self.ended_by: str | None = None
        self.budget_used = 0.0  # share of the time budget spent (the same on every rank)
        self._t_budget = time.perf_counter()
        # counters
        self.step = 0
        self.micro = 0  # batches of the optimizer step in progress (cfg.accumulate per step)
        self.epoch = 0
        self.loader_state: dict | None = None
        self.best: float | None = None
        self.best_epoch: int | None = None
        self.bad_epochs = 0
        self.last_val: dict | None = None
        # running sums (see _summarise) of the current logging window and epoch; checkpointed so that a
        # resumed run logs exactly what an uninterrupted one does
        self.window = torch.zeros(len(STAT_FIELDS), dtype=torch.float64, device=self.device)
        self.epoch_sums = torch.zeros(len(STAT_FIELDS), dtype=torch.float64, device=self.device)
        if resume:
            self._load_checkpoint(ckpt_path)
        self.events: EventLog | None = None
        if self.main:
            self.out.mkdir(parents=True, exist_ok=True)
            self._write_config()
            trim_after(self.out, self.step)
            if self.tensorboard:
                self.events = EventLog(self.out, self.step if resume else None)

    # --- bookkeeping ----------------------------------------------------------------------------

    def batches_per_epoch(self) -> int:
        """Steps of the current epoch: this rank's batch count, or under DDP the largest over ranks (ranks
        with fewer batches take empty steps until then, so all take the same number of steps)."""
        if self.world > 1:
            return max(1, max(self.train_ds.rank_batch_counts(max(1, self.cfg.workers))))
        return max(1, len(self.train_ds))

    def _all_reduce(self, t: torch.Tensor) -> torch.Tensor:
        """Sum of ``t`` over ranks (a copy; ``t`` itself outside DDP)."""
        if self.world == 1:
            return t
        t = t.clone()
        torch.distributed.all_reduce(t)
        return t

    def _write_config(self) -> None:
        cfg = self.cfg
        write_run_config(
            self.out, cfg,
            data={"manifest_sha256": self.manifest_sha256, "encoder": self.encoder,
                  "train_rows": int(self.train_ds.num_rows),
                  "val_rows": int(self.val_ds.num_rows) if self.val_ds is not None else None},
            model={"name": cfg.model, "head": cfg.head, "hparams": cfg.hparams, "num_globals": self.num_globals,
                   "num_metadata": self.num_metadata,
                   "parameters": count_parameters(self.model)},
            run={"device": str(self.device), "amp": self.amp, "channels_last": self.channels_last,
                 "amp_dtype": str(self.amp_dtype).replace("torch.", "") if self.amp else None,
                 "world_size": self.world, "schedule_horizon_steps": self.horizon})

    def log(self, record: dict) -> None:
        if self.main:
            append_record(self.out, record)
            if self.events is not None:
                self.events.add(record)

    def _rank_state(self) -> dict:
        return {"rng": rng_state(), "loader": self.loader_state, "window": self.window.cpu(),
                "epoch_sums": self.epoch_sums.cpu()}

    def checkpoint(self) -> None:
        """Rank 0 writes the checkpoint; under DDP every rank must call this (it gathers per-rank state)."""
        ranks = None
        if self.world > 1:
            ranks = [None] * self.world
            torch.distributed.all_gather_object(ranks, self._rank_state())
        if not self.main:
            return
        state = {
            "config": self.cfg.to_dict(),
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.scaler.state_dict(),
            "rng": rng_state(),
            "loader": self.loader_state,
            "step": self.step, "epoch": self.epoch,
            "best": self.best, "best_epoch": self.best_epoch, "bad_epochs": self.bad_epochs,
            "last_val": json.dumps(self.last_val),
            "window": self.window.cpu(), "epoch_sums": self.epoch_sums.cpu(),
            "world_size": self.world,
        }
        if ranks is not None:
            state["ranks"] = ranks
        save_checkpoint(self.out / CHECKPOINT, state)

    def _load_checkpoint(self, path: Path) -> None:
        st = load_checkpoint(path)
        saved = TrainConfig.from_dict(st["config"]).resolved()
        for key in ("model", "head", "hparams", "batch_size", "optimizer", "seed", "symmetries",
                    "positions_per_game", "train_split"):
            if getattr(saved, key) != getattr(self.cfg, key):
                raise ValueError(f"--resume: {key} is {getattr(self.cfg, key)!r} but the checkpoint was trained "
                                 f"with {getattr(saved, key)!r}")
        self.model.load_state_dict(st["model"])
        self.optimizer.load_state_dict(st["optimizer"])
        self.scaler.load_state_dict(st["scaler"])
        self.step, self.epoch = int(st["step"]), int(st["epoch"])
        self.best, self.best_epoch, self.bad_epochs = st["best"], st["best_epoch"], int(st["bad_epochs"])
        self.last_val = json.loads(st["last_val"])
        ranks = st.get("ranks") or [{k: st[k] for k in ("rng", "loader", "window", "epoch_sums")}]
        if len(ranks) == self.world:
            mine = ranks[self.rank]
        elif any(r["loader"] is not None for r in ranks):
            raise ValueError(f"--resume: the checkpoint was taken mid-epoch by {len(ranks)} process(es); resume it "
                             f"with the same number of processes (now {self.world}), or from an epoch boundary")
        else:  # another world size at an epoch boundary: rank 0 carries the (summed) metric sums
            zero = torch.zeros_like(ranks[0]["window"])
            mine = {"rng": ranks[0]["rng"], "loader": None,
                    "window": sum((r["window"] for r in ranks), zero) if self.main else zero,
                    "epoch_sums": sum((r["epoch_sums"] for r in ranks), zero) if self.main else zero}
        set_rng_state(mine["rng"])
        self.loader_state = mine["loader"]
        n = len(STAT_FIELDS)  # a checkpoint from before the target losses holds the first 8 sums
        self.window = F.pad(mine["window"].to(self.device), (0, n - len(mine["window"])))
        self.epoch_sums = F.pad(mine["epoch_sums"].to(self.device), (0, n - len(mine["epoch_sums"])))

    # --- steps ----------------------------------------------------------------------------------

    def _autocast(self):
        if not self.amp:
            return nullcontext()
        return torch.autocast(self.device.type, dtype=self.amp_dtype)

    def _losses(self, batch: dict, share: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The forward pass of one batch and its losses (:func:`gotk.train.losses.batch_losses`): ``(loss,
        stats)``, or under DDP (``share``) ``(scaled loss, loss, stats)``."""
        dev = self.device
        x = batch["features"].to(dev, non_blocking=True)
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        y = batch["label"].to(dev, non_blocking=True).long()
        glob = batch["globals"].to(dev, non_blocking=True) if self.num_globals else None
        meta = batch["metadata"].to(dev, non_blocking=True) if self.num_metadata else None
        own = score = None
        with self._autocast():
            if self.model.has_aux:
                p, v, own, score = self.net(x, aux="logits", glob=glob, meta=meta)
            else:
                p, v = self.net(x, glob=glob, meta=meta)
        loss, scaled, stats = batch_losses(p, v, own, score, y, batch, self.loss_weights, self.world, share)
        if self.anchor is not None:  # KL(pi || pi_anchor), averaged over the rows
            with torch.no_grad(), self._autocast():
                pa, _ = self.anchor(x, glob=glob if self.anchor.num_globals else None)
            choices = batch["choices"][: y.shape[0]].to(dev).bool() if "choices" in batch else None
            kl = self.cfg.anchor_weight * kl_sum(p, pa, choices)
            loss = loss + kl / max(1, y.shape[0])
            if share is not None:
                scaled = scaled + kl * self.world / share[0].clamp(min=1.0)
        if share is not None:
            return scaled, loss.detach(), stats
        return loss, stats

    def _out_of_time(self) -> bool:
        """Whether the training share of the ``--max-minutes`` budget is spent; updates :attr:`budget_used` (the
        share of it used, which drives the schedule). Under DDP the ranks agree (the largest elapsed time wins),
        so they stop at the same step and share one learning rate."""
        if self.train_budget_s is None:
            return False
        elapsed = time.perf_counter() - self._t_budget
        if self.world > 1:
            t = torch.tensor([elapsed], dtype=torch.float64, device=self.device)
            torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
            elapsed = float(t.item())
        self.budget_used = elapsed / self.train_budget_s
        return self.budget_used >= 1.0

    def _empty_batch(self) -> dict:
        """One all-zero row, for the empty steps of a rank whose share of the epoch is used up."""
        c, h, w = (int(x) for x in self.encoder["shape"])
        dtype = torch.int8 if self.encoder.get("dtype") == "int8" else torch.uint8
        batch = {"features": torch.zeros(1, c, h, w, dtype=dtype), "label": torch.zeros(1, dtype=torch.int64),
                 "value": torch.zeros(1, dtype=torch.float32)}
        if self.num_globals:
            batch["globals"] = torch.zeros(1, self.num_globals)
        if self.num_metadata:
            batch["metadata"] = torch.zeros(1, self.num_metadata)
        if self.experience:
            batch.update({name: torch.zeros(1) for name in ("return", "play_value", "play_prob")})
            if has_play_view(self.train_ds.index.experience):
                batch["choices"] = torch.ones(1, h * w + 1, dtype=torch.bool)
        if self.targets:  # the same graph as the other ranks' steps
            batch.update(policy=torch.zeros(1, h * w + 1), root_value=torch.zeros(1), ownership=torch.zeros(1, h, w),
                         score=torch.zeros(1), weight=torch.zeros(1), aux_weight=torch.zeros(1))
        return batch

    def train_step(self, batch: dict | None) -> torch.Tensor:
        """One batch of an optimizer step (the step itself once ``cfg.accumulate`` batches summed their gradients; a
        step the data ends inside is not taken); the batch's stats in the order of
        :data:`~gotk.train.metrics.STAT_FIELDS`.
        Under DDP ``batch=None`` is an empty step: this rank joins the step with zero weight (eval mode, so
        batch-norm statistics are not touched) and its stats are all zero."""
        cfg = self.cfg
        if self.budget_s is not None and not (cfg.schedule_steps or cfg.max_steps) and self.step >= cfg.warmup_steps:
            lr = cfg.lr * lr_factor_at(cfg.schedule, self.budget_used)  # the schedule spans the time budget
        else:
            lr = cfg.lr * lr_factor(cfg.schedule, self.step, self.horizon, cfg.warmup_steps)
        for g in self.optimizer.param_groups:
            g["lr"] = lr
        empty = batch is None
        if self.world == 1:
            self.net.train()
            if self.fine_tunes:
                freeze_batch_norm(self.model)
            loss, stats = self._losses(batch)
            report = loss.detach()
        else:
            self.net.train(not empty)
            if self.fine_tunes:
                freeze_batch_norm(self.model)
            if empty:
                batch = self._empty_batch()
            share = torch.zeros(4, dtype=torch.float64, device=self.device)
            if not empty:
                share[0] = batch["label"].shape[0]
                share[1] = (batch["value"] != 0).sum() if self.model.has_value else 0
                share[2] = batch["weight"].sum() if "weight" in batch else 0
                share[3] = batch["aux_weight"].sum() if "aux_weight" in batch else 0
            torch.distributed.all_reduce(share)
            loss, report, stats = self._losses(batch, share.float())
            if empty:
                loss, stats = loss * 0.0, stats * 0.0
        if self.micro == 0:
            self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss / cfg.accumulate if cfg.accumulate > 1 else loss).backward()
        self.micro += 1
        if self.micro == cfg.accumulate:  # the step's last batch: the summed gradient steps the weights
            self.micro = 0
            if cfg.clip_grad_norm:  # the gradient's norm capped (the book's clipnorm for its policy-gradient agents)
                self.scaler.unscale_(self.optimizer)
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.clip_grad_norm)
            self.scaler.step(self.optimizer)
            self.scaler.update()
            self.step += 1
        if empty:
            return torch.zeros(len(STAT_FIELDS), device=self.device)
        return torch.cat([stats[:6], report.reshape(1), torch.ones(1, device=self.device), stats[6:]])

    def validate(self) -> dict | None:
        """The validation split's metrics (:meth:`gotk.train.validation.Validation.run`), None without one."""
        if self.validation is None:
            return None
        self.net.eval()
        return self.validation.run(self._t_budget)

    def save_agent(self, metrics: dict) -> None:
        if not self.main:
            return
        from gotk.nets.agent_file import save_agent

        extra: dict = {"training": {"step": self.step, "epoch": self.epoch, "run": str(self.out.resolve())}}
        if self.baseline is not None:
            extra["value_baseline"] = {**self.baseline.to_dict(), "fit_on": self.cfg.train_split,
                                       "val_value_mse": metrics.get("val_value_mse"),
                                       "val_komi_handicap_mse": metrics.get("val_komi_handicap_mse")}
        if self.num_metadata:
            if self._coverage is None:
                self._coverage = metadata_coverage(self.cfg)
            extra["trained_on"] = self._coverage
        if self.experience:  # a q-learning agent's policy head holds action values
            extra["objective"] = self.cfg.objective
        save_agent(self.out / AGENT, self.model, self.cfg.model, self.cfg.hparams, self.encoder,
                   self.manifest_sha256, metrics, extra=extra)

    def end_of_epoch(self, train_summary: dict, partial: bool = False) -> bool:
        """Validate, log, keep the best agent; True when early stopping says stop. ``partial``: the run
        stopped mid-epoch (``--max-steps``); its record says so."""
        t_val = time.perf_counter()
        val = self.validate()
        if val is not None:
            val["seconds"] = round(time.perf_counter() - t_val, 3)
        self.last_val = val
        rec = {"kind": "epoch", "epoch": self.epoch, "step": self.step, **({"partial": True} if partial else {}),
               **{f"train_{k}": v for k, v in train_summary.items()}}
        if val is not None:
            rec.update({f"val_{k}": v for k, v in val.items() if k != "by_phase"})
        self.log(rec)
        stop = False
        # a fine-tuned start keeps its last model: agreement with the moves once played is not its aim
        score = val_score(val) if val is not None and not self.fine_tunes else None
        metrics = {"step": self.step, "epoch": self.epoch, **train_summary,
                   **({f"val_{k}": v for k, v in val.items() if k != "by_phase"} if val else {})}
        if score is None:
            self.save_agent(metrics)
        elif self.best is None or score > self.best:
            self.best, self.best_epoch, self.bad_epochs = score, self.epoch, 0
            self.save_agent(metrics)
        else:
            self.bad_epochs += 1
            if self.cfg.patience is not None and self.bad_epochs > self.cfg.patience:
                stop = True
                self.ended_by = "patience"
        if self.main:
            plot_curves(self.out)
        return stop

    def _train_epoch(self, first_step: int, bar, kill_at: tuple[int, bool] | None) -> bool:
        """The steps of one epoch (or, resuming, of the rest of it), logging and checkpointing on the way; True
        when the run must stop before the epoch's end (``--max-steps``, ``--max-minutes``)."""
        from torch.utils.data import DataLoader

        cfg = self.cfg
        self.train_ds.set_epoch(self.epoch)
        done = 0  # batches of this rank's share consumed this epoch
        if self.loader_state is not None:  # resuming mid-epoch
            self.train_ds.load_state_dict(self.loader_state)
            done = int(self.loader_state["batches_done"])
        else:
            self.epoch_sums.zero_()
        # DDP: every rank takes `steps` steps this epoch (the largest share); `taken` counts them
        steps = self.batches_per_epoch() if self.world > 1 else None
        taken = int(self.loader_state.get("steps_taken", done)) if self.loader_state is not None else 0
        loader = DataLoader(self.train_ds, batch_size=None, num_workers=cfg.workers,
                            pin_memory=self.device.type == "cuda")
        batches = iter(loader)
        t0 = time.perf_counter()
        hit_max = False
        while steps is None or taken < steps:
            if self.step > first_step and self._out_of_time():  # at least one step per run
                hit_max = True
                self.ended_by = "max_minutes"
                break
            batch = next(batches, None)
            if batch is None and steps is None:
                break  # one process: the loader ran dry
            s = self.train_step(batch)
            taken += 1
            if batch is not None:
                done += 1
            self.window += s
            self.epoch_sums += s
            self.loader_state = {**self.train_ds.state_dict(done), "steps_taken": taken}
            if self.micro:  # inside an optimizer step: its batches go on (nothing logged, kept or stopped mid-step)
                continue
            if kill_at is not None and self.step >= kill_at[0]:
                debug_kill(self.rank, self.step, kill_at[1])
            if self.step % cfg.log_every == 0:
                now = time.perf_counter()
                rec = {"kind": "step", "step": self.step, "epoch": self.epoch,
                       **summarise(self._all_reduce(self.window).tolist(), now - t0),
                       "lr": self.optimizer.param_groups[0]["lr"]}
                self.log(rec)
                if bar is not None:
                    bar.set_postfix({k: f"{rec[k]:.3f}" for k in ("loss", "top1", "value_mse") if k in rec})
                self.window.zero_()
                t0 = now
            if bar is not None:
                bar.update(1)
            if cfg.max_steps is not None and self.step >= cfg.max_steps:
                hit_max = True
                self.ended_by = "max_steps"
                break
            if self.step % cfg.checkpoint_every == 0:
                self.checkpoint()
        if steps is not None and not hit_max and next(batches, None) is not None:
            raise RuntimeError(f"rank {self.rank}: more batches than the {steps} steps planned for epoch "
                               f"{self.epoch} (loader batch counts out of sync)")
        return hit_max

    def run(self) -> dict:
        """Train until the epochs, steps, time budget or patience say stop; returns the run's summary."""
        cfg = self.cfg
        t_start = time.perf_counter()
        bar = None
        if self.main and cfg.progress:
            from tqdm import tqdm

            total = cfg.max_steps or (None if self.budget_s is not None else self.horizon)
            bar = tqdm(total=total, initial=min(self.step, total or self.step), unit="step", desc="train",
                       dynamic_ncols=True, disable=None)
        self._t_budget = time.perf_counter()
        kill_at = debug_kill_step()
        stop = cfg.max_steps is not None and self.step >= cfg.max_steps
        if stop:
            self.ended_by = "max_steps"
        first_step = self.step
        while not stop:
            if cfg.epochs is not None and self.epoch >= cfg.epochs:
                self.ended_by = "epochs"
                break
            if self.step > first_step and self.loader_state is None and self._out_of_time():
                self.ended_by = "max_minutes"  # spent at an epoch's end, validated there: no empty epoch
                break
            hit_max = self._train_epoch(first_step, bar, kill_at)
            if not hit_max:  # the loader ran dry: the epoch is complete
                self.epoch += 1
                self.loader_state = None
            summary = summarise(self._all_reduce(self.epoch_sums).tolist(), None)
            stop = self.end_of_epoch(summary, partial=hit_max) or hit_max
            self.checkpoint()
        if bar is not None:
            bar.close()
        if self.events is not None:
            self.events.close()
        result = {"step": self.step, "epoch": self.epoch, "best_epoch": self.best_epoch,
                  "val": self.last_val, "seconds": round(time.perf_counter() - t_start, 2),
                  "out": str(self.out), "ended_by": self.ended_by}
        return result


def train(cfg: TrainConfig, resume: bool = False) -> dict:
    """Run (or ``resume``) training as configured; returns a summary dict. Under torchrun (``WORLD_SIZE`` > 1)
    the process group is created here (:func:`init_distributed`) and destroyed at the end. torch's thread
    count is restored afterwards when ``cfg.threads`` changed it."""
    threads = torch.get_num_threads()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    created = init_distributed(cfg.device, cfg.dist_timeout)
    trainer = None
    try:
        trainer = Trainer(cfg, resume=resume)
        result = trainer.run()
        if created:
            torch.distributed.barrier()  # no rank leaves while another still needs it
        return result
    finally:
        if created:
            # the DDP wrapper's reducer keeps the work objects of its last collectives, with their tensors: they are
            # released here, while the interpreter is whole, and then the process group; left to the interpreter's
            # finalisation, gloo's threads destroy them without the GIL and abort the finished process (SIGABRT;
            # the mechanism pytorch/pytorch#179291 describes)
            trainer = None
            gc.collect()
            torch.distributed.destroy_process_group()
        torch.set_num_threads(threads)
