"""``GameRecord``: what gotk keeps of one SGF game (metadata, setup stones, main-line moves)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from gotk import coords

BLACK = 1
WHITE = 2


@dataclass(frozen=True)
class Result:
    """A normalised game result.

    ``winner``: ``"b"``, ``"w"`` or None (draw, void, unknown). ``reason``: ``score``, ``resign``,
    ``time``, ``forfeit``, ``draw``, ``void``, ``unknown``. ``margin`` is set for scored wins.
    """

    winner: str | None
    reason: str
    margin: float | None = None
    raw: str = ""

    def __str__(self) -> str:
        if self.reason == "draw":
            return "0"
        if self.reason == "void":
            return "Void"
        if self.winner is None:
            return "?"
        w = self.winner.upper()
        if self.reason == "score":
            return f"{w}+{self.margin:g}" if self.margin is not None else f"{w}+"
        return f"{w}+" + {"resign": "R", "time": "T", "forfeit": "F"}.get(self.reason, "")

    def value_for(self, color: int) -> int:
        """+1 if ``color`` (1 black, 2 white) won, -1 if it lost, 0 if unknown, void or drawn."""
        return int(value_targets(self.winner, np.array([1 if color == BLACK else -1]))[0])


def value_targets(winner: str | None, to_play: np.ndarray) -> np.ndarray:
    """The value target of each position (int8): +1 where the player to move (``to_play``: +1 black, -1
    white) went on to win, -1 where they lost, 0 everywhere when ``winner`` (``"b"``/``"w"``) is None
    (unknown, void or drawn). The one place this rule is coded (with :func:`signed_value_targets`)."""
    return signed_value_targets(winner_sign(winner), to_play)


def winner_sign(winner: str | None) -> int:
    """``winner`` as :func:`signed_value_targets` takes it: 0 None, +1 ``"b"``, else -1 (``"w"``)."""
    return 0 if winner is None else 1 if winner == "b" else -1


def signed_value_targets(sign, to_play: np.ndarray) -> np.ndarray:
    """:func:`value_targets` with the winner as :func:`winner_sign` gives it, one for all rows or one per row
    (rows of many games at once)."""
    sign = np.asarray(sign, dtype=np.int8)
    return np.where(sign == 0, 0, np.where(np.asarray(to_play) == sign, 1, -1)).astype(np.int8)


_RESULT_WIN = re.compile(r"^\s*([BW])\s*\+\s*(.*?)\s*$", re.IGNORECASE)


def parse_result(raw: str | None) -> Result:
    """Normalise an SGF ``RE`` value: ``B+R``, ``W+12.5``, ``B+T``/``B+Time``, ``W+F``, ``0``,
    ``Draw``, ``Jigo``, ``Void``, ``?``. Anything unrecognised is ``unknown``."""
    text = (raw or "").strip()
    # a few hundred distinct values cover a whole archive; Result is frozen, so one instance serves all
    return _parse_result_cached(text) if len(text) <= 64 else _parse_result(text)


@lru_cache(maxsize=4096)
def _parse_result_cached(text: str) -> Result:
    return _parse_result(text)


def _parse_result(text: str) -> Result:
    low = text.lower()
    if low in {"0", "draw", "jigo", "d", "b+0", "w+0"}:
        return Result(None, "draw", 0.0, text)
    if low == "void":
        return Result(None, "void", None, text)
    m = _RESULT_WIN.match(text)
    if not m:
        return Result(None, "unknown", None, text)
    winner = m.group(1).lower()
    rest = m.group(2).lower()
    if rest in {"r", "resign", "res", "resignation"}:
        return Result(winner, "resign", None, text)
    if rest in {"t", "time"}:
        return Result(winner, "time", None, text)
    if rest in {"f", "forfeit"}:
        return Result(winner, "forfeit", None, text)
    if rest == "":
        return Result(winner, "score", None, text)
    try:
        margin = float(rest)
    except ValueError:
        return Result(winner, "unknown", None, text)
    if margin == 0:
        return Result(None, "draw", 0.0, text)
    return Result(winner, "score", margin, text)


@dataclass
class GameRecord:
    """One game: metadata, root setup stones and the main line as arrays.

    ``colors[i]`` (1 black, 2 white) and ``points[i]`` (flat index, pass = ``size*size``) are the
    main-line moves in order. ``warnings`` are reason codes of fallbacks taken while reading (the game
    is kept; runs count them). ``defect`` is set when the main line stopped early at a move that
    could not be read (``(reason, move_index, message)``); the moves before it are kept.
    """

    size: int = 19
    komi: float = 0.0
    handicap: int = 0
    rules: str = ""
    result: Result = field(default_factory=lambda: Result(None, "unknown"))
    black: str = ""
    white: str = ""
    black_rank: str = ""
    white_rank: str = ""
    date: str = ""
    place: str = ""
    setup_black: tuple[int, ...] = ()
    setup_white: tuple[int, ...] = ()
    setup_empty: tuple[int, ...] = ()
    colors: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int8))
    points: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int16))
    first_player: int | None = None  # from PL, if given
    defect: tuple[str, int, str] | None = None
    source: str = ""  # archive or file name
    member: str = ""  # path inside the archive
    headers: dict = field(default_factory=dict)  # raw root values of KM TM OT TC TT AP GN EV (gotk.sgf.metadata)
    warnings: tuple[str, ...] = ()  # reason codes of what was read with a fallback (``charset_mismatch``)

    @property
    def num_moves(self) -> int:
        return int(self.points.shape[0])

    @property
    def num_passes(self) -> int:
        return int(np.count_nonzero(self.points == self.size * self.size))

    @property
    def moves(self) -> list[tuple[int, int]]:
        """Main-line moves as ``(color, point)`` pairs."""
        return list(zip(self.colors.tolist(), self.points.tolist(), strict=True))

    def move_labels(self) -> list[str]:
        """Main-line moves as ``"B D4"``-style strings (GTP vertices), for display."""
        return [f"{'BW'[c - 1]} {coords.to_gtp(p, self.size)}" for c, p in self.moves]
