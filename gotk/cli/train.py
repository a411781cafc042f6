"""``gotk train`` (shards → network → agent package) and ``gotk eval`` (agent × data → accuracy report)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import typer

from gotk.cli.common import fail as _fail
from gotk.cli.common import parse_key_values
from gotk.cli.options import option, with_options
from gotk.errors import GotkError
from gotk.storage import StorageError


@dataclass(frozen=True)
class TrainOptions:
    """The training settings of ``gotk train``, each unset by default: a value not given is the run's own on
    ``--resume`` (its config.json), else :class:`gotk.train.config.TrainConfig`'s default, written there once."""

    model: str | None = option(None, '--model', help="small | medium | large | alphago | alphago_value | resnet | zero"
                                                     " (default: resnet); rollout: AlphaGo's fast rollout policy, a "
                                                     "linear softmax over patterns (--epochs, --max-minutes, --lr, "
                                                     "--max-val-positions apply; docs/rollouts.md).")
    head: str | None = option(None, '--head', help="policy | value | both (default: the model's default).")
    epochs: int | None = option(None, '--epochs', help="Passes over the train split (default: 1, or as many as --max-"
                                                       "steps or --max-minutes allow when one of them is given).")
    max_steps: int | None = option(None, '--max-steps', help="Stop after this many optimizer steps in total.")
    max_minutes: float | None = option(None, '--max-minutes', help="Wall-clock budget of the run in minutes, its "
                                                                   "validations included (each takes at most a tenth "
                                                                   "of it); the run then ends cleanly with its agent. "
                                                                   "Without --max-steps the learning-rate schedule "
                                                                   "spans the budget.")
    batch_size: int | None = option(None, '--batch-size', help="Positions per step (default: 256).")
    optimizer: str | None = option(None, '--optimizer', help="sgd | adagrad | adadelta | adam | adamw (default: the "
                                                             "model's own, see docs/recipes.md; else sgd).")
    lr: float | None = option(None, '--lr', help="Base learning rate (default: the model's own for its optimizer, else"
                                                 " sgd 0.05, adagrad 0.01, adadelta 1.0, adam(w) 1e-3).")
    momentum: float | None = option(None, '--momentum', help="SGD momentum (Nesterov) (default: 0.9).")
    weight_decay: float | None = option(None, '--weight-decay', help="Weight decay (default: 1e-4).")
    schedule: str | None = option(None, '--schedule', help="cosine | step | none (default: cosine).")
    schedule_steps: int | None = option(None, '--schedule-steps', help="Horizon of the schedule (default: --max-steps,"
                                                                       " else epochs × batches).")
    warmup_steps: int | None = option(None, '--warmup-steps', help="Linear learning-rate warm-up steps (default: 0).")
    amp: bool | None = option(None, '--amp/--no-amp', help="Mixed precision (bf16, or fp16 + GradScaler) (default: on "
                                                           "with CUDA).")
    device: str | None = option(None, '--device', help="auto | cpu | cuda (default: auto).")
    channels_last: bool | None = option(None, '--channels-last/--no-channels-last', help="NHWC memory format for "
                                                                                         "weights and inputs (default:"
                                                                                         " on with CUDA).")
    compile: str | None = option(None, '--compile', help="torch.compile the training step with this backend (inductor "
                                                         "on GPUs; see docs/recipes.md) (default: off).")
    workers: int | None = option(None, '--workers', help="DataLoader worker processes (default: 0).")
    threads: int | None = option(None, '--threads', help="torch CPU threads (default: torch's default); 1 is often "
                                                         "fastest on a busy machine.")
    seed: int | None = option(None, '--seed', help="Seed of initialisation, shuffling and symmetries (default: 0).")
    filters: int | None = option(None, '--filters', help="Conv filters (alphago, alphago_value, resnet, zero).")
    blocks: int | None = option(None, '--blocks', help="Residual blocks (resnet, zero).")
    symmetries: str | None = option(None, '--symmetries', help="random | none: random board symmetry per position "
                                                               "(default: random).")
    positions_per_game: int | None = option(None, '--positions-per-game', help="Positions drawn per game per epoch "
                                                                               "(default: 8 with a value head, else "
                                                                               "all).")
    value_weight: float | None = option(None, '--value-weight', help="Weight of the value loss with --head both "
                                                                     "(default: 1.0).")
    ownership_weight: float | None = option(None, '--ownership-weight', help="Weight of the ownership loss (its sum "
                                                                             "over the points) of a model with "
                                                                             "ownership outputs (zero) on data with "
                                                                             "self-play targets (default: 1.5 / "
                                                                             "size²).")
    score_weight: float | None = option(None, '--score-weight', help="Weight of the score loss (Huber with delta 12, "
                                                                     "in points) of a model with a score output (zero)"
                                                                     " on data with self-play targets (default: "
                                                                     "0.0015, KataGo's).")
    objective: str | None = option(None, '--objective', help="supervised (imitate the moves played and the "
                                                             "results) | policy-gradient | actor-critic | q-learning "
                                                             "(learn from an agent's own games: data with the "
                                                             "experience columns, docs/rl.md; the default --lr is "
                                                             "then 1e-4, the book's) (default: supervised).")
    entropy_weight: float | None = option(None, '--entropy-weight', help="--objective actor-critic: weight of the "
                                                                         "policy's entropy bonus (default: 0.01).")
    baseline: str | None = option(None, '--baseline', help="--objective policy-gradient: none | mean (the batch's "
                                                           "mean return) | play-value (the acting network's value "
                                                           "at play time) (default: none, as the book).")
    ratio_clip: float | None = option(None, '--ratio-clip', help="--objective policy-gradient / actor-critic: clip "
                                                                 "the ratio of a move's probability now to its "
                                                                 "probability at play time to 1 ± this (PPO's "
                                                                 "clipped surrogate; 0: the book's plain gradient) "
                                                                 "(default: 0.2).")
    clip_grad_norm: float | None = option(None, '--clip-grad-norm', help="Cap the gradient's norm at this before "
                                                                         "each step (default: none; 1.0 with an "
                                                                         "--objective that learns from experience, "
                                                                         "the book's clipnorm).")
    globals_: bool | None = option(None, '--globals/--no-globals', help="The model takes the shards' global inputs "
                                                                        "(komi from the player to move's view, side to"
                                                                        " move; resnet and zero models). Default: on "
                                                                        "when every shard has the globals column and "
                                                                        "the model can take them.")
    metadata: bool | None = option(None, '--metadata', help="Condition the model on the shards' metadata column "
                                                            "(KataGo's human-SL inputs: ranks, clock, date, source; "
                                                            "resnet and zero models; the data encoded with gotk encode"
                                                            " --metadata). See docs/human.md.")
    metadata_channels: int | None = option(None, '--metadata-channels', help="Internal units of the metadata encoder "
                                                                             "(default: 64).")
    init_agent: str | None = option(None, '--init-agent', help="Start from this agent file's weights (its model, "
                                                               "head and hyper-parameters unless given; the same "
                                                               "encoder and board size).")
    patience: int | None = option(None, '--patience', help="Stop after this many epochs without a better validation "
                                                           "score.")
    log_every: int | None = option(None, '--log-every', help="Log training metrics every N steps (default: 50).")
    checkpoint_every: int | None = option(None, '--checkpoint-every', help="Checkpoint every N steps (default: 1000).")
    max_val_positions: int | None = option(None, '--max-val-positions', help="Cap on validation positions.")
    dist_timeout: float | None = option(None, '--dist-timeout', help="Under torchrun: seconds a collective waits for "
                                                                     "the other ranks before the run fails (default: "
                                                                     "300).")
    where: str | None = option(None, '--where', help="Train and validate only on games this expression over "
                                                     "games.parquet keeps, read-time, no re-encoding "
                                                     "(docs/metadata.md).")
    tensorboard: bool | None = option(None, '--tensorboard/--no-tensorboard', help="Write TensorBoard event files "
                                                                                   "beside metrics.jsonl (tensorboard "
                                                                                   "--logdir RUN) (default: when the "
                                                                                   "tensorboard package is installed: "
                                                                                   "pip install 'gotk[tensorboard]').")

    def given(self) -> tuple[dict, dict]:
        """The settings given, as :class:`~gotk.train.config.TrainConfig` fields, and the model's hyper-parameters
        given (``filters``, ``blocks``)."""
        values = {k: v for k, v in asdict(self).items() if v is not None}
        hp = {k: values.pop(k) for k in ("filters", "blocks") if k in values}
        if "globals_" in values:
            values["globals"] = values.pop("globals_")
        return values, hp


