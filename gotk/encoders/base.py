"""The encoder contract shared by every encoder, the pipeline and the loader.

An encoder turns a position into ``planes[c, row, col]`` (row 0 at the top, see
:mod:`gotk.coords`). Planes are described by data: ``plane_names`` (one per plane).
Two paths:

* :meth:`Encoder.encode` — one :class:`~gotk.game.state.GameState` → ``(C, H, W)`` array;
* :meth:`Encoder.encode_game` — a whole :class:`~gotk.sgf.record.GameRecord` → every position
  in one compiled loop (replay + encode), into one preallocated array. Pipelines use this.

An encoder may also offer the fast paths ``gotk encode``'s shard step takes when they are there, each declared
here by a flag that says whether it is (:class:`~gotk.encoders.game_loop.FillEncoder` offers all three where its
fill allows): :meth:`Encoder.encode_game_into` (``writes_into``: a game's rows into the caller's arrays),
:meth:`Encoder.encode_batch_into` (``batchable``: many games of a :class:`~gotk.game.replay.GameBatch` in one
compiled call) and :meth:`Encoder.encode_traced_batch_into` (``board_only``: the same over boards replayed before,
without the engine). An encoder without them is encoded through :meth:`Encoder.encode_game_chunks`.

Positions are "the state before a main-line move"; the player to move is the colour of that move.
Labels are flat move indices (pass = ``size * size``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from gotk import coords


@dataclass
class EncodedGame:
    """Every encoded position of one game.

    ``features`` (N, C, H, W) uint8 for bit encoders (0/1) or int8 for ``oneplane``;
    ``labels`` (N,) int16 flat move index; ``move_numbers`` (N,) int32 0-based main-line index
    (setup excluded, passes counted); ``to_play`` (N,) int8 (+1 black, -1 white).
    ``moves_replayed`` counts main-line moves applied; ``error`` names why the game stopped early
    (``None`` if the whole main line replayed).
    """

    features: np.ndarray
    labels: np.ndarray
    move_numbers: np.ndarray
    to_play: np.ndarray
    moves_replayed: int
    error: object | None = None

    def __len__(self) -> int:
        return int(self.labels.shape[0])


class Encoder(ABC):
    """Base class: subclasses set the class attributes and implement the two paths (and, where they say so by
    their flags, the fast paths: see the module docstring)."""

    name: str = ""
    version: int = 1
    dtype: str = "bit"  # "bit" (0/1 planes, stored packed) or "int8"
    writes_into: bool = False  # encode_game_into is there
    batchable: bool = False  # encode_batch_into is there
    board_only: bool = False  # encode_traced_batch_into is there: the planes read only the board
    compile_ahead: bool = False  # a first gotk encode compiles its shard_loop in a helper (gotk.jobs.precompile)

    def __init__(self, board_size: int = 19, **options) -> None:
        if not coords.MIN_SIZE <= board_size <= coords.MAX_SIZE:
            raise ValueError(f"board size {board_size} outside {coords.MIN_SIZE}..{coords.MAX_SIZE}")
        self.board_size = board_size
        self.options = dict(options)

    # --- description ----------------------------------------------------------------------

    @property
    @abstractmethod
    def plane_names(self) -> list[str]:
        """One name per plane, in plane order (e.g. ``liberties_3``)."""

    @property
    def num_planes(self) -> int:
        return len(self.plane_names)

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.num_planes, self.board_size, self.board_size)

    @property
    def num_points(self) -> int:
        return self.board_size * self.board_size

    @property
    def num_moves(self) -> int:
        """Size of the move space: every point plus pass."""
        return self.board_size * self.board_size + 1

    @property
    def np_dtype(self) -> np.dtype:
        return np.dtype(np.int8) if self.dtype == "int8" else np.dtype(np.uint8)

    def describe(self) -> dict:
        """JSON-able description stored in manifests, shard metadata and agent files."""
        return {
            "name": self.name,
            "version": self.version,
            "board_size": self.board_size,
            "num_planes": self.num_planes,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "plane_names": list(self.plane_names),
            "options": dict(self.options),
        }

    # --- moves ------------------------------------------------------------------------------

    def encode_move(self, point: int) -> int:
        """Flat move index (pass = size*size) → label. Validates the range."""
        if not 0 <= point <= self.num_points:
            raise ValueError(f"move {point} outside 0..{self.num_points}")
        return int(point)

    def decode_move(self, index: int) -> int:
        """Label → flat move index (pass = size*size)."""
        if not 0 <= index <= self.num_points:
            raise ValueError(f"label {index} outside 0..{self.num_points}")
        return int(index)

    # --- encoding ---------------------------------------------------------------------------

    @abstractmethod
    def encode(self, state) -> np.ndarray:
        """Planes of ``state`` for its player to move: ``(C, H, W)`` array of ``np_dtype``."""

    @abstractmethod
    def encode_game(self, record, include_passes: bool = False, skip_first: int = 0) -> EncodedGame:
        """Every position before a main-line move of ``record`` (passes only with
        ``include_passes``; the first ``skip_first`` moves dropped), in one compiled loop."""

    def encode_game_chunks(self, record, include_passes: bool = False, skip_first: int = 0,
                           chunk_moves: int = 4096):
        """:meth:`encode_game` as pieces of at most ``chunk_moves`` moves each (the same rows, in order), so a
        long game never holds all its planes at once. This default yields the whole game as one piece."""
        yield self.encode_game(record, include_passes, skip_first)

    # --- fast paths (where the flags above say so) ------------------------------------------

    @property
    def shard_loop(self):
        """The compiled function at the top of what ``gotk encode``'s shard step runs (numba's cache says whether it
        is compiled already), or None when the encoder has none."""
        return None

    def encode_game_into(self, record, out: np.ndarray, labels: np.ndarray, move_numbers: np.ndarray,
                         to_play: np.ndarray, include_passes: bool = False, skip_first: int = 0):
        """:meth:`encode_game`'s rows written into the caller's arrays: ``out`` ``(cap, C, N)`` zeroed, ``labels``
        int16, ``move_numbers`` int32, ``to_play`` int8, each at least :func:`kept_count` long. Returns ``(rows,
        moves_replayed, error)``. Only where :attr:`writes_into`."""
        raise NotImplementedError(f"{self.name} encodes no game into given arrays")

    def encode_batch_into(self, batch, out: np.ndarray, labels: np.ndarray, move_numbers: np.ndarray,
                          to_play: np.ndarray, include_passes: bool = False, skip_first: int = 0):
        """:meth:`encode_game_into` of every game of ``batch`` (a :class:`~gotk.game.replay.GameBatch`) in one
        compiled call, rows end to end: ``(result, rows, done)``, ``result[g]`` = (rows, moves replayed, status) of
        game ``g``, ``done`` the games encoded (fewer when game ``done``'s setup stones are unusable). Only where
        :attr:`batchable`."""
        raise NotImplementedError(f"{self.name} has no batch loop")

    def encode_traced_batch_into(self, batch, trace, out: np.ndarray, labels: np.ndarray, move_numbers: np.ndarray,
                                 to_play: np.ndarray, include_passes: bool = False, skip_first: int = 0):
        """:meth:`encode_batch_into` of games replayed before (``trace``: their
        :class:`~gotk.game.replay.BoardTrace`), over the boards alone. Only where :attr:`board_only`."""
        raise NotImplementedError(f"{self.name} reads more of a position than its board")


def kept_count(points: np.ndarray, size: int, include_passes: bool = False, skip_first: int = 0) -> int:
    """How many main-line moves give a row: those not among the first ``skip_first``, and not a pass unless
    ``include_passes``. The one statement of the rule (the compiled game loops apply it move by move)."""
    pts = np.asarray(points)[max(0, int(skip_first)):]
    return len(pts) if include_passes else len(pts) - int(np.count_nonzero(pts == size * size))


def kept_counts(points: np.ndarray, offsets: np.ndarray, played: np.ndarray, size: int, include_passes: bool = False,
                skip_first: int = 0) -> np.ndarray:
    """:func:`kept_count` of many games at once (int64, one per game): game ``g``'s main line is
    ``points[offsets[g]:offsets[g + 1]]``, of which its first ``played[g]`` moves count."""
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    game = np.repeat(np.arange(len(lengths)), lengths)
    index = np.arange(int(offsets[-1] - offsets[0])) - np.repeat(offsets[:-1] - offsets[0], lengths)
    keep = (index >= max(0, int(skip_first))) & (index < np.repeat(np.asarray(played, dtype=np.int64), lengths))
    if not include_passes:
        keep &= np.asarray(points)[offsets[0]:offsets[-1]] != size * size
    return np.bincount(game[keep], minlength=len(lengths)).astype(np.int64)
