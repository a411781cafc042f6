"""``gotk encode --executor dask``: a real dask.distributed cluster gives the same bytes as the local
executor, survives a worker killed mid-task, resumes an interrupted run; a clear error without dask."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ENCODE_OPTS, ENCODE_UNIT, encode_cmd, local_run_progressed, output_files, run_and_kill

from gotk.executors import DaskExecutor, dask_available
from gotk.jobs import shard_unit as SU
from gotk.jobs import workers as W
from gotk.jobs.encode import EncodeOptions, encode_dataset

needs_dask = pytest.mark.skipif(not dask_available(), reason="dask.distributed is not installed "
                                "(pip install 'gotk[dask]')")



@pytest.fixture
def source(encode_source) -> Path:
    return encode_source


@pytest.fixture
def expected(encode_expected) -> dict[str, bytes]:
    return encode_expected


@needs_dask
def test_local_cluster_is_byte_identical(tmp_path, source, expected):
    out = tmp_path / "dask"
    res = subprocess.run(encode_cmd(source, out, "--executor", "dask", "--workers", "2", "--json"), capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["run"]["workers"] == 2
    assert output_files(out) == expected


@needs_dask
def test_external_scheduler_is_byte_identical(tmp_path, source, expected):
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        out = tmp_path / "remote"
        res = subprocess.run(encode_cmd(source, out, "--executor", "dask", "--scheduler", cluster.scheduler_address,
                                  "--json"), capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout)["run"]["workers"] == 2  # the cluster's threads, not this machine's cores
    assert output_files(out) == expected


# --- a worker killed mid-task -------------------------------------------------------------------------


def _kill_first_run(marker_dir: str, fn, *args):
    """Run a work unit, except that the first run of scan unit 2 kills its worker process before
    writing anything, and the first run of shard ``train/part-00000`` kills it after writing the
    shard and its done-record (so the result never reaches the scheduler). Markers hold the pid."""
    tag = None
    if fn is W.scan_unit and args[0].unit_id == 2:
        tag = "scan-00002"
    elif fn is SU.encode_shard and args[0]["file"] == "train/part-00000.parquet":
        tag = "shard-train-00000"
    marker = Path(marker_dir) / tag if tag else None
    if marker is not None and not marker.exists() and tag.startswith("scan"):
        marker.write_text(str(os.getpid()))
        os._exit(17)
    result = fn(*args)
    if marker is not None and not marker.exists():
        marker.write_text(str(os.getpid()))
        os._exit(17)
    return result


class _KillingDask(DaskExecutor):
    """A LocalCluster executor whose units run under :func:`_kill_first_run`."""

    def __init__(self, marker_dir: Path, workers: int) -> None:
        super().__init__(workers)
        self.marker_dir = str(marker_dir)

    def submit(self, fn, *args):
        return super().submit(_kill_first_run, self.marker_dir, fn, *args)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@needs_dask
def test_killed_worker_is_retried_without_loss_or_duplicates(tmp_path, source, expected):
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import this test module
    try:
        markers = tmp_path / "markers"
        markers.mkdir()
        out = tmp_path / "killed"
        m = encode_dataset([source], out, EncodeOptions(**ENCODE_OPTS), progress=False, unit_size=ENCODE_UNIT,
                           executor=_KillingDask(markers, workers=2))
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    pids = {p.name: int(p.read_text()) for p in markers.iterdir()}
    assert set(pids) == {"scan-00002", "shard-train-00000"}  # both kills happened ...
    for pid in pids.values():
        assert pid != os.getpid() and not _alive(pid)  # ... in worker processes that are gone
    assert m["run"]["workers"] == 2
    assert output_files(out) == expected


# --- resume after an interrupted dask run ----------------------------------------------------------------


@needs_dask
def test_sigkill_dask_run_then_resume_is_byte_identical(tmp_path, source, expected):
    out = tmp_path / "interrupted"
    # kill the client and its cluster once some scan units and a shard are finished
    run_and_kill(encode_cmd(source, out, "--executor", "dask", "--workers", "2"), lambda: local_run_progressed(out))
    assert not (out / "manifest.json").exists()

    res = subprocess.run(encode_cmd(source, out, "--executor", "dask", "--workers", "2", "--resume", "--json"),
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    run = json.loads(res.stdout)["run"]
    assert run["units_reused"] >= 3 and run["shards_reused"] >= 1
    assert output_files(out) == expected


# --- without dask ---------------------------------------------------------------------------------------

_NO_DASK = """
import sys
sys.modules["dask"] = sys.modules["distributed"] = None  # import dask / distributed now raise ImportError
sys.argv = ["gotk", *sys.argv[1:]]
from gotk.cli.main import main
main()
"""


def test_missing_dask_exits_2_with_install_hint(tmp_path, source):
    out = tmp_path / "never"
    cmd = [sys.executable, "-c", _NO_DASK, *encode_cmd(source, out, "--executor", "dask")[3:]]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "pip install 'gotk[dask]'" in res.stderr and "Traceback" not in res.stderr
    assert not out.exists()  # refused before touching the output folder


def test_bad_executor_options_exit_2(tmp_path, source):
    from typer.testing import CliRunner

    from gotk.cli.main import app

    runner = CliRunner()
    for extra in (["--executor", "spark"], ["--scheduler", "tcp://127.0.0.1:8786"]):
        res = runner.invoke(app, ["encode", str(source), "-e", "sevenplane", "-o", str(tmp_path / "x"),
                                  "--no-progress", *extra])
        assert res.exit_code == 2, res.output
        assert ("spark" in res.output) if extra[0] == "--executor" else ("--executor dask" in res.output)
    assert not (tmp_path / "x").exists()
