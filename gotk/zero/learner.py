"""The learner of ``gotk zero``: trains on a window of the newest self-play rows at a set number of samples per
new position, and publishes a new network every ``steps`` steps.

The learner trains in rounds. Round ``r`` starts when the actors' committed rows allow it: with ``R`` rows
committed so far, the learner may have taken ``floor(reuse * R / batch_size)`` steps in all (``reuse``: samples
per new position, KataGo's ``max-train-bucket-per-new-data``), so a round of ``steps`` steps waits for enough new
rows, and the learner's share of the host follows from the reuse and the actors' rate. A round:

1. **fresh losses**: the current network's policy and value losses on the rows committed since the last round,
   before any training on them (held out by time: what the network has not seen), beside the training loss;
2. **window**: a dataset over the newest chunks (at least :meth:`LearnerSettings.window_size` rows: ``window_rows``,
   or a window that grows with the rows played, KataGo's power law; nothing copied), every row in its ``train``
   split;
3. **train** ``steps`` steps (:func:`gotk.train.trainer.train`) from the current network's weights and the
   optimizer state the last round left (Adam's moments and step count; the first round warms the learning rate
   up instead), at the learning rate the run's schedule gives at the round's share of the budget
   (:meth:`LearnerSettings.lr_factor`);
4. **publish** the network as ``networks/net-NNN.gotk`` (atomically, with the search it was trained with), then the
   optimizer state after it (``learner/optimizer-NNN.pt``); the run's state records the round last, so a killed round
   is done again, from the same network and optimizer state;
5. **drift**: the new network's policy against the run's first network on a fixed probe set, the first chunk's
   positions (:func:`start_drift`: KL to the start and how often both rank the same move first).
"""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from gotk.atomic import atomic_path

LR_FLOOR = 0.05  # the cosine schedule's last multiplier: the last rounds still follow the newest games
DEFAULT_KL_WEIGHT = 0.1  # the anchor's weight in the first round of a run with a KL target
KL_WEIGHT_RANGE = (1e-3, 100.0)


def optimizer_name(version: int) -> str:
    """The optimizer state after training network ``version`` (the state the next round starts from)."""
    return f"optimizer-{version:03d}.pt"


