"""The one place gotk's compiled (numba) functions get their options, and gotk's rules for numba's cache.

Every decorator here is ``numba.njit(cache=True, ...)`` with public options, plus numba's ``_nrt`` option;
compiled gotk code never calls ``njit`` directly, so these rules reach all of it.

* :func:`kernel` — ``njit(cache=True, _nrt=False)``: compiled without numba's reference counting (NRT).
  Use it for every function that allocates no array: the arrays a kernel reads and writes are owned by
  its caller, so counting references to them is pure cost. numba otherwise increments and decrements
  an atomic counter for array arguments, views and tuple items around every call, a large part of the
  engine's and the encoders' running time. A function that does allocate (``np.empty``, ``.copy()``)
  fails to compile as a kernel — an error at its first call, never a wrong result — and numba passes
  the option on to the functions a kernel calls, so those must not allocate either.
* :func:`compiled` — plain ``njit(cache=True)``, for the functions that allocate.
* :func:`internal_kernel` — for kernels only other compiled functions call (the engine's and the ladder
  reader's helpers): compiled exactly as a :func:`kernel`, so Python may call one too (tests do); the
  name says no Python caller depends on its signature. ``@internal_kernel(always_inline=True)`` marks a
  small helper whose call costs more than its body; it compiles as a plain internal kernel, and LLVM's
  own heuristics decide whether its callers inline it (numba's public ``inline="always"`` would type the
  body again at every call site, which multiplies the first run's compile time over the ladder reader's
  many call sites).
* :func:`inline_kernel` — a kernel with numba's ``inline="always"``: numba inlines its body (at numba's
  IR level, typed again at each call site) into every compiled caller and never compiles it on its own.
  For thin wrappers of a line or two over a large compiled tree, which would otherwise cost a compile
  (and an optimisation of the whole tree) of their own; and for a hot rule with few call sites whose call
  passes more than its body does (every field of every array it is given): the engine's move, undo and
  check as the ladder reader runs them, the rules' liberty counts (:mod:`gotk.game.rules`).

**Cache freshness.** numba keeps a cached function while the file that defines it is unchanged, but the
machine code it caches also holds every compiled function it calls, from other files too. After an edit
of ``ladders.py`` alone, ``alphago.py``'s cached fill would still run the old ladder reader, or crash on
a changed tuple layout. The same happens to a ``pip install -U`` that replaces some modules while the
old caches stay in ``__pycache__``. So every gotk function's cache stamp also covers the contents of
every gotk module with compiled code (:func:`kernel_sources_digest`): any change there compiles afresh.

**Saves from several processes.** numba saves a cache entry (read the function's index, pick a data
file name, write both) unlocked; gotk compiles in several processes at once (:mod:`gotk.jobs.precompile`,
worker pools, Dask workers), so :data:`CACHE_LOCK` makes each save one step across processes.

Both rules and :func:`in_cache` use ``numba.core.caching``, which numba does not promise to keep:
``pyproject.toml`` pins numba to the releases tested, and ``tests/test_jit.py``/``tests/test_precompile.py``
fail if numba's caching stops behaving as these rules expect.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from numba import njit
from numba.core import caching

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: numba's own unlocked saves
    fcntl = None

PACKAGE = Path(__file__).resolve().parent


@cache
def kernel_sources_digest(root: Path = PACKAGE) -> bytes:
    """SHA-256 over the contents of every module under ``root`` that uses this module (and this module):
    the sources any compiled gotk function may include. Read once per process."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        data = path.read_bytes()
        if path.name == "jit.py" or b"gotk.jit" in data or b"from gotk import jit" in data:
            h.update(path.relative_to(root).as_posix().encode() + b"\0" + data + b"\0")
    return h.digest()


class _GotkStamp:
    """Mixed into numba's file-backed cache locators: for a function defined under :data:`PACKAGE`, the
    stamp numba compares with a cache index is the file's own stamp plus :func:`kernel_sources_digest`.
    Functions elsewhere are left to the next locator (numba's own)."""

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> Any:
        try:
            if not Path(py_file).resolve().is_relative_to(PACKAGE):
                return None
        except OSError:  # pragma: no cover - a placeholder file name
            return None
        return super().from_function(py_func, py_file)

    def get_source_stamp(self) -> Any:
        return super().get_source_stamp(), kernel_sources_digest()


