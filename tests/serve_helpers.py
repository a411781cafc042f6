"""Shared by the gotk serve tests: a real dataset folder (the conftest reference encode written out), a real
agent package, a running ``gotk serve`` subprocess, and an independent reader of a game's shard rows."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]


def write_dataset(files: dict[str, bytes], folder: Path) -> Path:
    """The files of an encode output (``encode_expected``) written under ``folder``."""
    for rel, data in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return folder


def make_agent(path: Path, size: int = 19) -> Path:
    """A real (untrained, seeded) agent package on sevenplane: resnet 1 block x 8 filters, both heads."""
    import torch

    from gotk.encoders import get_encoder
    from gotk.nets import build_model, save_agent

    torch.manual_seed(0)
    enc = get_encoder("sevenplane", size)
    model = build_model("resnet", enc.num_planes, size, head="both", blocks=1, filters=8)
    return save_agent(path, model, "resnet", {"blocks": 1, "filters": 8}, enc.describe())


def make_conditioned_agent(path: Path, size: int = 19) -> Path:
    """A real (untrained, seeded) agent package conditioned on metadata (``gotk train --metadata``'s model): resnet
    1 block x 8 filters, both heads, a metadata encoder of 8 channels whose output layer is drawn at random instead
    of zero, and a policy layer 8 times its drawn weights, so that each profile gives a policy of its own, far from
    uniform."""
    import torch

    from gotk.encoders import get_encoder
    from gotk.nets import build_model, save_agent

    torch.manual_seed(1)
    enc = get_encoder("sevenplane", size)
    model = build_model("resnet", enc.num_planes, size, head="both", blocks=1, filters=8, num_metadata=192,
                        metadata_channels=8)
    with torch.no_grad():
        model.meta_in.out.weight.normal_(std=20.0)
        model.policy_conv.weight.mul_(8.0)
    return save_agent(path, model, "resnet", {"blocks": 1, "filters": 8}, enc.describe())


def metadata_dataset(source: Path, out: Path) -> Path:
    """``gotk encode --metadata`` of ``source`` (the conftest encode's options, one worker) into ``out``."""
    from conftest import ENCODE_OPTS, ENCODE_UNIT

    from gotk.jobs.encode import EncodeOptions, encode_dataset

    encode_dataset([source], out, EncodeOptions(**ENCODE_OPTS, metadata=True), workers=1, progress=False,
                   unit_size=ENCODE_UNIT)
    return out


class Server:
    """``gotk serve ARGS --port 0`` as a subprocess; ``url`` from the line it prints."""

    def __init__(self, *args: str, timeout: float = 120) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.proc = subprocess.Popen([sys.executable, "-m", "gotk", "serve", *args, "--port", "0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        deadline = time.monotonic() + timeout
        line = ""
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if line or self.proc.poll() is not None:
                break
        if "http://" not in line:
            self.stop()
            raise RuntimeError(f"gotk serve did not start: {line!r} {self.proc.stderr.read()}")
        self.url = line[line.index("http://"):].strip().rstrip("/")

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.stderr.read() if self.proc.stderr else ""


def game_rows(folder: Path, split: str, game_id: str) -> dict[str, np.ndarray]:
    """A game's rows read straight from its split's shard files with pyarrow (not through gotk's loader):
    ``bits`` (N, C*H*W) unpacked big-endian, ``label``, ``move_number``, ``metadata`` (N, 192) float32 (None without
    the column), in move order."""
    import json

    manifest = json.loads((folder / "manifest.json").read_text())
    tables = [pq.read_table(folder / s["file"]) for s in manifest["splits"][split]["shards"]]
    parts = [t.filter(pc.equal(t["game_id"], game_id)) for t in tables]
    rows = [r for t in parts for r in t.to_pylist()]
    rows.sort(key=lambda r: r["move_number"])
    c, h, w = manifest["encoder"]["shape"]
    bits = np.array([np.unpackbits(np.frombuffer(r["features"], np.uint8))[: c * h * w] for r in rows])
    meta = np.array([r["metadata"] for r in rows], np.float32) if rows and "metadata" in rows[0] else None
    return {"bits": bits, "label": np.array([r["label"] for r in rows]), "metadata": meta,
            "move_number": np.array([r["move_number"] for r in rows]), "shape": (c, h, w),
            "plane_names": manifest["encoder"]["plane_names"]}
