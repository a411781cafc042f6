"""Replay a :class:`GameRecord` on the engine: setup stones, then each main-line move.

The whole main line runs in one compiled loop (:func:`gotk.game.loops.replay_moves`). A move the
rules refuse ends the game there with a reason; the positions before it stay usable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from gotk.errors import GotkError, IllegalMoveError, SGFError
from gotk.game import batch as B
from gotk.game import kernels as K
from gotk.game.state import BLACK, WHITE, GameState, Rules, new_engine, position_arrays

if TYPE_CHECKING:  # the record type only: the engine never parses SGF
    from gotk.sgf.record import GameRecord

_REASONS = {K.OCCUPIED: "occupied", K.SUICIDE: "illegal_move", K.KO: "illegal_move", -1: "illegal_move",
            K.OFF_BOARD: "bad_move"}
_DETAIL = {K.OCCUPIED: "occupied", K.SUICIDE: "suicide", K.KO: "ko", -1: "superko", K.OFF_BOARD: "off the board"}


@dataclass
class ReplayOutcome:
    """How a replay went: ``moves_played`` main-line moves were applied to ``state``.

    ``error`` is set when the game stopped early (an illegal move, or a defect the reader found);
    ``hashes[i]`` is the position hash before move ``i`` (``hashes[moves_played]`` is the end).
    """

    state: GameState
    moves_played: int
    error: GotkError | None
    hashes: np.ndarray

    @property
    def complete(self) -> bool:
        return self.error is None


def first_to_play(record: GameRecord) -> int:
    """Who moves first: the first recorded move's colour, else ``PL``, else White after handicap
    setup stones, else Black."""
    if record.num_moves:
        return int(record.colors[0])
    if record.first_player:
        return record.first_player
    return WHITE if record.handicap >= 2 and record.setup_black else BLACK


def initial_state(record: GameRecord, rules: Rules | None = None) -> GameState:
    """The position before the first main-line move (setup stones placed)."""
    rules = rules or Rules.from_sgf(record.rules)
    state = _set_up(record.size, rules, record.komi, record.setup_black, record.setup_white, record.setup_empty)
    state.to_play = first_to_play(record)
    return state


def _set_up(size: int, rules: Rules | None, komi: float, black, white, empty) -> GameState:
    """A new position with these setup stones placed (``SGFError`` ``bad_setup`` when they are unusable)."""
    state = GameState(size, rules, komi)
    if black or white or empty:
        try:
            state.setup(black, white, empty)
        except IllegalMoveError as e:
            raise SGFError("bad_setup", str(e)) from e
    return state


@lru_cache(maxsize=4096)
def _first_position(size: int, black: tuple, white: tuple, empty: tuple) -> tuple[np.ndarray, ...] | None:
    """The engine arrays (read-only) of :func:`initial_state`'s position for these setup stones, or None when
    they are unusable. Handicap placements repeat from game to game: each is set up once per process."""
    try:
        state = _set_up(size, None, 0.0, black, white, empty)
    except SGFError:
        return None
    arrays = position_arrays(state.e)
    for a in arrays:
        a.setflags(write=False)
    return arrays


def replay(record: GameRecord, rules: Rules | None = None, min_moves: int = 1,
           keep_history: bool = True) -> ReplayOutcome:
    """Replay ``record``'s main line. Raises :class:`SGFError` only when nothing is usable
    (``bad_setup``, ``too_short``); an illegal move mid-game is reported in ``outcome.error``."""
    state = initial_state(record, rules)
    if record.num_moves < min_moves:
        raise SGFError("too_short", f"{record.num_moves} moves, fewer than {min_moves}")
    points = record.points.astype(np.int32)
    colors = record.colors.astype(np.int64)
    hashes = np.zeros(len(points) + 1, dtype=np.uint64)
    played, status = state.replay_moves(colors, points, hashes)
    if keep_history:
        state.history = list(zip(record.colors[:played].tolist(), record.points[:played].tolist(), strict=True))
        if state._seen is not None:
            state._seen = {int(h) for h in hashes[: played + 1]}
    error = stop_error(record, int(status), played, colors, points)
    return ReplayOutcome(state, played, error, hashes[: played + 1])


def stop_error(record: GameRecord, status: int, played: int, colors: np.ndarray,
               points: np.ndarray) -> GotkError | None:
    """Why replaying ``record`` stopped after ``played`` moves: the engine's ``status`` for the next move
    (the one table from engine status to reason code), else the record's own defect, else None."""
    if status != K.OK:
        from gotk import coords

        p = int(points[played])
        where = coords.to_gtp(p, record.size) if 0 <= p < record.size ** 2 else "?"
        return IllegalMoveError(_REASONS.get(status, "illegal_move"),
                                f"move {played + 1} ({'BW'[colors[played] - 1]} {where}): "
                                f"{_DETAIL.get(status, 'illegal')}")
    if record.defect is not None:
        reason, _, message = record.defect
        return SGFError(reason, f"move {played + 1}: {message}")
    return None


