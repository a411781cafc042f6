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
* :func:`internal_kernel` — a kernel only compiled code calls: numba builds no Python entry point
  for it (calling it from Python raises ``TypeError``).

If a numba release drops the internal ``_nrt`` option, :func:`kernel` falls back to :func:`compiled`:
slower, same results.

**Cache freshness.** numba keeps a cached function while the file that defines it is unchanged, but
the machine code it caches also holds every compiled function it calls, from other files too. After
an edit of ``ladders.py`` alone, ``alphago.py``'s cached fill would still run the old ladder reader,
or crash on a changed tuple layout (it did, in development). The same happens to a ``pip install -U``
that replaces some modules while the old caches stay in ``__pycache__``. So every gotk function's
cache stamp also covers the contents of every gotk module with compiled code
(:func:`kernel_sources_digest`): any change there compiles afresh.

**Compile time.** numba's type inference resolves each operation (``a[i]``, ``x == y``, ``n + 1``…)
by trying every registered template for that operator, one after another, and it does not remember
the answer: in ``gotk replay``'s first run 2,800 of its 3,000 resolutions repeated one already made
with the same argument types. While numba compiles a gotk function (:class:`GotkCompiler`, the
pipeline of every decorator here), resolutions are memoised by (function type, typing context,
argument types); the memo is dropped when that outermost compile ends. A template's answer depends
only on those (failures raise and are never stored), so the compiled code is the same
(``tests/test_jit.py`` compares the LLVM IR); that first run took 15% less CPU (BENCHMARKS.md).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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


def _install_cache_lock() -> bool:
    """Make numba's saving of a cache entry (read the function's index, pick a data file name, write both)
    one step across processes, under an exclusive ``flock`` on the cache directory's ``gotk.lock``. numba
    does it unlocked: two processes that save different signatures of one function at once can each pick
    the same data file, leaving an index entry that names the other's machine code (a crash at its next
    load). gotk compiles in several processes at once (:mod:`gotk.jobs.precompile`, worker pools, Dask
    workers). False where this platform or numba lacks what it needs (numba's own saving then)."""
    try:
        import fcntl

        from numba.core.caching import IndexDataCacheFile
    except ImportError:  # pragma: no cover - not POSIX, or another numba
        return False
    def locked(original):
        def save(self, key, data):
            try:
                lock = open(os.path.join(self._cache_path, "gotk.lock"), "ab")  # noqa: SIM115 - closed below
            except OSError:  # a cache dir numba will fail to write anyway: as numba does
                return original(self, key, data)
            with lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                return original(self, key, data)  # the lock goes with the file's close

        return save

    return _wrap_method(IndexDataCacheFile, "save", locked)


def _wrap_method(cls: type, name: str, wrap: Callable[[Callable], Callable]) -> bool:
    """Replace ``cls.name`` by ``wrap(original)``, once per process; False where ``cls`` lacks it."""
    original = getattr(cls, name, None)
    if original is None:  # pragma: no cover - another numba
        return False
    if not getattr(original, "_gotk_wrapped", False):
        wrapped = wrap(original)
        wrapped._gotk_wrapped = True
        setattr(cls, name, wrapped)
    return True


CACHE_LOCK = _install_cache_lock()


def in_cache(dispatcher: Any) -> bool:
    """True when numba's cache holds a compiled entry of ``dispatcher`` saved under its current stamp
    (so a first call would load, not compile; a stale or missing index is False). True where that cannot
    be told (no cache, another numba): callers use it only to decide whether to prepare a first compile."""
    try:
        return bool(dispatcher._cache._cache_file._load_index())
    except Exception:  # noqa: BLE001 - numba internals: any failure means "cannot tell"
        return True


_MEMO = threading.local()


@contextmanager
def call_type_memo() -> Iterator[dict]:
    """Memoise numba's call-type resolutions in this thread until the outermost ``with`` ends
    (nested compiles share it). Yields the memo (for tests)."""
    memo = getattr(_MEMO, "memo", None)
    if memo is not None:
        yield memo
        return
    _MEMO.memo = memo = {}
    try:
        yield memo
    finally:
        _MEMO.memo = None


