"""The agent file format: one zip file ``*.gotk`` holding ``agent.json`` and ``weights.safetensors``; written by
:func:`save_agent`, read and checked by :func:`read_agent_files` (the runtime agent built from it:
:mod:`gotk.nets.agent`).

``agent.json`` says how to rebuild the network (model name, head, hyper-parameters), how to encode positions (the
encoder's :meth:`~gotk.encoders.base.Encoder.describe`), the board size, the sha256 of the training data manifest,
metrics at save time, and the sha256 plus name/shape of every weight tensor. An agent with a value head also records
``value_baseline``: the komi/handicap baseline fit on its training games
(:class:`gotk.train.value_eval.KomiHandicapBaseline`) with the validation MSE of both the value head and that
baseline (:func:`value_head_warning` compares them). An optional ``search`` object holds the search settings the
agent plays best with (:data:`gotk.search.config.SEARCH_KEYS`: the root rule ``search`` it was trained with,
``batch``, ``c_puct``, ``fpu``, ``lcb``, Gumbel's ``considered``, ``c_visit``, ``c_scale``, the ``pass_rule``),
which a search built for it takes unless told otherwise (:func:`gotk.play.factory.search_player`). A model built
with global inputs records their description under ``globals`` (:func:`gotk.encoders.global_inputs.describe`: the
names in order, the komi scale); the agent computes them for every position it evaluates
(:meth:`Agent.global_inputs`, from the position's komi and colour to move). A model conditioned on metadata
(KataGo's human-SL inputs) records ``metadata`` (:func:`gotk.nets.metadata_encoder.describe`: ``size`` 192,
``layout`` ``katago-sgfmetadata-v1``, the encoder's ``channels``); its callers give the metadata of every position
(:meth:`Agent.metadata_row`: a game's :class:`~gotk.encoders.metadata_inputs.Metadata` or a named profile, seen from
the player to move). Loading never unpickles anything: the zip CRCs, the JSON fields, the weights' sha256, the
safetensors header and every tensor's name and shape are checked, and any mismatch raises :class:`AgentError` with a
clear message.

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

import torch

from gotk import __version__
from gotk.atomic import atomic_path
from gotk.encoders import global_inputs as GI
from gotk.encoders import metadata_inputs as MI
from gotk.errors import GotkError
from gotk.hashing import sha256_bytes
from gotk.nets import metadata_encoder as ME
from gotk.nets.networks import HEADS, MODELS, GoNet

FORMAT = "gotk-agent"
FORMAT_VERSION = 1
AGENT_JSON = "agent.json"
WEIGHTS = "weights.safetensors"
MAX_JSON_BYTES = 16 << 20
MAX_PARAMETERS = 100_000_000  # ~400 MB of float32; gotk's largest stock models hold a few million
MAX_TENSORS = 4096
MAX_WEIGHTS_BYTES = 8 * MAX_PARAMETERS + (16 << 20)  # float64 at worst, plus the safetensors header
#: models stored as weight tables rather than a network (no GoNet to build): the fast rollout policy
TABLE_MODELS = ("rollout",)
BUILTIN_DIR = Path(__file__).resolve().parent.parent / "data" / "agents"
# name -> file in BUILTIN_DIR (docs/recipes.md): kgs-human is kgs conditioned on who plays (docs/analysis.md)
# kgs-rollout is not a network: AlphaGo's fast rollout policy learnt from the same games (gotk.train.rollout)
BUILTIN_AGENTS = {"kgs": "kgs.gotk", "kgs-lz": "kgs-lz.gotk", "kgs-human": "kgs-human.gotk",
                  "kgs-rollout": "kgs-rollout.gotk"}


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
    return _write_zip(path, meta, blob)


def _write_zip(path: str | os.PathLike, meta: dict, blob: bytes) -> Path:
    path = Path(path)
    with atomic_path(path) as tmp, zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(AGENT_JSON, json.dumps(meta, indent=2, sort_keys=True))
        zf.writestr(WEIGHTS, blob)
    return path


def save_tables(path: str | os.PathLike, meta: dict, tables: dict) -> Path:
    """Write an agent package of a model that is not a network (``meta['model']['name']`` in
    :data:`TABLE_MODELS`: the rollout policy's weight tables, :mod:`gotk.train.rollout`): ``meta`` (model, board
    size, encoder, metrics) completed with the format fields and the tables' sha256, atomically."""
    from safetensors.numpy import save

    blob = save({k: v for k, v in tables.items()})
    meta = {"format": FORMAT, "format_version": FORMAT_VERSION, "gotk_version": __version__,
            "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **meta,
            "weights": {"file": WEIGHTS, "sha256": sha256_bytes(blob),
                        "tensors": {k: list(v.shape) for k, v in tables.items()}}}
    return _write_zip(path, meta, blob)


