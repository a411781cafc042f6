"""Helpers of the fault suite: real SGF games, hostile archives, fresh-process peak memory."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GIB = 1 << 30


@pytest.fixture(scope="session")
def real_games(sample_archive) -> list[tuple[str, bytes]]:
    """The first 12 real KGS games of the built-in archive: ``(member, bytes)``."""
    from gotk.sources.archives import SgfSource, iter_sources

    return [(s.member, s.data) for s in iter_sources([sample_archive]) if isinstance(s, SgfSource)][:12]


@pytest.fixture(scope="session")
def good_zip(tmp_path_factory, real_games) -> Path:
    """A zip of the 12 real games: the good input every hostile one is given beside."""
    path = tmp_path_factory.mktemp("good") / "good.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for member, data in real_games:
            zf.writestr(member, data)
    return path


def lying_zip(path: Path, member: str, real_size: int, declared: int) -> Path:
    """A zip whose one member inflates to ``real_size`` zero bytes but declares ``declared`` bytes (the
    local and central headers both patched): a zip bomb that lies about its size."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        info = zipfile.ZipInfo(member)
        info.file_size = real_size  # so zipfile picks the right header format; then patched to lie
        info.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(info, "w") as f:
            block = b"\0" * (1 << 20)
            for _ in range(real_size >> 20):
                f.write(block)
    raw = bytearray(path.read_bytes())
    local = raw.find(b"PK\x03\x04")
    struct.pack_into("<I", raw, local + 22, declared)
    central = raw.find(b"PK\x01\x02")
    struct.pack_into("<I", raw, central + 24, declared)
    path.write_bytes(bytes(raw))
    return path


def peak_run(code: str, *args: str, timeout: float = 300) -> tuple[dict, float]:
    """Run ``code`` (Python; it may set a dict ``result``) in a fresh process with the worktree first on
    the path; returns ``(result, MiB)``: how far the process's peak memory (VmHWM, as bench/encode.py measures
    it) rose above its level once numpy, pyarrow, numba and gotk's reading stack were imported. The libraries'
    own resident size depends on the page cache (a freshly installed environment maps ~100 MiB more of the
    same shared objects), so the import level is taken out: what is left is the memory the work itself used."""
    prelude = ("import numpy, pyarrow, numba\nimport gotk.jobs.workers, gotk.sources.archives\n"
               "from gotk.jobs.workers import peak_rss_mib as _p\n_base = _p()\n")
    wrapper = (prelude + code + "\nimport json as _j\n"
               "print('@@' + _j.dumps({'result': globals().get('result'), 'peak': _p() - _base}))\n")
    env_path = str(REPO)
    res = subprocess.run([sys.executable, "-c", wrapper, *args], capture_output=True, text=True, timeout=timeout,
                         env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin", "HOME": "/tmp"})
    assert res.returncode == 0, res.stderr[-3000:]
    line = [x for x in res.stdout.splitlines() if x.startswith("@@")][-1]
    out = json.loads(line[2:])
    return out["result"], out["peak"]
