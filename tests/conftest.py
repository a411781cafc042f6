"""Shared fixtures: the real KGS archives in ``../shared/kgs`` and the built-in sample."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
KGS_DIR = REPO.parent / "shared" / "kgs"


@pytest.fixture(scope="session")
def kgs_dir() -> Path:
    """The folder of real KGS archives beside the checkout; tests using it skip only if it is absent."""
    if not KGS_DIR.is_dir():
        pytest.skip(f"{KGS_DIR} is absent (the shared KGS archives sit beside the checkout in CI)")
    return KGS_DIR


@pytest.fixture(scope="session")
def sample_archive() -> Path:
    """A built-in real KGS archive (2017-02, 525 games) shipped with the package."""
    from gotk.data import HELDOUT_ARCHIVE

    return HELDOUT_ARCHIVE


def archive_slice(archive: Path, folder: Path, count: int) -> Path:
    """The first ``count`` SGF members of a real ``archive``, re-packed as ``folder/slice.zip``."""
    import zipfile

    from gotk.sources.archives import SgfSource, iter_sources

    items = [s for s in iter_sources([archive]) if isinstance(s, SgfSource)][:count]
    with zipfile.ZipFile(folder / "slice.zip", "w") as zf:
        for s in items:
            zf.writestr(s.member, s.data)
    return folder / "slice.zip"


# --- a small real encode, shared by the executor and storage tests -------------------------------------------

ENCODE_OPTS = {"encoder": "sevenplane", "shard_rows": 2000, "split": "train=0.8,val=0.1,test=0.1"}
ENCODE_UNIT = 8


def output_files(folder: Path) -> dict[str, bytes]:
    """Every file of an encode output folder (but the timing report), by relative path."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "run-report.json"}


def encode_cmd(src: Path, out, *extra: str) -> list[str]:
    """The ``gotk encode`` command line for ``ENCODE_OPTS`` (``out`` a folder or a URL)."""
    import sys

    return [sys.executable, "-m", "gotk", "encode", str(src), "-e", ENCODE_OPTS["encoder"], "-o", str(out),
            "--no-progress", "--unit-size", str(ENCODE_UNIT), "--shard-rows", str(ENCODE_OPTS["shard_rows"]),
            "--split", ENCODE_OPTS["split"], *extra]


@pytest.fixture(scope="session")
def encode_source(tmp_path_factory, sample_archive) -> Path:
    """The first 200 real games of the built-in held-out archive, as a zip."""
    return archive_slice(sample_archive, tmp_path_factory.mktemp("encode-src"), 200)


@pytest.fixture(scope="session")
def encode_expected(tmp_path_factory, encode_source) -> dict[str, bytes]:
    """Every output file of a local-folder encode of ``encode_source`` (2 worker processes)."""
    from gotk.jobs.encode import EncodeOptions, encode_dataset

    out = tmp_path_factory.mktemp("encode-ref") / "ref"
    encode_dataset([encode_source], out, EncodeOptions(**ENCODE_OPTS), workers=2, progress=False,
                   unit_size=ENCODE_UNIT)
    files = output_files(out)
    assert {"manifest.json", "games.parquet", "train/part-00001.parquet", "val/part-00000.parquet"} <= set(files)
    return files


def run_and_kill(cmd: list[str], ready, timeout: float = 120, env: dict | None = None) -> None:
    """Start ``cmd`` in its own process group, SIGKILL the whole group (parent and workers) as soon as
    ``ready()`` is true, and check it really died mid-run (fails when it finished first)."""
    import os
    import signal
    import subprocess
    import time

    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            env=env)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if ready():
                break
            time.sleep(0.005)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    if proc.returncode == 0:
        pytest.fail("the run finished before it could be killed; make the slice larger")
    assert proc.returncode == -signal.SIGKILL


def local_run_progressed(out: Path) -> bool:
    """Some scan units (3) and at least one shard of a local encode run are finished."""
    work = out / ".work"
    return len(list(work.glob("unit-*.arrow"))) >= 3 and bool(list(work.glob("shard-*.json")))
