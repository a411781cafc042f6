"""The runtime agent: a network rebuilt from an agent file (:mod:`gotk.nets.agent_file`, the format) with its
encoder, giving move probabilities and values for positions (:class:`Agent`); :func:`load_agent` reads, checks and
builds one, :func:`convert_agent` rewrites a file (float16 weights, search settings), :func:`value_head_warning`
says when its value head is no better than the komi/handicap baseline.

Building is checked before any real allocation: the hyper-parameters must be consistent with the tensor shapes and
the model is first built on PyTorch's ``meta`` device (no memory) and compared with the shapes.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import torch

from gotk.encoders import global_inputs as GI
from gotk.encoders import metadata_inputs as MI
from gotk.nets.agent_file import (
    TABLE_MODELS,
    AgentError,
    read_agent_files,
    require,
    save_agent,
    search_settings_ok,
    value_record_warning,
)
from gotk.nets.networks import GoNet, build_model


def _check_hparams(meta: dict, shapes: dict[str, list[int]], path) -> None:
    """Hyper-parameters consistent with the tensor list before anything is built: every integer
    hyper-parameter (and ``num_planes``) at most the larger of the tensor count and the largest tensor
    dimension (a ``blocks: 100000`` or ``filters: 6000`` beside small weights is refused here)."""
    bound = max([len(shapes)] + [d for s in shapes.values() for d in s])
    values = {"num_planes": meta["num_planes"], **meta["model"]["hparams"]}
    if meta.get("metadata"):
        values["metadata channels"] = meta["metadata"]["channels"]
    for k, v in values.items():
        require(not isinstance(v, float) or math.isfinite(v), f"hyper-parameter {k}={v!r} is not finite", path)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            require(v <= bound, f"hyper-parameter {k}={v!r} does not fit the weights (at most {bound})", path)


class Agent:
    """A trained network plus its encoder: move probabilities, value and move choice for a position."""

    def __init__(self, model: GoNet, encoder, meta: dict, device: str | torch.device = "cpu",
                 amp: bool = False) -> None:
        self.device = torch.device(device)
        self.amp = amp  # bf16 autocast in predict(): faster on GPUs and AVX512-BF16/AMX CPUs, not bit-exact
        self.model = model.to(self.device).eval()
        self.encoder = encoder
        self.meta = meta
        self.board_size = model.board_size
        self.num_moves = model.num_moves
        self.num_globals = model.num_globals  # 0: the model takes no global inputs
        self.num_metadata = model.num_metadata  # 0: the model is not conditioned on metadata

    @property
    def has_policy(self) -> bool:
        return self.model.has_policy

    @property
    def has_value(self) -> bool:
        return self.model.has_value

    @property
    def name(self) -> str:
        return self.meta.get("model", {}).get("name", "agent")

    def global_inputs(self, state, color: int | None = None) -> np.ndarray | None:
        """The ``(G,)`` global inputs of ``state`` (its komi; ``color`` overrides its player to move), or None for a
        model that takes none."""
        return GI.for_state(state, color) if self.num_globals else None

    def metadata_row(self, state, metadata) -> np.ndarray | None:
        """The ``(192,)`` metadata row of ``state`` for this agent: ``metadata`` a row already (returned as float32),
        a :class:`~gotk.encoders.metadata_inputs.Metadata` (filled for the player to move on this board), a profile
        name (:func:`~gotk.encoders.metadata_inputs.profile`), or None for an unconditioned agent. ValueError when
        a conditioned agent gets none or an unconditioned one gets some."""
        if not self.num_metadata:
            if metadata is not None:
                raise ValueError("this agent is not conditioned on metadata (trained without --metadata): "
                                 "it takes no profile or metadata row")
            return None
        if metadata is None:
            raise ValueError("this agent is conditioned on metadata (trained with --metadata): give the position's "
                             "metadata or a profile (such as rank_3d)")
        if isinstance(metadata, str):
            metadata = MI.profile(metadata)
        if isinstance(metadata, MI.Metadata):
            return MI.fill_row(metadata, state.to_play, state.size * state.size)
        row = np.asarray(metadata, dtype=np.float32)
        if row.shape != (self.num_metadata,):
            raise ValueError(f"expected a ({self.num_metadata},) metadata row, got shape {row.shape}")
        return row

    @staticmethod
    def _tensor(a, device: torch.device) -> torch.Tensor:
        t = torch.as_tensor(np.asarray(a, dtype=np.float32)) if not isinstance(a, torch.Tensor) else a
        return t.to(device)

    @torch.no_grad()
    def predict(self, features: np.ndarray | torch.Tensor, glob: np.ndarray | torch.Tensor | None = None,
                meta: np.ndarray | torch.Tensor | None = None) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Raw outputs for a batch of encoded positions ``(B, C, H, W)`` (and, for a model with global inputs, their
        ``glob`` ``(B, G)``; for a conditioned model, their metadata rows ``meta`` ``(B, 192)``): policy
        log-probabilities ``(B, size*size+1)`` (or None) and values ``(B,)`` in [-1, 1] (or None)."""
        x = torch.as_tensor(np.asarray(features)) if not isinstance(features, torch.Tensor) else features
        g = self._tensor(glob, self.device) if self.num_globals and glob is not None else None
        m = self._tensor(meta, self.device) if meta is not None else None
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.amp):
            p, v = self.model(x.to(self.device), glob=g, meta=m)
        logp = torch.log_softmax(p.float(), dim=1).cpu().numpy() if p is not None else None
        val = v.float().cpu().numpy() if v is not None else None
        return logp, val

    @property
    def has_aux(self) -> bool:
        """The network predicts the final ownership and score too (``zero`` models: :meth:`predict_aux`)."""
        return bool(getattr(self.model, "has_aux", False)) and self.has_value

    @torch.no_grad()
    def predict_aux(self, features: np.ndarray, glob: np.ndarray | None = None,
                    meta: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`predict` plus the auxiliary heads of a model that has them (:attr:`has_aux`): policy
        log-probabilities ``(B, size²+1)``, values ``(B,)``, ownership ``(B, size, size)`` in [-1, 1] and score
        ``(B,)`` in points, all from the view of the player to move. ValueError for a model without them."""
        if not self.has_aux:
            raise ValueError("this agent has no ownership and score heads (a zero model trained on self-play has)")
        x = torch.as_tensor(np.asarray(features))
        g = self._tensor(glob, self.device) if self.num_globals and glob is not None else None
        m = self._tensor(meta, self.device) if meta is not None else None
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.amp):
            p, v, own, score = self.model.forward_aux(x.to(self.device), glob=g, meta=m)
        return (torch.log_softmax(p.float(), dim=1).cpu().numpy(), v.float().cpu().numpy().reshape(-1),
                own.float().cpu().numpy(), score.float().cpu().numpy().reshape(-1))

    def _check_state(self, state) -> None:
        if state.size != self.board_size:
            raise ValueError(f"agent plays {self.board_size}x{self.board_size}, the position is "
                             f"{state.size}x{state.size}")

    def _encode(self, state, metadata=None) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        self._check_state(state)
        glob = self.global_inputs(state)
        row = self.metadata_row(state, metadata)
        return (self.encoder.encode(state)[None], None if glob is None else glob[None],
                None if row is None else row[None])

    def policy(self, state, metadata=None) -> np.ndarray:
        """Probabilities over the ``size*size+1`` moves (pass last) for the player to move; illegal
        moves get 0 and the rest is renormalised. ``metadata``: what :meth:`metadata_row` takes (a conditioned
        agent needs it)."""
        if not self.has_policy:
            raise ValueError("this agent has no policy head")
        logp, _ = self.predict(*self._encode(state, metadata))
        probs = np.exp(logp[0].astype(np.float64))
        mask = np.zeros(self.num_moves, dtype=bool)
        mask[state.legal_moves()] = True
        probs[~mask] = 0.0
        total = probs.sum()
        if total <= 0 or not np.isfinite(total):  # every legal move underflowed: uniform over legal moves
            probs = mask.astype(np.float64)
            total = probs.sum()
        return probs / total

    def value(self, state, metadata=None) -> float:
        """Expected outcome in [-1, 1] from the view of the player to move (needs a value head; ``metadata`` as
        :meth:`policy`)."""
        if not self.has_value:
            raise ValueError("this agent has no value head")
        _, v = self.predict(*self._encode(state, metadata))
        return float(v[0])

    def select_move(self, state, temperature: float = 0.0, rng: np.random.Generator | None = None,
                    metadata=None) -> int:
        """A legal move (flat index, pass = size*size): the most probable at ``temperature`` 0,
        else sampled from probabilities sharpened/flattened by ``1/temperature`` (``metadata`` as :meth:`policy`)."""
        probs = self.policy(state, metadata)
        if temperature <= 0:
            return int(np.argmax(probs))
        rng = rng or np.random.default_rng()
        with np.errstate(divide="ignore"):
            logits = np.where(probs > 0, np.log(probs) / temperature, -np.inf)
        w = np.exp(logits - logits.max())
        return int(rng.choice(self.num_moves, p=w / w.sum()))


def value_head_warning(agent: Agent) -> str | None:
    """One line when ``agent``'s value head predicted its validation games' outcomes no better (no lower MSE) than
    the komi/handicap baseline its file records beside it, else None (:func:`value_record_warning`). A search whose
    leaf values come from such a head ranks moves by noise and can play worse than the raw policy; the line says
    so. An agent without a value head, or whose file records no such comparison, gives None."""
    if not agent.has_value:
        return None
    return value_record_warning(agent.meta)


def agent_from_parts(meta: dict, tensors: dict[str, torch.Tensor], device: str | torch.device = "cpu",
                     path=None) -> Agent:
    """Rebuild the model and encoder described by ``meta`` and load ``tensors`` into it."""
    from gotk.encoders import get_encoder

    m = meta["model"]
    if m["name"] in TABLE_MODELS:
        raise AgentError(f"is a {m['name']} policy, not a network: give it as --rollout-policy (gotk eval evaluates "
                         f"it too)", path)
    got = {k: list(v.shape) for k, v in tensors.items()}
    _check_hparams(meta, got, path)
    num_globals = len(meta["globals"]["names"]) if meta.get("globals") else 0
    md = meta.get("metadata")
    cond = {"num_metadata": md["size"], "metadata_channels": md["channels"]} if md else {}
    try:
        with torch.device("meta"):  # shapes only, no memory: compared with the weights before a real build
            shell = build_model(m["name"], meta["num_planes"], meta["board_size"], head=m["head"],
                                num_globals=num_globals, **cond, **m["hparams"])
    except (ValueError, TypeError, RuntimeError, OverflowError) as e:
        raise AgentError(f"cannot build model from agent.json: {e}", path) from e
    expected = {k: list(v.shape) for k, v in shell.state_dict().items()}
    del shell
    if expected != got:
        missing = sorted(set(expected) - set(got))
        extra = sorted(set(got) - set(expected))
        wrong = sorted(k for k in set(expected) & set(got) if expected[k] != got[k])
        raise AgentError(f"weights do not fit model {m['name']!r}: missing {missing[:5]}, unexpected {extra[:5]}, "
                         f"wrong shape {wrong[:5]}", path)
    model = build_model(m["name"], meta["num_planes"], meta["board_size"], head=m["head"], num_globals=num_globals,
                        **cond, **m["hparams"])
    model.load_state_dict(tensors, strict=True)
    enc_desc = meta["encoder"]
    try:
        encoder = get_encoder(enc_desc["name"], meta["board_size"], **(enc_desc.get("options") or {}))
    except Exception as e:
        raise AgentError(f"cannot build encoder {enc_desc.get('name')!r}: {e}", path) from e
    if enc_desc.get("version") not in (None, encoder.version):
        raise AgentError(f"agent was trained with encoder {enc_desc['name']} version {enc_desc['version']}, "
                         f"this gotk has version {encoder.version}", path)
    if encoder.num_planes != meta["num_planes"]:
        raise AgentError(f"encoder {enc_desc['name']} gives {encoder.num_planes} planes, the model takes "
                         f"{meta['num_planes']}", path)
    return Agent(model, encoder, meta, device)


_SAVED_KEYS = {"format", "format_version", "gotk_version", "created_utc", "model", "board_size", "num_planes",
               "encoder", "data_manifest_sha256", "metrics", "weights", "globals", "metadata"}


def convert_agent(path: str | os.PathLike, out: str | os.PathLike, fp16: bool = True,
                  search: dict | None = None) -> Path:
    """Rewrite the agent at ``path`` (or a built-in one) to ``out`` with float16 (or float32) weights, keeping its
    description, metrics and every other field of ``agent.json``; ``search`` (:data:`gotk.search.config.SEARCH_KEYS`) is
    merged into its search settings, where a value of None removes that key. Raises :class:`AgentError` for an
    unusable agent and ValueError for weights that overflow float16 or bad search settings."""
    meta, tensors = read_agent_files(path)
    agent = agent_from_parts(meta, tensors, "cpu", path)
    extra = {k: v for k, v in meta.items() if k not in _SAVED_KEYS}
    if search:
        merged = {k: v for k, v in {**extra.get("search", {}), **search}.items() if v is not None}
        if not search_settings_ok(merged):
            raise ValueError(f"search settings must map setting names to numbers or text, not {search!r}")
        extra["search"] = merged
        if not merged:
            del extra["search"]
    m = meta["model"]
    return save_agent(out, agent.model, m["name"], m["hparams"], meta["encoder"], meta.get("data_manifest_sha256"),
                      meta.get("metrics"), extra=extra, fp16=fp16)


def load_agent(path: str | os.PathLike, device: str | torch.device = "cpu") -> Agent:
    """Load and verify an agent package (``agent.gotk``). Raises :class:`AgentError` when it is not usable."""
    meta, tensors = read_agent_files(path)
    return agent_from_parts(meta, tensors, device, path)


__all__ = ["Agent", "agent_from_parts", "convert_agent", "load_agent", "value_head_warning"]
