"""Agent packages: one zip file ``*.gotk`` holding ``agent.json`` and ``weights.safetensors``.

``agent.json`` says how to rebuild the network (model name, head, hyper-parameters), how to encode
positions (the encoder's :meth:`~gotk.encoders.base.Encoder.describe`), the board size, the sha256 of
the training data manifest, metrics at save time, and the sha256 plus name/shape of every weight
tensor. An agent with a value head also records ``value_baseline``: the komi/handicap baseline fit on its
training games (:class:`gotk.train.value_eval.KomiHandicapBaseline`) with the validation MSE of both the
value head and that baseline (:func:`value_head_warning` compares them). An optional ``search`` object holds the
search settings the agent plays best with (:data:`SEARCH_KEYS`: the root rule ``search`` it was trained with,
``batch``, ``c_puct``, ``fpu``, ``lcb``, Gumbel's ``considered``, ``c_visit``, ``c_scale``, the ``pass_rule``), which a
search built for it takes unless told otherwise (:func:`gotk.search.factory.make_search_player`). A model built with
global inputs records their description under ``globals`` (:func:`gotk.encoders.global_inputs.describe`: the names
in order, the komi scale); the agent computes them for every position it evaluates (:meth:`Agent.global_inputs`,
from the position's komi and colour to move). A model conditioned on metadata (KataGo's human-SL inputs) records
``metadata`` (:func:`gotk.nets.metadata_encoder.describe`: ``size`` 192, ``layout`` ``katago-sgfmetadata-v1``,
the encoder's ``channels``); its callers give the metadata of every position (:meth:`Agent.metadata_row`: a game's
:class:`~gotk.encoders.metadata_inputs.Metadata` or a named profile, seen from the player to move). Loading never
unpickles anything: the zip CRCs, the JSON fields, the weights' sha256, the safetensors header and every
tensor's name and shape are checked, and any mismatch raises :class:`AgentError` with a clear message.

Hostile files cost no more than a bounded amount of memory and time: members are read as capped
streams (the sha256 computed as they stream), the tensor list must fit a parameter budget
(:data:`MAX_PARAMETERS`), the hyper-parameters must be consistent with the tensor shapes and the
model is first built on PyTorch's ``meta`` device (no memory) and compared with the shapes before any
real allocation; non-finite weights are refused.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
import zipfile
import zlib
from pathlib import Path

import numpy as np
import torch

from gotk import __version__
from gotk.atomic import atomic_path
from gotk.encoders import global_inputs as GI
from gotk.encoders import metadata_inputs as MI
from gotk.errors import GotkError
from gotk.hashing import sha256_bytes
from gotk.nets import metadata_encoder as ME
from gotk.nets.networks import HEADS, MODELS, GoNet, build_model

FORMAT = "gotk-agent"
FORMAT_VERSION = 1
AGENT_JSON = "agent.json"
WEIGHTS = "weights.safetensors"
MAX_JSON_BYTES = 16 << 20
MAX_PARAMETERS = 100_000_000  # ~400 MB of float32; gotk's largest stock models hold a few million
MAX_TENSORS = 4096
MAX_WEIGHTS_BYTES = 8 * MAX_PARAMETERS + (16 << 20)  # float64 at worst, plus the safetensors header
BUILTIN_DIR = Path(__file__).resolve().parent.parent / "data" / "agents"
BUILTIN_AGENTS = {"kgs": "kgs.gotk", "kgs-lz": "kgs-lz.gotk"}  # name -> file in BUILTIN_DIR (docs/recipes.md)
# agent.json "search": what a search takes (gotk.search.config.SearchConfig's fields of these names)
SEARCH_KEYS: dict[str, type] = {"search": str, "batch": int, "c_puct": float, "fpu": float, "lcb": float,
                                "considered": int, "c_visit": float, "c_scale": float, "pass_rule": str}


class AgentError(GotkError):
    """An agent file that cannot be used (``bad_agent``): not a zip, tampered, truncated, inconsistent."""

    def __init__(self, message: str, path: str | os.PathLike | None = None) -> None:
        super().__init__("bad_agent", f"{path}: {message}" if path else message)


def save_agent(path: str | os.PathLike, model: GoNet, model_name: str, hparams: dict, encoder: dict,
               data_manifest_sha256: str | None = None, metrics: dict | None = None,
               extra: dict | None = None, fp16: bool = False) -> Path:
    """Write ``model`` as an agent package at ``path`` (atomically: a temporary file then a rename).

    ``fp16`` stores the floating-point tensors as float16 (half the file; what the shipped agents use). Loading
    casts them back into the float32 model, so an fp16 file plays as its rounded float32 weights."""
    from safetensors.torch import save

    def stored(v: torch.Tensor) -> torch.Tensor:
        v = v.detach().to("cpu")
        return (v.half() if fp16 and v.is_floating_point() else v).contiguous().clone()

    tensors = {k: stored(v) for k, v in model.state_dict().items()}
    if fp16:
        over = sorted(k for k, v in model.state_dict().items() if v.is_floating_point()
                      and bool(torch.isfinite(v).all()) and not bool(torch.isfinite(tensors[k]).all()))
        if over:
            raise ValueError(f"weights {over[:5]} overflow float16: save this agent in float32")
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
    if model.num_globals:
        meta["globals"] = GI.describe()
    if model.num_metadata:
        meta["metadata"] = ME.describe(model.metadata_channels)
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
    glob = meta.get("globals")
    _require(glob is None or (isinstance(glob, dict) and isinstance(glob.get("names"), list)),
             "agent.json 'globals' must be an object with a list of 'names'", path)
    _require(glob is None or (glob["names"] == list(GI.NAMES) and glob.get("komi_scale") == GI.KOMI_SCALE),
             f"the agent takes global inputs {glob and glob.get('names')!r} (komi scale "
             f"{glob and glob.get('komi_scale')!r}); this gotk computes {list(GI.NAMES)} (komi scale "
             f"{GI.KOMI_SCALE})", path)
    md = meta.get("metadata")
    _require(md is None or (isinstance(md, dict) and md.get("size") == MI.NUM_CHANNELS and md.get("layout") == ME.LAYOUT
                            and isinstance(md.get("channels"), int) and not isinstance(md.get("channels"), bool)
                            and md["channels"] >= 1),
             f"agent.json 'metadata' must be {{'size': {MI.NUM_CHANNELS}, 'layout': {ME.LAYOUT!r}, 'channels': n}}, "
             f"not {md!r}", path)
    _require(_search_settings_ok(meta.get("search", {})),
             f"agent.json 'search' must map {', '.join(SEARCH_KEYS)} to values of their types, not "
             f"{meta.get('search')!r}", path)
    return meta


def _search_settings_ok(search: object) -> bool:
    def number(v: object, kind: type) -> bool:
        if kind is str:
            return isinstance(v, str)
        return (isinstance(v, int) if kind is int else isinstance(v, (int, float))) and not isinstance(v, bool) \
            and math.isfinite(v)

    return isinstance(search, dict) and all(k in SEARCH_KEYS and number(v, SEARCH_KEYS[k]) for k, v in search.items())


def resolve_agent(path: str | os.PathLike) -> Path:
    """The file an agent argument names: the path as given when it exists, else the packaged file of a
    built-in agent (:data:`BUILTIN_AGENTS`: ``kgs``, and ``kgs-lz``, Leela Zero's network on its own planes),
    else the path as given (reading it then says there is no such file). A file of that name in the working
    folder wins over a built-in agent."""
    p = Path(path)
    if not p.exists() and str(path) in BUILTIN_AGENTS:
        return BUILTIN_DIR / BUILTIN_AGENTS[str(path)]
    return p


def builtin_agent_name(path: str | os.PathLike) -> str | None:
    """The built-in agent's name when ``path`` resolves to one (:func:`resolve_agent`), else None."""
    return str(path) if str(path) in BUILTIN_AGENTS and resolve_agent(path) != Path(path) else None


def read_agent_files(path: str | os.PathLike) -> tuple[dict, dict[str, torch.Tensor]]:
    """Read and verify an agent package: ``(agent.json dict, {name: tensor})``. ``path`` may name a built-in
    agent (:func:`resolve_agent`). Raises :class:`AgentError`."""
    from safetensors import SafetensorError
    from safetensors.torch import load

    path = resolve_agent(path)
    if not path.is_file():
        builtin = ", ".join(sorted(BUILTIN_AGENTS))
        raise AgentError(f"no such file (built-in agents: {builtin})", path)
    try:
        with zipfile.ZipFile(path) as zf:
            names = sorted(zf.namelist())
            _require(names == sorted([AGENT_JSON, WEIGHTS]),
                     f"expected exactly {AGENT_JSON} and {WEIGHTS} in the zip, found {names}", path)
            raw_json, _ = _read_member(zf, AGENT_JSON, MAX_JSON_BYTES, path)
            try:
                meta = json.loads(raw_json.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
                raise AgentError(f"agent.json is not valid JSON: {str(e)[:200]}", path) from e
            meta = _validate_meta(meta, path)
            shapes = _check_tensor_list(meta["weights"]["tensors"], path)
            budget = min(MAX_WEIGHTS_BYTES, 8 * sum(math.prod(s) for s in shapes.values()) + (16 << 20))
            blob, digest = _read_member(zf, WEIGHTS, budget, path)  # zipfile checks each CRC-32 while reading
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError, ValueError) as e:
        raise AgentError(f"not a readable agent zip (truncated or corrupted?): {e}", path) from e
    _require(digest == meta["weights"]["sha256"],
             "weights.safetensors does not match the sha256 recorded in agent.json (tampered or corrupted)", path)
    _require(_header_shapes(blob, path) == shapes,
             "weights.safetensors tensors differ from those listed in agent.json", path)
    try:
        tensors = load(blob)
    except (SafetensorError, ValueError, RuntimeError) as e:
        raise AgentError(f"weights.safetensors is invalid: {e}", path) from e
    del blob
    got = {k: list(v.shape) for k, v in tensors.items()}
    _require(got == shapes, "weights.safetensors tensors differ from those listed in agent.json", path)
    bad = sorted(k for k, v in tensors.items() if v.is_floating_point() and not bool(torch.isfinite(v).all()))
    _require(not bad, f"weights hold NaN or infinite values (tensors {bad[:5]}): refused", path)
    return meta, tensors


def _read_member(zf: zipfile.ZipFile, name: str, cap: int, path) -> tuple[bytes, str]:
    """``(bytes, sha256)`` of a zip member read as a stream, refused past ``cap`` bytes whatever its header
    says (the hash is computed while reading)."""
    info = zf.getinfo(name)
    _require(info.file_size <= cap, f"{name} is {info.file_size} bytes, over the {cap}-byte limit", path)
    h = hashlib.sha256()
    parts: list[bytes] = []
    total = 0
    with zf.open(info) as f:
        while chunk := f.read(1 << 20):
            total += len(chunk)
            _require(total <= cap, f"{name} inflates past the {cap}-byte limit", path)
            h.update(chunk)
            parts.append(chunk)
    return b"".join(parts), h.hexdigest()


def _check_tensor_list(listed: dict, path) -> dict[str, list[int]]:
    """agent.json's tensor shapes, checked against :data:`MAX_TENSORS` and :data:`MAX_PARAMETERS`."""
    _require(0 < len(listed) <= MAX_TENSORS, f"agent.json lists {len(listed)} tensors (1..{MAX_TENSORS} allowed)",
             path)
    shapes: dict[str, list[int]] = {}
    total = 0
    for k, v in listed.items():
        _require(isinstance(v, list) and len(v) <= 8 and all(isinstance(d, int) and 0 <= d for d in v),
                 f"agent.json tensor {str(k)[:80]!r} has a bad shape", path)
        shapes[k] = list(v)
        total += math.prod(v)
        _require(total <= MAX_PARAMETERS, f"the weights hold more than {MAX_PARAMETERS:,} parameters", path)
    return shapes


def _header_shapes(blob: bytes, path) -> dict[str, list[int]]:
    """The tensor shapes in a safetensors header (8-byte little-endian length, then JSON), read before
    any tensor is materialised."""
    _require(len(blob) >= 8, "weights.safetensors is truncated", path)
    n = int.from_bytes(blob[:8], "little")
    _require(n <= min(len(blob) - 8, MAX_JSON_BYTES), "weights.safetensors header is too large", path)
    try:
        header = json.loads(blob[8:8 + n])
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise AgentError(f"weights.safetensors header is not JSON: {str(e)[:200]}", path) from e
    _require(isinstance(header, dict), "weights.safetensors header is not an object", path)
    try:
        return {k: list(v["shape"]) for k, v in header.items() if k != "__metadata__"}
    except (TypeError, KeyError) as e:
        raise AgentError(f"weights.safetensors header is malformed: {e}", path) from e


def _check_hparams(meta: dict, shapes: dict[str, list[int]], path) -> None:
    """Hyper-parameters consistent with the tensor list before anything is built: every integer
    hyper-parameter (and ``num_planes``) at most the larger of the tensor count and the largest tensor
    dimension (a ``blocks: 100000`` or ``filters: 6000`` beside small weights is refused here)."""
    bound = max([len(shapes)] + [d for s in shapes.values() for d in s])
    values = {"num_planes": meta["num_planes"], **meta["model"]["hparams"]}
    if meta.get("metadata"):
        values["metadata channels"] = meta["metadata"]["channels"]
    for k, v in values.items():
        _require(not isinstance(v, float) or math.isfinite(v), f"hyper-parameter {k}={v!r} is not finite", path)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            _require(v <= bound, f"hyper-parameter {k}={v!r} does not fit the weights (at most {bound})", path)


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


def value_record_warning(meta: dict) -> str | None:
    """The one rule of :func:`value_head_warning` on an agent's ``agent.json`` (``meta``): a model with a value head
    whose ``value_baseline`` record's ``val_value_mse`` is not below its ``val_komi_handicap_mse`` gives the line,
    anything else None. ``gotk train`` prints it under its summary for the agent it wrote."""
    if meta.get("model", {}).get("head") not in ("value", "both"):
        return None
    rec = meta.get("value_baseline")
    if not isinstance(rec, dict):
        return None
    mse, base = rec.get("val_value_mse"), rec.get("val_komi_handicap_mse")
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in (mse, base)):
        return None
    if mse < base:
        return None
    return (f"the value head's validation MSE {mse:.4f} is no better than the komi/handicap baseline's {base:.4f}: "
            "a search relying on it may play worse than the policy alone (--visits 0)")


