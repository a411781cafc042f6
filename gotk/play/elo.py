"""Elo ratings from match results: a Bradley–Terry fit over every game of one or more ``gotk match --json``
reports, on the Elo scale (``P(a beats b) = 1 / (1 + 10^((R_b − R_a) / 400))``).

The ratings are the maximum of the likelihood of the games (draws count as half a win for each side) times
a weak prior: ``prior_games`` virtual draws of every player against the anchor (as BayesElo's default prior
does), so a player who won or lost every game still gets a finite rating. One player, the ``anchor``, is
held at ``anchor_elo``; the others are placed relative to it. The 95% intervals come from the curvature of
the log-likelihood at the optimum (inverse Fisher information, anchor fixed): each rating's uncertainty
relative to the anchor.
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gotk.errors import GotkError

SCALE = 400.0 / math.log(10.0)  # Elo points per natural-log unit of the odds


class EloError(GotkError):
    """Results that cannot be rated (``bad_results``): unreadable reports, unknown anchor, players not
    connected to the anchor by any game."""

    def __init__(self, message: str) -> None:
        super().__init__("bad_results", message)


@dataclass
class Rating:
    """One player's row of the table: ``elo`` and its 95% interval half-width ``ci95`` (0 for the anchor)."""

    name: str
    elo: float
    ci95: float
    games: int
    score: float  # wins + draws / 2

    def as_dict(self) -> dict:
        return {"name": self.name, "elo": round(self.elo, 1), "ci95": round(self.ci95, 1), "games": self.games,
                "score": self.score}


def read_match_reports(paths: list[str | os.PathLike], rename: dict[str, str] | None = None) -> list[tuple]:
    """``(black, white, black's score)`` for every decided game of the ``gotk match --json`` reports at
    ``paths`` (score 1, 0 or ½ for a draw; void games are left out). ``rename`` maps a report's player
    names (the agent's ``agent`` field, the ``opponent`` field) to table names, e.g. to tell two runs
    of the same engine apart."""
    rename = rename or {}
    games: list[tuple] = []
    for p in paths:
        try:
            report = json.loads(Path(p).read_text())
            agent, opponent = report["agent"], report["opponent"]
            per_game = report["per_game"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise EloError(f"{p}: not a `gotk match --json` report ({type(e).__name__}: {e})") from None
        agent, opponent = rename.get(agent, agent), rename.get(opponent, opponent)
        if agent == opponent:
            raise EloError(f"{p}: both players are called {agent!r}; tell them apart with --rename OLD=NEW")
        for g in per_game:
            colour, winner, result = g.get("agent_colour"), g.get("winner"), g.get("result")
            if colour not in ("B", "W") or result == "Void":
                continue
            black, white = (agent, opponent) if colour == "B" else (opponent, agent)
            score = 0.5 if winner is None else 1.0 if winner == "B" else 0.0
            games.append((black, white, score))
    return games


def fit(games: list[tuple], anchor: str, anchor_elo: float = 0.0, prior_games: float = 2.0,
        max_iter: int = 200) -> list[Rating]:
    """Ratings of every player in ``games`` (``(a, b, a's score)``, colours ignored), best first; see the
    module docstring for the model. Raises :class:`EloError` for an unknown anchor or a player with no
    chain of games to it."""
    names = sorted({g[0] for g in games} | {g[1] for g in games})
    if anchor not in names:
        raise EloError(f"the anchor {anchor!r} played no game here; players: {', '.join(names) or 'none'}")
    idx = {n: i for i, n in enumerate(names)}
    n = len(names)
    # pairwise games and scores (the prior: prior_games draws of each player against the anchor)
    count = np.zeros((n, n))
    score = np.zeros((n, n))
    played: dict[str, int] = defaultdict(int)
    total: dict[str, float] = defaultdict(float)
    for a, b, s in games:
        i, j = idx[a], idx[b]
        count[i, j] += 1
        count[j, i] += 1
        score[i, j] += s
        score[j, i] += 1 - s
        played[a] += 1
        played[b] += 1
        total[a] += s
        total[b] += 1 - s
    _check_connected(count, names, idx[anchor])
    k = idx[anchor]
    if prior_games <= 0:
        extreme = [m for m in names if total[m] in (0, played[m])]
        if extreme:
            raise EloError(f"{', '.join(extreme)} won or lost every game: without a prior (--prior-games > 0) "
                           "the rating is infinite")
    if prior_games > 0:
        for i in range(n):
            if i != k:
                count[i, k] += prior_games
                count[k, i] += prior_games
                score[i, k] += prior_games / 2
                score[k, i] += prior_games / 2
    free = [i for i in range(n) if i != k]
    r = np.zeros(n)  # natural-log strength units
    for _ in range(max_iter):
        p = 1 / (1 + np.exp(r[None, :] - r[:, None]))  # p[i, j]: i beats j
        grad = (score - count * p).sum(axis=1)
        w = count * p * (1 - p)
        hess = -np.diag(w.sum(axis=1)) + w  # d²L / dr_i dr_j
        h = hess[np.ix_(free, free)]
        step = np.clip(np.linalg.solve(h, -grad[free]), -3.0, 3.0)  # damped: far starts converge too
        r[free] += step
        if np.abs(step).max() < 1e-10:
            break
    p = 1 / (1 + np.exp(r[None, :] - r[:, None]))
    w = count * p * (1 - p)
    info = (np.diag(w.sum(axis=1)) - w)[np.ix_(free, free)]
    se = np.zeros(n)
    se[free] = np.sqrt(np.diag(np.linalg.inv(info)))
    out = [Rating(name, anchor_elo + SCALE * (r[i] - r[k]), 1.96 * SCALE * se[i], played[name], total[name])
           for i, name in enumerate(names)]
    return sorted(out, key=lambda x: -x.elo)


def _check_connected(count: np.ndarray, names: list[str], start: int) -> None:
    seen = {start}
    todo = [start]
    while todo:
        i = todo.pop()
        for j in np.flatnonzero(count[i] > 0):
            if int(j) not in seen:
                seen.add(int(j))
                todo.append(int(j))
    lost = [names[i] for i in range(len(names)) if i not in seen]
    if lost:
        raise EloError(f"no chain of games links {', '.join(lost)} to the anchor {names[start]!r}: their ratings "
                       "would be arbitrary")


def format_table(ratings: list[Rating], anchor: str) -> str:
    """The ratings as a Markdown table."""
    lines = ["| player | Elo | 95% | games | score |", "|---|--:|--:|--:|--:|"]
    for r in ratings:
        ci = "anchor" if r.name == anchor else f"±{r.ci95:.0f}"
        lines.append(f"| {r.name} | {r.elo:.0f} | {ci} | {r.games} | {r.score:g} |")
    return "\n".join(lines)


__all__ = ["EloError", "Rating", "fit", "format_table", "read_match_reports"]
