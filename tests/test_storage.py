"""``gotk encode --out URL``: a real S3-compatible server (moto, on loopback) and ``file://`` URLs give
the same bytes as a local folder, an interrupted run resumes from the bucket, and unusable stores
(missing bucket, credentials or s3fs) fail with exit code 2 and a clear message. The loader, ``gotk
train`` and ``gotk eval`` read a dataset from the bucket as from a folder."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ENCODE_OPTS, ENCODE_UNIT, encode_cmd, output_files, run_and_kill

from gotk.executors import dask_available
from gotk.jobs.encode import EncodeOptions, encode_dataset
from gotk.storage import Storage

HAVE_S3 = all(importlib.util.find_spec(m) is not None for m in ("moto", "s3fs", "boto3"))
needs_s3 = pytest.mark.skipif(not HAVE_S3, reason="moto, s3fs and boto3 are needed for the S3 tests "
                              "(pip install 'gotk[s3]' moto boto3)")
BUCKET = "gotk-test"



@pytest.fixture
def source(encode_source) -> Path:
    return encode_source


@pytest.fixture
def expected(encode_expected) -> dict[str, bytes]:
    return encode_expected


# --- file:// (any fsspec filesystem with mv: temp file + mv) ---------------------------------------------


def test_file_url_equals_plain_path(tmp_path, source, expected):
    out = tmp_path / "viaurl"
    m = encode_dataset([source], out.as_uri(), EncodeOptions(**ENCODE_OPTS), workers=2, progress=False,
                       unit_size=ENCODE_UNIT)
    assert m["games"]["kept"] == 200
    assert output_files(out) == expected  # no .work/, no .tmp left


def test_fsspec_abort_leaves_nothing(tmp_path):
    st = Storage.for_url(tmp_path.as_uri())
    target = f"{tmp_path.as_uri()}/sub/x.bin"
    with pytest.raises(RuntimeError), st.open_write_atomic(target) as f:
        f.write(b"half")
        raise RuntimeError("killed")
    assert not st.exists(target) and not list(tmp_path.rglob("*.tmp"))
    with st.open_write_atomic(target) as f:
        f.write(b"whole")
    assert (tmp_path / "sub" / "x.bin").read_bytes() == b"whole" and f.nbytes == 5


_NO_S3FS = """
import sys
sys.modules["s3fs"] = None  # import s3fs now raises ImportError
sys.argv = ["gotk", *sys.argv[1:]]
from gotk.cli.main import main
main()
"""


def test_missing_s3fs_exits_2_with_install_hint(source):
    cmd = [sys.executable, "-c", _NO_S3FS, *encode_cmd(source, f"s3://{BUCKET}/never")[3:]]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "pip install 'gotk[s3]'" in res.stderr and "Traceback" not in res.stderr


# --- S3 (moto's real HTTP server on 127.0.0.1) ---------------------------------------------------------


@pytest.fixture(scope="module")
def s3():
    """``(endpoint, env for subprocesses, boto3 client)`` of a moto S3 server with bucket :data:`BUCKET`."""
    if not HAVE_S3:
        pytest.skip("moto, s3fs and boto3 are needed for the S3 tests")
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "FSSPEC_"))}
    env.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1",
               AWS_SHARED_CREDENTIALS_FILE=os.devnull, AWS_CONFIG_FILE=os.devnull, AWS_EC2_METADATA_DISABLED="true")
    client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing",
                          region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    yield endpoint, env, client
    server.stop()


def _objects(client, prefix: str) -> dict[str, bytes]:
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix + "/"):
        for o in page.get("Contents", []):
            out[o["Key"][len(prefix) + 1:]] = client.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read()
    return out


def _keys(client, prefix: str) -> list[str]:
    res = client.list_objects_v2(Bucket=BUCKET, Prefix=prefix + "/")
    return [o["Key"][len(prefix) + 1:] for o in res.get("Contents", [])]


@needs_s3
def test_s3_local_executor_is_byte_identical(s3, source, expected):
    endpoint, env, client = s3
    url = f"s3://{BUCKET}/local"
    res = subprocess.run(encode_cmd(source, url, "--workers", "2", "--storage-option", f"endpoint_url={endpoint}"),
                         capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr
    objs = _objects(client, "local")
    assert "run-report.json" in objs
    del objs["run-report.json"]
    assert objs == expected  # every object byte for byte; no .work/ objects left

    insp = subprocess.run([sys.executable, "-m", "gotk", "inspect", url, "--json", "--storage-option",
                           f"endpoint_url={endpoint}"], capture_output=True, text=True, timeout=60, env=env)
    assert insp.returncode == 0, insp.stderr
    assert json.loads(insp.stdout) == json.loads(expected["manifest.json"])

    again = subprocess.run(encode_cmd(source, url, "--storage-option", f"endpoint_url={endpoint}"), capture_output=True,
                           text=True, timeout=60, env=env)
    assert again.returncode == 2 and "not empty" in again.stderr  # a finished dataset is not overwritten


@needs_s3
@pytest.mark.skipif(not dask_available(), reason="dask.distributed is not installed (pip install 'gotk[dask]')")
def test_s3_dask_executor_is_byte_identical(s3, source, expected):
    endpoint, env, client = s3
    res = subprocess.run(encode_cmd(source, f"s3://{BUCKET}/dask", "--executor", "dask", "--workers", "2"),
                         capture_output=True, text=True, timeout=120,
                         env={**env, "AWS_ENDPOINT_URL": endpoint})  # the endpoint from botocore's variable
    assert res.returncode == 0, res.stderr
    objs = _objects(client, "dask")
    del objs["run-report.json"]
    assert objs == expected


@needs_s3
def test_s3_sigkill_then_resume_is_byte_identical(s3, source, expected):
    endpoint, env, client = s3
    url, opt = f"s3://{BUCKET}/killed", ["--storage-option", f"endpoint_url={endpoint}"]
    def in_bucket() -> bool:  # some scan units and a shard are in the bucket
        keys = _keys(client, "killed")
        return sum(k.startswith(".work/unit-") for k in keys) >= 3 and any(k.startswith(".work/shard-") for k in keys)

    run_and_kill(encode_cmd(source, url, "--workers", "2", *opt), in_bucket, timeout=90, env=env)
    assert "manifest.json" not in _keys(client, "killed")

    res = subprocess.run(encode_cmd(source, url, "--workers", "2", "--resume", "--json", *opt), capture_output=True,
                         text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr
    run = json.loads(res.stdout)["run"]
    assert run["units_reused"] >= 3 and run["shards_reused"] >= 1
    objs = _objects(client, "killed")
    del objs["run-report.json"]
    assert objs == expected


@needs_s3
def test_s3_missing_bucket_and_credentials_exit_2(s3, source):
    endpoint, env, client = s3
    opt = ["--storage-option", f"endpoint_url={endpoint}"]
    res = subprocess.run(encode_cmd(source, "s3://no-such-bucket/ds", *opt), capture_output=True, text=True, timeout=60,
                         env=env)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "bucket 'no-such-bucket' does not exist" in res.stderr and "Traceback" not in res.stderr

    no_keys = {k: v for k, v in env.items() if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    res = subprocess.run(encode_cmd(source, f"s3://{BUCKET}/nocreds", *opt), capture_output=True, text=True, timeout=60,
                         env=no_keys)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "no credentials" in res.stderr and "AWS_ACCESS_KEY_ID" in res.stderr and "Traceback" not in res.stderr
    assert _keys(client, "nocreds") == []


@needs_s3
def test_s3_failed_upload_leaves_no_object(s3):
    endpoint, _, client = s3
    st = Storage.for_url(f"s3://{BUCKET}/x", {"endpoint_url": endpoint, "key": "testing", "secret": "testing"})
    with pytest.raises(RuntimeError), st.open_write_atomic(f"s3://{BUCKET}/abort/part.parquet") as f:
        f.write(b"x" * 1000)
        raise RuntimeError("worker died")
    import gc

    gc.collect()  # a dropped fsspec file commits on garbage collection unless it was discarded
    assert _keys(client, "abort") == []


@needs_s3
def test_s3_dataset_feeds_loader_train_and_eval(s3, tmp_path, expected):
    """A dataset in a bucket: the loader yields the same batches as from a local copy, and ``gotk train`` /
    ``gotk eval`` run on its URL, ``gotk show`` draws the same position."""
    from gotk.datasets import Sampling, iter_numpy_batches

    endpoint, env, client = s3
    local = tmp_path / "local"
    for key, data in expected.items():
        client.put_object(Bucket=BUCKET, Key=f"read/{key}", Body=data)
        (local / key).parent.mkdir(parents=True, exist_ok=True)
        (local / key).write_bytes(data)
    url = f"s3://{BUCKET}/read"
    opts = {"endpoint_url": endpoint, "key": "testing", "secret": "testing"}
    kw = {"sampling": Sampling(batch_size=64, seed=3), "max_positions_per_game": 5, "epoch": 1}
    want = list(iter_numpy_batches(local, "train", **kw))
    got = list(iter_numpy_batches(url, "train", storage_options=opts, **kw))
    assert len(got) == len(want) > 3
    for a, b in zip(want, got, strict=True):
        assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)

    run = tmp_path / "run"
    opt = ["--storage-option", f"endpoint_url={endpoint}"]

    def train(data: str, out: Path) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "gotk", "train", "--data", data, *opt, "--out", str(out), "--model", "resnet",
               "--blocks", "1", "--filters", "8", "--batch-size", "64", "--max-steps", "3", "--threads", "1",
               "--no-progress", "--device", "cpu", "--max-val-positions", "200",
               "--workers", "2"]  # DataLoader worker processes: each opens the bucket itself after the fork
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)

    res = train(url, run)
    assert res.returncode == 0, res.stderr
    manifest = json.loads(expected["manifest.json"])
    cfg = json.loads((run / "config.json").read_text())
    assert cfg["data"]["path"] == url and cfg["data"]["train_rows"] == manifest["splits"]["train"]["rows"]
    ev = subprocess.run([sys.executable, "-m", "gotk", "eval", "--agent", str(run / "agent.gotk"), "--data", url, *opt,
                         "--split", "test", "--json", "--device", "cpu"], capture_output=True, text=True, timeout=300,
                        env=env)
    assert ev.returncode == 0, ev.stderr
    report = json.loads(ev.stdout)
    assert report["positions"] == manifest["splits"]["test"]["rows"] and report["source"]["kind"] == "shards"

    show = [sys.executable, "-m", "gotk", "show", "--split", "val", "--row", "57", "--point", "D4"]
    here = subprocess.run(show[:4] + [str(local)] + show[4:], capture_output=True, text=True, timeout=120, env=env)
    there = subprocess.run(show[:4] + [url] + show[4:] + opt, capture_output=True, text=True, timeout=120, env=env)
    assert here.returncode == 0 and there.returncode == 0, (here.stderr, there.stderr)
    assert there.stdout == here.stdout and "val row 57" in there.stdout

    ver = subprocess.run([sys.executable, "-m", "gotk", "inspect", url, "--verify", *opt], capture_output=True,
                         text=True, timeout=120, env=env)
    assert ver.returncode == 0 and "files match the manifest" in ver.stdout, ver.stderr

    res = train(f"s3://{BUCKET}/nothing-here", tmp_path / "r2")
    assert res.returncode == 2 and "not a gotk dataset folder" in res.stderr and "Traceback" not in res.stderr
