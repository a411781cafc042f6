"""Agent packages: one zip file ``*.gotk`` holding ``agent.json`` and ``weights.safetensors``.

``agent.json`` says how to rebuild the network (model name, head, hyper-parameters), how to encode
positions (the encoder's :meth:`~gotk.encoders.base.Encoder.describe`), the board size, the sha256 of
the training data manifest, metrics at save time, and the sha256 plus name/shape of every weight
tensor. Loading never unpickles anything: the zip CRCs, the JSON fields, the weights' sha256, the
safetensors header and every tensor's name and shape are checked, and any mismatch raises
:class:`AgentError` with a clear message.
"""

from __future__ import annotations

import json
import os
import time
import zipfile
import zlib
from pathlib import Path

import numpy as np
import torch

from gotk import __version__
from gotk.atomic import atomic_path
from gotk.errors import GotkError
from gotk.hashing import sha256_bytes
from gotk.nets.networks import HEADS, MODELS, GoNet, build_model

FORMAT = "gotk-agent"
FORMAT_VERSION = 1
AGENT_JSON = "agent.json"
WEIGHTS = "weights.safetensors"
MAX_JSON_BYTES = 16 << 20


class AgentError(GotkError):
    """An agent file that cannot be used (``bad_agent``): not a zip, tampered, truncated, inconsistent."""

    def __init__(self, message: str, path: str | os.PathLike | None = None) -> None:
        super().__init__("bad_agent", f"{path}: {message}" if path else message)


def save_agent(path: str | os.PathLike, model: GoNet, model_name: str, hparams: dict, encoder: dict,
               data_manifest_sha256: str | None = None, metrics: dict | None = None,
               extra: dict | None = None) -> Path:
    """Write ``model`` as an agent package at ``path`` (atomically: a temporary file then a rename)."""
    from safetensors.torch import save

    tensors = {k: v.detach().to("cpu").contiguous().clone() for k, v in model.state_dict().items()}
    blob = save(tensors)
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "gotk_version": __version__,
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "model": {"name": model_name, "head": model.head, "hparams": dict(hparams)},
        "board_size": model.board_size,
        "num_planes": model.num_planes,
        "encoder": encoder,
        "data_manifest_sha256": data_manifest_sha256,
        "metrics": metrics or {},
        "weights": {
            "file": WEIGHTS,
            "sha256": sha256_bytes(blob),
            "tensors": {k: list(v.shape) for k, v in tensors.items()},
        },
        **(extra or {}),
    }
    path = Path(path)
    with atomic_path(path) as tmp, zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(AGENT_JSON, json.dumps(meta, indent=2, sort_keys=True))
        zf.writestr(WEIGHTS, blob)
    return path


def _require(cond: bool, message: str, path) -> None:
    if not cond:
        raise AgentError(message, path)


def _validate_meta(meta: object, path) -> dict:
    _require(isinstance(meta, dict), "agent.json is not a JSON object", path)
    assert isinstance(meta, dict)
    _require(meta.get("format") == FORMAT, f"agent.json format is {meta.get('format')!r}, not {FORMAT!r}", path)
    ver = meta.get("format_version")
    _require(isinstance(ver, int) and 1 <= ver <= FORMAT_VERSION,
             f"unsupported agent format_version {ver!r} (this gotk reads 1..{FORMAT_VERSION})", path)
    model = meta.get("model")
    _require(isinstance(model, dict), "agent.json has no 'model' object", path)
    _require(model.get("name") in MODELS, f"unknown model {model.get('name')!r}", path)
    _require(model.get("head") in HEADS, f"bad head {model.get('head')!r}", path)
    _require(isinstance(model.get("hparams"), dict), "model.hparams is not an object", path)
    size = meta.get("board_size")
    _require(isinstance(size, int) and 2 <= size <= 25, f"bad board_size {size!r}", path)
    planes = meta.get("num_planes")
    _require(isinstance(planes, int) and planes >= 1, f"bad num_planes {planes!r}", path)
    enc = meta.get("encoder")
    _require(isinstance(enc, dict) and isinstance(enc.get("name"), str), "agent.json has no encoder description",
             path)
    _require(enc.get("num_planes") in (None, planes), "encoder num_planes differs from the model's", path)
    w = meta.get("weights")
    _require(isinstance(w, dict) and isinstance(w.get("sha256"), str) and isinstance(w.get("tensors"), dict),
             "agent.json has no weights sha256/tensors", path)
    return meta


