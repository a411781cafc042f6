"""The one place gotk's compiled (numba) functions get their options.

* :func:`kernel` — ``@njit(cache=True)`` without numba's reference counting (NRT). Use it for every
  function that allocates no array: the arrays a kernel reads and writes are owned by its caller, so
  counting references to them is pure cost. Numba otherwise increments and decrements an atomic
  counter for array arguments, views and tuple items around every call; in the rules engine and the
  encoders that was 25–30% of the compiled time (perf, ``gotk encode -e alphago``), and every alphago
  variant ran 1.6–1.7× faster without it (BENCHMARKS.md). A function that does allocate (``np.empty``,
  ``.copy()``) fails to compile as a kernel — an error at the first call, never a wrong result — and
  numba passes the option on to the functions a kernel calls, so those must not allocate either.
* :func:`compiled` — plain ``@njit(cache=True)``, for functions that allocate.
* :func:`inline_kernel` — a kernel numba inlines into its compiled callers (thin wrappers only).

If a numba release drops the internal ``_nrt`` option, :func:`kernel` falls back to :func:`compiled`:
slower, same results.

**Cache freshness.** numba keeps a cached function while the file that defines it is unchanged, but
the machine code it caches also holds every compiled function it calls, from other files too. After
an edit of ``ladders.py`` alone, ``alphago.py``'s cached fill would still run the old ladder reader,
or crash on a changed tuple layout (it did, in development). The same happens to a ``pip install -U``
that replaces some modules while the old caches stay in ``__pycache__``. So every gotk function's
cache stamp also covers the contents of every gotk module with compiled code
(:func:`kernel_sources_digest`): any change there compiles afresh.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from numba import njit

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


def _install_cache_stamp() -> None:
    """Make numba's cache stamp of gotk's own functions their file's stamp plus
    :func:`kernel_sources_digest` (numba's locators for user cache dirs and ``__pycache__``)."""
    try:
        from numba.core import caching
    except ImportError:  # pragma: no cover - numba without its caching module: caches as numba does
        return
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    bases = [getattr(caching, name, None) for name in ("UserProvidedCacheLocator", "InTreeCacheLocator")]
    if impl is None or not hasattr(impl, "_locator_classes") or None in bases:  # pragma: no cover
        return

    class _GotkStamp:
        @classmethod
        def from_function(cls, py_func, py_file):
            try:
                if not Path(py_file).resolve().is_relative_to(PACKAGE):
                    return None
            except OSError:  # pragma: no cover
                return None
            return super().from_function(py_func, py_file)

        def get_source_stamp(self):
            return super().get_source_stamp(), kernel_sources_digest()

    ours = [type(f"Gotk{base.__name__}", (_GotkStamp, base), {}) for base in bases]
    if not any(getattr(c, "__name__", "").startswith("Gotk") for c in impl._locator_classes):
        impl._locator_classes = [*ours, *impl._locator_classes]


_install_cache_stamp()


def compiled(fn: Callable[..., Any]) -> Any:
    """``@njit(cache=True)``: a compiled function that may allocate arrays."""
    return njit(cache=True)(fn)


def _nrt_off_supported() -> bool:
    """True where this numba knows the ``_nrt`` option (checked without compiling anything)."""
    try:
        from numba.core.cpu import CPUTargetOptions
    except ImportError:
        return False
    return hasattr(CPUTargetOptions, "_nrt")


NRT_OFF = _nrt_off_supported()


def is_kernel(fn: Any) -> bool:
    """True for a function compiled by :func:`kernel` (without reference counting)."""
    return getattr(fn, "targetoptions", {}).get("_nrt", True) is False


def kernel(fn: Callable[..., Any]) -> Any:
    """``@njit(cache=True)`` without reference counting: for functions that allocate no array."""
    if NRT_OFF:
        return njit(cache=True, _nrt=False)(fn)
    return njit(cache=True)(fn)


def inline_kernel(fn: Callable[..., Any]) -> Any:
    """A :func:`kernel` that numba inlines (at its IR level) into every compiled caller: for thin
    wrappers over a large compiled tree. numba compiles each called function on its own and then
    links, optimises and emits machine code for it together with everything it calls, so a wrapper
    of one line over the ladder reader cost as much LLVM time as the reader itself on a fresh
    install's first command (BENCHMARKS.md). Only for small functions: inlined bodies are typed again
    at every call site."""
    if NRT_OFF:
        return njit(cache=True, _nrt=False, inline="always")(fn)
    return njit(cache=True, inline="always")(fn)


__all__ = ["NRT_OFF", "compiled", "inline_kernel", "is_kernel", "kernel", "kernel_sources_digest"]
