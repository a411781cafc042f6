"""Time management: how long the next move may think, from GTP ``time_settings`` / ``time_left``.

GTP 2 (section 6.2): ``time_settings M B S`` is main time ``M`` seconds, then Canadian byo-yomi of ``B``
seconds for every ``S`` stones; ``B > 0, S == 0`` means no time limit; ``B == 0`` no byo-yomi (absolute
time). ``time_left COLOUR T S``: ``T`` seconds left, ``S`` stones left in the current byo-yomi period
(0 while in main time).

The budget of a move is a share of what is left, times ``safety`` (default 0.7), minus ``margin`` seconds
(the controller's and the pipes' latency): in main time, ``left / max(min_moves, expected moves to go)``
plus half a byo-yomi stone's time when byo-yomi follows; in byo-yomi, ``left / stones``. The clock keeps
itself up to date when the controller sends no ``time_left``: each move's thinking time is subtracted.
"""

from __future__ import annotations

from dataclasses import dataclass

NO_LIMIT = None


@dataclass
class _Side:
    left: float
    stones: int  # 0: main time


class Clock:
    """One game's clock for both colours (1 black, 2 white)."""

    def __init__(self, safety: float = 0.7, margin: float = 0.25, min_moves: int = 20) -> None:
        self.safety = safety
        self.margin = margin
        self.min_moves = min_moves
        self.main = 0.0
        self.byo = 0.0
        self.byo_stones = 0
        self.limited = False
        self.sides: dict[int, _Side] = {}

    def settings(self, main: float, byo: float, stones: int) -> None:
        """``time_settings``; raises ValueError for negative values."""
        if main < 0 or byo < 0 or stones < 0:
            raise ValueError("time settings must be >= 0")
        self.main, self.byo, self.byo_stones = float(main), float(byo), int(stones)
        self.limited = not (byo > 0 and stones == 0)
        self.reset()

    def reset(self) -> None:
        """Full time for both sides (a new game)."""
        self.sides = {c: self._fresh() for c in (1, 2)}

    def _fresh(self) -> _Side:
        if self.main > 0 or self.byo_stones == 0:
            return _Side(self.main, 0)
        return _Side(self.byo, self.byo_stones)

    def left(self, color: int, seconds: float, stones: int) -> None:
        """``time_left``; raises ValueError for negative values."""
        if seconds < 0 or stones < 0:
            raise ValueError("time left must be >= 0")
        self.sides[color] = _Side(float(seconds), int(stones))

    def used(self, color: int, seconds: float) -> None:
        """Account ``seconds`` of thinking by ``color`` (when the controller sends no ``time_left``)."""
        if not self.limited:
            return
        side = self.sides.setdefault(color, self._fresh())
        side.left -= seconds
        if side.stones > 0:
            side.stones -= 1
            if side.stones == 0:  # period done: a new one starts
                side.left, side.stones = self.byo, self.byo_stones
        elif side.left <= 0 and self.byo_stones > 0:
            side.left, side.stones = self.byo + side.left, self.byo_stones

    def budget(self, color: int, moves_to_go: float) -> float | None:
        """Seconds the next move of ``color`` may think; None without a time limit."""
        if not self.limited:
            return NO_LIMIT
        side = self.sides.setdefault(color, self._fresh())
        if side.stones > 0:
            share = side.left / side.stones
        else:
            share = max(side.left, 0.0) / max(self.min_moves, moves_to_go)
            if self.byo_stones > 0:
                share += 0.5 * self.byo / self.byo_stones
        return max(0.0, share * self.safety - self.margin)


__all__ = ["Clock"]
