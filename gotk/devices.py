"""Which torch device a run uses: one rule for the trainer, self-play, evaluation and the agents' commands.

A top-level module so that every stage that runs a network reaches it without importing another stage.
"""

from __future__ import annotations

import os

import torch

from gotk.distributed import launched_distributed


def resolve_device(name: str) -> torch.device:
    """``auto``/``cpu``/``cuda``/``cuda:N``; under torchrun, ``auto`` and ``cuda`` mean ``cuda:LOCAL_RANK``. The GPUs
    are counted through NVML where it answers, which does not initialise CUDA: processes forked afterwards (the
    self-play workers) can still use it."""
    if name == "cpu":
        return torch.device("cpu")
    if name not in ("auto", "cuda") and not name.startswith("cuda:"):
        raise ValueError(f"--device must be auto, cpu, cuda or cuda:N, not {name!r}")
    count = torch.cuda.device_count()
    if name == "auto":
        name = "cuda" if count > 0 else "cpu"
    if name.startswith("cuda") and count == 0:
        raise ValueError("--device cuda asked for, but torch sees no CUDA device")
    if name.startswith("cuda:") and (not name[5:].isdigit() or int(name[5:]) >= count):
        raise ValueError(f"--device {name}: torch sees {count} CUDA device(s), numbered from 0")
    if name == "cuda" and launched_distributed():
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return torch.device(name)
