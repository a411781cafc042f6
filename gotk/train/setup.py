"""What a training run starts from: its data checked, its datasets, the value baseline, the weights and optimizer
state it may start from (``--init-agent``, ``init_optimizer``) and the ``config.json`` that records it all. The
trainer (:mod:`gotk.train.trainer`) calls these once, before its first step."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch

from gotk import __version__
from gotk.atomic import write_text_atomic
from gotk.datasets import Sampling, ShardDataset
from gotk.shards.manifest import read_games
from gotk.storage import is_url
from gotk.train.config import TrainConfig


def check_data(cfg: TrainConfig, manifest: dict, main: bool) -> None:
    """Refuse what would train a useless model, say what is missing (ValueError); ``main``: this process warns."""
    check_objective(cfg, manifest.get("experience") is not None)
    splits = manifest.get("splits") or {}
    if cfg.train_split not in splits:
        raise ValueError(f"{cfg.data} has no {cfg.train_split!r} split (it has {', '.join(splits) or 'none'})")
    if cfg.val_split not in splits or cfg.val_split == cfg.train_split:
        if cfg.patience is not None:
            raise ValueError(f"--patience needs a {cfg.val_split!r} split to validate on; {cfg.data} has "
                             f"{', '.join(splits)} (encode with e.g. --split train=0.95,val=0.05)")
        if main and cfg.val_split:  # an empty --val-split asks for no validation: no warning
            print(f"warning: {cfg.data} has no {cfg.val_split!r} split: no validation, the agent is the model "
                  "after the last step (encode with e.g. --split train=0.95,val=0.05)", file=sys.stderr)
    if cfg.head in ("value", "both"):
        import pyarrow.compute as pc

        games = read_games(cfg.data, cfg.storage_options, ["winner", "split"])
        train = games.filter(pc.equal(games.column("split"), cfg.train_split))
        if pc.sum(pc.is_valid(train.column("winner"))).as_py() in (0, None):
            raise ValueError(f"the value head needs game results, but none of the {train.num_rows:,} games of "
                             f"the {cfg.train_split!r} split has one (no RE, or void/unknown results); "
                             "train with --head policy")


def check_objective(cfg: TrainConfig, has_experience: bool) -> None:
    """ValueError unless ``cfg.objective`` can learn with the heads of ``cfg.head`` from data that has (or not) the
    experience columns, which the objectives that learn from experience need (:mod:`gotk.train.objectives`)."""
    from gotk.train.objectives import objective

    obj = objective(cfg.objective)
    heads, experience = obj.heads, obj.experience
    have = {"policy": cfg.head in ("policy", "both"), "value": cfg.head in ("value", "both")}
    missing = [h for h in heads if not have[h]]
    if missing:
        need = "--head both" if len(heads) == 2 else "--head policy or both"
        raise ValueError(f"--objective {cfg.objective} needs a {' and a '.join(missing)} head: train with {need}")
    if experience and not has_experience:
        raise ValueError(f"--objective {cfg.objective} learns from experience: {cfg.data} has no experience columns "
                         "(return, play_value, play_prob, opponent, ...; docs/shards.md): record an agent's games with "
                         "gotk selfplay --experience or gotk rl")


def head_parameters(model: torch.nn.Module, heads: tuple[str, ...]) -> set[str]:
    """The names of ``model``'s parameters that the outputs ``heads`` (``policy``, ``value``) depend on: those on
    the autograd graph of one forward pass (eval mode, a zero input) from the input to those outputs, whatever the
    model's layout. The others serve only heads an objective does not train."""
    x = torch.zeros(1, model.num_planes, model.board_size, model.board_size)
    glob = torch.zeros(1, model.num_globals) if model.num_globals else None
    meta = torch.zeros(1, model.num_metadata) if model.num_metadata else None
    named = [(n, w) for n, w in model.named_parameters() if w.requires_grad]
    was = model.training
    model.eval()
    try:
        with torch.enable_grad():
            p, v = model(x, glob=glob, meta=meta)
            outs = (("policy", p), ("value", v))
            roots = [out.float().sum() for name, out in outs if name in heads and out is not None]
            if not roots:
                return set()
            grads = torch.autograd.grad(sum(roots), [w for _, w in named], allow_unused=True)
    finally:
        model.train(was)
    return {n for (n, _), g in zip(named, grads, strict=True) if g is not None}


def freeze_untrained(model: torch.nn.Module, name: str) -> list[str]:
    """Stop the parameters that only heads the objective ``name`` does not train serve
    (:attr:`gotk.train.objectives.Objective.trains`) from changing: ``requires_grad`` off, so the optimizer (made
    over the parameters that require one) neither steps nor decays them. Returns their names."""
    from gotk.train.objectives import objective

    heads = objective(name).trains
    if heads is None:
        return []
    keep = head_parameters(model, heads)
    frozen = [n for n, w in model.named_parameters() if n not in keep]
    for n, w in model.named_parameters():
        if n not in keep:
            w.requires_grad_(False)
    return frozen


