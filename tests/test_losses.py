"""The loss terms of ``gotk.train.losses`` on a tiny batch, each against a hand computation from its formula
(plain ``math`` on the numbers below, not the code under test)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from gotk.train.losses import STATS, LossWeights, batch_losses

# two rows on a 2x2 board (5 moves with pass)
LOGITS = [[1.0, 0.0, -1.0, 0.5, 0.0], [0.0, 2.0, 0.0, 0.0, -1.0]]
PI = [[0.5, 0.5, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 1.0]]
POLICY_WEIGHT = [1.0, 0.0]
VALUE = [0.5, -0.2]
OUTCOME = [1.0, 0.0]  # the second row's outcome is unknown
OWN_LOGIT = [[[0.0, 1.0], [-2.0, 0.5]], [[3.0, -1.0], [0.0, 0.0]]]
OWN_TARGET = [[[1.0, -1.0], [-1.0, 0.0]], [[1.0, 1.0], [-1.0, 1.0]]]
SCORE = [3.0, -20.0]
SCORE_TARGET = [1.0, 5.0]  # 2 points off (quadratic part), 25 points off (linear part)


def _cfg(**over) -> SimpleNamespace:
    kw = dict(value_weight=1.0, ownership_weight=None, score_weight=None, value_mix=0.0, objective="supervised",
              entropy_weight=0.01, baseline="none", ratio_clip=0.0)
    kw.update(over)
    return SimpleNamespace(**kw)


def _batch() -> dict:
    return {"policy": torch.tensor(PI), "weight": torch.tensor(POLICY_WEIGHT), "value": torch.tensor(OUTCOME),
            "ownership": torch.tensor(OWN_TARGET), "score": torch.tensor(SCORE_TARGET)}


def _losses(weights: LossWeights, batch: dict) -> tuple[float, dict]:
    loss, _, stats = batch_losses(torch.tensor(LOGITS), torch.tensor(VALUE), torch.tensor(OWN_LOGIT),
                                  torch.tensor(SCORE), torch.tensor([0, 4]), batch, weights)
    return float(loss), dict(zip(STATS, stats.tolist(), strict=True))


def _soft_ce(logits: list[float], pi: list[float]) -> float:
    log_z = math.log(sum(math.exp(z) for z in logits))
    return -sum(p * (z - log_z) for p, z in zip(pi, logits, strict=True))


def _ownership_bce_sum(logits, target) -> float:
    total = 0.0
    for zr, tr in zip(logits, target, strict=True):
        for z, t in zip(zr, tr, strict=True):
            p = (1 + math.tanh(z)) / 2
            q = (1 + t) / 2
            total -= q * math.log(p) + (1 - q) * math.log(1 - p)
    return total


def test_default_weights_are_katagos() -> None:
    w = LossWeights.of(_cfg(), 9)
    assert w.ownership == pytest.approx(1.5 / 81)  # KataGo: 1.5 x the mean over the points
    assert w.score == 0.0015  # KataGo's scalar score-mean term (0.02 is its score-distribution term)
    w = LossWeights.of(_cfg(ownership_weight=0.3, score_weight=0.05, value_weight=2.0), 19)
    assert (w.value, w.ownership, w.score) == (2.0, 0.3, 0.05)


def test_each_term_against_a_hand_computation() -> None:
    weights = LossWeights.of(_cfg(), 2)
    loss, s = _losses(weights, _batch())
    # policy: the soft cross-entropy of the one row of weight 1
    ce0 = _soft_ce(LOGITS[0], PI[0])
    assert s["soft_policy_ce_sum"] == pytest.approx(ce0, rel=1e-6) and s["policy_weight"] == 1.0
    # value: the squared error of the one row with a known outcome
    assert s["value_se"] == pytest.approx((0.5 - 1.0) ** 2) and s["value_rows"] == 1.0
    # ownership: 1.5 / 4 x the binary cross-entropy summed over the 4 points, per row
    own = [1.5 / 4 * _ownership_bce_sum(OWN_LOGIT[i], OWN_TARGET[i]) for i in range(2)]
    assert s["ownership_loss_sum"] == pytest.approx(sum(own), rel=1e-5) and s["ownership_rows"] == 2.0
    # score: 0.0015 x Huber(delta 12): 0.5 * 2² for 2 points off; 12 * 25 - 0.5 * 12² for 25 points off
    hub = [0.5 * 2.0 ** 2, 12 * 25.0 - 0.5 * 12.0 ** 2]
    assert hub == [2.0, 228.0]
    assert s["score_loss_sum"] == pytest.approx(0.0015 * sum(hub), rel=1e-6) and s["score_rows"] == 2.0
    # the loss: each term's mean over its rows, added
    want = ce0 / 1 + 0.25 / 1 + sum(own) / 2 + 0.0015 * sum(hub) / 2
    assert loss == pytest.approx(want, rel=1e-5)


def test_rows_of_aux_weight_zero_add_no_ownership_or_score_loss() -> None:
    """The ownership and score terms are averaged over the rows' aux weights: a row of aux weight 0 (a game that
    resigned or stopped at the move cap) changes nothing, whatever its targets."""
    weights = LossWeights.of(_cfg(), 2)
    batch = {**_batch(), "aux_weight": torch.tensor([1.0, 0.0])}
    loss, s = _losses(weights, batch)
    own0 = 1.5 / 4 * _ownership_bce_sum(OWN_LOGIT[0], OWN_TARGET[0])
    hub0 = 0.5 * 2.0 ** 2
    assert s["ownership_loss_sum"] == pytest.approx(own0, rel=1e-5) and s["ownership_rows"] == 1.0
    assert s["score_loss_sum"] == pytest.approx(0.0015 * hub0, rel=1e-6) and s["score_rows"] == 1.0
    want = _soft_ce(LOGITS[0], PI[0]) + 0.25 + own0 / 1 + 0.0015 * hub0 / 1
    assert loss == pytest.approx(want, rel=1e-5)
    changed = {**batch, "ownership": batch["ownership"].clone(), "score": batch["score"].clone()}
    changed["ownership"][1] = -changed["ownership"][1]
    changed["score"][1] = 100.0
    assert _losses(weights, changed) == (loss, s)
    # no row with an aux weight: no ownership or score loss at all
    none = {**batch, "aux_weight": torch.zeros(2)}
    loss_none, s_none = _losses(weights, none)
    assert s_none["ownership_loss_sum"] == 0.0 and s_none["ownership_rows"] == 0.0
    assert loss_none == pytest.approx(_soft_ce(LOGITS[0], PI[0]) + 0.25, rel=1e-5)


def test_value_mix_trains_towards_the_root_value_and_logs_the_result_s_error() -> None:
    """With value_mix m the value term is the squared error against (1 - m) * outcome + m * root value, over the rows
    whose outcome is known; the logged value error stays the one against the outcome."""
    batch = {**_batch(), "root_value": torch.tensor([-0.6, 0.9])}
    base_loss, base = _losses(LossWeights.of(_cfg(), 2), batch)
    for m in (0.25, 1.0):
        loss, s = _losses(LossWeights.of(_cfg(value_mix=m), 2), batch)
        mixed = (1 - m) * 1.0 + m * -0.6
        assert loss - base_loss == pytest.approx((0.5 - mixed) ** 2 - (0.5 - 1.0) ** 2, rel=1e-5)
        assert s["value_se"] == base["value_se"] == pytest.approx(0.25) and s["value_rows"] == 1.0
    # without the root value column (human games) the mix changes nothing
    loss, _ = _losses(LossWeights.of(_cfg(value_mix=0.5), 2), _batch())
    assert loss == pytest.approx(base_loss)