@with_options(settings=TrainOptions)
def train_cmd(
    settings: TrainOptions,
    data: str = typer.Option(..., "--data", help="Dataset folder made by `gotk encode` (manifest.json + splits): "
                             "a path or an fsspec URL (s3://bucket/prefix)."),
    out: Path = typer.Option(..., "--out", help="Run folder: config.json, metrics.jsonl, curves.png, "
                             "checkpoint.pt, agent.gotk."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in --out from its checkpoint "
                                "(settings from its config.json; options given here override)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="tqdm progress bar."),
    storage_option: list[str] = typer.Option(None, "--storage-option", help="fsspec option KEY=VALUE for a URL "
                                             "--data (e.g. endpoint_url=http://host:9000); repeatable. Stored in "
                                             "config.json: keep credentials in the environment."),
) -> None:
    """Train a policy and/or value network on encoded shards; writes an agent package (agent.gotk).

    Several processes: `torchrun --nproc_per_node N -m gotk train ...` (DDP; see docs/scaling.md)."""
    from gotk.distributed import launched_distributed
    from gotk.train.config import TrainConfig
    from gotk.train.trainer import train

    given, hp = settings.given()
    storage = parse_key_values(storage_option, "--storage-option") or None
    if settings.model == "rollout":
        _train_rollout({**given, **hp}, data, out, resume, progress, storage)
        return
    if storage is not None:
        given["storage_options"] = storage
    base: dict = {}
    cfg_file = out / "config.json"
    if resume and cfg_file.is_file():
        base = json.loads(cfg_file.read_text()).get("config", {})
    base.update(data=data, out=str(out), progress=progress, **given)
    if hp:
        base["hparams"] = {**base.get("hparams", {}), **hp}
    try:
        if base.get("init_agent") and not (resume and cfg_file.is_file()):  # the agent's network unless told
            from gotk.train.setup import agent_model_settings

            agent = agent_model_settings(base["init_agent"])
            for key in ("model", "head", "globals"):
                base.setdefault(key, agent[key])
            if base["model"] == agent["model"]:
                base["hparams"] = {**agent["hparams"], **base.get("hparams", {})}
        cfg = TrainConfig.from_dict(base)
        result = train(cfg, resume=resume)
    except (ValueError, FileNotFoundError, FileExistsError, StorageError) as e:
        _fail(str(e))
        return
    except OSError as e:  # a shard page whose CRC-32 fails (bit rot), an unreadable file, a full disk
        _fail(f"reading or writing the data failed: {e} (gotk inspect --verify {data} checks every shard)", 1)
        return
    except RuntimeError as e:  # under torchrun: a collective failed (a rank died, or --dist-timeout passed)
        if not launched_distributed():
            raise
        rank = os.environ.get("RANK", "?")
        typer.echo(f"error: rank {rank}: distributed training failed (another rank died or a collective timed "
                   f"out): {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", err=True)
        # leave at once: after a failed collective the process group's C++ threads can abort the
        # interpreter's normal teardown (SIGABRT, "terminate called without an active exception"),
        # which would turn this clear exit code 1 into a crash
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
    if not launched_distributed() or os.environ.get("RANK", "0") == "0":  # the summary is printed once
        val = result.get("val") or {}
        bits = [f"steps {result['step']}", f"epochs {result['epoch']}", f"{result['seconds']:.1f}s"]
        for key in ("top1", "top5", "value_mse"):
            if val.get(key) is not None:
                bits.append(f"val {key} {val[key]:.4f}")
        ended = {"epochs": f"ended after --epochs {result['epoch']}", "patience": "ended by --patience",
                 "max_steps": f"ended by --max-steps {settings.max_steps or result['step']}",
                 "max_minutes": "ended by the --max-minutes budget"}.get(result.get("ended_by") or "")
        if ended:
            bits.append(ended)
        typer.echo("; ".join(bits))
        typer.echo(f"agent: {out / 'agent.gotk'}")
        from gotk.nets.agent_file import read_agent_files, value_record_warning

        warning = value_record_warning(read_agent_files(out / "agent.gotk")[0])  # the rule gotk gtp warns by
        if warning:
            typer.echo(f"warning: {warning}")


ROLLOUT_OPTIONS = {"model": None, "epochs": "epochs", "max_minutes": "max_minutes", "lr": "lr",
                   "max_val_positions": "val_positions"}


def _train_rollout(given: dict, data: str, out: Path, resume: bool, progress: bool, storage: dict | None) -> None:
    """``gotk train --model rollout``: the fast rollout policy (:mod:`gotk.train.rollout`)."""
    from gotk.train.rollout import RolloutTraining, train_rollout

    other = sorted(k for k in given if k not in ROLLOUT_OPTIONS)
    if other:
        _fail(f"--{other[0].replace('_', '-').rstrip('-')} does not apply to --model rollout (it takes --epochs, "
              f"--max-minutes, --lr, --max-val-positions)")
    if resume:
        _fail("--model rollout trains in minutes and has no checkpoint: run it again without --resume")
    if given.get("epochs", 1) < 1 or given.get("lr", 0.1) <= 0 or given.get("max_minutes", 1) <= 0:
        _fail("--epochs must be >= 1, --lr and --max-minutes > 0")
    cfg = RolloutTraining(data=data, out=str(out), storage_options=storage,
                          **{ROLLOUT_OPTIONS[k]: v for k, v in given.items() if ROLLOUT_OPTIONS.get(k)})

    def show(epoch: int, seen: int, s: dict) -> None:
        if progress:
            typer.echo(f"\repoch {epoch + 1}: {seen} positions, train top-1 {s['top1']:.4f}, {s['seconds']:.0f}s",
                       nl=False, err=True)

    try:
        result = train_rollout(cfg, show)
    except (ValueError, FileNotFoundError, StorageError, GotkError) as e:
        _fail(str(e))
        return
    except OSError as e:
        _fail(f"reading or writing the data failed: {e} (gotk inspect --verify {data} checks every shard)", 1)
        return
    if progress:
        typer.echo("", err=True)
    val = result.get("val") or {}
    bits = [f"positions {result['positions_seen']}", f"{result['seconds']:.1f}s"]
    bits += [f"val {k} {val[k]:.4f}" for k in ("top1", "top5", "nll") if k in val]
    typer.echo("; ".join(bits))
    typer.echo(f"agent: {out / 'agent.gotk'}")


@dataclass(frozen=True)
class EvalCompute:
    """Where and how ``gotk eval`` runs the network (none of it changes the figures but ``--amp``'s rounding)."""

    batch_size: int = option(512, "--batch-size", help="Positions per forward pass.")
    device: str = option("auto", "--device", help="auto | cpu | cuda.")
    threads: int | None = option(None, "--threads", help="torch CPU threads (default: torch's default).")
    amp: bool = option(False, "--amp", help="bf16 autocast for the forward passes (faster, not bit-exact).")


@with_options(compute=EvalCompute)
def eval_cmd(
    compute: EvalCompute,
    agent: Path = typer.Option(..., "--agent", help="Agent package (agent.gotk) written by `gotk train`."),
    data: list[str] = typer.Option(..., "--data", help="A dataset folder (manifest.json; a path or an fsspec URL) "
                                   "or SGF files, folders or archives (encoded on the fly with the agent's encoder); "
                                   "repeatable."),
    split: str = typer.Option("test", help="Split of a dataset folder to evaluate."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    max_positions: int = typer.Option(None, "--max-positions", help="Evaluate at most this many positions."),
    storage_option: list[str] = typer.Option(None, "--storage-option", help="fsspec option KEY=VALUE for a URL "
                                             "--data; repeatable."),
    plot: Path = typer.Option(None, "--plot", help="Where to draw the value calibration plot (PNG) of an agent "
                              "with a value head [default: calibration.png beside the agent]."),
    no_plot: bool = typer.Option(False, "--no-plot", help="Do not draw the calibration plot."),
    by: str = typer.Option(None, "--by", help="rank: also report the metrics per rank band of the player to move."),
    as_rank: str = typer.Option(None, "--as-rank", help="A conditioned agent (trained with --metadata): evaluate "
                                "again with the player to move's rank in the metadata replaced by this rank (9d, "
                                "3k, ...), beside the true rank (docs/human.md)."),
) -> None:
    """Move-prediction accuracy (top-1/top-5/NLL), value error, by game phase, against baselines; for a value
    head also its calibration, winner accuracy by phase and a komi/handicap-only baseline."""
    from gotk.devices import resolve_device
    from gotk.nets.agent import agent_from_parts
    from gotk.nets.agent_file import read_agent_files
    from gotk.train.evaluate import evaluate, format_report, is_shard_dir
    from gotk.train.rollout import evaluate_rollout, is_rollout_meta, rollout_policy_from_parts

    if compute.threads:
        import torch

        torch.set_num_threads(compute.threads)

    try:
        meta, tensors = read_agent_files(agent)  # read and checked once: a network, or a rollout policy
        if is_rollout_meta(meta):
            if len(data) != 1 or not is_shard_dir(data[0], parse_key_values(storage_option, "--storage-option")):
                raise ValueError("a rollout policy is evaluated on one dataset folder (gotk encode makes one)")
            report = evaluate_rollout(rollout_policy_from_parts(meta, tensors, agent), data[0], split, max_positions,
                                      parse_key_values(storage_option, "--storage-option"))
            typer.echo(json.dumps(report, indent=2) if as_json else _rollout_report(report))
            return
        ag = agent_from_parts(meta, tensors, resolve_device(compute.device), agent)
        ag.amp = compute.amp
        opts = parse_key_values(storage_option, "--storage-option")
        if len(data) > 1 and any(is_shard_dir(p, opts) for p in data):
            raise ValueError("give one dataset folder, or SGF files/folders/archives, not both")
        report = evaluate(ag, data if len(data) > 1 else data[0], split=split, max_positions=max_positions,
                          batch_size=compute.batch_size, progress=not as_json, storage_options=opts, by=by,
                          as_rank=as_rank)
    except (GotkError, ValueError, FileNotFoundError, StorageError) as e:
        _fail(str(e))
        return
    except OSError as e:  # a shard page whose CRC-32 fails (bit rot), an unreadable file
        _fail(f"reading the data failed: {e} (gotk inspect --verify checks every shard)", 1)
        return
    if report["positions"] == 0:
        _fail("no positions to evaluate (empty split or no readable games)")
    if report.get("calibration") and not no_plot:
        from gotk.train.curves import plot_calibration

        target = plot or agent.with_name("calibration.png")
        try:
            report["calibration_plot"] = str(plot_calibration(report, target))
        except OSError as e:
            _fail(f"--plot {target}: {e}")
    typer.echo(json.dumps(_json_safe(report), indent=2, allow_nan=False) if as_json else format_report(report))
    if report.get("calibration_plot") and not as_json:
        typer.echo(f"calibration plot: {report['calibration_plot']}")


def _rollout_report(r: dict) -> str:
    return (f"rollout policy {r['agent']}: {r['positions']} positions\n"
            f"  top-1 {r['top1']:.4f}  top-5 {r['top5']:.4f}  nll {r['nll']:.4f}  "
            f"({r['not_candidates']} moves it cannot play; {r['us_per_position']} us a position, every legal move "
            f"scored)")


def _json_safe(obj):
    """``obj`` with every NaN or infinite float as null: ``--json`` output is always valid JSON."""
    if isinstance(obj, float):
        return obj if obj == obj and obj not in (float("inf"), float("-inf")) else None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj
