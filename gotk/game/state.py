"""``GameState``: the rules engine's Python face over the compiled kernels.

A state is mutable (``play`` changes it in place) and cheap to ``copy`` (a few small arrays), so
look-ahead copies and replay loops both stay fast. Points follow :mod:`gotk.coords`: a flat
index ``row * size + col`` (row 0 at the top), pass = ``size * size``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np

from gotk import coords
from gotk.errors import IllegalMoveError
from gotk.game import kernels as K
from gotk.game import loops as KL
from gotk.jit import kernel

BLACK = K.BLACK
WHITE = K.WHITE
EMPTY = K.EMPTY


def opponent(color: int) -> int:
    return 3 - color


@dataclass(frozen=True)
class Rules:
    """What the engine enforces. ``suicide``: allow multi-stone (or single) suicide;
    ``superko``: refuse moves that recreate an earlier whole-board position (positional)."""

    suicide: bool = False
    superko: bool = False

    @classmethod
    def from_sgf(cls, ru: str | None, superko: bool = False) -> Rules:
        """Rules from an SGF ``RU`` value: suicide is legal under New Zealand and Tromp-Taylor."""
        if cls is Rules:
            return _rules_from_sgf(ru, superko)  # one frozen instance per distinct value
        return cls(suicide=_allows_suicide(ru), superko=superko)


def _allows_suicide(ru: str | None) -> bool:
    name = (ru or "").strip().lower().replace("-", "").replace(" ", "")
    return name in {"nz", "newzealand", "tromptaylor", "tt"}


@lru_cache(maxsize=1024)
def _rules_from_sgf(ru: str | None, superko: bool) -> Rules:
    return Rules(suicide=_allows_suicide(ru), superko=superko)


@cache
def tables(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(nbr, diag, zobrist)`` for a board size, built once and shared (never written).

    ``nbr`` and ``diag`` are flagged read-only. ``zobrist`` is not, although nothing writes it: numba
    compiles one specialisation per argument type and a read-only array is a type of its own, and every
    :class:`~gotk.game.kernels.Engine` has tables of these types (the ladder reader's and the KataGo exporter's
    scratch positions too), so that the engine's kernels compile once for all of them.
    """
    if not coords.MIN_SIZE <= size <= coords.MAX_SIZE:
        raise ValueError(f"board size {size} is outside {coords.MIN_SIZE}..{coords.MAX_SIZE}")
    nbr, diag = K.make_tables(size)
    zob = K.make_zobrist(size)
    for a in (nbr, diag):
        a.setflags(write=False)
    return nbr, diag, zob


@cache
def _empty_arrays(size: int) -> tuple[np.ndarray, ...]:
    """The position arrays of an empty board (read-only templates that :class:`GameState` copies), in
    :data:`gotk.game.kernels.POSITION_FIELDS` order."""
    n = size * size
    meta = np.zeros(K.META_LEN, dtype=np.int64)
    meta[K.M_TO_PLAY] = BLACK
    meta[K.M_KO] = -1
    meta[K.M_LAST] = -1
    arrays = (np.zeros(n, dtype=np.int8), np.arange(n, dtype=np.int32), np.arange(n, dtype=np.int32),
              np.zeros(n, dtype=np.int32), np.zeros(n, dtype=np.int32), np.full(n, -1, dtype=np.int32),
              np.zeros(n, dtype=np.int32), meta, np.zeros(1, dtype=np.uint64))
    for a in arrays:
        a.setflags(write=False)
    return arrays


_NO_LOG = np.empty((0, 3), dtype=np.int32)


@cache
def _log_room(size: int) -> int:
    """Log entries a fresh copy starts with: one move's bound plus the few entries of a search path's moves."""
    return K.move_log_bound(size * size) + 256
_NO_MOVES = np.empty((0, K.MV_LEN), dtype=np.int64)