@dataclass(frozen=True)
class LearnerSettings:
    reuse: float  # samples trained per new position
    batch_size: int
    steps: int  # steps per published network
    window_rows: int  # the newest rows trained on
    min_rows: int  # rows before the first round
    lr: float | None
    optimizer: str | None
    warmup: int  # learning-rate warm-up of the first round (a fresh optimizer)
    aux_targets: bool
    threads: int | None
    device: str
    seed: int
    value_mix: float = 0.0  # the root value's share of the value target
    objective: str = "supervised"  # gotk.train.objectives: what the rows teach (searched targets, or experience)
    entropy_weight: float = 0.01
    baseline: str = "none"
    ratio_clip: float = 0.0
    fresh_rows: int = 1024  # at most this many of a round's new rows are scored before training (~2% of a round)
    lr_schedule: str = "constant"  # gotk.zero.options.LR_SCHEDULES: the learning rate over the run's budget
    window_growth: float = 0.0  # KataGo's expand-window-per-row (0: a window of window_rows rows)
    window_exponent: float = 0.65  # KataGo's taper-window-exponent
    games_per_step: int | None = None  # a step over the rows of this many whole new games (None: batches, reuse)
    positions_per_game: int | None = None  # with games_per_step: at most this many of a game's rows (None: all)
    epochs_per_batch: int = 1  # with games_per_step: passes over each round's games
    heldout: str | None = None  # scored on after each round (heldout_score)
    heldout_positions: int = 2000
    kl_target: float | None = None  # nats of KL(pi || pi_start) on the probe set the anchor's weight aims at
    kl_weight: float = DEFAULT_KL_WEIGHT  # the anchor's first weight (then adapted round by round)

    def next_kl_weight(self, weight: float, kl: float | None) -> float:
        """The anchor's weight for the next round after a round at ``weight`` left the policy ``kl`` nats from the
        start on the probe set (PPO's adaptive KL rule: doubled above 1.5 × the target, halved below it / 1.5,
        within ``KL_WEIGHT_RANGE``)."""
        if self.kl_target is None or kl is None:
            return weight
        lo, hi = KL_WEIGHT_RANGE
        if kl > 1.5 * self.kl_target:
            return min(hi, weight * 2.0)
        if kl < self.kl_target / 1.5:
            return max(lo, weight / 2.0)
        return weight

    def window_size(self, rows: int) -> int:
        """The rows trained on once ``rows`` rows are committed: ``c = window_rows`` up to ``c`` rows, then KataGo's
        power law ``c · (1 + β · ((rows / c)^α − 1) / α)`` (``β = window_growth``, ``α = window_exponent``): a
        window that grows with the data, ever slower, so that early rounds train on the newest networks' games and
        late ones on many networks' (shuffle.py's rule; β = 0: fixed)."""
        c = self.window_rows
        if self.window_growth <= 0 or rows <= c:
            return c
        a = self.window_exponent
        return int(c * (1 + self.window_growth * ((rows / c) ** a - 1) / a))

    def lr_factor(self, progress: float) -> float:
        """The learning rate's multiplier for a round that starts after ``progress`` (0..1) of the run's budget:
        ``constant`` 1; ``cosine`` from 1 down to ``LR_FLOOR`` at the end (the last networks trained at a low rate
        average out the noise of single steps, as a supervised run's schedule does)."""
        if self.lr_schedule == "constant":
            return 1.0
        from gotk.train.config import lr_factor_at

        return LR_FLOOR + (1.0 - LR_FLOOR) * lr_factor_at(self.lr_schedule, progress)

    def allowed_steps(self, rows: int, games: int = 0) -> int:
        """Steps the learner may have taken in all once ``rows`` rows of ``games`` games are committed: ``reuse``
        samples per row in batches, or with ``games_per_step`` one step per that many games (per epoch)."""
        if self.games_per_step:
            return games // self.games_per_step * self.epochs_per_batch
        return math.floor(self.reuse * rows / self.batch_size)

    def ready(self, rows: int, steps_done: int, games: int = 0) -> bool:
        return rows >= self.min_rows and self.allowed_steps(rows, games) >= steps_done + self.steps

    def accumulate(self, rows: int, games: int) -> int:
        """Batches per optimizer step when a step takes ``games_per_step`` whole games (of ``rows`` rows in
        ``games`` games: at most ``positions_per_game`` of each): the step's rows over the batch size."""
        if not self.games_per_step or not games:
            return 1
        per_game = rows / games if self.positions_per_game is None else min(rows / games, self.positions_per_game)
        return max(1, round(self.games_per_step * per_game / self.batch_size))

    @classmethod
    def of(cls, o) -> LearnerSettings:
        """The learner's settings of a run's :class:`~gotk.zero.options.ZeroOptions` ``o``."""
        return cls(reuse=o.reuse, batch_size=o.batch_size, steps=o.train_steps, window_rows=o.window_rows,
                   min_rows=o.min_rows, lr=o.lr, optimizer=o.optimizer, warmup=o.warmup, aux_targets=o.aux_targets,
                   threads=o.threads, device=o.device, seed=o.seed, value_mix=o.value_mix, objective=o.objective,
                   entropy_weight=o.entropy_weight, baseline=o.baseline, ratio_clip=o.ratio_clip,
                   lr_schedule=o.lr_schedule, window_growth=o.window_growth, window_exponent=o.window_exponent,
                   kl_target=o.kl_target, kl_weight=o.kl_weight, games_per_step=o.games_per_step,
                   positions_per_game=o.positions_per_game, epochs_per_batch=o.epochs_per_batch, heldout=o.heldout,
                   heldout_positions=o.heldout_positions)


