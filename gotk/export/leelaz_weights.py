"""A ``leelaz`` agent (:class:`gotk.nets.networks.LeelaZeroNet` over the ``leelazero`` encoder, 19x19) as a Leela Zero
weights file, format version 1 (``Network::load_v1_network`` in Leela Zero's ``src/Network.cpp``).

The file is text (gzip here; ``leelaz`` reads both): a first line ``1``, then one line of space-separated floats per
tensor, in this order:

* input conv: weights ``(filters, 18, 3, 3)``, biases, batch-norm means, batch-norm variances;
* each residual block, twice: conv weights ``(filters, filters, 3, 3)``, biases, means, variances;
* policy head: 1×1 conv weights ``(2, filters)``, biases, means, variances; FC weights ``(362, 722)``, biases;
* value head: 1×1 conv weights ``(1, filters)``, biases, means, variances; FC ``(256, 361)`` weights, biases; FC
  ``(1, 256)`` weights, bias.

Leela Zero's batch norm has no learned scale or shift: it computes ``(conv(x) + bias - mean) / sqrt(var + 1e-5)``
(it adds the epsilon to the stored variances, and moves the conv biases into the means). PyTorch's batch norm,
``gamma * (z - running_mean) / sqrt(running_var + eps) + beta``, is folded into that form as Leela Zero's own training
code writes its networks (``save_leelaz_weights`` in ``training/tf/tfprocess.py``: its ``beta`` written as the
bias, times ``sqrt(var + 1e-5)``), with ``gamma`` (which Leela Zero's training does not learn) folded into the conv
weights: weights ``gamma * W``, bias ``beta * sqrt(var + eps)``, mean ``gamma * running_mean``, variance
``running_var + eps - 1e-5``.

Coordinates (:mod:`gotk.coords`): Leela Zero numbers points from the bottom row (``y * 19 + x``), gotk's tensors from
the top row, so every 3×3 kernel is flipped top to bottom (:func:`gotk.coords.leelazero_kernel`) and the FC layers'
point rows and columns are permuted into Leela Zero's vertex order (:func:`gotk.coords.leelazero_order`; pass stays
last).
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import torch
from torch import nn

from gotk import coords
from gotk.atomic import write_bytes_atomic
from gotk.errors import GotkError

SIZE = 19
LZ_EPSILON = 1e-5  # process_bn_var in Network.cpp
FORMAT_VERSION = 1
MODEL = "leelaz"
ENCODER = "leelazero"


class WeightsExportError(GotkError):
    """An agent that cannot be written as Leela Zero weights (``not_exportable``): its message is one line."""

    def __init__(self, message: str) -> None:
        super().__init__("not_exportable", message)


def check_exportable(meta: dict) -> None:
    """Raise :class:`WeightsExportError` unless the agent described by ``meta`` (its ``agent.json``) is a ``leelaz``
    model with both heads over the ``leelazero`` encoder on 19x19, the only networks Leela Zero runs."""
    model = meta.get("model", {}).get("name")
    if model != MODEL:
        raise WeightsExportError(f"model {model!r}: only a {MODEL!r} model has Leela Zero's architecture "
                                 f"(train one with gotk train --model {MODEL})")
    encoder = (meta.get("encoder") or {}).get("name")
    if encoder != ENCODER:
        raise WeightsExportError(f"encoder {encoder!r}: Leela Zero's network reads the {ENCODER!r} planes")
    size = meta.get("board_size")
    if size != SIZE:
        raise WeightsExportError(f"board size {size}: Leela Zero's networks are {SIZE}x{SIZE} only")
    head = meta.get("model", {}).get("head")
    if head != "both":
        missing = "value" if head == "policy" else "policy"
        raise WeightsExportError(f"head {head!r}: the agent has no {missing} head (Leela Zero's network has both)")


def _line(values) -> str:
    """One weights line: the values as float32, each in 9 significant digits (which give the float32 back)."""
    return " ".join(map("{:.9g}".format, np.asarray(values, dtype=np.float32).ravel().tolist()))


def fold_conv_bn(conv: nn.Conv2d, bn: nn.BatchNorm2d) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(weights, biases, means, variances)`` of Leela Zero's conv + batch norm computing what ``bn(conv(x))`` does
    in eval mode (weights still in gotk's orientation; see the module's docstring)."""
    w = conv.weight.detach().double().cpu().numpy()
    cb = conv.bias.detach().double().cpu().numpy() if conv.bias is not None else np.zeros(w.shape[0])
    gamma = bn.weight.detach().double().cpu().numpy() if bn.weight is not None else np.ones(w.shape[0])
    beta = bn.bias.detach().double().cpu().numpy() if bn.bias is not None else np.zeros(w.shape[0])
    mean = bn.running_mean.detach().double().cpu().numpy()
    var = bn.running_var.detach().double().cpu().numpy()
    std = np.sqrt(var + bn.eps)
    weights = w * gamma[:, None, None, None]
    biases = beta * std + gamma * cb
    return weights, biases, gamma * mean, var + bn.eps - LZ_EPSILON


