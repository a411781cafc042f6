"""Reading gotk shards: decoding features, streaming loaders."""

from gotk.datasets.decode import decode_features, encoder_description

__all__ = ["decode_features", "encoder_description"]

# streaming loader (gotk.datasets.loader); ShardDataset is resolved lazily so importing gotk.datasets
# does not import torch
from gotk.datasets.loader import SplitIndex, game_index, iter_numpy_batches  # noqa: E402

__all__ += ["ShardDataset", "SplitIndex", "game_index", "iter_numpy_batches"]  # noqa: F822


def __getattr__(name: str):
    if name == "ShardDataset":
        from gotk.datasets import loader

        return loader.ShardDataset
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