# numba's locators for NUMBA_CACHE_DIR, the module's __pycache__ and the user-wide cache (a read-only install)
_STAMPED = (caching.UserProvidedCacheLocator, caching.InTreeCacheLocator, caching.UserWideCacheLocator)
GOTK_LOCATORS: tuple[type, ...] = tuple(type(f"Gotk{base.__name__}", (_GotkStamp, base), {}) for base in _STAMPED)
if not any(issubclass(c, _GotkStamp) for c in caching.CacheImpl._locator_classes):
    caching.CacheImpl._locator_classes = [*GOTK_LOCATORS, *caching.CacheImpl._locator_classes]


def _locked_save(save: Callable[..., Any]) -> Callable[..., Any]:
    """``IndexDataCacheFile.save`` under an exclusive ``flock`` on its cache directory's ``gotk.lock``:
    without it, two processes that save different signatures of one function at once can each pick the
    same data file, leaving an index entry that names the other's machine code (a crash at its next
    load)."""

    def save_locked(self: Any, key: Any, data: Any) -> Any:
        try:
            lock = open(os.path.join(self._cache_path, "gotk.lock"), "ab")  # noqa: SIM115 - closed below
        except OSError:  # a cache dir numba will fail to write anyway: as numba does
            return save(self, key, data)
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return save(self, key, data)  # the lock goes with the file's close

    save_locked.gotk_locked = True
    return save_locked


if fcntl is not None and not getattr(caching.IndexDataCacheFile.save, "gotk_locked", False):
    caching.IndexDataCacheFile.save = _locked_save(caching.IndexDataCacheFile.save)

#: Whether saves into numba's cache are locked across processes (POSIX): :mod:`gotk.jobs.precompile` starts
#: a second compiling process only then.
CACHE_LOCK: bool = fcntl is not None


def in_cache(dispatcher: Any) -> bool:
    """True when numba's cache holds a compiled entry of ``dispatcher`` saved under its current stamp
    (so a first call would load, not compile; a stale or missing index is False). True where that cannot
    be told (a dispatcher without a cache): callers use it only to decide whether to prepare a first
    compile."""
    try:
        return bool(dispatcher._cache._cache_file._load_index())
    except Exception:  # noqa: BLE001 - no cache, or an unreadable index: cannot tell
        return True


def compiled(fn: Callable[..., Any]) -> Any:
    """``njit(cache=True)``: a compiled function that may allocate arrays."""
    return njit(cache=True)(fn)


def kernel(fn: Callable[..., Any]) -> Any:
    """``njit(cache=True, _nrt=False)``: a compiled function without reference counting, for functions
    that allocate no array."""
    return njit(cache=True, _nrt=False)(fn)


def nogil_kernel(fn: Callable[..., Any]) -> Any:
    """A :func:`kernel` that releases the GIL while it runs (``nogil=True``): Python threads run such calls on
    several cores at once (the rollouts of a batch of leaves). It must touch no Python object."""
    return njit(cache=True, _nrt=False, nogil=True)(fn)


def is_kernel(fn: Any) -> bool:
    """True for a function compiled by :func:`kernel` (or another decorator here without reference counting)."""
    return getattr(fn, "targetoptions", {}).get("_nrt", True) is False


def inline_kernel(fn: Callable[..., Any]) -> Any:
    """A :func:`kernel` numba inlines into every compiled caller (``inline="always"``): thin wrappers, or hot
    bodies with few call sites, since the body is typed again at every call site (see the module docstring)."""
    return njit(cache=True, _nrt=False, inline="always")(fn)


def internal_kernel(fn: Callable[..., Any] | None = None, *, always_inline: bool = False) -> Any:
    """A :func:`kernel` that only other compiled functions call; ``@internal_kernel`` or
    ``@internal_kernel(always_inline=True)``. ``always_inline`` marks a helper whose call costs more than
    its body and changes nothing in how it compiles (see the module docstring)."""
    if fn is None:
        return kernel
    return kernel(fn)


__all__ = ["CACHE_LOCK", "GOTK_LOCATORS", "PACKAGE", "compiled", "in_cache", "inline_kernel", "internal_kernel",
           "is_kernel", "kernel", "kernel_sources_digest", "nogil_kernel"]