def _install_call_type_memo() -> bool:
    """Wrap ``numba.core.types.functions.BaseFunction.get_call_type`` (the resolution of calls to
    operators and built-in functions) so that inside :func:`call_type_memo` a repeated resolution is
    answered from the memo. Outside it, numba runs as it is. False where this numba lacks it."""
    try:
        from numba.core.types.functions import BaseFunction
    except ImportError:  # pragma: no cover
        return False
    def memoised(original):
        def get_call_type(self, context, args, kws):
            memo = getattr(_MEMO, "memo", None)
            if memo is None:
                return original(self, context, args, kws)
            try:
                key = (self, context, tuple(args), tuple(sorted(kws.items())))
                sig = memo.get(key)
            except TypeError:  # an unhashable argument type: resolve as numba does
                return original(self, context, args, kws)
            if sig is None:
                sig = original(self, context, args, kws)  # raises on failure: nothing stored
                if sig is not None:
                    memo[key] = sig
            return sig

        return get_call_type

    return _wrap_method(BaseFunction, "get_call_type", memoised)


CALL_TYPE_MEMO = _install_call_type_memo()


def _pipeline() -> Any:
    """numba's default compiler with the call-type memo on for the whole compile (None where this
    numba has no ``Compiler`` class: its own default pipeline then)."""
    try:
        from numba.core.compiler import Compiler
    except ImportError:  # pragma: no cover
        return None

    class GotkCompiler(Compiler):
        """numba's default pipeline, compiled under :func:`call_type_memo`; an :func:`internal_kernel`
        gets an :class:`InternalLibrary` for its code."""

        def compile_extra(self, func):
            state = self.state
            if state.library is None and InternalLibrary is not None and state.flags.no_cpython_wrapper:
                state.library = InternalLibrary(state.targetctx.codegen(), func.__qualname__)
                state.library.enable_object_caching()
            with call_type_memo():
                return super().compile_extra(func)

    return GotkCompiler


def _internal_library() -> Any:
    """The code library of internal kernels (None where this numba lacks the classes it builds on)."""
    try:
        from numba.core.codegen import JITCodeLibrary
    except ImportError:  # pragma: no cover
        return None
    if not all(hasattr(JITCodeLibrary, name) for name in (
            "_finalize_final_module", "_get_module_for_linking",
            "_finalize_dynamic_globals", "_verify_declare_only_symbols", "serialize_using_object_code")):
        return None  # pragma: no cover

    class InternalLibrary(JITCodeLibrary):
        """The code of an internal kernel: optimised LLVM IR for its callers to link, no machine code of its own.

        numba optimises each function's module with all its callees linked in, emits machine code for
        it, and gives its callers the optimised IR to link, optimise and emit with themselves. An
        internal kernel has no Python entry point, so its own machine code would never run: it is not
        emitted (on a first ``encode -e alphago`` that was 0.5 s of LLVM's time, BENCHMARKS.md). The IR
        it gives its callers is the same as numba's, so is their code. In the numba cache it is stored as
        numba stores every function (object code + the IR for linking), with object code that defines
        only the function's environment pointer, which numba sets when it loads a function. An internal
        kernel cannot use that environment (no Python objects, no exception carrying runtime values):
        numba's own check would raise "missing Environment" in it.

        An encoder's internal kernels (:data:`_OPTIMISED_BY_CALLERS`) are not optimised as a module of their
        own either: numba runs LLVM's module passes over each function with all its callees linked in, so a
        deep tree (the game loop → the ladder reader → its move → the engine's helpers) was optimised once
        per level, the leaves four times. Their callers optimise them once, with themselves (each of these
        kernels ends up in one game loop): on a first ``encode -e alphago`` that was a second of LLVM's
        time, for the same speed (BENCHMARKS.md). The engine's kernels keep numba's way: the replay kernel
        ran 10% slower without it.
        """

        def add_ir_module(self, ir_module: Any) -> None:
            for fn in ir_module.functions:  # see internal_kernel(always_inline=True)
                if fn.blocks and fn.name.startswith(_ALWAYS_INLINE):
                    fn.attributes.add("alwaysinline")
                if fn.blocks and fn.name.startswith(_OPTIMISED_BY_CALLERS):
                    self.__dict__["_gotk_optimised_by_callers"] = True
            super().add_ir_module(ir_module)

        def _optimize_final_module(self) -> None:
            if not self.__dict__.get("_gotk_optimised_by_callers"):
                super()._optimize_final_module()

        def _finalize_final_module(self) -> None:
            self._finalize_dynamic_globals()
            self._verify_declare_only_symbols()
            self._finalized = True

        def get_pointer_to_function(self, name: str) -> int:
            self._ensure_finalized()
            return 0

        @property
        def codegen(self) -> Any:
            return _EnvRecorder(self)

        def serialize_using_object_code(self) -> tuple:
            self._ensure_finalized()
            # its own environment and those of the callees linked in: numba sets every one of them when it
            # loads the function (CompileResult._find_referenced_environments reads the same globals)
            env_names = set(self.__dict__.get("_gotk_env_names", ()))
            env_names.update(gv.name for gv in self._final_module.global_variables
                             if gv.name.startswith("_ZN08NumbaEnv"))
            return self.name, "object", (_env_object(self._codegen, sorted(env_names)),
                                         self._get_module_for_linking().as_bitcode())

    return InternalLibrary


