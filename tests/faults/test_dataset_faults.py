"""Corrupted shards and manifests: a flipped bit is an error on read, never other data;
``--resume`` checks what it reuses and redoes what is damaged; train notices."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gotk.datasets import Sampling, iter_numpy_batches

from .test_encode_faults import ENV, data_files, encode

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, good_zip):
    out = tmp_path_factory.mktemp("ds") / "out"
    encode(out, good_zip, extra=("--split", "train=0.9,val=0.1"))
    return out


def _all_rows(folder):
    return list(iter_numpy_batches(folder, "train",
                                   sampling=Sampling(batch_size=512, shuffle=False, symmetries="none")))


def test_every_single_bit_flip_in_a_shard_is_an_error_or_harmless(dataset, tmp_path):
    """30 random single-bit flips over the whole shard file, read the way train/eval read: each one raises or
    (a flip in bytes no reader uses) yields exactly the original rows — never different rows."""
    ref = _all_rows(dataset)
    shard = dataset / "train" / "part-00000.parquet"
    raw = shard.read_bytes()
    rng = random.Random(18)
    caught = same = 0
    work = tmp_path / "ds"
    shutil.copytree(dataset, work)
    for _ in range(30):
        pos = rng.randrange(len(raw))
        bad = bytearray(raw)
        bad[pos] ^= 1 << rng.randrange(8)
        (work / "train" / "part-00000.parquet").write_bytes(bytes(bad))
        try:
            got = _all_rows(work)
        except (OSError, ValueError, pa.ArrowException, IndexError, KeyError):
            caught += 1
            continue
        assert len(got) == len(ref), f"flip at byte {pos} read as other data"
        for a, b in zip(got, ref, strict=True):
            for k in a:
                np.testing.assert_array_equal(a[k], b[k], err_msg=f"flip at byte {pos} read as other data")
        same += 1
    assert caught >= 20, (caught, same)


def test_resume_redoes_damaged_files(dataset, tmp_path, good_zip):
    """Truncated, flipped and deleted shards and a deleted games.parquet: ``--resume`` does not say "already
    complete" — it writes the dataset again, byte-identical to the original."""
    expected = data_files(dataset)
    work = tmp_path / "out"
    shutil.copytree(dataset, work)
    shards = sorted((work / "train").glob("*.parquet"))
    assert len(shards) >= 3
    shards[0].write_bytes(shards[0].read_bytes()[:-100])  # truncated
    raw = bytearray(shards[1].read_bytes())
    raw[len(raw) // 2] ^= 0x10  # one flipped bit, same size
    shards[1].write_bytes(bytes(raw))
    shards[2].unlink()
    (work / "games.parquet").unlink()
    res = encode(work, good_zip, extra=("--split", "train=0.9,val=0.1", "--resume"))
    assert "already complete" not in res.stdout
    assert res.stderr.count("was damaged") == 4, res.stderr
    assert data_files(work) == expected
    res = encode(work, good_zip, extra=("--split", "train=0.9,val=0.1", "--resume"))
    assert "already complete" in res.stdout


def test_verify_and_train_notice_a_flipped_page(dataset, tmp_path):
    work = tmp_path / "ds"
    shutil.copytree(dataset, work)
    shard = work / "train" / "part-00000.parquet"
    meta = pq.read_metadata(shard)
    col = meta.schema.names.index("features")
    start = meta.row_group(0).column(col).data_page_offset
    raw = bytearray(shard.read_bytes())
    raw[start + 200] ^= 0x04  # inside the first features page
    shard.write_bytes(bytes(raw))
    res = subprocess.run([sys.executable, "-m", "gotk", "inspect", str(work), "--verify"], capture_output=True,
                         text=True, env=ENV)
    assert res.returncode != 0 and "part-00000" in res.stdout + res.stderr
    res = subprocess.run([sys.executable, "-m", "gotk", "train", "--data", str(work), "--out", str(tmp_path / "run"),
                          "--model", "small", "--max-steps", "3", "--batch-size", "64", "--no-progress"],
                         capture_output=True, text=True, env=ENV, timeout=240)
    assert res.returncode != 0
    assert "Traceback" not in res.stderr, res.stderr[-3000:]
    assert "error:" in res.stderr and ("checksum" in res.stderr.lower() or "crc" in res.stderr.lower()), res.stderr


def test_damaged_manifest_is_a_clear_error(dataset, tmp_path):
    work = tmp_path / "ds"
    shutil.copytree(dataset, work)
    m = work / "manifest.json"
    m.write_text(m.read_text()[:-50])
    res = subprocess.run([sys.executable, "-m", "gotk", "inspect", str(work)], capture_output=True, text=True,
                         env=ENV)
    assert res.returncode != 0 and "Traceback" not in res.stderr, res.stderr[-2000:]
    m.write_text(json.dumps({"format": "something else"}))
    res = subprocess.run([sys.executable, "-m", "gotk", "inspect", str(work)], capture_output=True, text=True,
                         env=ENV)
    assert res.returncode != 0 and "Traceback" not in res.stderr, res.stderr[-2000:]
