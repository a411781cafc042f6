"""The metadata encoder of a conditioned network: KataGo's human-SL ``MetadataEncoder`` in gotk's terms.

A conditioned ``resnet`` or ``zero`` (built with ``num_metadata=192``) takes, beside its planes, one float vector
per position describing the game from the player to move's view (:mod:`gotk.encoders.metadata_inputs`: who plays,
their ranks, the clock, the date, the source). :class:`MetadataEncoder` maps it through two ReLU layers of
``channels`` units to one bias per trunk channel, halved, added to the trunk after the stem, as KataGo does. The
board-area input (86) is masked out: a gotk model is built for one board size, so it carries nothing.

The hidden layers start as He-initialised layers at 0.8 of their scale (KataGo's ``initialize``), the output layer
at zero: a freshly built conditioned model predicts exactly as the same model without the encoder, and learns how
much the metadata matters.
"""

from __future__ import annotations

import torch
from torch import nn

from gotk.encoders.metadata_inputs import NUM_CHANNELS

#: The index of the board-area input, masked out (a model plays one board size).
AREA_INPUT = 86
#: KataGo's output scale of the encoder.
OUT_SCALE = 0.5
#: The internal width when none is given.
DEFAULT_CHANNELS = 64
#: agent.json's ``metadata.layout``: KataGo's ``SGFMetadata`` row, meta encoder version 1.
LAYOUT = "katago-sgfmetadata-v1"


class MetadataEncoder(nn.Module):
    """``(B, 192)`` metadata → ``(B, trunk)`` per-channel trunk bias (module docstring)."""

    def __init__(self, trunk: int, channels: int = DEFAULT_CHANNELS, width: int = NUM_CHANNELS) -> None:
        super().__init__()
        if width != NUM_CHANNELS:
            raise ValueError(f"the metadata encoder takes KataGo's {NUM_CHANNELS}-float row, not {width}")
        if channels < 1:
            raise ValueError(f"metadata channels must be >= 1, not {channels}")
        self.width = width
        self.channels = channels
        mask = torch.ones(width)
        mask[AREA_INPUT] = 0.0
        self.register_buffer("mask", mask, persistent=False)
        self.fc1 = nn.Linear(width, channels)
        self.fc2 = nn.Linear(channels, channels)
        self.out = nn.Linear(channels, trunk, bias=False)
        for fc in (self.fc1, self.fc2):
            nn.init.kaiming_normal_(fc.weight, nonlinearity="relu")
            with torch.no_grad():
                fc.weight.mul_(0.8)
            nn.init.zeros_(fc.bias)
        nn.init.zeros_(self.out.weight)

    def forward(self, meta: torch.Tensor) -> torch.Tensor:
        m = meta.to(self.fc1.weight.dtype) * self.mask.to(self.fc1.weight.dtype)
        return OUT_SCALE * self.out(torch.relu(self.fc2(torch.relu(self.fc1(m)))))


def describe(channels: int) -> dict:
    """agent.json's ``metadata`` object of a model with an encoder of ``channels`` internal units."""
    return {"size": NUM_CHANNELS, "layout": LAYOUT, "channels": int(channels)}
