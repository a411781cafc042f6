"""gotk.jit: kernels run without numba's reference counting; generated loops follow their callees."""

from __future__ import annotations

import numpy as np
import pytest

from gotk import jit
from gotk.encoders.alphago import AlphaGoEncoder, fill_noladders_lists, local_planes
from gotk.encoders.game_loop import batch_loop_for, game_loop_for
from gotk.encoders.registry import get_encoder
from gotk.game import kernels as K

pytestmark = pytest.mark.skipif(not jit.NRT_OFF, reason="this numba has no _nrt option")


def test_hot_kernels_count_no_references():
    """The engine's per-move kernels, the encoders' per-position fills and their game loops are kernels:
    a change that makes one allocate must move it to ``compiled`` on purpose (it then shows here)."""
    for fn in (K.play_move, K.check_move, K.count_libs, K.legal_mask, K.replay_moves, K.replay_games, local_planes,
               fill_noladders_lists):
        assert jit.is_kernel(fn), fn.py_func.__name__
    for name in ("oneplane", "sevenplane", "simple"):
        enc = get_encoder(name)
        assert jit.is_kernel(enc.fill)
        assert jit.is_kernel(game_loop_for(enc.fill))
        assert jit.is_kernel(batch_loop_for(enc.fill))
    ag = AlphaGoEncoder(ladders=False)
    assert jit.is_kernel(game_loop_for(ag.game_fill, True))


def test_a_kernel_that_allocates_is_refused_at_its_first_call():
    @jit.kernel
    def allocates(n):
        return np.zeros(n).sum()

    with pytest.raises(Exception, match="NRT required|empty|zeros"):
        allocates(3)

    @jit.compiled
    def allocates_ok(n):
        return np.zeros(n).sum()

    assert allocates_ok(3) == 0.0


def test_kernel_falls_back_to_compiled_without_the_option(monkeypatch):
    monkeypatch.setattr(jit, "NRT_OFF", False)

    @jit.kernel
    def add(a, b):
        return a + b

    assert add(2, 3) == 5
    assert "_nrt" not in add.targetoptions


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
    """A gotk function's cache stamp is its own file's plus the digest of all compiled modules, so editing
    ladders.py alone cannot leave alphago.py's cached machine code (which includes the reader) in use;
    numba's own functions elsewhere keep numba's stamp."""
    import numba

    from gotk.encoders import alphago
    from gotk.game import kernels

    for fn in (kernels.play_move, alphago.fill_planes):
        locator = fn._cache._impl._locator
        assert type(locator).__name__.startswith("Gotk")
        own, digest = locator.get_source_stamp()
        assert digest == jit.kernel_sources_digest() and own  # the file's own stamp is kept as well

    def other(x):
        return x

    assert not type(numba.njit(cache=True)(other)._cache._impl._locator).__name__.startswith("Gotk")


def _same_names(llvm_ir: str) -> str:
    """LLVM IR with numba's per-compile version tags (``B3v12B``…) made equal."""
    import re

    return re.sub(r"B\d+v\d+(?=B)", "Bv", llvm_ir)


@pytest.mark.skipif(not jit.CALL_TYPE_MEMO or jit.GotkCompiler is None, reason="this numba has no memo hook")
def test_the_call_type_memo_changes_no_compiled_code(monkeypatch):
    """The engine's move check compiled with the memo (gotk's pipeline) and without it (numba's own)
    gives the same LLVM IR, and the memo did answer repeated resolutions."""
    import numba
    from numba.core.types.functions import BaseFunction

    from gotk.game.state import GameState

    st = GameState(9)
    assert st.is_legal(st.size * 4 + 4)  # compiles (or loads) check_move for the engine's argument types
    sig = K.check_move.signatures[0]

    plain = numba.njit(_nrt=False, no_cfunc_wrapper=True)(K.check_move.py_func)
    plain.compile(sig)

    calls = []
    wrapped = BaseFunction.get_call_type
    monkeypatch.setattr(BaseFunction, "get_call_type",
                        lambda self, *a, **k: calls.append(1) or wrapped(self, *a, **k))
    with jit.call_type_memo() as memo:
        ours = numba.njit(_nrt=False, **jit._OPTIONS)(K.check_move.py_func)
        ours.compile(sig)
        stored = len(memo)
    assert 0 < stored < len(calls) / 2  # most resolutions were repeats answered from the memo
    assert _same_names(ours.inspect_llvm(sig)) == _same_names(plain.inspect_llvm(sig))


def test_the_call_type_memo_lives_for_one_outermost_compile():
    with jit.call_type_memo() as outer:
        outer["x"] = 1
        with jit.call_type_memo() as inner:
            assert inner is outer
    with jit.call_type_memo() as later:
        assert later == {}