def _conv_lines(conv: nn.Conv2d, bn: nn.BatchNorm2d) -> list[str]:
    w, b, m, v = fold_conv_bn(conv, bn)
    return [_line(coords.leelazero_kernel(w)), _line(b), _line(m), _line(v)]


def weights_lines(model) -> list[str]:
    """The lines of the weights file of ``model`` (a 19x19 :class:`~gotk.nets.networks.LeelaZeroNet` with both
    heads), the version line first."""
    n = SIZE * SIZE
    if model.board_size != SIZE or not (model.has_policy and model.has_value):
        raise WeightsExportError("only a 19x19 leelaz model with both heads has a Leela Zero weights file")
    order = coords.leelazero_order(SIZE)  # order[i]: gotk point of Leela Zero vertex i
    moves = np.append(order, n)  # pass last in both
    lines = [str(FORMAT_VERSION)]
    lines += _conv_lines(model.stem[0], model.stem[1])
    for block in model.blocks:
        lines += _conv_lines(block.c1, block.b1)
        lines += _conv_lines(block.c2, block.b2)
    conv, bn, _, _, fc = model.policy_head
    lines += _conv_lines(conv, bn)
    w = fc.weight.detach().double().cpu().numpy().reshape(n + 1, 2, n)
    lines += [_line(w[moves][:, :, order]), _line(fc.bias.detach().double().cpu().numpy()[moves])]
    conv, bn, _, _, fc1, _, fc2 = model.value_head
    lines += _conv_lines(conv, bn)
    lines += [_line(fc1.weight.detach().double().cpu().numpy()[:, order]), _line(fc1.bias.detach().cpu().numpy()),
              _line(fc2.weight.detach().cpu().numpy()), _line(fc2.bias.detach().cpu().numpy())]
    return lines


def export_agent_weights(agent_path: str | os.PathLike, out: str | os.PathLike) -> dict:
    """Write the network of the agent file ``agent_path`` as a Leela Zero weights file ``out`` (gzip text, written
    atomically). Raises :class:`WeightsExportError` (an agent Leela Zero cannot run) or
    :class:`~gotk.nets.agent_file.AgentError` (an unreadable agent file), each with a one-line message. Returns what
    was written: ``{"path", "bytes", "blocks", "filters", "lines"}``."""
    from gotk.nets.agent import load_agent

    agent = load_agent(agent_path)
    check_exportable(agent.meta)
    model = agent.model.float().eval()
    with torch.no_grad():
        lines = weights_lines(model)
    data = gzip.compress(("\n".join(lines) + "\n").encode("ascii"), compresslevel=6, mtime=0)
    write_bytes_atomic(out, data)
    hp = agent.meta["model"]["hparams"]
    return {"path": str(Path(out)), "bytes": len(data), "blocks": int(hp["blocks"]), "filters": int(hp["filters"]),
            "lines": len(lines)}