def new_engine(size: int, positions: tuple[np.ndarray, ...] | None = None, log_entries: int = 0,
               log_moves: int = 0) -> K.Engine:
    """A fresh :class:`~gotk.game.kernels.Engine`: an empty board, or copies of ``positions`` (the nine
    position arrays, :data:`~gotk.game.kernels.POSITION_FIELDS` order), with the size's shared tables and an
    undo log of ``log_entries`` entries and ``log_moves`` move records (none: it cannot record)."""
    nbr, diag, zob = tables(size)
    arrays = [a.copy() for a in (positions or _empty_arrays(size))]
    log = np.empty((log_entries, 3), dtype=np.int32) if log_entries else _NO_LOG
    moves = np.empty((log_moves, K.MV_LEN), dtype=np.int64) if log_moves else _NO_MOVES
    return K.Engine(*arrays, log, moves, nbr, diag, zob)


def position_arrays(e: K.Engine) -> tuple[np.ndarray, ...]:
    """The nine position arrays of ``e`` (:data:`~gotk.game.kernels.POSITION_FIELDS` order)."""
    return e[:9]


# Python's calls into the engine. numba types a named-tuple argument from Python in microseconds (no fast path),
# a plain tuple of arrays on its fast path: GameState keeps its Engine's arrays as a plain tuple too, and these
# entries rebuild the Engine in compiled code (free there).
@kernel
def _check_move(t, point, color, allow_suicide):
    return K.check_move(K.Engine(*t), point, color, allow_suicide)


@kernel
def _play_recorded(t, point, color, allow_suicide):
    return K.play_recorded(K.Engine(*t), point, color, allow_suicide)


@kernel
def _undo(t):
    K.undo(K.Engine(*t))


@kernel
def _legal_mask(t, color, allow_suicide, out):
    KL.legal_mask(K.Engine(*t), color, allow_suicide, out)


@kernel
def _play(t, point, color, allow_suicide):
    return K.play(K.Engine(*t), point, color, allow_suicide)


@kernel
def _setup_position(t, stack):
    return KL.setup_position(K.Engine(*t), stack)


@kernel
def _replay_moves(t, colors, points, allow_suicide, hashes):
    return KL.replay_moves(K.Engine(*t), colors, points, allow_suicide, hashes)


@kernel
def _replay_moves_superko(t, colors, points, allow_suicide, hashes):
    return KL.replay_moves_superko(K.Engine(*t), colors, points, allow_suicide, hashes)


def _engine_property(name: str) -> property:
    return property(lambda self: getattr(self._e, name), doc=f"``e.{name}``: see :class:`gotk.game.kernels.Engine`")


