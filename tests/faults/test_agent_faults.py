"""Hostile agent files: every one is an AgentError (exit code 2 from the CLI), refused before
the model is built or any code runs, in bounded time and memory."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import torch

from gotk.encoders import get_encoder
from gotk.hashing import sha256_bytes
from gotk.nets import AgentError, build_model, load_agent, save_agent
from gotk.nets.agent_file import AGENT_JSON, WEIGHTS

from .conftest import peak_run
from .test_encode_faults import ENV

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def agent_file(tmp_path_factory) -> Path:
    torch.manual_seed(3)
    enc = get_encoder("sevenplane", 19)
    model = build_model("resnet", enc.num_planes, 19, head="both", blocks=1, filters=8)
    path = tmp_path_factory.mktemp("agent") / "agent.gotk"
    save_agent(path, model, "resnet", {"blocks": 1, "filters": 8}, enc.describe())
    load_agent(path)
    return path


def _parts(path: Path) -> tuple[dict, bytes]:
    with zipfile.ZipFile(path) as zf:
        return json.loads(zf.read(AGENT_JSON)), zf.read(WEIGHTS)


def _write(path: Path, meta: dict | bytes, blob: bytes, extra: dict | None = None, fix_sha: bool = True) -> Path:
    if isinstance(meta, dict) and fix_sha:
        meta["weights"]["sha256"] = sha256_bytes(blob)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(AGENT_JSON, meta if isinstance(meta, bytes) else json.dumps(meta))
        zf.writestr(WEIGHTS, blob)
        for k, v in (extra or {}).items():
            zf.writestr(k, v)
    return path


def _hparams(meta, **hp):
    meta["model"]["hparams"].update(hp)
    return meta


class _Boom:
    def __reduce__(self):
        return (Path("/tmp/gotk-pwned").touch, ())


def _nan_blob(blob: bytes) -> bytes:
    from safetensors.torch import load, save

    tensors = load(blob)
    name = sorted(k for k, v in tensors.items() if v.is_floating_point())[0]
    tensors[name] = tensors[name].clone()
    tensors[name].view(-1)[0] = float("nan")
    return save(tensors)


CASES = {
    "blocks_100000": lambda m, b: (_hparams(m, blocks=100000), b),
    "filters_6000": lambda m, b: (_hparams(m, filters=6000), b),
    "filters_1e6_float": lambda m, b: (_hparams(m, filters=1e6), b),
    "filters_nan": lambda m, b: (_hparams(m, filters=float("nan")), b),
    "num_planes_1e9": lambda m, b: ({**m, "num_planes": 10**9}, b),
    "deep_json": lambda m, b: (b"[" * 200000 + b"]" * 200000, b),
    "nan_weights": lambda m, b: (m, _nan_blob(b)),
    "pickle_weights": lambda m, b: (m, pickle.dumps(_Boom())),
    "sha_mismatch": lambda m, b: ({**m, "weights": {**m["weights"], "sha256": "0" * 64}}, b),
    "wrong_shapes": lambda m, b: (_hparams(m, filters=16), b),
    "tensor_list_lies": lambda m, b: ({**m, "weights": {**m["weights"], "tensors": {"x": [10**6, 10**6]}}}, b),
    "evil_model_name": lambda m, b: ({**m, "model": {**m["model"], "name": "__import__('os').system('id')"}}, b),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_agent_is_refused_quickly(agent_file, tmp_path, case):
    meta, blob = _parts(agent_file)
    meta2, blob2 = CASES[case](meta, blob)
    path = _write(tmp_path / f"{case}.gotk", meta2, blob2, fix_sha=case != "sha_mismatch")
    t = time.monotonic()
    with pytest.raises(AgentError):
        load_agent(path)
    assert time.monotonic() - t < 10
    assert not Path("/tmp/gotk-pwned").exists()


def test_zip_slip_and_extra_members_refused(agent_file, tmp_path):
    meta, blob = _parts(agent_file)
    for extra in ({"../../evil.py": b"print(1)"}, {"/abs.txt": b"x"}):
        with pytest.raises(AgentError):
            load_agent(_write(tmp_path / "slip.gotk", meta, blob, extra=extra))
    assert not (tmp_path.parent / "evil.py").exists()


def test_zero_bomb_weights_bounded(agent_file, tmp_path):
    """A weights member of 128 MiB of zeros (128 KB compressed) is refused while it streams, by its
    declared size first: a fresh process stays small (it peaked at 4.5 GB for 2 GiB)."""
    meta, _ = _parts(agent_file)
    path = tmp_path / "zeros.gotk"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr(AGENT_JSON, json.dumps(meta))
        info = zipfile.ZipInfo(WEIGHTS)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.file_size = 128 << 20
        with zf.open(info, "w") as f:
            for _ in range(128):
                f.write(b"\0" * (1 << 20))
    code = ("import sys\nfrom gotk.nets import AgentError, load_agent\ntry:\n    load_agent(sys.argv[1])\n"
            "    result = 'loaded'\nexcept AgentError as e:\n    result = str(e)\n")
    result, peak = peak_run(code, str(path))
    assert "limit" in result, result
    assert peak < 600, peak


def test_cli_exit_code_2(agent_file, tmp_path):
    meta, blob = _parts(agent_file)
    path = _write(tmp_path / "big.gotk", _hparams(meta, blocks=100000), blob)
    res = subprocess.run([sys.executable, "-m", "gotk", "gtp", "--agent", str(path)], input="name\nquit\n",
                         capture_output=True, text=True, env=ENV, timeout=120)
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    assert "Traceback" not in res.stderr and "error:" in res.stderr
