"""Batch norm folded into the convolution before it, for eval-mode inference.

In eval mode a batch norm is an affine map per channel, so ``bn(conv(x))`` is one convolution with scaled weights and
a bias (:func:`torch.nn.utils.fusion.fuse_conv_bn_eval`). :func:`fold_batch_norms` does that for every ``Conv2d``
whose output goes straight into a ``BatchNorm2d``: consecutive pairs in an ``nn.Sequential`` and the pairs a module
names in ``conv_bn_pairs()`` (the residual blocks). A batch norm applied to something else (a sum, as the ``zero``
model's global-pooling blocks and policy head) is left as it is. The result is a new module: the model given is not
changed, and the folded one is for inference only (no batch norm to train).
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_eval


def _pairs(module: nn.Module) -> list[tuple[str, str]]:
    if isinstance(module, nn.Sequential):
        names = list(module._modules)
        return [(a, b) for a, b in zip(names, names[1:], strict=False)
                if isinstance(module._modules[a], nn.Conv2d) and isinstance(module._modules[b], nn.BatchNorm2d)]
    named = getattr(module, "conv_bn_pairs", None)
    return list(named()) if callable(named) else []


def fold_batch_norms(model: nn.Module) -> nn.Module:
    """An eval-mode copy of ``model`` with each batch norm that directly follows a convolution folded into it (the
    batch norm replaced by ``nn.Identity``); ``model`` itself is untouched. Same outputs up to float rounding."""
    folded = copy.deepcopy(model).eval()
    with torch.no_grad():
        for module in list(folded.modules()):
            for conv_name, bn_name in _pairs(module):
                conv, bn = getattr(module, conv_name), getattr(module, bn_name)
                if not (isinstance(conv, nn.Conv2d) and isinstance(bn, nn.BatchNorm2d)) or not bn.track_running_stats:
                    continue
                setattr(module, conv_name, fuse_conv_bn_eval(conv, bn))
                setattr(module, bn_name, nn.Identity())
    return folded


def count_batch_norms(model: nn.Module) -> int:
    """How many ``BatchNorm2d`` modules ``model`` still has."""
    return sum(isinstance(m, nn.BatchNorm2d) for m in model.modules())


__all__ = ["fold_batch_norms", "count_batch_norms"]
