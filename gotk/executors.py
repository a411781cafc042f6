"""Where a run's work units run (``gotk encode``, ``gotk export``, ``gotk selfplay``): one small interface, two
implementations.

An executor has ``workers`` (how many units run at once: the parent keeps at most ``2 × workers``
scan units in flight), ``start()``, ``submit(fn, *args) -> concurrent.futures.Future`` and
``shutdown(wait, cancel_futures)``. The submitted functions are pure top-level work units (the encode run's
:mod:`gotk.jobs.workers` and :mod:`gotk.jobs.shard_unit`, the exporters' writers, self-play chunks); they write
their own files atomically and return small dicts, so the output does not depend on the executor (see
``docs/dask.md``).

* :class:`LocalExecutor` — in-process for one worker, otherwise a ``fork`` process pool (``spawn`` on request).
* :class:`DaskExecutor` — a ``dask.distributed`` cluster: a :class:`~distributed.LocalCluster`
  (worker processes, one thread each) or an existing scheduler (``tcp://HOST:PORT``). Needs the
  ``dask`` extra (``pip install 'gotk[dask]'``).
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, Protocol

from gotk.errors import GotkError

EXECUTORS = ("local", "dask")
DASK_INSTALL_HINT = "pip install 'gotk[dask]'  (or: pip install 'dask[distributed]>=2023.1')"


class ExecutorError(GotkError):
    """An executor that cannot be used (unknown name, missing optional dependency, no scheduler)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(reason, message)
        self.message = message


class Executor(Protocol):
    """What a run needs from an executor."""

    name: str
    workers: int

    def start(self) -> None: ...

    def submit(self, fn: Callable, *args: Any) -> Future: ...

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None: ...


class _Inline:
    """Runs submitted work at once in this process: same functions, no pickling."""

    def submit(self, fn: Callable, *args: Any) -> Future:
        f: Future = Future()
        try:
            f.set_result(fn(*args))
        except BaseException as e:  # noqa: BLE001 - handed to the caller through the future
            f.set_exception(e)
        return f

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        pass


def die_with_parent(parent: int) -> None:
    """Pool worker initializer (Linux): the kernel sends SIGKILL to this worker when the process that
    forked it dies, so killing only the parent of ``encode --workers N`` leaves no orphan workers."""
    import ctypes
    import signal
    import sys

    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            return
    if os.getppid() != parent:  # the parent died before the line above ran
        os._exit(1)


class LocalExecutor:
    """``workers`` ≤ 1 and ``inline``: in this process; otherwise a process pool (``fork`` where available, or
    ``start_method``: ``spawn`` for workers that use CUDA, which a forked process cannot once its parent has)."""

    name = "local"

    def __init__(self, workers: int | None = None, start_method: str | None = None, inline: bool = True) -> None:
        self.workers = max(1, int(workers or os.cpu_count() or 1))
        if self.workers <= 1 and inline:
            self._pool: Any = _Inline()
        else:
            import multiprocessing as mp

            method = start_method or ("fork" if "fork" in mp.get_all_start_methods() else None)
            ctx = mp.get_context(method) if method else None
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx, initializer=die_with_parent,
                                             initargs=(os.getpid(),))

    def start(self) -> None:
        """Start (fork) the workers now, before any progress-bar thread exists."""
        self._pool.submit(int).result()

    def submit(self, fn: Callable, *args: Any) -> Future:
        return self._pool.submit(fn, *args)

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)


def dask_available() -> bool:
    """Whether ``dask.distributed`` can be imported."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def require(kind: str, scheduler: str | None = None) -> None:
    """Raise :class:`ExecutorError` unless executor ``kind`` exists, its dependencies import and
    ``scheduler`` (only for ``"dask"``) fits."""
    if scheduler and kind != "dask":
        raise ExecutorError("bad_option", "--scheduler needs --executor dask")
    if kind not in EXECUTORS:
        raise ExecutorError("bad_executor", f"--executor {kind!r}: choose one of {', '.join(EXECUTORS)}")
    if kind == "dask" and not dask_available():
        raise ExecutorError("missing_dependency", "--executor dask needs dask.distributed, which is not installed: "
                            f"{DASK_INSTALL_HINT}")


class DaskExecutor:
    """Submits work units to a ``dask.distributed`` cluster; futures come back as plain
    :class:`concurrent.futures.Future` objects.

    With no ``scheduler`` a :class:`~distributed.LocalCluster` is started (``processes=True``,
    ``workers`` worker processes of one thread each, no dashboard) and closed on shutdown; with
    ``scheduler`` (``tcp://HOST:PORT``) the client connects to it, waits for a worker, and
    ``workers`` defaults to the cluster's total threads. A worker that dies mid-task is replaced by
    its nanny and the scheduler reruns the task elsewhere (up to ``distributed.scheduler.allowed-failures``
    times, default 3, then the run fails with ``KilledWorker``); that is safe because every work unit
    is idempotent (same content, written to a temp file and renamed).
    """

    name = "dask"

    def __init__(self, workers: int | None = None, scheduler: str | None = None, connect_timeout: float = 60) -> None:
        require("dask")
        from distributed import Client, LocalCluster

        self._cluster = None
        if scheduler:
            try:
                self.client = Client(scheduler, timeout=connect_timeout)
                self.client.wait_for_workers(1, timeout=connect_timeout)
            except (OSError, TimeoutError) as e:
                raise ExecutorError("no_scheduler", f"--scheduler {scheduler}: {e}") from e
            threads = sum(w.get("nthreads", 1) for w in self.client.scheduler_info()["workers"].values())
            self.workers = max(1, int(workers or threads or 1))
        else:
            self.workers = max(1, int(workers or os.cpu_count() or 1))
            self._cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1, processes=True,
                                         dashboard_address=None)
            self.client = Client(self._cluster)
        self._lock = threading.Lock()
        self._pending: dict[str, Any] = {}  # key → dask future, held until done (a dropped future is cancelled)

    def start(self) -> None:
        """Wait until the workers are up."""
        if self._cluster is not None:
            self.client.wait_for_workers(self.workers)

    def submit(self, fn: Callable, *args: Any) -> Future:
        key = f"gotk-{getattr(fn, '__name__', 'task')}-{uuid.uuid4().hex}"
        out: Future = Future()
        dfut = self.client.submit(fn, *args, key=key, pure=False)
        with self._lock:
            self._pending[key] = dfut

        def done(f: Any) -> None:
            try:
                if f.status == "cancelled":
                    out.cancel()
                elif f.status == "error":
                    out.set_exception(f.exception())
                else:
                    out.set_result(f.result())
            except BaseException as e:  # noqa: BLE001 - e.g. the client closed while gathering
                if not out.done():
                    out.set_exception(e)
            finally:
                with self._lock:
                    self._pending.pop(key, None)

        dfut.add_done_callback(done)
        return out

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        with self._lock:
            pending = list(self._pending.values())
            self._pending.clear()
        if cancel_futures and pending:
            try:
                self.client.cancel(pending)
            except Exception:  # noqa: BLE001 - best effort on the way out
                pass
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()


def make_executor(kind: str, workers: int | None = None, scheduler: str | None = None,
                  start_method: str | None = None, inline: bool = True) -> Executor:
    """``"local"`` or ``"dask"``; ``scheduler`` only with ``"dask"``; ``start_method`` and ``inline`` (one worker
    runs in this process) only for local pools."""
    require(kind, scheduler)
    if kind == "dask":
        return DaskExecutor(workers, scheduler)
    return LocalExecutor(workers, start_method, inline)
