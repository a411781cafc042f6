"""gotk.jit: kernels compile without numba's reference counting; gotk's cache stamp, cache lock and
``in_cache`` hold with this numba's caching (each test here fails if numba stops honouring what they use)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

from gotk import jit
from gotk.encoders.alphago import AlphaGoEncoder, fill_noladders_lists, local_planes
from gotk.encoders.game_loop import batch_loop_for, game_loop_for
from gotk.encoders.registry import get_encoder
from gotk.game import batch as B
from gotk.game import kernels as K
from gotk.game import loops as KL

REPO = Path(__file__).resolve().parents[1]
_REFCOUNT = re.compile(r"\bNRT_(incref|decref)\b")


def test_hot_kernels_count_no_references():
    """The engine's per-move kernels, the encoders' per-position fills and their game loops are kernels:
    a change that makes one allocate must move it to ``compiled`` on purpose (it then shows here)."""
    for fn in (K.play, K.play_recorded, K.undo, K.check_move, K.count_libs, KL.legal_mask, KL.replay_moves,
               B.replay_games, local_planes, fill_noladders_lists):
        assert jit.is_kernel(fn), fn.py_func.__name__
    for name in ("oneplane", "sevenplane", "simple"):
        enc = get_encoder(name)
        assert jit.is_kernel(enc.fill)
        assert jit.is_kernel(game_loop_for(enc.fill))
        assert jit.is_kernel(batch_loop_for(enc.fill))
    ag = AlphaGoEncoder(ladders=False)
    assert jit.is_kernel(game_loop_for(ag.game_fill, True))


_VIEWS = """
def head(a):
    return a[0] + a[-1]

def views(a, b):
    s = 0
    for i in range(a.shape[0] - 1):
        s += head(a[i:]) * b[i]
    return s
"""


def _llvm(dispatcher) -> str:
    """The LLVM IR of every compiled signature of ``dispatcher`` (its callees linked in)."""
    return "\n".join(dispatcher.inspect_llvm(sig) for sig in dispatcher.signatures)


def _compiled_views(path: Path, callee_deco, caller_deco):
    """``views`` (which passes array views to ``head``) from a new source file (so numba compiles it afresh:
    it shows no code of a function loaded from its cache), compiled by the given decorators, and run."""
    path.write_text(_VIEWS)
    ns: dict = {}
    exec(compile(_VIEWS, str(path), "exec"), ns)
    ns["head"] = callee_deco(ns["head"])
    views = caller_deco(ns["views"])
    a, b = np.arange(6, dtype=np.int64), np.arange(6, dtype=np.int64)
    assert views(a, b) == sum((a[i] + a[-1]) * b[i] for i in range(5))
    code = _llvm(views)
    assert code.count("define ") >= 2  # the function and its linked callee, at least
    return code


def test_a_kernel_compiles_no_reference_counting(tmp_path):
    """numba honours ``_nrt=False``: a kernel that takes array views and passes them to a callee has no NRT
    increment or decrement in its code, while the same functions compiled by plain ``njit`` do."""
    ours = _compiled_views(tmp_path / "ours.py", jit.internal_kernel, jit.kernel)
    assert not _REFCOUNT.search(ours)
    plain = _compiled_views(tmp_path / "plain.py", numba.njit, numba.njit)
    assert _REFCOUNT.search(plain)  # so the check above can fail


def _rebind(fn, **names):
    """``fn`` with the global ``names`` replaced (a function compiled against another callee)."""
    import types

    return types.FunctionType(fn.__code__, {**fn.__globals__, **names}, fn.__name__)


def test_the_engines_compiled_code_counts_no_references():
    """The engine's move check and move, compiled with the options gotk gives them (afresh: numba shows no
    code of a function loaded from its cache), their callees linked in, have no NRT calls."""
    from gotk.game.state import GameState

    st = GameState(9)
    assert st.is_legal(40)
    st.play(40)
    st.undo()
    K.play(st.e, 40, 1, False)
    K.check_move(st.e, 41, 1, False)
    K.play_recorded(st.e, 41, 2, False)  # GameState calls these from compiled entries: compile them from Python too
    K.undo(st.e)
    for fn in (K.check_move, K.play, K.play_recorded, K.undo):
        assert fn.signatures, fn.py_func.__name__
        fresh = numba.njit(**{k: v for k, v in fn.targetoptions.items() if k != "nopython"})(fn.py_func)
        for sig in fn.signatures:
            fresh.compile(sig)
        code = _llvm(fresh)
        assert code.count("define ") > 2 and not _REFCOUNT.search(code), fn.py_func.__name__


_ALLOCATES = """
import numpy as np

def allocates(n):
    return np.zeros(n).sum()
