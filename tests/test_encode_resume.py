"""``gotk encode --resume``: a run killed with SIGKILL mid-way finishes with the same bytes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import archive_slice, local_run_progressed, run_and_kill


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "run-report.json"}


def _cmd(src: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "gotk", "encode", str(src), "-e", "sevenplane", "-o", str(out), "--no-progress",
            "--workers", "2", "--unit-size", "8", "--shard-rows", "2000", "--split", "train=0.8,val=0.1,test=0.1",
            *extra]


@pytest.fixture(scope="module")
def source(tmp_path_factory, sample_archive) -> Path:
    return archive_slice(sample_archive, tmp_path_factory.mktemp("resume-src"), 160)


def test_sigkill_then_resume_is_byte_identical(tmp_path, source):
    from gotk.jobs.encode import EncodeOptions, encode_dataset

    ref = tmp_path / "ref"  # uninterrupted, in this process, one worker
    encode_dataset([source], ref, EncodeOptions(encoder="sevenplane", shard_rows=2000,
                                                split="train=0.8,val=0.1,test=0.1"), workers=1, progress=False)
    expected = _files(ref)

    out = tmp_path / "killed"
    # kill once some scan units AND at least one shard are finished, before the run completes
    run_and_kill(_cmd(source, out), lambda: local_run_progressed(out))
    assert not (out / "manifest.json").exists()

    # without --resume the folder is refused
    again = subprocess.run(_cmd(source, out), capture_output=True, text=True, timeout=300)
    assert again.returncode == 2 and "--resume" in again.stderr
    # with other options --resume is refused
    other = subprocess.run(_cmd(source, out, "--resume", "--skip-first", "3"), capture_output=True, text=True,
                           timeout=300)
    assert other.returncode == 2 and "differ" in other.stderr

    res = subprocess.run(_cmd(source, out, "--resume", "--json"), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    run = json.loads(res.stdout)["run"]
    assert run["units_reused"] >= 3 and run["shards_reused"] >= 1
    assert _files(out) == expected

    # resuming a finished dataset is a no-op
    res = subprocess.run(_cmd(source, out, "--resume", "--json"), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and json.loads(res.stdout)["run"] == {"already_complete": True}
    assert _files(out) == expected