def load_anchor(path: str, model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """The network of the agent file ``path`` that a learner's KL term holds it near (eval mode, no gradient) on
    ``device``; ValueError unless it is a policy over the same input planes and board as ``model``."""
    from gotk.nets.agent import load_agent

    a = load_agent(path, device=device)
    m = a.model
    if (m.num_planes, m.board_size, m.num_moves) != (model.num_planes, model.board_size, model.num_moves) \
            or not a.has_policy:
        raise ValueError(f"--anchor {path}: not a policy of the same input planes and board")
    return m.eval().requires_grad_(False)


def freeze_batch_norm(model: torch.nn.Module) -> None:
    """Every batch-norm layer of ``model`` in eval mode: it normalises by the statistics the network was trained
    with and leaves them as they are (learning from experience: the network's own positions must not re-estimate
    the statistics its start learnt from human games, and the learner's forward must be the actors' forward)."""
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.eval()


def agent_model_settings(path: str) -> dict:
    """The ``model``, ``head``, ``hparams`` and ``globals`` (whether it takes the global inputs) of agent file
    ``path`` (ValueError when it cannot be read): what a run that starts from it builds unless told otherwise."""
    from gotk.nets.agent_file import AgentError, read_agent_files

    try:
        meta, _ = read_agent_files(path)
    except AgentError as e:
        raise ValueError(f"--init-agent: {e}") from e
    m = meta["model"]
    return {"model": m["name"], "head": m["head"], "hparams": dict(m["hparams"]), "globals": bool(meta.get("globals"))}


def make_datasets(cfg: TrainConfig, manifest: dict, rank: int, world: int) -> tuple[ShardDataset, ShardDataset | None]:
    """``(train, val)``: the training split, shuffled and drawn from as configured, and the validation split in
    order (None when the data has none, or it is the training split). Under DDP each rank reads its share."""
    dist_kw = {"rank": rank, "world_size": world} if world > 1 else {}
    sampling = Sampling(batch_size=cfg.batch_size, shuffle=True, seed=cfg.seed, symmetries=cfg.symmetries,
                        shuffle_buffer=cfg.shuffle_buffer, drop_last=False)
    train_ds = ShardDataset(cfg.data, cfg.train_split, sampling, max_positions_per_game=cfg.positions_per_game,
                            num_workers=max(1, cfg.workers), storage_options=cfg.storage_options, where=cfg.where,
                            **dist_kw)
    splits = manifest.get("splits") or {}
    val_ds = None
    if cfg.val_split and cfg.val_split in splits and cfg.val_split != cfg.train_split:
        val_ds = ShardDataset(cfg.data,
                              sampling=Sampling(batch_size=max(cfg.batch_size, 256), shuffle=False, symmetries="none"),
                              split=cfg.val_split, storage_options=cfg.storage_options, where=cfg.where, **dist_kw)
    return train_ds, val_ds


def train_globals(cfg: TrainConfig, train_index, val_index=None) -> int:
    """How many global inputs the run's model takes: ``cfg.globals`` True needs the globals column in the training
    (and validation) shards and a model that takes them (ValueError saying which is missing); None takes them when
    both are there; False never."""
    from gotk.nets.networks import MODELS

    if cfg.globals is False:
        return 0
    have = [ix.globals for ix in (train_index, val_index) if ix is not None]
    usable = all(g is not None for g in have) and all(g == have[0] for g in have)
    takes = MODELS[cfg.model].takes_globals
    if cfg.globals and not usable:
        raise ValueError("--globals: the data has no globals column in every shard (gotk encode writes it unless "
                         "--no-globals; self-play always does)")
    if cfg.globals and not takes:
        models = ", ".join(n for n, m in MODELS.items() if m.takes_globals)
        raise ValueError(f"--globals: model {cfg.model!r} takes no global inputs (models that do: {models})")
    return len(have[0]["names"]) if usable and takes else 0


def train_metadata(cfg: TrainConfig, train_index, val_index=None) -> int:
    """How many metadata inputs the run's model takes: 0 without ``cfg.metadata``; with it, the width of the
    ``metadata`` column every training (and validation) shard must have, for a model that takes them (ValueError
    saying which is missing)."""
    from gotk.nets.networks import MODELS

    if not cfg.metadata:
        return 0
    have = [ix.metadata for ix in (train_index, val_index) if ix is not None]
    if not all(m is not None and m == have[0] for m in have):
        raise ValueError("--metadata: the data has no metadata column in every shard (encode it with gotk encode "
                         "--metadata)")
    if not MODELS[cfg.model].takes_globals:
        models = ", ".join(n for n, m in MODELS.items() if m.takes_globals)
        raise ValueError(f"--metadata: model {cfg.model!r} takes no metadata inputs (models that do: {models})")
    return int(have[0]["width"])


def metadata_coverage(cfg: TrainConfig) -> dict:
    """What a conditioned run learns from, for agent.json ``trained_on``: the training games' positions by the
    rank of the player to move (KataGo's inverse rank as text, ``"1"`` for 9d and professionals; ``"0"``
    unranked or unknown) and by source (the games table's ``source``, ``"other"`` when empty). Each game's
    positions are shared half to each player. Used to answer a human-SL profile the network never saw with the
    nearest one it did (:func:`gotk.encoders.metadata_inputs.nearest_profile`)."""
    from collections import Counter

    import pyarrow.compute as pc

    from gotk.encoders.metadata_inputs import inverse_rank
    from gotk.shards.manifest import read_games

    games = read_games(cfg.data, cfg.storage_options, ["black_rank", "white_rank", "source", "positions", "split"])
    games = games.filter(pc.equal(games.column("split"), cfg.train_split))
    ranks: Counter = Counter()
    sources: Counter = Counter()
    cols = [games.column(c).to_pylist() for c in ("black_rank", "white_rank", "source", "positions")]
    for black, white, source, positions in zip(*cols, strict=True):
        n = int(positions or 0)
        ranks[str(inverse_rank(black))] += n / 2
        ranks[str(inverse_rank(white))] += n / 2
        sources[(source or "other").lower()] += n
    return {"positions": int(sum(sources.values())),
            "mover_inverse_rank": {k: int(round(v)) for k, v in sorted(ranks.items(), key=lambda kv: int(kv[0]))},
            "sources": dict(sorted(sources.items()))}


def fit_value_baseline(cfg: TrainConfig):
    """The komi/handicap value baseline fit on the training games (those ``--where`` keeps), indexing every
    game: validation reports it beside the value head's MSE, and the agent file records it."""
    from gotk.train.evaluate import baseline_games, fit_baseline

    games = baseline_games(cfg.data, cfg.storage_options, cfg.where)
    baseline = fit_baseline(games, [cfg.train_split])
    if baseline is not None:
        baseline.index_games(games)
    return baseline


def load_init_agent(model: torch.nn.Module, path: str, cfg: TrainConfig, encoder: dict) -> None:
    """Load the weights of agent file ``path`` into the freshly built ``model``: the agent must be of the same
    model, head, hyper-parameters, planes, board size and encoder (ValueError saying which differs). A model
    conditioned on metadata (``--metadata``) may start from the same agent trained without it: its metadata
    encoder keeps its fresh weights, whose output layer is zero, so it predicts exactly as the agent did and learns
    from there what the metadata changes."""
    from gotk.nets.agent_file import AgentError, read_agent_files

    try:
        meta, tensors = read_agent_files(path)
    except AgentError as e:
        raise ValueError(f"--init-agent: {e}") from e
    m = meta["model"]
    mine = {"model": cfg.model, "head": cfg.head, "hparams": cfg.hparams,
            "num_planes": model.num_planes, "board_size": model.board_size, "global inputs": model.num_globals,
            "metadata": (model.num_metadata, model.metadata_channels) if model.num_metadata else None,
            "encoder": {k: encoder.get(k) for k in ("name", "version", "options")}}
    theirs = {"model": m["name"], "head": m["head"], "hparams": m["hparams"], "num_planes": meta["num_planes"],
              "board_size": meta["board_size"], "global inputs": len((meta.get("globals") or {}).get("names", [])),
              "metadata": (meta["metadata"]["size"], meta["metadata"]["channels"]) if meta.get("metadata") else None,
              "encoder": {k: meta["encoder"].get(k) for k in ("name", "version", "options")}}
    fresh_metadata = mine["metadata"] is not None and theirs["metadata"] is None
    for key in mine:
        if mine[key] != theirs[key] and not (key == "metadata" and fresh_metadata):
            raise ValueError(f"--init-agent {path}: its {key} is {theirs[key]!r}, this run's {mine[key]!r}")
    if fresh_metadata:
        tensors = {**{k: v for k, v in model.state_dict().items() if k.startswith("meta_in.")}, **tensors}
    try:
        model.load_state_dict(tensors, strict=True)
    except RuntimeError as e:
        raise ValueError(f"--init-agent {path}: its weights do not fit the model: {e}") from e


def load_init_optimizer(optimizer: torch.optim.Optimizer, path: str, cfg: TrainConfig) -> None:
    """Load the optimizer state file ``path`` into the freshly made ``optimizer`` (ValueError when it is of
    another optimizer or does not fit the model's parameters). The learning rate is set at every step anyway."""
    from gotk.train.checkpoint import load_optimizer_state

    state = load_optimizer_state(path, cfg.optimizer)
    try:
        optimizer.load_state_dict(state)
    except (ValueError, KeyError) as e:
        raise ValueError(f"--init-optimizer {path}: it does not fit this model's parameters: {e}") from e


def write_run_config(out: Path, cfg: TrainConfig, data: dict, model: dict, run: dict) -> None:
    """``config.json``: the versions, the settings, the data (``data``: its manifest's digest, encoder, rows), the
    model (``model``) and how the run ran (``run``: device, precision, world size...), enough to reproduce it."""
    d = {
        "gotk_version": __version__,
        "torch_version": torch.__version__,
        "python": sys.version.split()[0],
        "config": cfg.to_dict(),
        "data": {"path": cfg.data if is_url(cfg.data) else str(Path(cfg.data).resolve()), **data},
        "model": model,
        **run,
        "command": sys.argv if sys.argv and "gotk" in os.path.basename(sys.argv[0]) else None,
    }
    write_text_atomic(out / "config.json", json.dumps(d, indent=2))