@pytest.mark.skipif(not jit._CPYTHON_WRAPPER_OPTIONAL, reason="this numba compiles every function for Python")
def test_an_internal_kernel_runs_in_compiled_code_and_refuses_python():
    """No Python entry point is compiled for it: a Python call raises instead of jumping to a missing
    wrapper; compiled callers get the right answer."""

    @jit.internal_kernel
    def twice(a, i):
        return a[i] * 2

    @jit.kernel
    def total(a):
        s = 0
        for i in range(a.shape[0]):
            s += twice(a, i)
        return s

    a = np.arange(5, dtype=np.int32)
    assert total(a) == 20
    assert jit.is_kernel(twice)
    with pytest.raises(TypeError, match="internal kernel"):
        twice(a, 1)


def test_helpers_python_never_calls_are_internal():
    """The engine's and the ladder reader's helpers compile without a Python entry point (a third of their
    compile time); the functions Python does call keep theirs."""
    from gotk.encoders import ladder_cache as LC
    from gotk.encoders import ladders as LD

    if not jit._CPYTHON_WRAPPER_OPTIONAL:
        pytest.skip("this numba compiles every function for Python")
    for fn in (K.next_stamp, K.count_libs, K._remove_string, K._merge, K._restore, K.start_game, LD.read_ladder,
               LD._open, LD._play, LC._changed_points):
        assert isinstance(fn, jit.InternalDispatcher), fn.py_func.__name__
    for fn in (K.play_move, K.check_move, K.replay_moves, K.legal_mask, LD.footprint, LD.load_position):
        assert not isinstance(fn, jit.InternalDispatcher), fn.py_func.__name__


_CALLER_SRC = """
def twice(a, i):
    return a[i] * 2

def total(a):
    s = 0
    for i in range(a.shape[0]):
        s += twice(a, i)
    return s
"""


def _caller_ir(path, wrap_callee, wrap_caller) -> tuple[str, object]:
    """LLVM IR of ``total`` (which calls ``twice``), each compiled by the given decorator (source written to
    ``path``, a new file: numba compiles afresh; names made equal), and ``twice``."""
    path.write_text(_CALLER_SRC)
    ns: dict = {}
    exec(compile(_CALLER_SRC, str(path), "exec"), ns)
    ns["twice"] = wrap_callee(ns["twice"])
    total = wrap_caller(ns["total"])
    a = np.arange(7, dtype=np.int32)
    assert total(a) == 42
    import re

    ir = _same_names(total.inspect_llvm(total.signatures[0])).replace(path.stem, "src")
    return re.sub(r"\[\d+ x i8\]", "[N x i8]", ir), ns["twice"]  # the names' lengths in their strings


@pytest.mark.skipif(jit.InternalLibrary is None or not jit._CPYTHON_WRAPPER_OPTIONAL,
                    reason="this numba has no internal-kernel library")
def test_an_internal_kernel_emits_no_machine_code_and_changes_no_caller(tmp_path):
    """An internal kernel's library is never turned into machine code, and a caller's code is the same as
    with numba's own library for the callee (numba's pipeline, the same options)."""
    import numba

    ours, twice = _caller_ir(tmp_path / "ours.py", jit.internal_kernel, jit.kernel)
    plain, _ = _caller_ir(tmp_path / "base.py",
                          lambda f: numba.njit(_nrt=False, no_cpython_wrapper=True, no_cfunc_wrapper=True)(f),
                          lambda f: numba.njit(_nrt=False, no_cfunc_wrapper=True)(f))
    assert ours == plain
    (cres,) = twice.overloads.values()
    assert isinstance(cres.library, jit.InternalLibrary)
    assert not cres.library._compiled  # no object code was emitted for it


_BIG_SRC = """
def spread(a, i):
    s = 0
    for k in range(a.shape[0]):
        s += (a[k] * (i + k)) % 7 + (a[k] ^ i) % 5 - (a[(k + i) % a.shape[0]] * 3) % 11
    return s

def total(a, i):
    return spread(a, i) + spread(a, i + 1) + spread(a, i + 2) + spread(a, i + 3)
"""


def _inlined_ir(path, always_inline):
    """``spread`` (an internal kernel with four call sites) and the optimised LLVM IR of its caller."""
    path.write_text(_BIG_SRC)
    ns: dict = {"__name__": f"gotk_test_{path.stem}"}
    exec(compile(_BIG_SRC, str(path), "exec"), ns)
    ns["spread"] = spread = jit.internal_kernel(ns["spread"], always_inline=always_inline)
    total = jit.kernel(ns["total"])
    a = np.arange(9, dtype=np.int64)
    expect = sum(sum((int(x) * (i + k)) % 7 + (int(x) ^ i) % 5 - (int(a[(k + i) % 9]) * 3) % 11
                     for k, x in enumerate(a)) for i in (1, 2, 3, 4))
    assert total(a, 1) == expect
    (cres,) = spread.overloads.values()
    return cres, total.inspect_llvm(total.signatures[0])