def read_agent_files(path: str | os.PathLike) -> tuple[dict, dict[str, torch.Tensor]]:
    """Read and verify an agent package: ``(agent.json dict, {name: tensor})``. Raises :class:`AgentError`."""
    from safetensors import SafetensorError
    from safetensors.torch import load

    path = Path(path)
    if not path.is_file():
        raise AgentError("no such file", path)
    try:
        with zipfile.ZipFile(path) as zf:
            names = sorted(zf.namelist())
            _require(names == sorted([AGENT_JSON, WEIGHTS]),
                     f"expected exactly {AGENT_JSON} and {WEIGHTS} in the zip, found {names}", path)
            info = zf.getinfo(AGENT_JSON)
            _require(info.file_size <= MAX_JSON_BYTES, "agent.json is too large", path)
            raw_json = zf.read(AGENT_JSON)  # zipfile checks each member's CRC-32 while reading
            blob = zf.read(WEIGHTS)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError, ValueError) as e:
        raise AgentError(f"not a readable agent zip (truncated or corrupted?): {e}", path) from e
    try:
        meta = json.loads(raw_json.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise AgentError(f"agent.json is not valid JSON: {e}", path) from e
    meta = _validate_meta(meta, path)
    _require(sha256_bytes(blob) == meta["weights"]["sha256"],
             "weights.safetensors does not match the sha256 recorded in agent.json (tampered or corrupted)", path)
    try:
        tensors = load(blob)
    except (SafetensorError, ValueError, RuntimeError) as e:
        raise AgentError(f"weights.safetensors is invalid: {e}", path) from e
    expected = {k: list(v) for k, v in meta["weights"]["tensors"].items()}
    got = {k: list(v.shape) for k, v in tensors.items()}
    _require(got == expected, "weights.safetensors tensors differ from those listed in agent.json", path)
    return meta, tensors


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

    @property
    def has_policy(self) -> bool:
        return self.model.has_policy

    @property
    def has_value(self) -> bool:
        return self.model.has_value

    @property
    def name(self) -> str:
        return self.meta.get("model", {}).get("name", "agent")

    @torch.no_grad()
    def predict(self, features: np.ndarray | torch.Tensor) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Raw outputs for a batch of encoded positions ``(B, C, H, W)``: policy log-probabilities
        ``(B, size*size+1)`` (or None) and values ``(B,)`` in [-1, 1] (or None)."""
        x = torch.as_tensor(np.asarray(features)) if not isinstance(features, torch.Tensor) else features
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.amp):
            p, v = self.model(x.to(self.device))
        logp = torch.log_softmax(p.float(), dim=1).cpu().numpy() if p is not None else None
        val = v.float().cpu().numpy() if v is not None else None
        return logp, val

    def _check_state(self, state) -> None:
        if state.size != self.board_size:
            raise ValueError(f"agent plays {self.board_size}x{self.board_size}, the position is "
                             f"{state.size}x{state.size}")

    def _encode(self, state) -> np.ndarray:
        self._check_state(state)
        return self.encoder.encode(state)[None]

    def policy(self, state) -> np.ndarray:
        """Probabilities over the ``size*size+1`` moves (pass last) for the player to move; illegal
        moves get 0 and the rest is renormalised."""
        if not self.has_policy:
            raise ValueError("this agent has no policy head")
        logp, _ = self.predict(self._encode(state))
        probs = np.exp(logp[0].astype(np.float64))
        mask = np.zeros(self.num_moves, dtype=bool)
        mask[state.legal_moves()] = True
        probs[~mask] = 0.0
        total = probs.sum()
        if total <= 0 or not np.isfinite(total):  # every legal move underflowed: uniform over legal moves
            probs = mask.astype(np.float64)
            total = probs.sum()
        return probs / total

    def value(self, state) -> float:
        """Expected outcome in [-1, 1] from the view of the player to move (needs a value head)."""
        if not self.has_value:
            raise ValueError("this agent has no value head")
        _, v = self.predict(self._encode(state))
        return float(v[0])

    def select_move(self, state, temperature: float = 0.0, rng: np.random.Generator | None = None) -> int:
        """A legal move (flat index, pass = size*size): the most probable at ``temperature`` 0,
        else sampled from probabilities sharpened/flattened by ``1/temperature``."""
        probs = self.policy(state)
        if temperature <= 0:
            return int(np.argmax(probs))
        rng = rng or np.random.default_rng()
        with np.errstate(divide="ignore"):
            logits = np.where(probs > 0, np.log(probs) / temperature, -np.inf)
        w = np.exp(logits - logits.max())
        return int(rng.choice(self.num_moves, p=w / w.sum()))


def agent_from_parts(meta: dict, tensors: dict[str, torch.Tensor], device: str | torch.device = "cpu",
                     path=None) -> Agent:
    """Rebuild the model and encoder described by ``meta`` and load ``tensors`` into it."""
    from gotk.encoders import get_encoder

    m = meta["model"]
    try:
        model = build_model(m["name"], meta["num_planes"], meta["board_size"], head=m["head"], **m["hparams"])
    except (ValueError, TypeError) as e:
        raise AgentError(f"cannot build model from agent.json: {e}", path) from e
    expected = {k: list(v.shape) for k, v in model.state_dict().items()}
    got = {k: list(v.shape) for k, v in tensors.items()}
    if expected != got:
        missing = sorted(set(expected) - set(got))
        extra = sorted(set(got) - set(expected))
        wrong = sorted(k for k in set(expected) & set(got) if expected[k] != got[k])
        raise AgentError(f"weights do not fit model {m['name']!r}: missing {missing[:5]}, unexpected {extra[:5]}, "
                         f"wrong shape {wrong[:5]}", path)
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


def load_agent(path: str | os.PathLike, device: str | torch.device = "cpu") -> Agent:
    """Load and verify an agent package (``agent.gotk``). Raises :class:`AgentError` when it is not usable."""
    meta, tensors = read_agent_files(path)
    return agent_from_parts(meta, tensors, device, path)


__all__ = ["Agent", "AgentError", "save_agent", "load_agent", "read_agent_files", "agent_from_parts"]
