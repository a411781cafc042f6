"""A first ``gotk encode`` compiles its encoder in a helper process (gotk.jobs.precompile), and saves into
numba's cache wait for one another (gotk.jit.CACHE_LOCK)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import archive_slice, output_files

from gotk import jit
from gotk.jobs import precompile as P

REPO = Path(__file__).resolve().parents[1]


def _env(cache: Path, helper: str = "1") -> dict:
    return {**os.environ, "NUMBA_CACHE_DIR": str(cache), P.ENV: helper}


def _encode(src: Path, out: Path, cache: Path, helper: str = "1") -> dict:
    cmd = [sys.executable, "-m", "gotk", "encode", str(src), "-e", "oneplane", "-o", str(out), "--workers", "1",
           "--no-progress"]
    done = subprocess.run(cmd, cwd=REPO, env=_env(cache, helper), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads((out / "run-report.json").read_text())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here: no helper")
def test_a_first_encode_compiles_its_encoder_in_a_helper_and_writes_the_same_files(tmp_path, sample_archive):
    src = archive_slice(sample_archive, tmp_path, 12)
    cache = tmp_path / "numba-cache"  # empty: a first run
    first = _encode(src, tmp_path / "first", cache)
    again = _encode(src, tmp_path / "again", cache)
    off = _encode(src, tmp_path / "off", tmp_path / "cache-off", helper="0")
    assert first["encoder_compiled_ahead"] is True  # the helper compiled the encoder; this run loaded it
    assert again["encoder_compiled_ahead"] is None  # in numba's cache now: no helper
    assert off["encoder_compiled_ahead"] is None  # a first run, helper switched off
    assert output_files(tmp_path / "first") == output_files(tmp_path / "again") == output_files(tmp_path / "off")


_FORKS = """
import os, sys, time
from gotk.jobs import precompile as P

mark = sys.argv[1]
done = P.fork_call(lambda: open(mark, "w").write(str(os.getpid())))
assert done.wait() is True and done.status == 0
assert int(open(mark).read()) == done.pid != os.getpid()  # it ran in the copy, not here
failing = P.fork_call(lambda: 1 / 0)
assert failing.wait() is False and failing.status == 1
hanging = P.fork_call(lambda: time.sleep(60))
t = time.monotonic()
assert hanging.wait(timeout=0.5) is False
assert time.monotonic() - t < 30
try:
    os.kill(hanging.pid, 0)
except ProcessLookupError:
    pass
else:
    raise AssertionError("the hanging helper was left running")
hanging.close()  # closing again is harmless
print("ok")
"""


def test_a_forked_helper_reports_what_its_call_did(tmp_path):
    """In a fresh interpreter (one thread, as ``gotk encode`` is when it forks): a call that returns, one that
    raises, and one that hangs past the wait, which is stopped and reaped."""
    done = subprocess.run([sys.executable, "-c", _FORKS, str(tmp_path / "ran")], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_no_fork_while_other_python_threads_run():
    import threading

    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert P.fork_call(lambda: None) is None
    finally:
        stop.set()
        thread.join()


_MODULE = """
import sys
from gotk.jit import kernel

@kernel
def add(a, b):
    return a + b

print(add(int(sys.argv[1]), 1))
"""


def _waits_for_a_lock(pid: int) -> bool:
    """Whether process ``pid`` sleeps in the kernel waiting for a file lock (Linux)."""
    try:
        return "lock" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/wchan").exists(), reason="no /proc here (Linux)")
def test_a_save_into_numbas_cache_waits_for_the_lock(tmp_path):
    """While another process holds the cache directory's lock, a compile does not write its entry: numba
    saves through the method gotk locks, into the directory the lock is taken in."""
    assert jit.CACHE_LOCK
    (tmp_path / "lockmod.py").write_text(_MODULE)
    cache = tmp_path / "cache"

    def run(arg: int) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "lockmod.py", str(arg)], cwd=tmp_path, env=_env(cache),
                                stdout=subprocess.PIPE, text=True)

    first = run(1)
    assert first.communicate(timeout=300)[0].split() == ["2"]
    (index,) = cache.rglob("lockmod.add-*.nbi")
    index.unlink()  # forget it: the next run compiles and saves again
    with open(index.parent / "gotk.lock", "ab") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        second = run(2)
        deadline = time.monotonic() + 240
        while not _waits_for_a_lock(second.pid):  # it compiled and now waits to save
            assert second.poll() is None and time.monotonic() < deadline, "the compile never waited for the lock"
            time.sleep(0.05)
        assert not index.exists()
    assert second.communicate(timeout=300)[0].split() == ["3"]
    assert index.exists()