class GameState:
    """A Go position plus what the rules need: player to move, ko, history, hashes.

    ``e`` is the position's :class:`~gotk.game.kernels.Engine` (its arrays are also reachable by name:
    ``state.board``, ``state.head``...). :meth:`play` records each move in the engine's undo log, so
    :meth:`undo` is one compiled call; a :meth:`copy` starts with an empty log (undoing past it replays)."""

    __slots__ = ("size", "rules", "komi", "_e", "_t", "history", "_seen", "_setup")
    # e's arrays by name (state.board, state.head, ...): one property per Engine field, set below the class

    def __init__(self, size: int = 19, rules: Rules | None = None, komi: float = 7.5) -> None:
        self.size = size
        self.rules = rules or Rules()
        self.komi = komi
        # copies of one read-only template per size: cheaper than building each array (replay makes one per game)
        self.e = new_engine(size)
        self.history: list[tuple[int, int]] = []  # (color, point) of every move played
        self._seen: set[int] | None = {0} if self.rules.superko else None
        self._setup: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())

    @property
    def e(self) -> K.Engine:
        """The position's :class:`~gotk.game.kernels.Engine`."""
        return self._e

    @e.setter
    def e(self, e: K.Engine) -> None:
        self._e = e
        self._t = tuple(e)  # the same arrays, for the fast calls above

    @property
    def engine_arrays(self) -> tuple[np.ndarray, ...]:
        """:attr:`e` as a plain tuple (the same arrays): what Python passes to a compiled entry that rebuilds the
        Engine (``K.Engine(*t)``), which numba dispatches several times faster than the named tuple."""
        return self._t

    # --- construction ----------------------------------------------------------------------

    @classmethod
    def new(cls, size: int = 19, rules: Rules | None = None, komi: float = 7.5) -> GameState:
        return cls(size, rules, komi)

    def setup(self, black=(), white=(), empty=(), to_play: int | None = None) -> GameState:
        """Place setup stones (SGF AB/AW/AE) and rebuild strings. Raises ``IllegalMoveError``
        (``bad_setup``) if a resulting string has no liberties. Moves before it can no longer be undone."""
        n = self.size * self.size
        for color, pts in ((BLACK, black), (WHITE, white), (EMPTY, empty)):
            for p in pts:
                if not 0 <= p < n:
                    raise IllegalMoveError("bad_setup", f"setup point {p} is off the board")
                self.board[p] = color
                self.placed[p] = -1
        self.meta[[K.M_DEPTH, K.M_TOP]] = 0
        p = _setup_position(self._t, np.empty(n, dtype=np.int32))
        if p >= 0:
            raise IllegalMoveError("bad_setup", f"setup leaves a string without liberties at "
                                   f"{coords.to_gtp(int(p), self.size)}")
        self.meta[K.M_KO] = -1
        if to_play is not None:
            self.meta[K.M_TO_PLAY] = to_play
        if self._seen is not None:
            # before any move the set-up position is the game's first one (not the empty board)
            if self.history:
                self._seen.add(int(self.hashv[0]))
            else:
                self._seen = {int(self.hashv[0])}
        board = self.board  # ndarray.nonzero: a third of np.flatnonzero's overhead on a 361-point board
        self._setup = (tuple((board == BLACK).nonzero()[0].tolist()), tuple((board == WHITE).nonzero()[0].tolist()))
        return self

    def copy(self) -> GameState:
        """An independent copy (arrays copied, tables shared; the copy has nothing to undo yet)."""
        other = object.__new__(GameState)
        for name in ("size", "rules", "komi", "_setup"):
            setattr(other, name, getattr(self, name))
        e = self._e
        meta = e.meta.copy()
        meta[K.M_DEPTH] = 0
        meta[K.M_TOP] = 0
        # a log with room for the first moves played on the copy (a search's path): no failed first move, no regrowth
        other.e = K.Engine(e.board.copy(), e.head.copy(), e.nxt.copy(), e.libs.copy(), e.ssize.copy(), e.placed.copy(),
                           e.mark.copy(), meta, e.hashv.copy(), np.empty((_log_room(self.size), 3), np.int32),
                           np.empty((16, K.MV_LEN), np.int64), e.nbr, e.diag, e.zob)
        other.history = list(self.history)
        other._seen = set(self._seen) if self._seen is not None else None
        return other

    # --- properties --------------------------------------------------------------------------

    @property
    def to_play(self) -> int:
        return int(self.meta[K.M_TO_PLAY])

    @to_play.setter
    def to_play(self, color: int) -> None:
        self.meta[K.M_TO_PLAY] = color

    @property
    def ko_point(self) -> int | None:
        """The point the player to move may not take back because of simple ko, if any."""
        ko = int(self.meta[K.M_KO])
        return ko if ko >= 0 and self.meta[K.M_KO_COLOR] == self.to_play else None

    @property
    def move_number(self) -> int:
        return int(self.meta[K.M_MOVE_NO])

    @property
    def passes(self) -> int:
        """Consecutive passes just played."""
        return int(self.meta[K.M_PASSES])

    @property
    def hash(self) -> int:
        return int(self.hashv[0])

    @property
    def captures(self) -> tuple[int, int]:
        """Stones captured by (black, white)."""
        return int(self.meta[K.M_CAPT_B]), int(self.meta[K.M_CAPT_W])

    @property
    def pass_point(self) -> int:
        return self.size * self.size

    @property
    def undoable(self) -> int:
        """Moves :meth:`undo` can take back in one compiled call each (those played since the last copy, setup or
        replay)."""
        return int(self.meta[K.M_DEPTH])

    def grid(self) -> np.ndarray:
        """The board as a ``(size, size)`` view (row 0 at the top)."""
        return self.board.reshape(self.size, self.size)

    # --- rules -------------------------------------------------------------------------------

    def _status(self, point: int, color: int) -> int:
        return _check_move(self._t, point, color, self.rules.suicide)

    def is_legal(self, point: int, color: int | None = None) -> bool:
        color = self.to_play if color is None else color
        if self._status(point, color) != K.OK:
            return False
        if self._seen is not None and point != self.pass_point:
            self._play_recorded(point, color)
            repeats = self.hash in self._seen
            _undo(self._t)
            return not repeats
        return True

    def legal_mask(self, color: int | None = None) -> np.ndarray:
        """int8 over the ``size*size + 1`` moves (pass last): 1 where ``color``'s move is legal under simple ko and
        the suicide rule; positional superko is not applied (:meth:`legal_moves` applies it)."""
        color = self.to_play if color is None else color
        mask = np.empty(self.size * self.size + 1, dtype=np.int8)
        _legal_mask(self._t, color, self.rules.suicide, mask)
        return mask

    def legal_moves(self, color: int | None = None) -> np.ndarray:
        """Sorted flat indices of legal moves for ``color`` (pass included, last)."""
        color = self.to_play if color is None else color
        mask = np.empty(self.size * self.size + 1, dtype=np.int8)
        _legal_mask(self._t, color, self.rules.suicide, mask)
        moves = np.flatnonzero(mask)
        if self._seen is not None:
            moves = np.array([p for p in moves if self.is_legal(int(p), color)], dtype=np.int64)
        return moves

    def _play_recorded(self, point: int, color: int) -> int:
        """The engine's recorded move, the undo log grown first when it has no room (it doubles)."""
        st = _play_recorded(self._t, point, color, self.rules.suicide)
        if st == K.NO_ROOM:
            self._grow()
            st = _play_recorded(self._t, point, color, self.rules.suicide)
        return st

    def play_status(self, point: int, color: int, allow_suicide: bool | None = None) -> int:
        """The engine's move, unrecorded and outside the history (a tool replaying a known game, e.g. an exporter):
        returns the engine status (``K.OK`` or why the move is illegal; the position is then unchanged). Moves
        recorded before it can no longer be undone. ``allow_suicide``: default, the state's rules."""
        suicide = self.rules.suicide if allow_suicide is None else allow_suicide
        self.meta[K.M_DEPTH] = 0
        self.meta[K.M_TOP] = 0
        return int(_play(self._t, point, color, suicide))

    def replay_moves(self, colors: np.ndarray, points: np.ndarray, hashes: np.ndarray) -> tuple[int, int]:
        """:func:`gotk.game.loops.replay_moves` (``replay_moves_superko`` under superko rules) of this position in
        one compiled call: ``(moves played, engine status)``; ``hashes`` receives the position hashes. The moves
        go on neither the history nor the undo log."""
        if self.rules.superko:
            self._grow()  # a repetition is played recorded, then undone
            played, status = _replay_moves_superko(self._t, colors, points, self.rules.suicide, hashes)
        else:
            played, status = _replay_moves(self._t, colors, points, self.rules.suicide, hashes)
        return int(played), int(status)

    def _grow(self) -> None:
        """Room in the undo log for at least one more recorded move."""
        e = self.e
        depth, top = int(e.meta[K.M_DEPTH]), int(e.meta[K.M_TOP])
        need = K.move_log_bound(self.size * self.size)
        moves = np.empty((max(16, 2 * e.moves.shape[0]), K.MV_LEN), dtype=np.int64)
        moves[:depth] = e.moves[:depth]
        log = np.empty((max(2 * e.log.shape[0], top + 2 * need), 3), dtype=np.int32)
        log[:top] = e.log[:top]
        self.e = e._replace(log=log, moves=moves)

    def play(self, point: int, color: int | None = None) -> GameState:
        """Play ``point`` for ``color`` (default: the player to move). Raises ``IllegalMoveError``
        with reason ``occupied``, ``suicide``, ``ko``, ``superko`` or ``off_board``."""
        color = self.to_play if color is None else color
        if not 0 <= point <= self.pass_point:
            raise IllegalMoveError("off_board", f"point {point} on a {self.size}x{self.size} board")
        st = self._play_recorded(point, color)
        if st != K.OK:
            raise IllegalMoveError(K.STATUS_NAMES[st], f"{'BW'[color - 1]} {coords.to_gtp(point, self.size)}")
        if self._seen is not None and point != self.pass_point and self.hash in self._seen:
            _undo(self._t)
            raise IllegalMoveError("superko", f"{coords.to_gtp(point, self.size)} repeats a position")
        self.history.append((color, point))
        if self._seen is not None:
            self._seen.add(self.hash)
        return self

    def _restore(self, other: GameState) -> None:
        for mine, theirs in zip(position_arrays(self.e), position_arrays(other.e), strict=True):
            mine[:] = theirs
        self.meta[[K.M_DEPTH, K.M_TOP]] = 0

    def undo(self) -> GameState:
        """Take back the last move: one compiled call for a move :meth:`play` recorded, else (moves from before a
        :meth:`copy`) the setup and history replayed."""
        if not self.history:
            raise IndexError("no move to undo")
        if self.undoable:
            if self._seen is not None and self.history[-1][1] != self.pass_point:
                self._seen.discard(self.hash)
            _undo(self._t)
            self.history.pop()
            return self
        moves = self.history[:-1]
        fresh = GameState(self.size, self.rules, self.komi)
        if self._setup != ((), ()):
            fresh.setup(self._setup[0], self._setup[1])
        for color, point in moves:
            fresh.play(point, color)
        fresh.to_play = self.history[-1][0]  # whoever played the undone move is to move again
        self._restore(fresh)
        self.history = fresh.history
        self._seen = fresh._seen
        return self

    # --- queries -----------------------------------------------------------------------------

    def color_at(self, point: int) -> int:
        return int(self.board[point])

    def liberties_at(self, point: int) -> int:
        """Liberties of the string through ``point`` (0 for an empty point)."""
        if self.board[point] == EMPTY:
            return 0
        return int(self.libs[self.head[point]])

    def string_at(self, point: int) -> np.ndarray:
        """Sorted points of the string through ``point`` (empty array for an empty point)."""
        if self.board[point] == EMPTY:
            return np.empty(0, dtype=np.int64)
        h = int(self.head[point])
        return np.flatnonzero(self.head == h)

    def liberty_grid(self) -> np.ndarray:
        """Per-point liberty count of the string there (0 on empty points), flat."""
        return np.where(self.board != 0, self.libs[self.head], 0).astype(np.int32)

    def score_area(self) -> float:
        """Area score (black − white − komi) with every stone counted alive: stones plus empty
        regions bordered by one colour only."""
        from gotk.game.scoring import area_score

        return area_score(self.board, self.nbr) - self.komi

    def score_final(self, passer: int | None = None) -> float:
        """The score a finished game is counted by (black − white − komi), :func:`gotk.game.scoring.final_score`: the
        area with the stones dead inside the opponent's pass-alive area removed and, with a ``passer`` (the player
        who ends the game by answering a pass), that player's homeless stones too. ``passer`` None: the player
        whose pass ended the game when the last two moves are passes, else no one."""
        return self.ownership_final(passer)[0]

    def ownership_final(self, passer: int | None = None) -> tuple[float, np.ndarray]:
        """``(score, owner)`` by the count of :meth:`score_final`: ``owner`` int8 per point, +1 Black's area, −1
        White's, 0 neither."""
        from gotk.game.scoring import final_ownership

        if passer is None:
            passer = self.history[-1][0] if self.passes >= 2 and self.history else 0
        area, owner = final_ownership(self.board, self.head, self.nxt, self.nbr, self.rules.suicide, passer)
        return area - self.komi, owner

    def __str__(self) -> str:
        from gotk.game.render import render_board

        return render_board(self.board, self.size)


for _name in K.Engine._fields:
    if _name not in ("log", "moves"):
        setattr(GameState, _name, _engine_property(_name))
