"""gotk.jit: kernels run without numba's reference counting; generated loops follow their callees."""

from __future__ import annotations

import numpy as np
import pytest

from gotk import jit
from gotk.encoders.alphago import AlphaGoEncoder, fill_noladders_lists, local_planes
from gotk.encoders.game_loop import game_loop_for
from gotk.encoders.registry import get_encoder
from gotk.game import kernels as K

pytestmark = pytest.mark.skipif(not jit.NRT_OFF, reason="this numba has no _nrt option")


def test_hot_kernels_count_no_references():
    """The engine's per-move kernels, the encoders' per-position fills and their game loops are kernels:
    a change that makes one allocate must move it to ``compiled`` on purpose (it then shows here)."""
    for fn in (K.play_move, K.check_move, K.count_libs, K.legal_mask, local_planes, fill_noladders_lists):
        assert jit.is_kernel(fn), fn.py_func.__name__
    for name in ("oneplane", "sevenplane", "simple"):
        enc = get_encoder(name)
        assert jit.is_kernel(enc.fill)
        assert jit.is_kernel(game_loop_for(enc.fill))
    ag = AlphaGoEncoder(ladders=False)
    assert jit.is_kernel(game_loop_for(ag.game_fill, True))
    assert not jit.is_kernel(K.replay_moves)  # it copies arrays (superko): compiled, with reference counting


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