def require(cond: bool, message: str, path) -> None:
    if not cond:
        raise AgentError(message, path)


def _validate_meta(meta: object, path) -> dict:
    require(isinstance(meta, dict), "agent.json is not a JSON object", path)
    assert isinstance(meta, dict)
    require(meta.get("format") == FORMAT, f"agent.json format is {meta.get('format')!r}, not {FORMAT!r}", path)
    ver = meta.get("format_version")
    require(isinstance(ver, int) and 1 <= ver <= FORMAT_VERSION,
             f"unsupported agent format_version {ver!r} (this gotk reads 1..{FORMAT_VERSION})", path)
    model = meta.get("model")
    require(isinstance(model, dict), "agent.json has no 'model' object", path)
    require(model.get("name") in MODELS or model.get("name") in TABLE_MODELS, f"unknown model {model.get('name')!r}",
             path)
    require(model.get("head") in HEADS, f"bad head {model.get('head')!r}", path)
    require(isinstance(model.get("hparams"), dict), "model.hparams is not an object", path)
    size = meta.get("board_size")
    require(isinstance(size, int) and 2 <= size <= 25, f"bad board_size {size!r}", path)
    planes = meta.get("num_planes")
    require(isinstance(planes, int) and planes >= 1, f"bad num_planes {planes!r}", path)
    enc = meta.get("encoder")
    require(isinstance(enc, dict) and isinstance(enc.get("name"), str), "agent.json has no encoder description",
             path)
    require(enc.get("num_planes") in (None, planes), "encoder num_planes differs from the model's", path)
    w = meta.get("weights")
    require(isinstance(w, dict) and isinstance(w.get("sha256"), str) and isinstance(w.get("tensors"), dict),
             "agent.json has no weights sha256/tensors", path)
    glob = meta.get("globals")
    require(glob is None or (isinstance(glob, dict) and isinstance(glob.get("names"), list)),
             "agent.json 'globals' must be an object with a list of 'names'", path)
    require(glob is None or (glob["names"] == list(GI.NAMES) and glob.get("komi_scale") == GI.KOMI_SCALE),
             f"the agent takes global inputs {glob and glob.get('names')!r} (komi scale "
             f"{glob and glob.get('komi_scale')!r}); this gotk computes {list(GI.NAMES)} (komi scale "
             f"{GI.KOMI_SCALE})", path)
    md = meta.get("metadata")
    require(md is None or (isinstance(md, dict) and md.get("size") == MI.NUM_CHANNELS and md.get("layout") == ME.LAYOUT
                            and isinstance(md.get("channels"), int) and not isinstance(md.get("channels"), bool)
                            and md["channels"] >= 1),
             f"agent.json 'metadata' must be {{'size': {MI.NUM_CHANNELS}, 'layout': {ME.LAYOUT!r}, 'channels': n}}, "
             f"not {md!r}", path)
    require(search_settings_ok(meta.get("search", {})),
             f"agent.json 'search' must map setting names to numbers or text, not {meta.get('search')!r}", path)
    return meta


def search_settings_ok(search: object) -> bool:
    """The agent file's own check of ``search``: names to finite numbers or text. Which names, and their types, are
    the search's (:func:`gotk.search.config.agent_settings_error`, checked where a search takes them)."""
    def scalar(v: object) -> bool:
        return isinstance(v, str) or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))

    return isinstance(search, dict) and all(isinstance(k, str) and scalar(v) for k, v in search.items())