@dataclass
class GameBatch:
    """Many games of one board size in flat arrays, for the compiled loops that take a whole batch in one call
    (:func:`replay_batch`, the encoders' batch game loops): ``games`` ``(G, B.G_COLS)`` int64 (the
    ``B.G_*`` columns: each game's ranges in the other arrays, and whether its rules allow suicide),
    ``colors`` int64 and ``points`` int32 (every game's main line, end to end), ``setup_b``, ``setup_w``,
    ``setup_e`` int32 (AB, AW, AE points), ``starts`` the distinct first positions of the games
    (:class:`~gotk.game.kernels.Positions`, one row each; ``B.G_START`` says a game's row). One Python call per
    batch instead of one per game."""

    size: int
    games: np.ndarray
    colors: np.ndarray
    points: np.ndarray
    setup_b: np.ndarray
    setup_w: np.ndarray
    setup_e: np.ndarray
    starts: K.Positions

    def __len__(self) -> int:
        return int(self.games.shape[0])

    def take(self, index: np.ndarray) -> GameBatch:
        """The games ``index`` of this batch (the arrays are shared)."""
        return GameBatch(self.size, self.games[index], self.colors, self.points, self.setup_b, self.setup_w,
                         self.setup_e, self.starts)

    @classmethod
    def from_arrays(cls, size: int, rules: Sequence[str | None], moves: tuple[np.ndarray, np.ndarray, np.ndarray],
                    setup: Sequence[tuple[np.ndarray, np.ndarray]], setup_keys: Sequence[tuple] | None = None
                    ) -> GameBatch:
        """A batch from flat arrays: ``moves`` = (colors, points, offsets), game ``g``'s main line being
        ``[offsets[g]:offsets[g + 1]]``; ``setup`` = ((points, offsets) of AB, of AW, of AE); ``rules`` each
        game's ``RU`` (its suicide rule, :meth:`Rules.from_sgf`); ``setup_keys`` (optional) each game's
        (AB, AW, AE) tuples, as ``setup`` holds them."""
        colors, points, offsets = moves
        g = len(offsets) - 1
        games = np.empty((g, B.G_COLS), dtype=np.int64)
        games[:, B.G_M0] = offsets[:-1]
        games[:, B.G_M1] = offsets[1:]
        for (_, off), c0 in zip(setup, (B.G_B0, B.G_W0, B.G_E0), strict=True):
            games[:, c0] = off[:-1]
            games[:, c0 + 1] = off[1:]
        games[:, B.G_SUICIDE] = [Rules.from_sgf(r).suicide for r in rules]
        # each game's first position: one row per distinct set of setup stones (most games have none)
        if setup_keys is None:
            lists = [(pts.tolist(), off.tolist()) for pts, off in setup]
            setup_keys = [tuple(tuple(pts[off[i]:off[i + 1]]) for pts, off in lists) for i in range(g)]
        rows: dict[tuple, int] = {}
        positions: list[tuple[np.ndarray, ...]] = []
        start = np.empty(g, dtype=np.int64)
        for i, key in enumerate(setup_keys):
            t = rows.get(key)
            if t is None:
                arrays = _first_position(size, *key)
                t = rows[key] = -1 if arrays is None else len(positions)
                if arrays is not None:
                    positions.append(arrays)
            start[i] = t
        games[:, B.G_START] = start
        if not positions:
            positions.append(_first_position(size, (), (), ()))
        starts = K.Positions(*(np.stack(kind) for kind in zip(*positions, strict=True)))
        return cls(size, games, np.ascontiguousarray(colors, dtype=np.int64),
                   np.ascontiguousarray(points, dtype=np.int32),
                   *(np.ascontiguousarray(pts, dtype=np.int32) for pts, _ in setup), starts)

    @classmethod
    def from_records(cls, records: Sequence[GameRecord]) -> GameBatch:
        """A batch of ``records`` (all of one board size)."""
        size = records[0].size if records else 19
        if any(r.size != size for r in records):
            raise ValueError("a game batch holds games of one board size")

        def offsets(lengths) -> np.ndarray:
            off = np.zeros(len(records) + 1, dtype=np.int64)
            np.cumsum(np.fromiter(lengths, dtype=np.int64, count=len(records)), out=off[1:])
            return off

        def flat(arrays: list) -> np.ndarray:
            return np.concatenate(arrays) if arrays else np.empty(0, dtype=np.int64)

        moves = (flat([r.colors for r in records]), flat([r.points for r in records]),
                 offsets(len(r.points) for r in records))
        keys = [(tuple(r.setup_black), tuple(r.setup_white), tuple(r.setup_empty)) for r in records]
        setup = []
        for k in range(3):
            pts = [key[k] for key in keys]
            setup.append((np.fromiter((p for t in pts for p in t), dtype=np.int32), offsets(len(t) for t in pts)))
        return cls.from_arrays(size, [r.rules for r in records], moves, setup, keys)

    def engine(self) -> K.Engine:
        """A scratch position for a batch loop to play on (set to each game's first position in turn)."""
        return new_engine(self.size)


