"""Which process am I: rank and world size under ``torch.distributed`` (torchrun), in one place.

Used by the loader (each rank reads its share of the row groups) and the trainer (rank 0 writes files).
"""

from __future__ import annotations

import datetime
import os
import sys
import time

DEFAULT_DIST_TIMEOUT = 300.0


def dist_info() -> tuple[int, int]:
    """``(rank, world_size)``; ``(0, 1)`` outside an initialised ``torch.distributed`` process group."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def is_main_process() -> bool:
    """True on the process that writes files (rank 0, or the only process)."""
    return dist_info()[0] == 0


def launched_distributed() -> bool:
    """True when started by torchrun (or another launcher setting ``WORLD_SIZE``) with more than one process."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def init_distributed(device: str = "auto", timeout: float = DEFAULT_DIST_TIMEOUT) -> bool:
    """Join the process group described by torchrun's environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
    ``MASTER_ADDR``, ``MASTER_PORT``): NCCL when the run uses CUDA (each process on ``cuda:LOCAL_RANK``),
    else gloo. A collective that waits longer than ``timeout`` seconds (a dead or stuck rank) raises instead
    of hanging. Returns True when it created the group (the caller then destroys it)."""
    import torch

    dist = torch.distributed
    if not launched_distributed() or (dist.is_available() and dist.is_initialized()):
        return False
    if not dist.is_available():
        raise RuntimeError("WORLD_SIZE > 1 but this torch build has no torch.distributed")
    cuda = device.startswith("cuda") or (device == "auto" and torch.cuda.is_available())
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if cuda else "gloo", timeout=datetime.timedelta(seconds=timeout))
    return True


# failure drills: "RANK:STEP" makes that rank os._exit(13) after step STEP; "RANK:STEP:hang" makes it stop
# responding instead (sleeps), so that the others hit --dist-timeout
KILL_ENV = "GOTK_DEBUG_KILL_RANK_AT_STEP"


def debug_kill_step() -> tuple[int, bool] | None:
    """``(step, hang)`` when ``GOTK_DEBUG_KILL_RANK_AT_STEP=RANK:STEP[:hang]`` names this rank, else None."""
    spec = os.environ.get(KILL_ENV)
    if not spec:
        return None
    rank, step, *mode = spec.split(":")
    return (int(step), mode == ["hang"]) if int(rank) == dist_info()[0] else None


def debug_kill(rank: int, step: int, hang: bool) -> None:
    print(f"gotk: {KILL_ENV}: rank {rank} {'hangs' if hang else 'exits'} after step {step}", file=sys.stderr,
          flush=True)
    if hang:
        time.sleep(24 * 3600)
    os._exit(13)
