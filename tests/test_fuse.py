"""Batch norm folded into convolutions (:func:`gotk.nets.fuse.fold_batch_norms`): the same predictions, the model
given untouched, models without batch norm (or with batch norms after sums) handled."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gotk.encoders import get_encoder
from gotk.nets.agent import Agent
from gotk.nets.fuse import count_batch_norms, fold_batch_norms
from gotk.nets.networks import DlgoConvNet, build_model


def randomised(name: str, planes: int, size: int, **hp):
    torch.manual_seed(0)
    model = build_model(name, planes, size, **hp)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.3 if p.dim() > 1 else 0.2)
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.normal_(0.0, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    return model.eval()


def predictions(model, x):
    agent = Agent(model, None, {})
    return agent.predict(x)


@pytest.mark.parametrize("name,planes,size,left", [("leelaz", 18, 19, 0), ("resnet", 7, 9, 0), ("zero", 11, 9, 3)])
def test_folded_predictions_equal(name, planes, size, left):
    hp = {"blocks": 3, "filters": 16} if name != "resnet" else {"blocks": 2, "filters": 16, "head": "both"}
    model = randomised(name, planes, size, **hp)
    before = count_batch_norms(model)
    x = (torch.rand(5, planes, size, size) < 0.3).float()
    folded = fold_batch_norms(model)
    assert count_batch_norms(model) == before  # the model given is untouched
    # zero: the global-pooling block's first batch norm and the policy's follow a sum, the rest fold
    assert count_batch_norms(folded) == left
    (p0, v0), (p1, v1) = predictions(model, x), predictions(folded, x)
    np.testing.assert_allclose(p1, p0, atol=1e-5, rtol=0)
    np.testing.assert_allclose(v1, v0, atol=1e-5, rtol=0)


def test_model_without_batch_norm():
    torch.manual_seed(0)
    model = DlgoConvNet(7, 9, "policy", [(8, 3), (8, 3)], 32, batch_norm=False).eval()
    assert count_batch_norms(model) == 0
    x = (torch.rand(3, 7, 9, 9) < 0.3).float()
    folded = fold_batch_norms(model)
    p0, _ = predictions(model, x)
    p1, _ = predictions(folded, x)
    np.testing.assert_array_equal(p0, p1)


def test_encoder_agent_still_predicts():
    enc = get_encoder("leelazero", 19)
    model = fold_batch_norms(randomised("leelaz", 18, 19, blocks=1, filters=8))
    from gotk.game.state import GameState

    logp, v = Agent(model, enc, {}).predict(enc.encode(GameState.new(19))[None])
    assert logp.shape == (1, 362) and v.shape == (1,)