class _EnvRecorder:
    """An :class:`InternalLibrary`'s ``codegen`` as numba's lowering sees it. numba stores each compiled
    function's environment address into that function's machine code, which an internal kernel does not
    have: the name is kept for the object code the cache stores instead."""

    def __init__(self, library: Any) -> None:
        self._library = library

    def set_env(self, env_name: str, env: Any) -> None:
        self._library.__dict__.setdefault("_gotk_env_names", set()).add(env_name)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._library._codegen, name)


def _env_object(codegen: Any, env_names: list[str]) -> bytes:
    """Object code for ``codegen``'s target that defines just the environment pointers ``env_names``, as
    numba declares them (``common global ptr null``)."""
    from llvmlite import binding as ll

    text = str(codegen._create_empty_module("gotk_internal_env"))
    text += "".join(f'\n@"{name}" = common global ptr null' for name in env_names)
    return codegen._tm.emit_object(ll.parse_assembly(text))


InternalLibrary = _internal_library()
GotkCompiler = _pipeline()


def _has_target_option(name: str) -> bool:
    """True where this numba knows the CPU target option ``name`` (checked without compiling)."""
    try:
        from numba.core.cpu import CPUTargetOptions
    except ImportError:  # pragma: no cover
        return False
    return hasattr(CPUTargetOptions, name)


try:
    from numba.core.registry import CPUDispatcher as _CPUDispatcher
except ImportError:  # pragma: no cover
    _CPUDispatcher = object

_CPYTHON_WRAPPER_OPTIONAL = _has_target_option("no_cpython_wrapper")

# Options of every decorator here. ``no_cfunc_wrapper``: numba otherwise also emits, for every
# compiled function, a C-callable wrapper that only a first-class function value (a compiled
# function passed as an argument to another) would use; gotk passes none (its game loops are
# generated source, :mod:`gotk.encoders.game_loop`), and without them the engine's six small kernels
# compiled in 16% less time (BENCHMARKS.md).
_OPTIONS: dict[str, Any] = {"pipeline_class": GotkCompiler}
if _has_target_option("no_cfunc_wrapper"):
    _OPTIONS["no_cfunc_wrapper"] = True


def compiled(fn: Callable[..., Any]) -> Any:
    """``@njit(cache=True)``: a compiled function that may allocate arrays."""
    return njit(cache=True, **_OPTIONS)(fn)


NRT_OFF = _has_target_option("_nrt")


def is_kernel(fn: Any) -> bool:
    """True for a function compiled by :func:`kernel` (without reference counting)."""
    return getattr(fn, "targetoptions", {}).get("_nrt", True) is False


def kernel(fn: Callable[..., Any]) -> Any:
    """``@njit(cache=True)`` without reference counting: for functions that allocate no array."""
    if NRT_OFF:
        return njit(cache=True, _nrt=False, **_OPTIONS)(fn)
    return njit(cache=True, **_OPTIONS)(fn)