def round_config(s: LearnerSettings, data: Path, out: Path, init_agent: Path, seed: int,
                 init_optimizer: Path | None, log_every: int, lr_factor: float = 1.0, anchor: Path | None = None,
                 anchor_weight: float = 0.0, accumulate: int = 1):
    """The :class:`~gotk.train.config.TrainConfig` of one round of training, a learner's or a generation's: ``s.steps``
    steps of ``s.batch_size`` from the network ``init_agent`` (its model, hyper-parameters and global inputs) on the
    dataset ``data``, written to ``out``; the optimizer state ``init_optimizer`` carried on (no warm-up), else a
    fresh one warmed up over ``s.warmup`` steps; the base learning rate times ``lr_factor`` (the run's schedule:
    a round has no schedule of its own), KL(π ‖ π_anchor) at ``anchor_weight`` in the loss when given, no
    hold-out or checkpoints; ``accumulate`` batches per step (a step over whole games), at most
    ``s.positions_per_game`` rows of a game. The heads trained are the
    network's own, under the settings' objective (AlphaZero's targets, or one that learns from experience)."""
    from gotk.nets.agent import load_agent
    from gotk.train.config import TrainConfig
    from gotk.train.objectives import objective
    from gotk.zero.options import NO_AUX

    meta = load_agent(init_agent).meta
    experience = objective(s.objective).experience
    cfg = TrainConfig(data=str(data), out=str(out), model=meta["model"]["name"], head=meta["model"]["head"],
                       hparams=meta["model"]["hparams"], max_steps=s.steps, batch_size=s.batch_size, lr=s.lr,
                       optimizer=s.optimizer, positions_per_game=s.positions_per_game or 10_000,
                       accumulate=accumulate, progress=False, checkpoint_every=10 ** 9,
                       log_every=log_every, seed=seed, init_agent=str(init_agent), tensorboard=False,
                       schedule="none", val_split="", init_optimizer=str(init_optimizer) if init_optimizer else None,
                       warmup_steps=0 if init_optimizer else s.warmup, threads=s.threads, device=s.device,
                       globals=bool(meta.get("globals")), value_mix=s.value_mix, objective=s.objective,
                       entropy_weight=s.entropy_weight, baseline=s.baseline, ratio_clip=s.ratio_clip,
                       anchor=str(anchor) if anchor is not None and anchor_weight > 0 else None,
                       anchor_weight=anchor_weight if anchor is not None else 0.0,
                      **({} if s.aux_targets and not experience else NO_AUX))
    if lr_factor != 1.0:
        cfg = replace(cfg, lr=cfg.resolved().lr * lr_factor)
    return cfg


def window_records(records: list[dict], window_rows: int) -> list[dict]:
    """The newest committed chunks (``records`` in commit order) holding at least ``window_rows`` rows."""
    out, rows = [], 0
    for rec in reversed(records):
        if rec["rows"] <= 0:
            continue
        out.append(rec)
        rows += rec["rows"]
        if rows >= window_rows:
            break
    return out[::-1]


def fresh_losses(agent_path: Path, data: Path, settings: LearnerSettings) -> dict:
    """The agent's losses on a dataset's rows it was not trained on (no gradient): ``loss`` (under the settings'
    objective), ``policy_soft_ce`` against the search's policy (searched games) or ``policy_loss`` against the moves
    played (experience), ``value_mse``, ``positions`` (at most ``settings.fresh_rows``)."""
    import torch

    from gotk.datasets.sampling import Sampling, iter_numpy_batches
    from gotk.nets.agent import load_agent
    from gotk.shards.globals_column import GLOBALS
    from gotk.train.losses import LossWeights, batch_losses
    from gotk.train.metrics import summarise
    from gotk.train.objectives import objective

    agent = load_agent(agent_path)
    model = agent.model.eval()
    weights = LossWeights.default(agent.board_size, aux=settings.aux_targets, objective=settings.objective,
                                  entropy=settings.entropy_weight, baseline=settings.baseline,
                                  ratio_clip=settings.ratio_clip)
    sums = None
    with torch.inference_mode():
        for b in iter_numpy_batches(data, "train",
                                    sampling=Sampling(batch_size=256, shuffle=False, symmetries="none")):
            t = {k: torch.from_numpy(v) for k, v in b.items()}
            glob = t[GLOBALS] if agent.num_globals and GLOBALS in t else None
            own = score = None
            if model.has_aux:
                p, v, own, score = model(t["features"], aux="logits", glob=glob)
            else:
                p, v = model(t["features"], glob=glob)
            loss, _, stats = batch_losses(p, v, own, score, t["label"], t, weights)
            n = float(stats[0])
            # STAT_FIELDS order; the loss summed over rows and "steps" counting rows: its mean is per row
            s = torch.cat([stats[:6].double(), torch.tensor([float(loss) * n, n], dtype=torch.float64),
                           stats[6:].double()])
            sums = s if sums is None else sums + s
            if sums[0] >= settings.fresh_rows:
                break
    if sums is None:
        return {}
    out = summarise(sums.tolist(), None)
    keys = ("positions", "loss", objective(settings.objective).policy_metric, "value_mse")
    return {k: round(out[k], 6) for k in keys if k in out and out[k] is not None}