"""


def test_a_kernel_that_allocates_is_refused_at_its_first_call(tmp_path):
    """(From a new source file each time: numba's cache index does not tell a kernel from a compiled function.)"""
    for deco, path in ((jit.kernel, tmp_path / "kern.py"), (jit.compiled, tmp_path / "comp.py")):
        path.write_text(_ALLOCATES)
        ns: dict = {}
        exec(compile(_ALLOCATES, str(path), "exec"), ns)
        ns["allocates"] = deco(ns["allocates"])
        if deco is jit.kernel:
            with pytest.raises(Exception, match="NRT required|empty|zeros"):
                ns["allocates"](3)
        else:
            assert ns["allocates"](3) == 0.0
            assert not jit.is_kernel(ns["allocates"])


def _double(x):
    return 2 * x


def _sum_doubled(a):
    s = 0
    for i in range(a.shape[0]):
        s += _double(a[i])
    return s


def test_the_decorator_forms_compile_kernels_their_callers_use():
    """``@internal_kernel``, ``@internal_kernel(always_inline=True)`` and ``@inline_kernel`` all make kernels a
    compiled caller gets the right answer from; an inline kernel's body goes into its caller (numba never
    compiles it on its own)."""
    a = np.arange(5, dtype=np.int64)
    decorators = (jit.internal_kernel, jit.internal_kernel(always_inline=True), jit.internal_kernel(),
                  jit.inline_kernel)
    for deco in decorators:
        callee = deco(_double)
        # the caller is not cached: its cache entry would not tell which callee it was compiled with
        caller = numba.njit(_nrt=False)(_rebind(_sum_doubled, _double=callee))
        assert caller(a) == 20
        assert jit.is_kernel(callee)
        if deco is jit.inline_kernel:
            assert callee.signatures == []
        else:
            assert callee.signatures  # compiled for the caller
            assert callee(3) == 6  # and callable from Python as well


def test_kernel_sources_digest_follows_compiled_modules_only(tmp_path):
    """The cache stamp covers the modules that use gotk.jit (an edit there compiles afresh), not the others."""
    (tmp_path / "pkg").mkdir()
    kernel = tmp_path / "pkg" / "kern.py"
    plain = tmp_path / "pkg" / "plain.py"
    kernel.write_text("from gotk.jit import kernel\n\n@kernel\ndef f(x):\n    return x\n")
    plain.write_text("def g(x):\n    return x\n")
    first = jit.kernel_sources_digest(tmp_path)
    plain.write_text("def g(x):\n    return x + 1\n")
    jit.kernel_sources_digest.cache_clear()
    assert jit.kernel_sources_digest(tmp_path) == first
    kernel.write_text("from gotk.jit import kernel\n\n@kernel\ndef f(x):\n    return x + 1\n")
    jit.kernel_sources_digest.cache_clear()
    assert jit.kernel_sources_digest(tmp_path) != first


def test_gotk_caches_are_stamped_with_every_compiled_module():
    """A gotk function's cache is located by gotk's locators (its stamp: its own file's plus the digest of all
    compiled modules); numba's own functions elsewhere keep numba's locators."""
    from gotk.encoders import alphago

    for fn in (K.play, alphago.fill_planes):
        locator = fn._cache._impl._locator
        assert isinstance(locator, jit.GOTK_LOCATORS)
        own, digest = locator.get_source_stamp()
        assert digest == jit.kernel_sources_digest() and own  # the file's own stamp is kept as well

    def other(x):
        return x

    assert not isinstance(numba.njit(cache=True)(other)._cache._impl._locator, jit.GOTK_LOCATORS)


_STAMPED_MODULE = """
from gotk.jit import kernel

@kernel
def bump(x):
    return x + 1
"""

_STAMPED_RUN = """
import sys
from pathlib import Path
from gotk import jit

jit.PACKAGE = Path(sys.argv[1]).resolve()  # the stamped package: this test's folder
jit.kernel_sources_digest = lambda: sys.argv[2].encode()  # the other compiled modules' contents, as given
sys.path.insert(0, sys.argv[1])
import stampmod

before = jit.in_cache(stampmod.bump)
print(stampmod.bump(2), sum(stampmod.bump.stats.cache_hits.values()), sum(stampmod.bump.stats.cache_misses.values()),
      before, jit.in_cache(stampmod.bump), type(stampmod.bump._cache._impl._locator).__name__)
"""


def test_a_change_in_another_compiled_module_compiles_afresh(tmp_path):
    """numba compares gotk's stamp with the cache index: with the same digest of the compiled modules a new
    process loads the cached function, with another digest (another module edited) it compiles afresh, and
    ``in_cache`` tells which will happen before the first call."""
    (tmp_path / "stampmod.py").write_text(_STAMPED_MODULE)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}

    def run(digest: str) -> list[str]:
        out = subprocess.run([sys.executable, "-c", _STAMPED_RUN, str(tmp_path), digest], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout.split()

    assert run("one") == ["3", "0", "1", "False", "True", "GotkUserProvidedCacheLocator"]  # compiled and saved
    assert run("one") == ["3", "1", "0", "True", "True", "GotkUserProvidedCacheLocator"]  # loaded
    assert run("two") == ["3", "0", "1", "False", "True", "GotkUserProvidedCacheLocator"]  # stale: compiled
    assert run("two")[1:3] == ["1", "0"]


def test_in_cache_tells_a_cached_function_from_a_new_or_edited_one(tmp_path):
    path = tmp_path / "incache.py"

    def load(body: str):
        path.write_text(f"from gotk.jit import kernel\n\n@kernel\ndef f(x):\n    return {body}\n")
        ns: dict = {}
        exec(compile(path.read_text(), str(path), "exec"), ns)
        return ns["f"]

    f = load("x + 1")
    assert jit.in_cache(f) is False
    assert f(1) == 2
    assert jit.in_cache(f) is True
    assert jit.in_cache(load("x + 1")) is True  # a new process would load it
    assert jit.in_cache(load("x + 2")) is False  # the file changed: its cache is stale


def test_saves_into_numbas_cache_are_locked():
    """On POSIX every save into numba's cache goes through gotk's lock (tests/test_precompile.py shows a save
    waiting for it in another process)."""
    from numba.core import caching

    if os.name != "posix":
        pytest.skip("flock is POSIX")
    assert jit.CACHE_LOCK
    assert getattr(caching.IndexDataCacheFile.save, "gotk_locked", False)
