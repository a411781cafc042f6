"""Leela Zero's lower-confidence-bound move choice: a move's value minus Student's t quantile times its standard
error, so that a move whose few visits all looked good can win over a more visited one whose values are spread
(Leela Zero 0.17: ``cfg_ci_alpha`` 1e-5, ``cfg_lcb_min_visit_ratio``)."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

LCB_ALPHA = 1e-5  # the lower confidence bound's one-sided error (Leela Zero's ci_alpha)


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b) (continued fraction, modified Lentz)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    if x > (a + 1.0) / (a + b + 2.0):  # the fraction converges fast below the mean: use the symmetry there
        return 1.0 - _incomplete_beta(b, a, 1.0 - x)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)) / a
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    f = d
    for m in range(1, 500):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            f *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return front * f


@lru_cache(maxsize=1024)
def t_quantile(df: int, alpha: float = LCB_ALPHA) -> float:
    """Student's t with ``df`` degrees of freedom exceeded with probability ``alpha`` (one-sided upper quantile);
    ``df`` above 1000 is taken as 1000 (the quantile has all but converged to the normal one there)."""
    df = min(max(int(df), 1), 1000)

    def tail(t: float) -> float:
        return 0.5 * _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))

    lo, hi = 0.0, 1.0
    while tail(hi) > alpha:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if tail(mid) > alpha:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return 0.5 * (lo + hi)


def lower_bounds(n: np.ndarray, w: np.ndarray, w2: np.ndarray) -> np.ndarray:
    """The lower confidence bound of each value whose ``n`` visits sum to ``w`` (squares: ``w2``): mean −
    t(N−1) · sqrt(variance / N); −inf below 2 visits."""
    out = np.full(n.shape[0], -np.inf)
    for i in np.flatnonzero(n >= 2):
        k = n[i]
        mean = w[i] / k
        var = max(0.0, (w2[i] - k * mean * mean) / (k - 1))
        out[i] = mean - t_quantile(int(k) - 1) * math.sqrt(var / k)
    return out


__all__ = ["LCB_ALPHA", "lower_bounds", "t_quantile"]
