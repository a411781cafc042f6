"""Policy/value networks in torch. Every model maps ``(B, C, H, W)`` planes to a pair
``(policy_logits (B, H*W+1) | None, value (B,) in [-1, 1] | None)``; the last policy index is pass.

Models (``build_model(name, num_planes, board_size, head=..., **hparams)``):

* ``small``, ``medium``, ``large``: the convolutional networks of *Deep Learning and the Game of Go*
  (``dlgo/networks/{small,medium,large}.py``). The book pads with ``ZeroPadding2D`` then applies a
  ``valid`` convolution, which is the same as a ``same``-padded convolution, so we use ``padding=k//2``.
  The trunk ends in the book's ``Flatten → Dense(512|1024) → ReLU``; the policy head is a dense layer
  over board points **plus pass** (the book has no pass class), the value head a dense layer + tanh.
  Three changes make them learn from scratch (docs/recipes.md, "Every model learns", has the measurements):
  batch norm after every conv, He initialisation, and a 1×1-conv logit per point over the last conv layer
  added to the dense policy logits (which start at zero); without them these nets learn nothing in hundreds
  of steps. ``batch_norm=False`` builds the book's plain trunk.
* ``alphago``: the AlphaGo SL policy network (Silver et al. 2016): a 5×5 conv, eleven 3×3 convs
  (``filters``, default 192, ReLU), then a 1×1 conv with one filter giving one logit per point.
  The pass logit (not in the paper or the book) comes from a linear layer over the globally
  average-pooled trunk features. (The book's ``alphago.py`` loop builds one 3×3 conv fewer; we follow
  the paper's 13 layers.) Its value head, used with ``head="value"|"both"``, is the book's value net
  tail: one more 3×3 conv, a 1×1 conv to one plane (ReLU), ``Dense(256) → ReLU → Dense(1) → tanh``.
  Every conv is followed by batch norm (the 13 plain convs barely learn without it), He init, and the
  output layers start at zero.
* ``alphago_value``: the same network with ``head="value"`` by default (the book's value network).
* ``resnet``: a pre-activation-free residual tower (AlphaGo Zero style): 3×3 stem, ``blocks`` residual
  blocks of two 3×3 convs with batch norm, ``filters`` channels; fully convolutional policy head (a
  1×1 conv gives one logit per point, a linear layer over the average-pooled trunk the pass logit:
  it learns far faster than AlphaGo Zero's dense policy head on small budgets); value head 1×1 conv
  (1 filter) → BN → ReLU → linear 256 → ReLU → linear 1 → tanh.
* ``zero``: the KataGo-style network self-play trains (:class:`ZeroNet`): residual tower with a global-pooling
  bias in every third block, fully convolutional on any board size, and beside the policy and value two
  auxiliary outputs (``has_aux``): the final ownership of every point and the final score, which
  :meth:`ZeroNet.forward_aux` returns and the trainer learns from self-play shards' target columns.
* ``leelaz``: Leela Zero's network exactly (:class:`LeelaZeroNet`), both heads by default: ``gotk agent export
  --format leela-zero`` writes it as a Leela Zero weights file (``docs/leelazero.md``).

**Global inputs.** ``resnet`` and ``zero`` built with ``num_globals=G`` also take a ``(B, G)`` float vector per
position (``forward(x, glob=g)``: the komi from the player to move's view and the side to move,
:mod:`gotk.encoders.global_inputs`); a linear layer turns it into one bias per trunk channel, added to the stem's
output before the residual blocks (KataGo adds its global inputs as a per-channel bias after its first conv); that
layer starts at zero, so a new model with global inputs starts as the same model without them. A model built
without them ignores ``glob``; a model built with them refuses a forward pass without it.

**Metadata (human-SL conditioning).** The same models built with ``num_metadata=192`` take KataGo's metadata row
per position (``forward(x, glob, meta=m)``, ``m`` (B, 192) from :mod:`gotk.encoders.metadata_inputs`: the players'
ranks, the clock, the date, the source, from the player to move's view) through
:class:`~gotk.nets.metadata_encoder.MetadataEncoder` (``metadata_channels`` internal units), one more per-channel
bias after the stem. Its output layer starts at zero. A conditioned model refuses a forward pass without ``meta``;
every model built without it refuses one with it (ValueError).

Inputs may be uint8/int8; models cast to the dtype of their weights. ``forward(x)`` always returns the pair;
models with ``has_aux`` also give ``forward_aux(x)`` → ``(policy_logits, value, ownership (B, H, W) in [-1, 1],
score (B,) in points)``, both from the view of the player to move.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from gotk.nets.metadata_encoder import DEFAULT_CHANNELS, MetadataEncoder

HEADS = ("policy", "value", "both")


def _conv(cin: int, cout: int, k: int) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, k, padding=k // 2)


def _conv_relu(cin: int, cout: int, k: int, batch_norm: bool) -> list[nn.Module]:
    """A ``same`` conv + ReLU; with ``batch_norm`` the conv has no bias and batch norm sits before the ReLU."""
    if batch_norm:
        return [nn.Conv2d(cin, cout, k, padding=k // 2, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]
    return [_conv(cin, cout, k), nn.ReLU(inplace=True)]


class GoNet(nn.Module):
    """Base: holds board geometry and which heads exist; subclasses implement ``forward``. ``has_aux``: whether
    the model also predicts ownership and score (``forward_aux``); only :class:`ZeroNet` does."""

    has_aux = False

    def __init__(self, num_planes: int, board_size: int, head: str, num_globals: int = 0, num_metadata: int = 0,
                 metadata_channels: int = DEFAULT_CHANNELS) -> None:
        super().__init__()
        if head not in HEADS:
            raise ValueError(f"head must be one of {HEADS}, not {head!r}")
        if num_planes < 1:
            raise ValueError(f"num_planes must be >= 1, not {num_planes}")
        self.num_planes = num_planes
        self.board_size = board_size
        self.head = head
        self.num_points = board_size * board_size
        self.num_moves = self.num_points + 1
        self.num_globals = int(num_globals)
        if self.num_globals < 0:
            raise ValueError(f"num_globals must be >= 0, not {num_globals}")
        self.num_metadata = int(num_metadata)
        self.metadata_channels = int(metadata_channels)

    def _global_layer(self, filters: int) -> None:
        """The linear map from the global inputs to one bias per trunk channel (a model that takes them), built last
        and at zero: a new model starts as the same model without global inputs (the same weights for a seed) and
        learns how much the komi matters."""
        self.global_in = nn.Linear(self.num_globals, filters) if self.num_globals else None
        if self.global_in is not None:
            nn.init.zeros_(self.global_in.weight)
            nn.init.zeros_(self.global_in.bias)
        # built after everything else, its output at zero: the other weights are those of the unconditioned model
        self.meta_in = (MetadataEncoder(filters, self.metadata_channels, self.num_metadata)
                        if self.num_metadata else None)

    def _check_metadata(self, meta: torch.Tensor | None, batch: int) -> None:
        """ValueError when ``meta`` does not fit the model: missing for a conditioned model, given to an unconditioned
        one, or not ``(batch, num_metadata)``."""
        if not self.num_metadata:
            if meta is not None:
                raise ValueError("this model takes no metadata (it was built without num_metadata): "
                                 "call it without meta")
            return
        if meta is None:
            raise ValueError(f"this model is conditioned on {self.num_metadata} metadata inputs (KataGo's "
                             "SGFMetadata row): forward(x, meta=...) needs them")
        if meta.dim() != 2 or meta.shape[0] != batch or meta.shape[1] != self.num_metadata:
            raise ValueError(f"expected ({batch}, {self.num_metadata}) metadata inputs, got {tuple(meta.shape)}")

    def _add_globals(self, h: torch.Tensor, glob: torch.Tensor | None,
                     meta: torch.Tensor | None = None) -> torch.Tensor:
        """``h`` (B, C, H, W) plus the per-channel biases of the global inputs ``glob`` (B, G) and of the metadata
        ``meta`` (B, 192) (:class:`~gotk.nets.metadata_encoder.MetadataEncoder`); ``h`` unchanged for a model
        without either."""
        self._check_metadata(meta, h.shape[0])
        if self.meta_in is not None:
            h = h + self.meta_in(meta)[:, :, None, None].to(h.dtype)
        if not self.num_globals:
            return h
        if glob is None:
            raise ValueError(f"this model takes {self.num_globals} global inputs (komi, side to move): "
                             "forward(x, glob=...) needs them")
        if glob.dim() != 2 or glob.shape[0] != h.shape[0] or glob.shape[1] != self.num_globals:
            raise ValueError(f"expected ({h.shape[0]}, {self.num_globals}) global inputs, got {tuple(glob.shape)}")
        return h + self.global_in(glob.to(self.global_in.weight.dtype))[:, :, None, None]

    @property
    def has_policy(self) -> bool:
        return self.head in ("policy", "both")

    @property
    def has_value(self) -> bool:
        return self.head in ("value", "both")

    def _prep(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4 or x.shape[1] != self.num_planes or x.shape[2] != self.board_size:
            raise ValueError(f"expected (B, {self.num_planes}, {self.board_size}, {self.board_size}) input, "
                             f"got {tuple(x.shape)}")
        return x.to(next(self.parameters()).dtype)


def he_init(module: nn.Module) -> None:
    """He (Kaiming normal, fan-in, ReLU gain) weights and zero biases for every conv and linear layer of
    ``module``. torch's default (uniform, std ``1/sqrt(3 fan_in)``) shrinks the signal ~2.4x per ReLU layer, so
    plain (un-normalised) conv stacks start with vanishing activations and gradients; see docs/recipes.md."""
    for m in module.modules():
        if isinstance(m, nn.Conv2d | nn.Linear):
            nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")
            if m.bias is not None:
                nn.init.zeros_(m.bias)


class DlgoConvNet(GoNet):
    """The book's ``small``/``medium``/``large`` trunks: conv layers, Flatten, Dense, ReLU; policy = the book's
    dense layer over the features plus a 1×1 conv logit per point ("point logits") from the last conv layer."""

    def __init__(self, num_planes: int, board_size: int, head: str, layers: list[tuple[int, int]],
                 dense: int, batch_norm: bool = True) -> None:
        super().__init__(num_planes, board_size, head)
        mods: list[nn.Module] = []
        cin = num_planes
        for cout, k in layers:
            mods += _conv_relu(cin, cout, k, batch_norm)
            cin = cout
        self.convs = nn.Sequential(*mods)
        self.dense = nn.Sequential(nn.Flatten(), nn.Linear(cin * self.num_points, dense), nn.ReLU(inplace=True))
        he_init(self)
        self.policy_fc = nn.Linear(dense, self.num_moves) if self.has_policy else None
        # the dense policy layer starts silent: the point logits (weights shared by every point) learn the
        # board-wide rules at once, the dense layer adds what they cannot express as it learns
        self.point_logits = nn.Conv2d(cin, 1, 1) if self.has_policy else None
        if self.policy_fc is not None:
            nn.init.zeros_(self.policy_fc.weight)
            nn.init.zeros_(self.policy_fc.bias)
        self.value_fc = nn.Linear(dense, 1) if self.has_value else None

    def forward(self, x: torch.Tensor, glob: torch.Tensor | None = None, meta: torch.Tensor | None = None,
                ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        self._check_metadata(meta, x.shape[0])
        c = self.convs(self._prep(x))
        h = self.dense(c)
        p = v = None
        if self.policy_fc is not None:
            p = self.policy_fc(h)
            p = p + F.pad(self.point_logits(c).flatten(1), (0, 1))  # pass: dense logit only
        if self.value_fc is not None:
            v = torch.tanh(self.value_fc(h)).squeeze(-1)
        return p, v


# layer lists (filters, kernel) read from dlgo/networks/*.py, and the width of their dense layer
DLGO_LAYERS: dict[str, tuple[list[tuple[int, int]], int]] = {
    "small": ([(48, 7), (32, 5), (32, 5), (32, 5)], 512),
    "medium": ([(64, 5), (64, 5), (64, 3), (64, 3), (64, 3)], 512),
    "large": ([(64, 7), (64, 5), (64, 5), (48, 5), (48, 5), (32, 5), (32, 5)], 1024),
}


class AlphaGoNet(GoNet):
    """AlphaGo SL policy network (5×5 conv + 11 3×3 convs + 1×1 head) with a pass logit; optional
    value head in the shape of the book's AlphaGo value network."""

    def __init__(self, num_planes: int, board_size: int, head: str = "policy", filters: int = 192,
                 first_kernel: int = 5, kernel: int = 3, layers: int = 12, batch_norm: bool = True) -> None:
        super().__init__(num_planes, board_size, head)
        mods = _conv_relu(num_planes, filters, first_kernel, batch_norm)
        for _ in range(layers - 1):
            mods += _conv_relu(filters, filters, kernel, batch_norm)
        self.trunk = nn.Sequential(*mods)
        if self.has_policy:
            self.policy_conv = nn.Conv2d(filters, 1, 1)
            self.pass_fc = nn.Linear(filters, 1)
        if self.has_value:
            self.value_tail = nn.Sequential(
                *_conv_relu(filters, filters, kernel, batch_norm), *_conv_relu(filters, 1, 1, batch_norm),
                nn.Flatten(), nn.Linear(self.num_points, 256), nn.ReLU(inplace=True), nn.Linear(256, 1),
            )
        he_init(self)
        # outputs start neutral (uniform policy, value 0): He-scaled outputs of normalised features start far off
        outs = [self.policy_conv, self.pass_fc] if self.has_policy else []
        outs += [self.value_tail[-1]] if self.has_value else []
        for m in outs:
            nn.init.zeros_(m.weight)
            nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor, glob: torch.Tensor | None = None, meta: torch.Tensor | None = None,
                ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        self._check_metadata(meta, x.shape[0])
        h = self.trunk(self._prep(x))
        p = v = None
        if self.has_policy:
            board = self.policy_conv(h).flatten(1)
            p = torch.cat([board, self.pass_fc(h.mean(dim=(2, 3)))], dim=1)
        if self.has_value:
            v = torch.tanh(self.value_tail(h)).squeeze(-1)
        return p, v


