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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numba import njit


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


__all__ = ["NRT_OFF", "compiled", "inline_kernel", "is_kernel", "kernel"]
