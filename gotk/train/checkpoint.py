"""The training checkpoint (``checkpoint.pt``): model, optimizer, scaler, RNG states, loader position and
counters, written atomically, so that ``--resume`` continues exactly where the run stopped; and an *optimizer
state file* (the optimizer's ``state_dict`` alone, :func:`save_optimizer_state`), which a new run may start its
optimizer from (``TrainConfig.init_optimizer``: ``gotk zero`` carries Adam's moments and step count from one
generation's training to the next, as KataGo's one continuous optimizer does)."""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import torch

from gotk.atomic import atomic_path

CHECKPOINT = "checkpoint.pt"
FORMAT = "gotk-train-checkpoint"
VERSION = 1
OPTIMIZER_FORMAT = "gotk-optimizer-state"


def rng_state() -> dict:
    """Every RNG the run uses (torch, numpy, python, CUDA), as tensors and plain values ``torch.load`` accepts
    with ``weights_only=True``."""
    np_state = np.random.get_state()
    st = {
        "torch": torch.get_rng_state(),
        "numpy": {"key": torch.from_numpy(np_state[1].astype(np.int64)), "pos": int(np_state[2]),
                  "has_gauss": int(np_state[3]), "cached": float(np_state[4])},
        "python": random.getstate(),
    }
    if torch.cuda.is_available():
        st["cuda"] = torch.cuda.get_rng_state_all()
    return st


def set_rng_state(st: dict) -> None:
    """Restore what :func:`rng_state` captured."""
    torch.set_rng_state(st["torch"])
    n = st["numpy"]
    np.random.set_state(("MT19937", n["key"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached"]))
    py = st["python"]
    random.setstate((py[0], tuple(py[1]), py[2]))
    if "cuda" in st and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(st["cuda"])


def save_checkpoint(path: str | os.PathLike, state: dict) -> None:
    """Write ``state`` (format and version added) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        torch.save({"format": FORMAT, "version": VERSION, **state}, tmp)


def load_checkpoint(path: str | os.PathLike) -> dict:
    """A checkpoint written by :func:`save_checkpoint` (tensors and plain data only: no code is unpickled);
    ValueError when the file is not one, or of another version."""
    st = torch.load(Path(path), map_location="cpu", weights_only=True)
    if not isinstance(st, dict) or st.get("format") != FORMAT:
        raise ValueError(f"{path} is not a gotk training checkpoint")
    if st.get("version") != VERSION:
        raise ValueError(f"{path} is a checkpoint of version {st.get('version')}; this gotk reads version {VERSION}")
    return st


def save_optimizer_state(path: str | os.PathLike, optimizer: str, state: dict) -> None:
    """Write an optimizer's ``state_dict()`` (``optimizer``: its name, e.g. ``"adam"``) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        torch.save({"format": OPTIMIZER_FORMAT, "version": VERSION, "optimizer": optimizer, "state": state}, tmp)


def load_optimizer_state(path: str | os.PathLike, optimizer: str) -> dict:
    """The ``state_dict`` that :func:`save_optimizer_state` wrote, for an optimizer named ``optimizer``; ValueError
    when the file is missing, not one, or of another optimizer."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{path}: no such optimizer state file")
    st = torch.load(p, map_location="cpu", weights_only=True)
    if not isinstance(st, dict) or st.get("format") != OPTIMIZER_FORMAT:
        raise ValueError(f"{path} is not a gotk optimizer state file")
    if st.get("optimizer") != optimizer:
        raise ValueError(f"{path} holds the state of optimizer {st.get('optimizer')!r}, this run's is {optimizer!r}")
    return st["state"]