class ResBlock(nn.Module):
    def __init__(self, filters: int) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(filters, filters, 3, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(filters)
        self.c2 = nn.Conv2d(filters, filters, 3, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(filters)

    def conv_bn_pairs(self) -> list[tuple[str, str]]:
        """Convolutions whose output goes straight into a batch norm (:func:`gotk.nets.fuse.fold_batch_norms`)."""
        return [("c1", "b1"), ("c2", "b2")]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.b1(self.c1(x)))
        return torch.relu(x + self.b2(self.c2(y)))


def residual_tower(num_planes: int, filters: int, blocks: int) -> tuple[nn.Sequential, nn.Sequential]:
    """``(stem, blocks)``: a 3×3 conv + batch norm + ReLU from the input planes, then ``blocks`` residual blocks
    (:class:`ResBlock`): AlphaGo Zero's and Leela Zero's trunk."""
    stem = nn.Sequential(nn.Conv2d(num_planes, filters, 3, padding=1, bias=False), nn.BatchNorm2d(filters),
                         nn.ReLU(inplace=True))
    return stem, nn.Sequential(*(ResBlock(filters) for _ in range(blocks)))


class ResNet(GoNet):
    """Residual tower with batch norm; convolutional policy head (board + pass), AlphaGo Zero value head."""

    def __init__(self, num_planes: int, board_size: int, head: str = "policy", blocks: int = 6,
                 filters: int = 64, num_globals: int = 0, num_metadata: int = 0,
                 metadata_channels: int = DEFAULT_CHANNELS) -> None:
        super().__init__(num_planes, board_size, head, num_globals, num_metadata, metadata_channels)
        self.stem, self.blocks = residual_tower(num_planes, filters, blocks)
        if self.has_policy:
            self.policy_conv = nn.Conv2d(filters, 1, 1)
            self.pass_fc = nn.Linear(filters, 1)
        if self.has_value:
            self.value_head = nn.Sequential(
                nn.Conv2d(filters, 1, 1, bias=False), nn.BatchNorm2d(1), nn.ReLU(inplace=True), nn.Flatten(),
                nn.Linear(self.num_points, 256), nn.ReLU(inplace=True), nn.Linear(256, 1),
            )
        self._global_layer(filters)

    def forward(self, x: torch.Tensor, glob: torch.Tensor | None = None, meta: torch.Tensor | None = None,
                ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        h = self.blocks(self._add_globals(self.stem(self._prep(x)), glob, meta))
        p = None
        if self.has_policy:
            p = torch.cat([self.policy_conv(h).flatten(1), self.pass_fc(h.mean(dim=(2, 3)))], dim=1)
        v = torch.tanh(self.value_head(h)).squeeze(-1) if self.has_value else None
        return p, v


def _global_pool(x: torch.Tensor) -> torch.Tensor:
    """``(B, C, H, W)`` → ``(B, 2C)``: the mean and the max of every channel over the board (KataGo's global
    pooling, without the board-size term: a model is built for one board size)."""
    return torch.cat([x.mean(dim=(2, 3)), x.amax(dim=(2, 3))], dim=1)


class GlobalPoolBias(nn.Module):
    """KataGo's global-pooling bias: ``pool`` channels computed from the input (3×3 conv, BN, ReLU) are pooled
    over the board (mean, max), and a linear layer turns them into one bias per channel of the main path. It
    lets a convolutional tower see board-wide facts (ko, who is ahead, how much is left) in a few blocks."""

    def __init__(self, filters: int, pool: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(filters, pool, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(pool)
        self.fc = nn.Linear(2 * pool, filters)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = torch.relu(self.bn(self.conv(x)))
        return self.fc(_global_pool(g))[:, :, None, None]


class ZeroBlock(nn.Module):
    """A residual block (two 3×3 convs with BN and ReLU); with ``pool`` channels, a :class:`GlobalPoolBias` is
    added to the first conv's output before its batch norm."""

    def __init__(self, filters: int, pool: int = 0) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(filters, filters, 3, padding=1, bias=False)
        self.gpool = GlobalPoolBias(filters, pool) if pool else None
        self.b1 = nn.BatchNorm2d(filters)
        self.c2 = nn.Conv2d(filters, filters, 3, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(filters)

    def conv_bn_pairs(self) -> list[tuple[str, str]]:
        """Convolutions whose output goes straight into a batch norm (not ``c1`` when the pooled bias is added)."""
        return [("c2", "b2")] if self.gpool is not None else [("c1", "b1"), ("c2", "b2")]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.c1(x)
        if self.gpool is not None:
            y = y + self.gpool(x)
        y = torch.relu(self.b1(y))
        return torch.relu(x + self.b2(self.c2(y)))


class ZeroNet(GoNet):
    """The self-play network, after KataGo (Wu 2019): 3×3 stem; ``blocks`` residual blocks of ``filters``
    channels, every third one with a global-pooling bias (a quarter of the channels pooled); all heads
    convolutional or pooled, so the same weights' shapes fit one board size and nothing is dense over points.

    * policy: a 1×1 conv (32 channels, BN, ReLU) biased by the pooled trunk, then a 1×1 conv → one logit per
      point; the pass logit from a linear layer over the pooled trunk;
    * value: a 1×1 conv (32 channels, BN, ReLU), pooled (mean, max) → linear 64 → ReLU → linear → tanh
      (the game's outcome for the player to move), and the score (a linear output of the same 64 features, in
      points, unbounded: the final area score for the player to move, komi included);
    * ownership: a 1×1 conv over the value head's conv features → tanh, (B, H, W): +1 the player to move owns
      the point at the end, -1 the opponent.

    Every output layer starts at zero (uniform policy, value 0, score 0, ownership 0), as the other models.
    ``forward(x)`` gives ``(policy_logits, value)``, so agents, search, GTP and matches use it as any model;
    ``forward_aux(x)`` the four outputs; ``forward(x, aux="logits")`` the same with the ownership before its
    tanh (the trainer's numerically stable binary cross-entropy)."""

    def __init__(self, num_planes: int, board_size: int, head: str = "both", blocks: int = 6,
                 filters: int = 64, num_globals: int = 0, num_metadata: int = 0,
                 metadata_channels: int = DEFAULT_CHANNELS) -> None:
        super().__init__(num_planes, board_size, head, num_globals, num_metadata, metadata_channels)
        pool = max(1, filters // 4)
        head_ch = 32
        self.stem = nn.Sequential(nn.Conv2d(num_planes, filters, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(filters), nn.ReLU(inplace=True))
        self.blocks = nn.Sequential(*(ZeroBlock(filters, pool if i % 3 == 2 else 0) for i in range(blocks)))
        if self.has_policy:
            self.policy_conv = nn.Conv2d(filters, head_ch, 1, bias=False)
            self.policy_bias = nn.Linear(2 * filters, head_ch)
            self.policy_bn = nn.BatchNorm2d(head_ch)
            self.policy_out = nn.Conv2d(head_ch, 1, 1)
            self.pass_fc = nn.Linear(2 * filters, 1)
        if self.has_value:
            self.value_conv = nn.Sequential(nn.Conv2d(filters, head_ch, 1, bias=False), nn.BatchNorm2d(head_ch),
                                            nn.ReLU(inplace=True))
            self.value_fc = nn.Linear(2 * head_ch, 64)
            self.value_out = nn.Linear(64, 1)
            self.score_out = nn.Linear(64, 1)
            self.ownership_out = nn.Conv2d(head_ch, 1, 1)
        he_init(self)
        outs = [self.policy_out, self.pass_fc] if self.has_policy else []
        outs += [self.value_out, self.score_out, self.ownership_out] if self.has_value else []
        for m in outs:
            nn.init.zeros_(m.weight)
            nn.init.zeros_(m.bias)
        self._global_layer(filters)

    @property
    def has_aux(self) -> bool:  # type: ignore[override]
        """Ownership and score come with the value head."""
        return self.has_value

    def forward(self, x: torch.Tensor, aux: bool | str = False, glob: torch.Tensor | None = None,
                meta: torch.Tensor | None = None) -> tuple:
        """``(policy_logits, value)``; with ``aux`` also ``ownership`` (tanh; ``aux="logits"``: before the tanh)
        and ``score`` (None where the head is not built). ``glob``: the global inputs (a model built with them)."""
        h = self.blocks(self._add_globals(self.stem(self._prep(x)), glob, meta))
        pooled = _global_pool(h)
        p = v = own = score = None
        if self.has_policy:
            q = torch.relu(self.policy_bn(self.policy_conv(h) + self.policy_bias(pooled)[:, :, None, None]))
            p = torch.cat([self.policy_out(q).flatten(1), self.pass_fc(pooled)], dim=1)
        if self.has_value:
            c = self.value_conv(h)
            f = torch.relu(self.value_fc(_global_pool(c)))
            v = torch.tanh(self.value_out(f)).squeeze(-1)
            if aux:
                score = self.score_out(f).squeeze(-1)
                own = self.ownership_out(c).squeeze(1)
                if aux != "logits":
                    own = torch.tanh(own)
        return (p, v, own, score) if aux else (p, v)

    def forward_aux(self, x: torch.Tensor, glob: torch.Tensor | None = None, meta: torch.Tensor | None = None,
                    ) -> tuple:
        """``(policy_logits, value, ownership (B, H, W) in [-1, 1], score (B,))`` from the view of the player
        to move (ownership and score None without the value head)."""
        return self.forward(x, aux=True, glob=glob, meta=meta)


class LeelaZeroNet(GoNet):
    """Leela Zero's network (``src/Network.cpp``, ``training/tf/tfprocess.py``): a 3×3 conv + BN + ReLU, ``blocks``
    residual blocks (:class:`ResBlock`), a policy head 1×1 conv (2 filters) + BN + ReLU + linear ``2N → N+1``, a value
    head 1×1 conv (1 filter) + BN + ReLU + linear ``N → 256`` + ReLU + linear ``256 → 1`` + tanh. With the
    ``leelazero`` encoder on 19×19, ``gotk agent export --format leela-zero`` writes it as a Leela Zero weights file
    (:mod:`gotk.export.leelaz_weights`). Convs have no bias (batch norm follows each)."""

    def __init__(self, num_planes: int, board_size: int, head: str = "both", blocks: int = 6,
                 filters: int = 64) -> None:
        super().__init__(num_planes, board_size, head)
        self.stem, self.blocks = residual_tower(num_planes, filters, blocks)
        if self.has_policy:
            self.policy_head = nn.Sequential(
                nn.Conv2d(filters, 2, 1, bias=False), nn.BatchNorm2d(2), nn.ReLU(inplace=True), nn.Flatten(),
                nn.Linear(2 * self.num_points, self.num_moves),
            )
        if self.has_value:
            self.value_head = nn.Sequential(
                nn.Conv2d(filters, 1, 1, bias=False), nn.BatchNorm2d(1), nn.ReLU(inplace=True), nn.Flatten(),
                nn.Linear(self.num_points, 256), nn.ReLU(inplace=True), nn.Linear(256, 1),
            )
        # outputs start neutral (uniform policy, value 0), as AlphaGoNet's
        for head in (self.policy_head if self.has_policy else None, self.value_head if self.has_value else None):
            if head is not None:
                nn.init.zeros_(head[-1].weight)
                nn.init.zeros_(head[-1].bias)

    def forward(self, x: torch.Tensor, glob: torch.Tensor | None = None, meta: torch.Tensor | None = None,
                ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        self._check_metadata(meta, x.shape[0])
        h = self.blocks(self.stem(self._prep(x)))
        p = self.policy_head(h) if self.has_policy else None
        v = torch.tanh(self.value_head(h)).squeeze(-1) if self.has_value else None
        return p, v


@dataclass(frozen=True)
class ModelSpec:
    """A registered model: its builder, default head and tunable hyper-parameters with defaults."""

    build: Callable[..., GoNet]
    default_head: str
    hparams: dict = field(default_factory=dict)
    doc: str = ""
    # the optimizer and learning rate ``gotk train`` uses when neither --optimizer nor --lr is given
    # (``{"optimizer": ..., "lr": ...}``; empty: SGD at its default rate); measured in docs/recipes.md
    train_defaults: dict = field(default_factory=dict)
    takes_globals: bool = False  # the model may be built with global inputs (num_globals)


def _dlgo(name: str) -> Callable[..., GoNet]:
    layers, dense = DLGO_LAYERS[name]
    return lambda num_planes, board_size, head: DlgoConvNet(num_planes, board_size, head, layers, dense)


MODELS: dict[str, ModelSpec] = {
    "small": ModelSpec(_dlgo("small"), "policy", {}, "book small net: 4 convs (7,5,5,5), dense 512"),
    "medium": ModelSpec(_dlgo("medium"), "policy", {}, "book medium net: 5 convs (5,5,3,3,3), dense 512"),
    "large": ModelSpec(_dlgo("large"), "policy", {}, "book large net: 7 convs (7,5,5,5,5,5,5), dense 1024"),
    "alphago": ModelSpec(AlphaGoNet, "policy", {"filters": 192}, "AlphaGo SL policy net, 13 layers"),
    # its dense value tail diverges with SGD 0.05 (value MSE -> 2.0); Adam 1e-3 learns (docs/recipes.md)
    "alphago_value": ModelSpec(AlphaGoNet, "value", {"filters": 192}, "AlphaGo value net (book shape)",
                               train_defaults={"optimizer": "adam", "lr": 1e-3}),
    # its value head (AlphaGo Zero's: one 1x1 conv channel, batch norm, ReLU, dense 256, tanh) saturates with SGD
    # 0.05 (value MSE 1.8-1.9 for the first 40 steps, tanh at the wrong sign) and can die: its one ReLU channel
    # below zero for every position, the value one constant (docs/recipes.md); Adam 2e-3, every resnet recipe's
    # rate, learns both heads
    "resnet": ModelSpec(ResNet, "policy", {"blocks": 6, "filters": 64}, "residual tower with batch norm",
                        train_defaults={"optimizer": "adam", "lr": 2e-3}, takes_globals=True),
    # trained from self-play targets every generation, on small windows of data and few steps: Adam learns the
    # policy, value and auxiliary heads together without the tuning SGD's rate needs per board size and loss
    # mix; with batch norm everywhere 3e-3 learns the targets in fewer steps than 1e-3
    # (tests/test_zero_net.py, tests/test_models_learn.py check it learns with these defaults)
    "zero": ModelSpec(ZeroNet, "both", {"blocks": 6, "filters": 64},
                      "KataGo-style residual net: global pooling, policy, value, score, ownership",
                      train_defaults={"optimizer": "adam", "lr": 3e-3}, takes_globals=True),
    "leelaz": ModelSpec(LeelaZeroNet, "both", {"blocks": 6, "filters": 64}, "Leela Zero's network (exports to leelaz)",
                        train_defaults={"optimizer": "adam", "lr": 1e-3}),
}


def model_hparams(name: str, **given) -> dict:
    """The full hyper-parameter dict of model ``name``: defaults updated by ``given`` (``None`` values
    ignored). Raises ``ValueError`` for an unknown model or a hyper-parameter it does not take."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose from {', '.join(MODELS)}")
    spec = MODELS[name]
    out = dict(spec.hparams)
    for k, v in given.items():
        if v is None:
            continue
        if k not in spec.hparams:
            raise ValueError(f"model {name!r} takes no --{k} (its hyper-parameters: {list(spec.hparams) or 'none'})")
        if int(v) < 1:
            raise ValueError(f"--{k} must be >= 1")
        out[k] = int(v)
    return out


def build_model(name: str, num_planes: int, board_size: int = 19, head: str | None = None, num_globals: int = 0,
                num_metadata: int = 0, metadata_channels: int = DEFAULT_CHANNELS, **hparams) -> GoNet:
    """Build model ``name`` for ``num_planes`` input planes on a ``board_size`` board, taking ``num_globals`` global
    inputs and ``num_metadata`` metadata inputs through an encoder of ``metadata_channels`` units (0: none; only
    models whose spec ``takes_globals``, ValueError otherwise)."""
    hp = model_hparams(name, **hparams)
    spec = MODELS[name]
    head = head or spec.default_head
    if num_metadata or num_globals:
        if not spec.takes_globals:
            takes = ", ".join(n for n, m in MODELS.items() if m.takes_globals)
            what = "metadata" if num_metadata else "global"
            raise ValueError(f"model {name!r} takes no {what} inputs (models that do: {takes})")
    if num_metadata:
        return spec.build(num_planes=num_planes, board_size=board_size, head=head, num_globals=num_globals,
                          num_metadata=num_metadata, metadata_channels=metadata_channels, **hp)
    if num_globals:
        if not spec.takes_globals:
            takes = ", ".join(n for n, m in MODELS.items() if m.takes_globals)
            raise ValueError(f"model {name!r} takes no global inputs (models that do: {takes})")
        return spec.build(num_planes=num_planes, board_size=board_size, head=head, num_globals=num_globals, **hp)
    return spec.build(num_planes=num_planes, board_size=board_size, head=head, **hp)


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
