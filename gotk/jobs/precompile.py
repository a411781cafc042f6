"""Compiling ahead: the warm-ups (every kernel a work unit runs, compiled before a pool forks) and, on a first
run, the encoder's kernels compiled in a helper process while ``gotk encode`` scans.

numba compiles one function at a time in a process. On a first run (numba's cache holds no entry for
the encoder), ``gotk encode`` compiled the SGF reader and the replay for its scan, then the encoder's
game loop (for ``alphago`` with the ladder reader: most of the first run), one after the other. The
encoder's kernels do not wait for the scan, so :func:`start` compiles them in a helper process (a fork of
this one: :func:`fork_call`) into numba's cache while this process compiles and runs the scan; before its
first shard, this process waits for the helper (:meth:`Helper.wait`) and then loads the encoder from the
cache.

Only on a first run, for a local executor, for an encoder whose own kernels are much more than the
scan's (``compile_ahead``: alphago; the small encoders' kernels are mostly the replay's, which both
processes would then compile), and only when a CPU is idle (two or more usable CPUs, and the load
average leaves one free): on a busy host the two processes would only take turns on the same cores,
and the helper's copy of the shared kernels makes the first run slower.
``GOTK_COMPILE_HELPER=0`` never starts one, ``=1`` starts one on every first run, whatever the encoder
and the load. Anything else (a warm cache, a process that runs other threads and so is not forked, a
helper that fails or is killed) changes nothing but the time: this process compiles what the cache lacks,
as it always did. Two processes saving into numba's cache at once are made safe by
:data:`gotk.jit.CACHE_LOCK` (without it, no helper is started).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable

import numpy as np

from gotk.jobs import shard_unit as SU
from gotk.jobs import workers as W

WAIT_S = 600.0  # the longest a first shard waits for the helper before compiling itself


def warm_up(options: W.ShardOptions) -> None:
    """Compile (or load from numba's cache) every kernel a work unit runs: :func:`warm_scan` and
    :func:`warm_encoder`. Called in the parent before a process pool forks, so the workers inherit the
    compiled code instead of each compiling its own copy at once."""
    warm_scan(options)
    warm_encoder(options)


_WARM_GAME = b"(;GM[1]SZ[%d];B[aa];W[ba];B[];W[])"


def warm_scan(options: W.ShardOptions) -> None:
    """Compile what a scan unit runs (the SGF reader and the batch replay), on a four-move game."""
    from gotk.game.replay import GameBatch, replay_batch

    replay_batch(GameBatch.from_records([_warm_record(options.board_size)]))


def _warm_record(size: int, fast: bool | None = None):
    """The four-move warm-up game on a ``size`` board; ``fast=False`` reads it without the compiled SGF reader."""
    from gotk.sgf.reader import iter_sgf

    (rec,) = iter_sgf(_WARM_GAME % size, strict=True, fast=fast)
    return rec


def warm_encoder(options: W.ShardOptions, fast_reader: bool | None = None) -> None:
    """Compile what a shard runs: ``options``' encoder (and only that one: its batch loop, else its game loop),
    on a four-move game (read with the compiled SGF reader unless ``fast_reader`` is False)."""
    from gotk.game.replay import GameBatch, replay_batch

    rec = _warm_record(options.board_size, fast_reader)
    enc = SU.encoder_for(options)
    if enc.batchable:
        batch = GameBatch.from_records([rec])
        replay_batch(batch)
        n = rec.num_moves
        enc.encode_batch_into(batch, np.empty((n, enc.num_planes, enc.num_points), enc.np_dtype),
                              np.empty(n, np.int16), np.empty(n, np.int32), np.empty(n, np.int8),
                              options.include_passes, options.skip_first)
    else:
        enc.encode_game(rec, include_passes=options.include_passes, skip_first=options.skip_first)


def encoder_in_cache(options: W.ShardOptions) -> bool:
    """Whether numba's cache already holds ``options``' encoder (the loop its shards run): False on a first run."""
    from gotk import jit

    loop = SU.encoder_for(options).shard_loop
    return loop is None or jit.in_cache(loop)


def encoder_compiles_ahead(options: W.ShardOptions) -> bool:
    """Whether ``options``' encoder gains from compiling in a helper process on a first run: its own kernels
    are much more than the scan's (alphago's ladder reader), not a copy of them (the small encoders)."""
    return SU.encoder_for(options).compile_ahead


ENV = "GOTK_COMPILE_HELPER"  # "0": never; "1": on every first run; unset or "auto": when a CPU is idle


def usable_cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def idle_cpu() -> bool:
    """Whether a CPU is free for a helper: two or more usable, and the 1-minute load average leaves one."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - no load average here
        load = 0.0
    return usable_cpus() >= 2 and load + 1 <= usable_cpus()


class Helper:
    """A running helper process (:func:`fork_call`), waited for or stopped by its pid."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.status: int | None = None  # the exit status once reaped

    def poll(self) -> int | None:
        """The exit status if the helper has ended (reaping it), else None."""
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
        return self.status

    def wait(self, timeout: float = WAIT_S) -> bool:
        """Wait for the helper to finish (at most ``timeout`` s, then stop it); True if it compiled."""
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() >= deadline:
                self.close()
                return False
            time.sleep(0.005)
        return self.status == 0

    def close(self) -> None:
        """Stop the helper if it still runs (a run that ends early, or an error)."""
        if self.poll() is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:  # pragma: no cover - ended between the two calls
                pass
            self.status = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])


def fork_call(fn: Callable[[], object]) -> Helper | None:
    """Run ``fn()`` in a forked copy of this process: exit status 0 if it returns, 1 if it raises. None where
    ``fork`` is missing or this process runs other Python threads (a fork copies only the calling one, and a
    lock another holds stays held in the copy). The native thread pools of numpy's BLAS and of pyarrow, idle
    here, reset themselves in a fork, as in the fork of a worker pool (Python 3.12 warns about them).

    A fork starts at once with every module imported (a new interpreter took a third of a second to import
    numba). The copy never returns into the caller's code: it ends with ``os._exit``, so no ``atexit``
    handler, buffered output or interpreter teardown of the parent runs twice; it dies with the parent."""
    if not hasattr(os, "fork") or threading.active_count() > 1:
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid:
        return Helper(pid)
    code = 1
    try:  # the helper
        from gotk.executors import die_with_parent

        die_with_parent(parent)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        fn()
        code = 0
    finally:
        os._exit(code)


def start(options: W.ShardOptions) -> Helper | None:
    """Start compiling ``options``' encoder in a helper process on a first run (see the module docstring);
    None when there is nothing to gain (or no safe way to share numba's cache or to fork)."""
    from gotk import jit

    mode = os.environ.get(ENV, "auto")
    if mode == "0" or not jit.CACHE_LOCK:
        return None
    if mode != "1" and not (encoder_compiles_ahead(options) and idle_cpu()):
        return None
    if encoder_in_cache(options):
        return None
    # the warm-up game is read without the compiled SGF reader: this process compiles that one for its scan
    return fork_call(lambda: warm_encoder(options, fast_reader=False))
