"""The torch side of the loader: :class:`ShardDataset`, a streaming ``IterableDataset`` over a split.

Order, sharding and batching are :mod:`gotk.datasets.sampling`'s (read its docstring); this module adds
DataLoader workers (each batch crosses from a worker as one shared-memory tensor), epochs and resume.
Importing it imports torch; ``gotk.datasets.ShardDataset`` resolves it lazily.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info

from gotk.datasets.index import SplitIndex
from gotk.datasets.sampling import (
    Sampling,
    _iter_slot,
    _row_filter,
    _slot_batch_count,
    _slot_rows,
    batch_layout,
    worker_batch_offsets,
)
from gotk.distributed import dist_info

__all__ = ["ShardDataset"]


class ShardDataset(IterableDataset):
    """Streaming ``IterableDataset`` over a split of a ``gotk encode`` folder (see the module docstring).

    Use ``DataLoader(ds, batch_size=None, num_workers=k)``: the dataset batches itself. Attributes:
    ``encoder`` (description dict), ``num_rows`` (rows in the split), ``num_planes``, ``board_size``.
    ``rank``/``world_size`` default to ``torch.distributed``'s when it is initialised, else 0/1.

    ``len(ds)`` is the number of batches this rank yields in the current epoch with
    ``num_workers`` DataLoader workers (each worker ends with its own partial batch). It is exact when
    ``num_workers`` here matches the DataLoader's; the default (None) counts as one worker, which
    undercounts by at most ``k - 1`` batches with ``k`` workers (``drop_last=True``: overcounts).

    Resume mid-epoch: ``state = ds.state_dict(batches_done)`` (``batches_done`` = batches of this epoch
    consumed from the DataLoader; without it, the count of batches this object yielded itself, right
    when iterated in-process, e.g. ``num_workers=0``); later ``ds.load_state_dict(state)``: the next
    iteration yields exactly the remaining batches (same seed, batch size, world size and DataLoader
    worker count required). It still reads the skipped row groups, without decoding them.
    ``set_epoch(e)`` with another epoch ends the resume.
    """

    def __init__(self, path: str | os.PathLike, split: str = "train", sampling: Sampling | None = None, *,
                 rank: int | None = None, world_size: int | None = None, max_positions_per_game: int | None = None,
                 epoch: int = 0, num_workers: int | None = None, storage_options: dict | None = None,
                 where: str | None = None) -> None:
        super().__init__()
        cfg = (sampling or Sampling()).check()
        if rank is None or world_size is None:
            r, w = dist_info()
            rank = r if rank is None else rank
            world_size = w if world_size is None else world_size
        if not 0 <= rank < world_size:
            raise ValueError(f"need 0 <= rank < world_size, got rank={rank}, world_size={world_size}")
        self.path = str(path)
        self.split = split
        self.index = SplitIndex(path, split, storage_options)
        self.cfg = cfg
        self.rank = rank
        self.world_size = world_size
        self.max_positions_per_game = max_positions_per_game
        self.where = where  # a gotk.shards.where expression over games.parquet (rows of other games skipped)
        self.cap = _row_filter(self.index, max_positions_per_game, where, storage_options)
        self.num_workers = num_workers
        self.epoch = epoch
        self._resume: tuple[int, int] | None = None  # (epoch, batches_done)
        self._batches_done = 0

    # --- description ---
    @property
    def encoder(self) -> dict:
        return self.index.encoder

    @property
    def num_rows(self) -> int:
        return self.index.num_rows

    @property
    def num_planes(self) -> int:
        return self.index.num_planes

    @property
    def board_size(self) -> int:
        return self.index.board_size

    @property
    def batch_size(self) -> int:
        return self.cfg.batch_size

    # --- epochs, lengths ---
    def set_epoch(self, epoch: int) -> None:
        """Select the epoch (its order and symmetries); call before each epoch, as with DistributedSampler."""
        if self._resume is not None and self._resume[0] != epoch:
            self._resume = None
        self.epoch = epoch

    def worker_batch_counts(self, num_workers: int | None = None, rank: int | None = None) -> list[int]:
        """Batches each DataLoader worker of ``rank`` (default this one) yields in the current epoch."""
        k = max(1, num_workers if num_workers is not None else (self.num_workers or 1))
        r = self.rank if rank is None else rank
        return [_slot_batch_count(_slot_rows(self.index, self.cap, self.cfg, self.epoch, r, self.world_size,
                                             w, k), self.cfg.batch_size, self.cfg.drop_last) for w in range(k)]

    def rank_batch_counts(self, num_workers: int | None = None) -> list[int]:
        """Batches of every rank in the current epoch (they can differ: see the module docstring)."""
        return [sum(self.worker_batch_counts(num_workers, r)) for r in range(self.world_size)]

    def __len__(self) -> int:
        return sum(self.worker_batch_counts())

    # --- resume ---
    def state_dict(self, batches_done: int | None = None) -> dict[str, Any]:
        """Where this rank is in the current epoch (see the class docstring)."""
        return {
            "epoch": self.epoch,
            "batches_done": self._batches_done if batches_done is None else int(batches_done),
            "seed": self.cfg.seed,
            "batch_size": self.cfg.batch_size,
            "shuffle": self.cfg.shuffle,
            "shuffle_buffer": self.cfg.shuffle_buffer,
            "drop_last": self.cfg.drop_last,
            "symmetries": self.cfg.symmetries,
            "rank": self.rank,
            "world_size": self.world_size,
            "max_positions_per_game": self.max_positions_per_game,
            "num_rows": self.num_rows,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume at ``state`` (from :meth:`state_dict`): the next iteration yields the remaining batches."""
        mine = self.state_dict()
        for key in ("seed", "batch_size", "shuffle", "shuffle_buffer", "drop_last", "symmetries",
                    "world_size", "max_positions_per_game", "num_rows"):
            if key in state and state[key] != mine[key]:
                raise ValueError(f"cannot resume: state has {key}={state[key]!r}, this dataset {mine[key]!r}")
        self.epoch = int(state["epoch"])
        self._batches_done = int(state["batches_done"])
        self._resume = (self.epoch, self._batches_done)

    # --- iteration ---
    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        info = get_worker_info()
        worker, k = (0, 1) if info is None else (info.id, info.num_workers)
        skip = 0
        if self._resume is not None and self._resume[0] == self.epoch and self._resume[1] > 0:
            if k == 1:
                skip = self._resume[1]
            else:
                # DataLoader restarts its round-robin at worker 0: worker w plays the slot that was
                # due w turns after the resume point, so the batch order is the original one.
                delivered, due = worker_batch_offsets(self._resume[1], self.worker_batch_counts(k))
                worker = (worker + due) % k
                skip = delivered[worker]
        if info is None:
            self._batches_done = skip
        if info is None:
            for batch in _iter_slot(self.index, self.cap, self.cfg, self.epoch, self.rank, self.world_size,
                                    worker, k, skip):
                self._batches_done += 1
                yield {key: torch.from_numpy(v) for key, v in batch.items()}
            return
        # in a DataLoader worker: each batch lives in one shared-memory buffer, sent as one tensor
        current: list[_SharedBatch] = []

        def new_batch(index: SplitIndex, rows: int) -> dict[str, np.ndarray]:
            layout = batch_layout(index, rows)
            buf = _shared_bytes(layout[-1][2][0])
            current[:] = [_SharedBatch(buf, layout)]
            raw = buf.numpy()
            return {key: raw[off:off + int(np.prod(shape)) * dt.itemsize].view(dt).reshape(shape)
                    for key, dt, shape, off in layout[:-1]}

        for _batch in _iter_slot(self.index, self.cap, self.cfg, self.epoch, self.rank, self.world_size,
                                 worker, k, skip, new_batch):
            yield current[0]