def inline_kernel(fn: Callable[..., Any]) -> Any:
    """A :func:`kernel` that numba inlines (at its IR level) into every compiled caller: for thin
    wrappers over a large compiled tree. numba compiles each called function on its own and then
    links, optimises and emits machine code for it together with everything it calls, so a wrapper
    of one line over the ladder reader cost as much LLVM time as the reader itself on a fresh
    install's first command (BENCHMARKS.md). Only for small functions: inlined bodies are typed again
    at every call site."""
    if NRT_OFF:
        return njit(cache=True, _nrt=False, inline="always", **_OPTIONS)(fn)
    return njit(cache=True, inline="always", **_OPTIONS)(fn)


class InternalDispatcher(_CPUDispatcher):  # type: ignore[misc, valid-type]
    """A numba dispatcher compiled without a Python entry point (numba's ``no_cpython_wrapper``).
    numba's own call would jump to the missing wrapper and crash the process; this one raises."""

    def __call__(self, *args: Any, **kws: Any) -> Any:
        raise TypeError(f"{self.py_func.__module__}.{self.py_func.__qualname__} is an internal kernel: "
                        "only gotk's compiled code calls it")


_ALWAYS_INLINE: tuple[str, ...] = ()  # numba's mangled-name prefixes of the always-inlined internal kernels
#: numba's mangled-name prefixes of the internal kernels whose callers alone optimise them (InternalLibrary)
_OPTIMISED_BY_CALLERS: tuple[str, ...] = ("_ZN4gotk8encoders",)


def _mangled_prefix(fn: Callable[..., Any]) -> str:
    """The start of numba's (Itanium) mangled name of top-level function ``fn``: ``_ZN4gotk8encoders...``."""
    return "_ZN" + "".join(f"{len(p)}{p}" for p in f"{fn.__module__}.{fn.__qualname__}".split("."))


def internal_kernel(fn: Callable[..., Any] | None = None, *, always_inline: bool = False) -> Any:
    """A :func:`kernel` that only other compiled functions call. numba otherwise also compiles, for
    every function, the code that converts Python arguments (each array: type checks, shape and
    strides reads) and the return value; for the engine's and the ladder reader's helpers, which
    Python never calls, that was a third of their compile time on a fresh install (BENCHMARKS.md).
    Calling one from Python raises ``TypeError``. Where this numba lacks the option (or the dispatcher
    class), it is a plain :func:`kernel`.

    ``always_inline``: LLVM inlines it into every caller (its IR is marked ``alwaysinline``). numba passes
    every field of every array argument (seven to nine words an array) to a function it calls, so a small
    helper that takes the ladder reader's scratch tuple costs more to call than to run; LLVM's own
    heuristics leave such a helper uninlined once it has several callers. Unlike :func:`inline_kernel`
    nothing is typed again: only LLVM's work grows, with each call site (BENCHMARKS.md)."""
    if fn is None:
        return lambda f: internal_kernel(f, always_inline=always_inline)
    if _CPUDispatcher is object or not _CPYTHON_WRAPPER_OPTIONAL:
        return kernel(fn)
    if always_inline:
        global _ALWAYS_INLINE
        _ALWAYS_INLINE += (_mangled_prefix(fn),)
    options = {"nopython": True, "no_cpython_wrapper": True, **_OPTIONS}
    if NRT_OFF:
        options["_nrt"] = False
    pipeline = options.pop("pipeline_class", None)
    disp = InternalDispatcher(py_func=fn, locals={}, targetoptions=options,
                              **({"pipeline_class": pipeline} if pipeline is not None else {}))
    disp.enable_caching()
    return disp


__all__ = ["CACHE_LOCK", "CALL_TYPE_MEMO", "NRT_OFF", "GotkCompiler", "InternalDispatcher", "InternalLibrary",
           "call_type_memo", "compiled", "in_cache", "inline_kernel", "internal_kernel", "is_kernel", "kernel",
           "kernel_sources_digest"]
