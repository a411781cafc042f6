"""How much of an accelerator's peak a training run uses: FLOPs per sample of a model and a small table of
known GPUs' peak dense bf16 tensor-core FLOP/s.

FLOPs are counted, not measured: one forward pass on a single position with hooks on every ``Conv2d`` and
``Linear`` (2 FLOPs per multiply-add; batch norm, activations, pooling and the loss are left out, a few
percent for these models). A training step costs about three forward passes (the backward pass computes
gradients for both activations and weights: 2x forward), so ``train = 3 x forward``. The share of the peak
is ``samples/s x train FLOPs per sample / peak``; peaks are the vendors' datasheet figures for dense
(not 2:4-sparse) bf16 with fp32 accumulation.
"""

from __future__ import annotations

import re

import torch
from torch import nn

# (regular expression searched in torch.cuda.get_device_name(), peak dense bf16 TFLOP/s, the part it stands for);
# first match wins, so the more specific patterns come first; word boundaries keep "A10" off "A10G", "L4" off "L40"
PEAK_BF16_TFLOPS: tuple[tuple[str, float, str], ...] = (
    (r"\bGH200\b", 989.0, "NVIDIA GH200 (H100/H200 SXM class)"),
    (r"\bH200\b.*\bNVL\b", 835.0, "NVIDIA H200 NVL"),
    (r"\bH200\b", 989.0, "NVIDIA H200 SXM"),
    (r"\bH100\b.*\bNVL\b", 835.0, "NVIDIA H100 NVL"),
    (r"\bH100\b.*\bPCIe\b", 756.0, "NVIDIA H100 PCIe"),
    (r"\bH100\b", 989.0, "NVIDIA H100 SXM"),
    (r"\bH800\b", 989.0, "NVIDIA H800 SXM"),
    (r"\bA100\b", 312.0, "NVIDIA A100"),
    (r"\bA800\b", 312.0, "NVIDIA A800"),
    (r"\bL40S\b", 362.0, "NVIDIA L40S"),
    (r"\bL40\b", 181.0, "NVIDIA L40"),
    (r"\bL4\b", 121.0, "NVIDIA L4"),
    (r"\bA10\b", 125.0, "NVIDIA A10"),
)
TRAIN_TO_FORWARD = 3  # forward + backward (2x forward)


def forward_flops(model: nn.Module, shape: tuple[int, int, int]) -> int:
    """FLOPs of one forward pass of ``model`` on one ``(C, H, W)`` position: 2 x the multiply-adds of every
    conv and linear layer (counted with forward hooks on a zero input, in eval mode)."""
    total = 0

    def conv_hook(m: nn.Conv2d, _inp, out: torch.Tensor) -> None:
        nonlocal total
        kh, kw = m.kernel_size
        total += 2 * out.numel() * (m.in_channels // m.groups) * kh * kw

    def linear_hook(m: nn.Linear, inp: tuple[torch.Tensor, ...], _out) -> None:
        nonlocal total
        rows = inp[0].numel() // m.in_features
        total += 2 * rows * m.in_features * m.out_features

    hooks = []
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            hooks.append(m.register_forward_hook(conv_hook))
        elif isinstance(m, nn.Linear):
            hooks.append(m.register_forward_hook(linear_hook))
    was_training = model.training
    param = next(model.parameters())
    try:
        model.eval()
        with torch.no_grad():
            glob = getattr(model, "num_globals", 0)
            glob = torch.zeros((1, glob), dtype=param.dtype, device=param.device) if glob else None
            meta = getattr(model, "num_metadata", 0)
            meta = torch.zeros((1, meta), dtype=param.dtype, device=param.device) if meta else None
            model(torch.zeros((1, *shape), dtype=param.dtype, device=param.device), glob=glob, meta=meta)
    finally:
        for h in hooks:
            h.remove()
        model.train(was_training)
    return total


def train_flops_per_sample(model: nn.Module, shape: tuple[int, int, int]) -> int:
    """Estimated FLOPs of one training step per position: 3 x :func:`forward_flops`."""
    return TRAIN_TO_FORWARD * forward_flops(model, shape)


def peak_bf16_flops(device_name: str) -> tuple[float | None, str | None]:
    """``(peak dense bf16 FLOP/s, the table entry)`` for a device name as torch reports it, or ``(None, None)``
    when the device is not in :data:`PEAK_BF16_TFLOPS` (CPUs, unlisted GPUs)."""
    for pattern, tflops, part in PEAK_BF16_TFLOPS:
        if re.search(pattern, device_name, re.IGNORECASE):
            return tflops * 1e12, part
    return None, None


def peak_report(samples_per_s: float, flops_per_sample: int, device_name: str) -> dict:
    """The throughput fields of a benchmark report: achieved TFLOP/s and, for a known GPU, its share of the peak."""
    peak, part = peak_bf16_flops(device_name)
    achieved = samples_per_s * flops_per_sample
    return {
        "device_name": device_name,
        "samples_per_s": round(samples_per_s, 1),
        "train_flops_per_sample": int(flops_per_sample),
        "achieved_tflops": round(achieved / 1e12, 4),
        "peak_bf16_tflops": None if peak is None else round(peak / 1e12, 1),
        "peak_entry": part,
        "peak_share": None if peak is None else round(achieved / peak, 5),
        "flops_note": "conv+linear FLOPs of one forward pass x3 (forward+backward), per position; peak: datasheet "
                      "dense bf16 tensor-core FLOP/s" + ("" if peak else "; this device is not in the table "
                                                          "(gotk.train.flops.PEAK_BF16_TFLOPS): no share"),
    }