def heldout_score(agent_path: Path, data: str, positions: int) -> dict:
    """The agent's move prediction and value error on held-out positions (:func:`gotk.train.evaluate.evaluate`:
    a dataset's ``test`` split, or SGF files and archives read through the agent's encoder): ``positions``,
    ``top1``, ``nll``, ``value_mse``. ZeroError when they cannot be read with this agent."""
    from gotk.errors import GotkError
    from gotk.nets.agent import load_agent
    from gotk.train.evaluate import evaluate
    from gotk.zero.options import ZeroError

    try:
        r = evaluate(load_agent(agent_path), data, split="test", max_positions=positions)
    except (GotkError, ValueError, OSError, KeyError) as e:
        raise ZeroError(f"--heldout {data}: {e}") from None
    return {k: r.get(k) for k in ("positions", "top1", "nll", "value_mse") if r.get(k) is not None}


def start_drift(start_path: Path, agent_path: Path, data: Path, rows: int = 512) -> dict:
    """How far the policy of ``agent_path`` has moved from the run's start ``start_path`` on a fixed probe set (the
    first ``rows`` rows of ``data``, as stored: no symmetry): ``kl_start``, the mean KL(π ‖ π_start) in nats over
    every output, and ``agree_start``, the share of positions where both rank the same move first. A learner from
    experience that walks away from a strong start shows it here before any match does."""
    import torch

    from gotk.datasets.sampling import Sampling, iter_numpy_batches
    from gotk.nets.agent import load_agent
    from gotk.shards.globals_column import GLOBALS

    start, agent = load_agent(start_path), load_agent(agent_path)
    kl = agree = n = 0.0
    for b in iter_numpy_batches(data, "train", sampling=Sampling(batch_size=256, shuffle=False, symmetries="none")):
        x = b["features"][: rows - int(n)]
        glob = b[GLOBALS][: len(x)] if GLOBALS in b else None
        lp0, _ = start.predict(x, glob if start.num_globals else None)
        lp1, _ = agent.predict(x, glob if agent.num_globals else None)
        lp0, lp1 = torch.from_numpy(lp0).double(), torch.from_numpy(lp1).double()
        kl += float((lp1.exp() * (lp1 - lp0)).sum())
        agree += float((lp0.argmax(1) == lp1.argmax(1)).sum())
        n += len(x)
        if n >= rows:
            break
    if not n:
        return {}
    return {"kl_start": round(kl / n, 6), "agree_start": round(agree / n, 4), "probe_positions": int(n)}


def network_size(path: Path) -> tuple[int, int] | None:
    """``(blocks, filters)`` of the network in the agent file ``path`` (None for a model without both)."""
    from gotk.nets.agent_file import read_agent_files

    hp = read_agent_files(path)[0]["model"]["hparams"]
    return (int(hp["blocks"]), int(hp["filters"])) if "blocks" in hp and "filters" in hp else None


def nxt_name(version: int) -> str:
    return f"net-{version + 1:03d}"