@pytest.mark.skipif(jit.InternalLibrary is None or not jit._CPYTHON_WRAPPER_OPTIONAL,
                    reason="this numba has no internal-kernel library")
def test_an_always_inline_kernel_is_inlined_into_every_caller(tmp_path):
    """``internal_kernel(always_inline=True)`` marks the kernel's IR ``alwaysinline``: its caller calls it
    nowhere (LLVM left the plain kernel, called from four places, as calls)."""
    import re

    plain, plain_ir = _inlined_ir(tmp_path / "plain.py", False)
    inlined, inlined_ir = _inlined_ir(tmp_path / "inlined.py", True)
    name = plain.fndesc.mangled_name
    assert re.search(rf"call [^\n]*@\"?{re.escape(name)}", plain_ir)
    assert re.search(r"define [^\n]*alwaysinline|attributes #\d+ = \{[^}]*alwaysinline", inlined.library.get_llvm_str())
    assert inlined.fndesc.mangled_name not in re.findall(r"call [^(]*@\"?([\w.$]+)", inlined_ir)
    assert "alwaysinline" not in plain.library.get_llvm_str()


@pytest.mark.skipif(jit.InternalLibrary is None or not jit._CPYTHON_WRAPPER_OPTIONAL,
                    reason="this numba has no internal-kernel library")
def test_an_encoder_kernel_is_optimised_by_its_callers_only(tmp_path):
    """An internal kernel of ``gotk.encoders`` skips LLVM's module passes in its own library (its callers run
    them over it, once); any other internal kernel gets them there too. Same results either way."""
    libs = {}
    for module, ours in (("gotk.encoders.gotk_test_late", True), ("gotk_test_early", False)):
        path = tmp_path / (module.replace(".", "_") + ".py")
        path.write_text(_BIG_SRC)
        ns: dict = {"__name__": module}
        exec(compile(_BIG_SRC, str(path), "exec"), ns)
        ns["spread"] = spread = jit.internal_kernel(ns["spread"])
        total = jit.kernel(ns["total"])
        a = np.arange(9, dtype=np.int64)
        assert total(a, 1) == sum(sum((int(x) * (i + k)) % 7 + (int(x) ^ i) % 5 - (int(a[(k + i) % 9]) * 3) % 11
                                      for k, x in enumerate(a)) for i in (1, 2, 3, 4))
        (cres,) = spread.overloads.values()
        assert bool(cres.library.__dict__.get("_gotk_optimised_by_callers")) is ours
        libs[ours] = cres.library.get_llvm_str()
    # the module passes unroll the loop of ``spread``: its own library's IR is several times longer with them
    assert 2 * len(libs[True]) < len(libs[False])


_INNER = """
from gotk.jit import internal_kernel

@internal_kernel
def leaf(x):
    return x * 2

@internal_kernel
def twice(a, i):
    return leaf(a[i])
"""

_OUTER = """
import sys
import numpy as np
from gotk.jit import kernel
from inner import twice

@kernel
def {name}(a):
    s = 0
    for i in range(a.shape[0]):
        s += twice(a, i) * {weight}
    return s

print({name}(np.arange(5, dtype=np.int64)), sum(twice.stats.cache_hits.values()),
      sum(twice.stats.cache_misses.values()))
"""


@pytest.mark.skipif(jit.InternalLibrary is None, reason="this numba has no internal-kernel library")
def test_an_internal_kernel_from_the_cache_serves_a_new_caller(tmp_path):
    """A process compiles an internal kernel (which calls another) and a caller into numba's cache; a later
    process compiles a new caller of it, taking the internal kernel from the cache (what it links is the cached
    IR; numba sets the environments of both kernels as it loads it), and runs it."""
    import os
    import subprocess
    import sys

    (tmp_path / "inner.py").write_text(_INNER)
    (tmp_path / "outer_a.py").write_text(_OUTER.format(name="total", weight=1))
    (tmp_path / "outer_b.py").write_text(_OUTER.format(name="weighted", weight=3))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}

    def run(module: str) -> list[int]:
        out = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        return [int(x) for x in out.stdout.split()]

    assert run("outer_a") == [20, 0, 1]  # compiled here: a cache miss, then saved
    assert run("outer_b") == [60, 1, 0]  # the new caller links the cached kernel
    assert run("outer_a") == [20, 0, 0]  # the first caller itself comes from the cache: the kernel is not loaded