def _shared_bytes(n: int) -> torch.Tensor:
    """A uint8 tensor of ``n`` bytes in shared memory (allocated there: ``share_memory_`` would copy)."""
    new_shared = getattr(torch.UntypedStorage, "_new_shared", None)
    if new_shared is None:  # pragma: no cover - older/newer torch without the private allocator
        return torch.empty(n, dtype=torch.uint8).share_memory_()
    return torch.empty(0, dtype=torch.uint8).set_(new_shared(n))

class _SharedBatch:
    """A batch made in a DataLoader worker: one shared-memory tensor that unpickles, in the main
    process, as the usual dict of tensors (one file descriptor per batch instead of one per array)."""

    __slots__ = ("buf", "layout")

    def __init__(self, buf: torch.Tensor, layout: list) -> None:
        self.buf = buf
        self.layout = layout

    def __reduce__(self):
        return _unpack_shared_batch, (self.buf, [(k, str(d), s, o) for k, d, s, o in self.layout[:-1]])


_TORCH_DTYPES = {"uint8": "uint8", "int8": "int8", "int32": "int32", "int64": "int64", "float32": "float32"}


def _unpack_shared_batch(buf, layout: list) -> dict:
    """Main-process side of ``_SharedBatch``: the dict of tensors, views of the one shared buffer."""
    import torch

    out = {}
    for key, dtype, shape, offset in layout:
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        out[key] = buf[offset:offset + n].view(getattr(torch, _TORCH_DTYPES[dtype])).view(shape)
    return out