class Learner:
    """Rounds of training and publishing in a run folder (see the module docstring)."""

    def __init__(self, root: Path, settings: LearnerSettings, search: dict, encoder: dict, log) -> None:
        self.root = root
        self.settings = settings
        self.search = search
        self.encoder = encoder
        self.log = log
        self.folder = root / "learner"
        self.folder.mkdir(parents=True, exist_ok=True)

    def network_path(self, version: int) -> Path:
        return self.root / "networks" / f"net-{version:03d}.gotk"

    def round(self, version: int, records: list[dict], new: list[dict], steps_done: int,
              progress: float = 0.0, grow_to: tuple[int, int] | None = None, kl_weight: float = 0.0) -> dict:
        """Train network ``version + 1`` from network ``version`` on the window of ``records`` (commit order),
        scoring ``new`` (the chunks committed since the last round) first, at the learning rate of ``progress``
        (the share of the run's budget spent); publish it and return the round's record. ``grow_to``: the
        ``(blocks, filters)`` the network must have by now; a smaller one is grown first
        (:func:`gotk.nets.growth.grow_agent`: the same function, more capacity) and trained with a fresh
        optimizer, warmed up. ``kl_weight`` > 0: the loss holds KL(π ‖ π_start) at that weight, π_start the run's
        first network; the record gives the weight the next round takes (:meth:`LearnerSettings.next_kl_weight`)."""
        from gotk.nets.agent import convert_agent
        from gotk.selfplay.run import chunks_dataset
        from gotk.train.checkpoint import CHECKPOINT, load_checkpoint, save_optimizer_state
        from gotk.train.trainer import train
        from gotk.zero.options import last_step_record

        s = self.settings
        work = self.folder / f"round-{version:04d}"
        if work.exists():
            shutil.rmtree(work)  # a round a kill interrupted starts again
        chunks = self.root / "selfplay" / "chunks"
        prev = self.network_path(version)
        fresh: dict = {}
        if new:
            fresh_data = work / "fresh"
            chunks_dataset(fresh_data, chunks, new, self.encoder, {"fresh": True}, {"name": "gotk zero"})
            fresh = fresh_losses(prev, fresh_data, s)
        committed = sum(r["rows"] for r in records)
        # whole games, each used once: the games since the last round (the newest window's worth), else the window
        window = window_records(new if s.games_per_step and new else records, s.window_size(committed))
        data = work / "window"
        chunks_dataset(data, chunks, window, self.encoder, {"window": [window[0]["chunk"], window[-1]["chunk"]]},
                       {"name": "gotk zero"})
        opt_path = self.folder / optimizer_name(version)
        carried = opt_path.is_file() and version > 0
        factor = s.lr_factor(progress)
        start, grown = prev, None
        size = network_size(prev)
        if grow_to is not None and size is not None and tuple(grow_to) != size:
            from gotk.nets.growth import grow_agent

            work.mkdir(parents=True, exist_ok=True)
            start = grow_agent(prev, work / "grown.gotk", *grow_to, seed=s.seed + version)
            grown, carried = {"from": "x".join(map(str, size)), "to": "x".join(map(str, grow_to))}, False
            self.log(f"{nxt_name(version)}: the network grows from {grown['from']} to {grown['to']}")
        accumulate = s.accumulate(sum(r["rows"] for r in window), sum(r["count"] for r in window))
        cfg = round_config(s, data, work / "train", start, s.seed + version, opt_path if carried else None,
                           max(1, s.steps // 4), factor, self.network_path(0), kl_weight, accumulate)
        result = train(cfg)
        nxt = self.network_path(version + 1)
        convert_agent(work / "train" / "agent.gotk", nxt, fp16=False, search=self.search)
        st = load_checkpoint(work / "train" / CHECKPOINT)
        save_optimizer_state(self.folder / optimizer_name(version + 1), st["config"]["optimizer"], st["optimizer"])
        summary = {"steps": result.get("step"), "seconds": result.get("seconds"), **last_step_record(work / "train")}
        probe = work / "probe"  # the run's first chunk: the start's own games, the same every round
        first = next(r for r in records if r["rows"] > 0)
        chunks_dataset(probe, chunks, [first], self.encoder, {"probe": first["chunk"]}, {"name": "gotk zero"})
        drift = start_drift(self.network_path(0), nxt, probe)
        if s.heldout:
            drift["heldout"] = heldout_score(nxt, s.heldout, s.heldout_positions)
        rows = sum(r["rows"] for r in window)
        rec = {"version": version + 1, "network": nxt.name.removesuffix(".gotk"), "train": summary, "fresh": fresh,
               "drift": drift,
               "window": {"chunks": len(window), "rows": rows, "first_chunk": window[0]["chunk"],
                          "last_chunk": window[-1]["chunk"]},
               "new_chunks": len(new), "steps_done": steps_done + s.steps, "lr": cfg.resolved().lr,
               "batches_per_step": accumulate,
               "model": "x".join(map(str, network_size(nxt) or ())) or None,
               **({"grown": grown} if grown else {}),
               **({"kl_weight": kl_weight, "next_kl_weight": s.next_kl_weight(kl_weight, drift.get("kl_start"))}
                  if s.kl_target is not None else {})}
        with atomic_path(self.folder / f"round-{version:04d}.json") as tmp:
            Path(tmp).write_text(json.dumps(rec, indent=2) + "\n")
        shutil.rmtree(work, ignore_errors=True)  # the checkpoint and window are not needed again
        return rec


__all__ = ["DEFAULT_KL_WEIGHT", "KL_WEIGHT_RANGE", "LR_FLOOR", "Learner", "LearnerSettings",
           "fresh_losses", "heldout_score", "network_size", "round_config", "start_drift", "window_records"]
