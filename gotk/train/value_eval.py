"""How good a value head is: calibration of its win probabilities, and a baseline that knows only the komi and
the handicap.

A value ``v`` in [-1, 1] is read as the win probability ``(v + 1) / 2`` of the player to move. Only rows whose
target is known (non-zero: the game has a winner) count, as for the value loss.

:class:`Calibration` puts the predicted probabilities in ``bins`` equal-width bins and compares, in each, the
mean prediction with the observed win rate (the expected calibration error ``ece`` is their gap weighted by
the rows of each bin).

:class:`KomiHandicapBaseline` is the best a predictor can do without looking at the board: the mean outcome
for the player to move among *training* games with the same handicap, komi and colour to move, shrunk towards
the mean of the coarser group (same handicap and colour, then same colour) when a group has few games
(``prior`` pseudo-games). "Always 0" is the other baseline: its MSE is exactly 1 on rows with a known result.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from gotk.datasets import game_index


class Calibration:
    """Running counts of predicted win probability against outcome, in ``bins`` equal-width bins."""

    def __init__(self, bins: int = 10) -> None:
        self.bins = bins
        self.sums = np.zeros((bins, 3), dtype=np.float64)  # rows, sum of predictions, wins

    def update(self, values: np.ndarray, targets: np.ndarray) -> None:
        t = np.asarray(targets, dtype=np.float64)
        known = t != 0
        p = (np.clip(np.asarray(values, dtype=np.float64), -1.0, 1.0)[known] + 1.0) / 2.0
        idx = np.minimum((p * self.bins).astype(np.int64), self.bins - 1)
        self.sums[:, 0] += np.bincount(idx, minlength=self.bins)
        self.sums[:, 1] += np.bincount(idx, weights=p, minlength=self.bins)
        self.sums[:, 2] += np.bincount(idx, weights=(t[known] > 0).astype(np.float64), minlength=self.bins)

    def table(self) -> list[dict]:
        """One row per bin: its range, rows, mean predicted probability and observed win rate."""
        out = []
        for i, (n, sp, wins) in enumerate(self.sums):
            out.append({"bin": f"{i / self.bins:.1f}-{(i + 1) / self.bins:.1f}", "positions": int(n),
                        "predicted": sp / n if n else None, "observed": wins / n if n else None})
        return out

    def ece(self) -> float | None:
        """Expected calibration error: sum over bins of ``rows / total * |predicted - observed|``."""
        n = self.sums[:, 0]
        total = n.sum()
        if not total:
            return None
        nz = n > 0
        return float((np.abs(self.sums[nz, 1] - self.sums[nz, 2])).sum() / total)


class KomiHandicapBaseline:
    """Value predicted from the handicap, komi and colour to move only (fit on training games)."""

    def __init__(self, table: dict[tuple, tuple[float, float]], prior: float) -> None:
        self._table = table  # key -> (sum of outcomes, games)
        self.prior = prior
        self.games: dict[int, tuple[int, float]] = {}  # game_index -> (handicap, komi), set by index_games

    @staticmethod
    def _keys(handicap: int, komi: float, colour: int) -> tuple[tuple, tuple, tuple]:
        return (colour,), (colour, handicap), (colour, handicap, round(komi * 2) / 2)

    @classmethod
    def fit(cls, games: pa.Table, prior: float = 20.0) -> KomiHandicapBaseline:
        """Fit on a games table (``handicap``, ``komi``, ``winner`` columns; games without a winner left out)."""
        d = games.select(["handicap", "komi", "winner"]).to_pydict()
        table: dict[tuple, list[float]] = {}
        for h, k, w in zip(d["handicap"], d["komi"], d["winner"], strict=True):
            if w not in ("b", "w"):
                continue
            for colour in (1, -1):
                outcome = 1.0 if (w == "b") == (colour == 1) else -1.0
                for key in cls._keys(int(h or 0), float(k or 0.0), colour):
                    s = table.setdefault(key, [0.0, 0.0])
                    s[0] += outcome
                    s[1] += 1
        return cls({k: (v[0], v[1]) for k, v in table.items()}, prior)

    def to_dict(self) -> dict:
        """The fitted groups as JSON: an agent file records them, so that its value head can be compared with the
        baseline of the games it was trained on wherever it is evaluated (a held-out dataset has no train split)."""
        return {"prior": self.prior, "groups": [[list(k), s, n] for k, (s, n) in sorted(self._table.items())]}

    @classmethod
    def from_dict(cls, d: object) -> KomiHandicapBaseline:
        """The baseline :meth:`to_dict` wrote; ValueError when ``d`` is not such a record."""
        try:
            prior = float(d["prior"])  # type: ignore[index]
            table = {}
            for key, s, n in d["groups"]:  # type: ignore[index]
                if not 1 <= len(key) <= 3:
                    raise ValueError(f"bad group key {key!r}")
                k = (int(key[0]),) + tuple(int(x) for x in key[1:2]) + tuple(float(x) for x in key[2:3])
                table[k] = (float(s), float(n))
        except (TypeError, KeyError, ValueError) as e:
            raise ValueError(f"not a komi/handicap baseline record: {e}") from e
        if not (prior >= 0 and np.isfinite(prior)):
            raise ValueError(f"not a komi/handicap baseline record: prior {prior!r}")
        return cls(table, prior)

    def value(self, handicap: int, komi: float, colour: int) -> float:
        """The shrunk mean outcome of the group of (handicap, komi, colour)."""
        mean = 0.0
        for key in self._keys(handicap, komi, colour):
            s, n = self._table.get(key, (0.0, 0.0))
            mean = (s + self.prior * mean) / (n + self.prior)
        return mean

    def index_games(self, games: pa.Table) -> None:
        """Remember each game's handicap and komi by its integer id (the loader's ``game_index``)."""
        d = games.select(["game_id", "handicap", "komi"]).to_pydict()
        self.games = {game_index(g): (int(h or 0), float(k or 0.0))
                      for g, h, k in zip(d["game_id"], d["handicap"], d["komi"], strict=True)}

    def predict(self, game_indices: np.ndarray, to_play: np.ndarray) -> np.ndarray:
        """Predictions for rows of the indexed games (0 for a game it does not know)."""
        out = np.zeros(len(to_play), dtype=np.float64)
        cache: dict[tuple, float] = {}
        for i, (g, c) in enumerate(zip(np.asarray(game_indices).tolist(), np.asarray(to_play).tolist(), strict=True)):
            hk = self.games.get(g)
            if hk is None:
                continue
            key = (hk, c)
            if key not in cache:
                cache[key] = self.value(hk[0], hk[1], 1 if c > 0 else -1)
            out[i] = cache[key]
        return out