def agent_from_parts(meta: dict, tensors: dict[str, torch.Tensor], device: str | torch.device = "cpu",
                     path=None) -> Agent:
    """Rebuild the model and encoder described by ``meta`` and load ``tensors`` into it."""
    from gotk.encoders import get_encoder

    m = meta["model"]
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
    description, metrics and every other field of ``agent.json``; ``search`` (keys of :data:`SEARCH_KEYS`) is
    merged into its search settings, where a value of None removes that key. Raises :class:`AgentError` for an
    unusable agent and ValueError for weights that overflow float16 or bad search settings."""
    meta, tensors = read_agent_files(path)
    agent = agent_from_parts(meta, tensors, "cpu", path)
    extra = {k: v for k, v in meta.items() if k not in _SAVED_KEYS}
    if search:
        merged = {k: v for k, v in {**extra.get("search", {}), **search}.items() if v is not None}
        if not _search_settings_ok(merged):
            raise ValueError(f"search settings must map {', '.join(SEARCH_KEYS)} to values of their types, not "
                             f"{search!r}")
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


__all__ = ["Agent", "AgentError", "save_agent", "load_agent", "read_agent_files", "agent_from_parts",
           "value_head_warning", "value_record_warning", "resolve_agent", "convert_agent", "builtin_agent_name",
           "BUILTIN_AGENTS"]
