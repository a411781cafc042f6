"""Reading gotk shards for training: the split index, sampling, and the streaming torch dataset.

``ShardDataset`` is resolved lazily so importing gotk.datasets does not import torch.
"""

from gotk.datasets.loader import SplitIndex, game_index, iter_numpy_batches

__all__ = ["ShardDataset", "SplitIndex", "game_index", "iter_numpy_batches"]  # noqa: F822


def __getattr__(name: str):
    if name == "ShardDataset":
        from gotk.datasets import loader

        return loader.ShardDataset
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