def resolve_agent(path: str | os.PathLike) -> Path:
    """The file an agent argument names: the path as given when it exists, else the packaged file of a
    built-in agent (:data:`BUILTIN_AGENTS`: ``kgs``, ``kgs-lz``, Leela Zero's network on its own planes, and
    ``kgs-human``, ``kgs`` conditioned on who plays),
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
            require(names == sorted([AGENT_JSON, WEIGHTS]),
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
    require(digest == meta["weights"]["sha256"],
             "weights.safetensors does not match the sha256 recorded in agent.json (tampered or corrupted)", path)
    require(_header_shapes(blob, path) == shapes,
             "weights.safetensors tensors differ from those listed in agent.json", path)
    try:
        tensors = load(blob)
    except (SafetensorError, ValueError, RuntimeError) as e:
        raise AgentError(f"weights.safetensors is invalid: {e}", path) from e
    del blob
    got = {k: list(v.shape) for k, v in tensors.items()}
    require(got == shapes, "weights.safetensors tensors differ from those listed in agent.json", path)
    bad = sorted(k for k, v in tensors.items() if v.is_floating_point() and not bool(torch.isfinite(v).all()))
    require(not bad, f"weights hold NaN or infinite values (tensors {bad[:5]}): refused", path)
    return meta, tensors


def _read_member(zf: zipfile.ZipFile, name: str, cap: int, path) -> tuple[bytes, str]:
    """``(bytes, sha256)`` of a zip member read as a stream, refused past ``cap`` bytes whatever its header
    says (the hash is computed while reading)."""
    info = zf.getinfo(name)
    require(info.file_size <= cap, f"{name} is {info.file_size} bytes, over the {cap}-byte limit", path)
    h = hashlib.sha256()
    parts: list[bytes] = []
    total = 0
    with zf.open(info) as f:
        while chunk := f.read(1 << 20):
            total += len(chunk)
            require(total <= cap, f"{name} inflates past the {cap}-byte limit", path)
            h.update(chunk)
            parts.append(chunk)
    return b"".join(parts), h.hexdigest()


def _check_tensor_list(listed: dict, path) -> dict[str, list[int]]:
    """agent.json's tensor shapes, checked against :data:`MAX_TENSORS` and :data:`MAX_PARAMETERS`."""
    require(0 < len(listed) <= MAX_TENSORS, f"agent.json lists {len(listed)} tensors (1..{MAX_TENSORS} allowed)",
             path)
    shapes: dict[str, list[int]] = {}
    total = 0
    for k, v in listed.items():
        require(isinstance(v, list) and len(v) <= 8 and all(isinstance(d, int) and 0 <= d for d in v),
                 f"agent.json tensor {str(k)[:80]!r} has a bad shape", path)
        shapes[k] = list(v)
        total += math.prod(v)
        require(total <= MAX_PARAMETERS, f"the weights hold more than {MAX_PARAMETERS:,} parameters", path)
    return shapes


def _header_shapes(blob: bytes, path) -> dict[str, list[int]]:
    """The tensor shapes in a safetensors header (8-byte little-endian length, then JSON), read before
    any tensor is materialised."""
    require(len(blob) >= 8, "weights.safetensors is truncated", path)
    n = int.from_bytes(blob[:8], "little")
    require(n <= min(len(blob) - 8, MAX_JSON_BYTES), "weights.safetensors header is too large", path)
    try:
        header = json.loads(blob[8:8 + n])
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise AgentError(f"weights.safetensors header is not JSON: {str(e)[:200]}", path) from e
    require(isinstance(header, dict), "weights.safetensors header is not an object", path)
    try:
        return {k: list(v["shape"]) for k, v in header.items() if k != "__metadata__"}
    except (TypeError, KeyError) as e:
        raise AgentError(f"weights.safetensors header is malformed: {e}", path) from e


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


__all__ = ["AGENT_JSON", "BUILTIN_AGENTS", "BUILTIN_DIR", "FORMAT", "FORMAT_VERSION", "MAX_PARAMETERS", "WEIGHTS",
           "AgentError", "builtin_agent_name", "read_agent_files", "require", "resolve_agent", "save_agent",
           "search_settings_ok",
           "value_record_warning"]
