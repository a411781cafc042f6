"""SIGKILL at random moments, then ``--resume`` (also a resume killed in its turn): the same bytes as an
uninterrupted run. The single fixed-moment case runs by default in tests/test_encode_resume.py."""

from __future__ import annotations

import random
import subprocess
import time

import pytest

from tests.conftest import encode_cmd, output_files, run_and_kill

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_sigkill_at_random_moments_then_resume(tmp_path, encode_source, encode_expected):
    rng = random.Random(1818)
    kills = 0
    for trial in range(3):
        out = tmp_path / f"out{trial}"
        for kill in range(2):  # the first run, then its first resume, each killed at a random moment
            delay = rng.uniform(0.3, 2.5)
            start = time.monotonic()
            extra = ("--workers", "2") + (("--resume",) if kill else ())
            try:
                run_and_kill(encode_cmd(encode_source, out, *extra), lambda s=start, d=delay: time.monotonic() - s > d)
                kills += 1
            except pytest.fail.Exception:
                break  # it finished before the kill: the resume below is then a no-op
        res = subprocess.run(encode_cmd(encode_source, out, "--workers", "2", "--resume"), capture_output=True,
                             text=True, timeout=600)
        assert res.returncode == 0, res.stderr[-2000:]
        assert output_files(out) == encode_expected, f"trial {trial}"
    assert kills >= 2, "the runs finished before the random moments: shorten the delays"


def test_resume_after_kill_redoes_damaged_scan_and_shard(tmp_path, encode_source, encode_expected):
    """A killed run whose finished scan file and shard are then damaged (one flipped bit each): ``--resume``
    does not reuse them (scan: the sha256 written beside it; shard: its done-record's sha256) — same bytes."""
    import json

    from tests.conftest import local_run_progressed

    out = tmp_path / "out"
    run_and_kill(encode_cmd(encode_source, out, "--workers", "2"), lambda: local_run_progressed(out))
    scans = sorted((out / ".work").glob("unit-*.arrow"))
    shards = [p for p in sorted(out.rglob("part-*.parquet"))]
    assert scans and shards
    for p in (scans[0], shards[0]):
        raw = bytearray(p.read_bytes())
        raw[len(raw) // 2] ^= 0x01
        p.write_bytes(bytes(raw))
    res = subprocess.run(encode_cmd(encode_source, out, "--workers", "2", "--resume", "--json"), capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    run = json.loads(res.stdout)["run"]
    assert run["units_reused"] <= len(scans) - 1
    assert output_files(out) == encode_expected
