"""Networks: every model builds for the encoders' plane counts and board sizes, with the right outputs."""

from __future__ import annotations

import math

import pytest
import torch

from gotk.nets.networks import MODELS, AlphaGoNet, build_model, count_parameters, model_hparams
from gotk.train.config import lr_factor

SMALL = {"alphago": {"filters": 8}, "alphago_value": {"filters": 8}, "resnet": {"filters": 8, "blocks": 1},
         "zero": {"filters": 8, "blocks": 3}, "leelaz": {"filters": 8, "blocks": 1}}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """One torch thread: faster for these tiny batches, and robust on a busy machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("planes", [7, 11, 48, 49])
@pytest.mark.parametrize("size", [19, 9])
def test_every_model_builds_and_outputs_moves(name: str, planes: int, size: int) -> None:
    torch.manual_seed(0)
    x = (torch.rand(2, planes, size, size) < 0.3).to(torch.uint8)
    model = build_model(name, planes, size, head="both", **SMALL.get(name, {}))
    with torch.no_grad():
        p, v = model(x)
    assert p.shape == (2, size * size + 1)
    assert torch.isfinite(p).all()
    assert v.shape == (2,)
    assert (v.abs() <= 1).all()


@pytest.mark.parametrize("name", list(MODELS))
def test_single_heads(name: str) -> None:
    x = torch.ones(2, 7, 9, 9, dtype=torch.uint8)
    with torch.no_grad():
        p, v = build_model(name, 7, 9, head="policy", **SMALL.get(name, {}))(x)
        assert p.shape == (2, 82) and v is None
        p, v = build_model(name, 7, 9, head="value", **SMALL.get(name, {}))(x)
        assert p is None and v.shape == (2,)


def test_int8_input_and_bad_shape() -> None:
    model = build_model("resnet", 1, 19, filters=8, blocks=1)
    x = torch.randint(-1, 2, (2, 1, 19, 19), dtype=torch.int8)
    assert model(x)[0].shape == (2, 362)
    with pytest.raises(ValueError, match="expected"):
        model(torch.zeros(2, 7, 19, 19))


def test_default_heads_and_hparams() -> None:
    assert build_model("alphago_value", 48, 19, filters=8).head == "value"
    assert build_model("alphago", 48, 19, filters=8).head == "policy"
    assert model_hparams("resnet") == {"blocks": 6, "filters": 64}
    assert model_hparams("alphago", filters=None) == {"filters": 192}
    with pytest.raises(ValueError, match="takes no --filters"):
        model_hparams("small", filters=32)
    with pytest.raises(ValueError, match="unknown model"):
        build_model("nope", 7)


def test_alphago_policy_net_is_13_layers_of_192_filters() -> None:
    model = build_model("alphago", 48, 19)
    assert isinstance(model, AlphaGoNet)
    convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    assert len(convs) == 13
    assert convs[0].kernel_size == (5, 5) and convs[0].out_channels == 192
    assert all(c.kernel_size == (3, 3) and c.out_channels == 192 for c in convs[1:12])
    assert convs[12].kernel_size == (1, 1) and convs[12].out_channels == 1
    # 48*192*25 + 11*(192*192*9) conv weights (no bias: batch norm follows, 2*192 per layer) + 1x1 head + pass logit
    assert count_parameters(model) == 48 * 192 * 25 + 11 * 192 * 192 * 9 + 12 * 2 * 192 + 192 + 1 + 192 + 1
    assert sum(isinstance(m, torch.nn.BatchNorm2d) for m in model.modules()) == 12


def test_book_networks_follow_dlgo_layer_lists() -> None:
    small = build_model("small", 7, 19)
    convs = [(m.out_channels, m.kernel_size[0]) for m in small.convs.modules() if isinstance(m, torch.nn.Conv2d)]
    assert convs == [(48, 7), (32, 5), (32, 5), (32, 5)]
    dense = [m for m in small.modules() if isinstance(m, torch.nn.Linear)]
    assert dense[0].out_features == 512 and dense[-1].out_features == 362
    large = build_model("large", 7, 19)
    dense = [m for m in large.modules() if isinstance(m, torch.nn.Linear)]
    assert dense[0].out_features == 1024
    # batch norm after every conv, and a 1x1 conv logit per point beside the dense policy layer
    assert sum(isinstance(m, torch.nn.BatchNorm2d) for m in large.modules()) == 7
    assert large.point_logits.kernel_size == (1, 1) and large.point_logits.in_channels == 32


def test_lr_schedules() -> None:
    assert lr_factor("none", 50, 100) == 1.0
    assert lr_factor("cosine", 0, 100) == 1.0
    assert math.isclose(lr_factor("cosine", 50, 100), 0.5)
    assert lr_factor("cosine", 100, 100) == 0.0
    assert [lr_factor("step", s, 90) for s in (0, 29, 30, 60, 89)] == pytest.approx([1, 1, 0.1, 0.01, 0.01])
    assert lr_factor("cosine", 0, 100, warmup=10) == pytest.approx(0.1)


@pytest.mark.parametrize("name", ["resnet", "zero"])
def test_global_inputs_change_the_outputs(name: str) -> None:
    from gotk.encoders import global_inputs as GI

    torch.manual_seed(0)
    model = build_model(name, 11, 9, head="both", num_globals=GI.size(), blocks=2, filters=16)
    with torch.no_grad():  # the output layers and the global inputs' layer start at zero: give them weights
        for m in model.modules():
            if isinstance(m, torch.nn.Linear | torch.nn.Conv2d) and not m.weight.any():
                m.weight.normal_(0, 0.5)
    x = torch.randint(0, 2, (3, 11, 9, 9), dtype=torch.uint8)
    white = [False, True, True]
    no_komi = torch.as_tensor(GI.global_rows(0.0, white, 9))
    komi = torch.as_tensor(GI.global_rows(7.5, white, 9))
    with torch.no_grad():  # batch-norm statistics of real activations (fresh ones leave the value head dead)
        for _ in range(20):
            model(torch.randint(0, 2, (16, 11, 9, 9), dtype=torch.uint8), glob=komi.repeat(6, 1)[:16])
    model.eval()
    with torch.no_grad():
        p0, v0 = model(x, glob=no_komi)
        p1, v1 = model(x, glob=komi)
        p2, v2 = model(x, glob=komi.clone())
    assert not torch.allclose(v0, v1) and not torch.allclose(p0, p1)
    assert torch.equal(v1, v2) and torch.equal(p1, p2)  # a function of the planes and the vector alone
    assert model.num_globals == 2 and model.global_in.in_features == 2
    with pytest.raises(ValueError, match="global inputs"):
        model(x)
    with pytest.raises(ValueError, match=r"\(3, 2\) global inputs"):
        model(x, glob=komi[:, :1])


def test_models_without_global_inputs() -> None:
    plain = build_model("resnet", 11, 9, blocks=1, filters=8)
    assert plain.num_globals == 0 and plain.global_in is None
    x = torch.zeros(1, 11, 9, 9)
    with torch.no_grad():  # the vector is ignored by a model built without it
        assert torch.equal(plain.eval()(x)[0], plain(x, glob=torch.ones(1, 2))[0])
    with pytest.raises(ValueError, match="takes no global inputs"):
        build_model("leelaz", 18, 9, num_globals=2)


@pytest.mark.parametrize("name", ["resnet", "zero"])
def test_a_new_model_with_global_inputs_starts_as_the_model_without(name: str) -> None:
    torch.manual_seed(2)
    plain = build_model(name, 11, 9, head="both", blocks=2, filters=16).eval()
    torch.manual_seed(2)
    glob = build_model(name, 11, 9, head="both", blocks=2, filters=16, num_globals=2).eval()
    x = torch.randint(0, 2, (2, 11, 9, 9), dtype=torch.uint8)
    with torch.no_grad():
        a, b = plain(x), glob(x, glob=torch.tensor([[0.375, 1.0], [-0.325, 0.0]]))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not glob.global_in.weight.any()  # it learns from zero
