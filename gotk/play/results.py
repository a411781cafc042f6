"""Game results and match statistics: one game's outcome, GTP score text (``B+3.5``), win rate with a
Wilson interval."""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field, fields

_SCORE = re.compile(r"^(?:0|[BW]\+(?:[0-9]+(?:\.[0-9]+)?|R|Resign|T|Time|F|Forfeit))$", re.IGNORECASE)


def format_score(score: float) -> str:
    """Black-minus-white score → GTP ``B+3.5`` / ``W+0.5`` / ``0``."""
    if score > 0:
        return f"B+{score:g}"
    if score < 0:
        return f"W+{-score:g}"
    return "0"


def parse_score(text: str) -> tuple[str | None, str] | None:
    """A GTP ``final_score`` answer → ``(winner, SGF result)``; None when it is not a score."""
    t = text.strip().split()[0] if text.strip() else ""
    if not _SCORE.match(t):
        return None
    if t == "0":
        return None, "0"
    winner = t[0].upper()
    rest = t[2:]
    try:
        rest = f"{float(rest):g}"
    except ValueError:
        rest = rest[0].upper()
    return winner, f"{winner}+{rest}"


def score_value(result: str) -> float | None:
    """An SGF/GTP score result (``B+3.5``, ``W+2``, ``0``) → black minus white (3.5, −2.0, 0.0); None for a
    result that is no count (``B+R``, ``Void``, ...)."""
    if result == "0":
        return 0.0
    if len(result) > 2 and result[0] in "BW" and result[1] == "+":
        try:
            v = float(result[2:])
        except ValueError:
            return None
        return v if result[0] == "B" else -v
    return None


@dataclass
class GameResult:
    """One finished game."""

    game: int
    agent_colour: str  # "B" or "W"
    winner: str | None  # "B", "W", or None (draw, or void)
    result: str  # SGF RE value: "B+3.5", "W+R", "B+F", "0", "Void"
    moves: int
    reason: str  # two_passes, max_moves, agent_resigned, opponent_resigned, opponent_* faults
    score_source: str | None = None  # "opponent" or "gotk" for scored games
    detail: str = ""
    sgf: str | None = None
    seconds: float = 0.0
    move_list: list[tuple[int, int]] = field(default_factory=list, repr=False)
    # a scored game's two counts, black minus white, komi included: gotk's (the one its search passes by,
    # GameState.score_final) and the opponent's final_score (None when it gave none)
    gotk_score: float | None = None
    opponent_score: float | None = None

    @property
    def scores_agree(self) -> bool | None:
        """Both counts name the same winner (None unless the game has both counts)."""
        if self.gotk_score is None or self.opponent_score is None:
            return None
        return (self.gotk_score > 0) - (self.gotk_score < 0) == (self.opponent_score > 0) - (self.opponent_score < 0)

    @property
    def agent_won(self) -> bool:
        return self.winner == self.agent_colour

    @property
    def agent_lost(self) -> bool:
        return self.winner is not None and self.winner != self.agent_colour

    def as_dict(self) -> dict:
        d = asdict(self)
        d.pop("move_list")
        d["scores_agree"] = self.scores_agree
        return d

    @classmethod
    def from_dict(cls, d: dict) -> GameResult:
        """The game of a ``gotk match --json`` report's ``per_game`` entry (:meth:`as_dict`; derived keys such as
        ``scores_agree`` are recomputed, not read)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


def wilson_interval(wins: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95 % with ``z`` = 1.96); ``(0, 1)`` for ``n`` = 0."""
    if n <= 0:
        return 0.0, 1.0
    p = wins / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class MatchSummary:
    games: int
    wins: int
    losses: int
    draws: int
    void: int
    win_rate: float
    ci95: tuple[float, float]
    scores_checked: int = 0  # scored games with both counts (gotk's and the opponent's final_score)
    winner_disagreements: int = 0  # ... of them where the two counts name different winners
    margin_disagreements: int = 0  # ... of them where the two counts differ at all (winner or margin)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["ci95"] = list(self.ci95)
        return d


def summarize(results: list[GameResult]) -> MatchSummary:
    """Wins, losses, draws (half a win each), void games (not counted) and a Wilson 95 % interval."""
    wins = sum(r.agent_won for r in results)
    losses = sum(r.agent_lost for r in results)
    void = sum(r.result == "Void" for r in results)
    draws = len(results) - wins - losses - void
    decided = wins + losses + draws
    score = wins + 0.5 * draws
    rate = score / decided if decided else 0.0
    checked = [r for r in results if r.scores_agree is not None]
    return MatchSummary(len(results), wins, losses, draws, void, rate, wilson_interval(score, decided), len(checked),
                        sum(not r.scores_agree for r in checked),
                        sum(r.gotk_score != r.opponent_score for r in checked))


__all__ = ["GameResult", "MatchSummary", "format_score", "parse_score", "score_value", "summarize", "wilson_interval"]
