"""Reading gotk shards for training: the split index, sampling, and the streaming torch dataset; batches of the same
shape encoded from SGF on the fly (:mod:`gotk.datasets.sgf_batches`).

``ShardDataset`` (:mod:`gotk.datasets.torchdata`) is resolved lazily so importing gotk.datasets does not
import torch.
"""

from gotk.datasets.index import SplitIndex, game_index
from gotk.datasets.sampling import Sampling, iter_numpy_batches, worker_batch_offsets

__all__ = ["Sampling", "ShardDataset", "SplitIndex", "game_index", "iter_numpy_batches", "worker_batch_offsets"]  # noqa: F822


def __getattr__(name: str):
    if name == "ShardDataset":
        from gotk.datasets.torchdata import ShardDataset

        return ShardDataset
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