@dataclass
class BoardTrace:
    """What a board needs, beyond the moves, to be replayed without the engine (no strings, no liberty counts):
    ``played[g]`` the moves game ``g`` of a batch played (the next one is illegal, or the game ended), and the
    stones each played move took off the board, ``taken[taken_at[i]:taken_at[i + 1]]`` for move ``i`` of the
    batch's flat arrays. Made by :func:`replay_batch` (``trace=True``); read by the board loops of
    :mod:`gotk.encoders.game_loop`."""

    played: np.ndarray
    taken_at: np.ndarray
    taken: np.ndarray

    def take(self, index: np.ndarray) -> BoardTrace:
        """The trace of the games ``index`` (as :meth:`GameBatch.take`; the move arrays are shared)."""
        return BoardTrace(self.played[index], self.taken_at, self.taken)


_NO_TRACE = (np.empty(0, np.int8), np.empty(0, np.int32), np.empty(0, np.int16))


def replay_batch(batch: GameBatch, trace: bool = False) -> np.ndarray | tuple[np.ndarray, BoardTrace]:
    """:func:`replay` (default rules, no superko) of every game of ``batch`` in one compiled call:
    ``(G, 2)`` int64 rows of (moves played, engine status); status ``B.SETUP_FAILED`` where
    :func:`initial_state` would raise (redo that game with :func:`replay` for the error). With ``trace``:
    ``(rows, BoardTrace)``."""
    result = np.empty((len(batch), 2), dtype=np.int64)
    buffers = _NO_TRACE
    if trace:
        n = batch.size * batch.size  # a stone leaves the board at most once per placement (a move or a setup stone)
        buffers = (np.empty(n, np.int8), np.empty(len(batch.points) + 1, np.int32),
                   np.empty(len(batch.points) + len(batch.setup_b) + len(batch.setup_w) + n, np.int16))
    B.replay_games(batch.games, result, batch.colors, batch.points, batch.engine(), batch.starts, *buffers)
    if not trace:
        return result
    return result, BoardTrace(result[:, 0].copy(), buffers[1], buffers[2])


def iter_positions(record: GameRecord, rules: Rules | None = None):
    """Yield ``(state, move_index, color, point)`` before each playable main-line move.

    The state is shared and advanced after each yield: copy it to keep it. Slow path (one kernel
    call per move) meant for tests, inspection and tools; pipelines use compiled game loops.
    """
    state = initial_state(record, rules)
    for i, (color, point) in enumerate(record.moves):
        if not state.is_legal(point, color):
            return
        state.to_play = color
        yield state, i, color, point
        state.play(point, color)
