"""The generic compiled game loop (replay + encode) and the base class of compiled encoders.

The encoder contract: a fill function ``fill(out, e, color)`` (``@gotk.jit.kernel``, or
``@gotk.jit.compiled`` if it allocates) writes the planes of the position ``e`` (a
:class:`~gotk.game.kernels.Engine`, read-only) into a zeroed, C-contiguous ``out`` of shape ``(C, N)`` for
player ``color`` to move.

:func:`game_loop_for` gives, for any fill function, one compiled loop that replays a whole game and
calls the fill before each kept move. numba does not cache a function that receives another
function as an argument (the dispatcher's type differs in every process), so the loop is generated
per fill from one source template (:data:`LOOP_TEMPLATE`) and compiled with ``cache=True``: a
second process loads it from ``__pycache__`` without compiling. An edit of the template, of the fill or of
anything they call compiles afresh: :mod:`gotk.jit`'s cache stamp covers every gotk module with compiled code
(numba itself only watches the file a cached function is defined in).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from gotk import jit
from gotk.encoders.base import EncodedGame, Encoder, kept_count
from gotk.game import batch as B
from gotk.game import kernels as K
from gotk.game.replay import BoardTrace, GameBatch, stop_error

FILL_ARGS = "e, color"

#: The game loop's source. Named placeholders: ``name``; ``fill_args``; ``state_param`` and ``state_arg``
#: (``", state"`` each for a fill with a per-game state, else empty); ``track`` (the line that hands every
#: position to the state's ``track``, or empty).
LOOP_TEMPLATE = """\
def {name}(out, labels, move_numbers, to_play, t, colors, points, allow_suicide, include_passes,
           skip_first{state_param}):
    e = Engine(*t)
    n = e.board.shape[0]
    j = 0
    for i in range(points.shape[0]):
        p = points[i]
        color = colors[i]
{track}        kept = i >= skip_first and (include_passes or p != n)
        if kept:
            fill(out[j], {fill_args}{state_arg})
            labels[j] = p
            move_numbers[j] = i
            to_play[j] = 1 if color == 1 else -1
            j += 1
        st = play(e, p, color, allow_suicide)
        if st != 0:
            if kept:
                j -= 1  # the label of that row is an illegal move: drop it
            return j, i, st
    return j, points.shape[0], 0
"""

#: The loop of :data:`LOOP_TEMPLATE` over every game of a :class:`~gotk.game.replay.GameBatch`, each from its own
#: first position (``start_game``), rows end to end: game ``g`` writes ``result[g]`` = (rows, moves replayed,
#: status). With ``zero_rows`` each kept row is zeroed before its fill (a fill that writes every element needs
#: none), so a row written for an illegal move and dropped is clean again when the next game's row takes
#: its place. Stops at a game whose setup is unusable (its index is returned beside the rows written; the
#: caller redoes it through :func:`encode_record_into`, which raises). The batch table's columns are read by
#: their names in :mod:`gotk.game.batch` (``G_M0``...: globals of the generated code, constants to numba).
#: Named placeholders: ``name``, ``row`` (:data:`_BATCH_ROW`, the kept row's fill).
BATCH_TEMPLATE = """\
def {name}(out, labels, move_numbers, to_play, result, games, colors, points, e, starts, include_passes, skip_first,
           zero_rows):
    n = e.board.shape[0]
    j = 0
    for g in range(games.shape[0]):
        t = games[g, G_START]
        m0 = games[g, G_M0]
        m1 = games[g, G_M1]
        if t < 0:
            return j, g
        start_game(e, starts, t, colors, m0, m1)
        j0 = j
        allow_suicide = games[g, G_SUICIDE] != 0
        played = m1 - m0
        st = 0
        for i in range(m0, m1):
{row}
            st = play(e, p, color, allow_suicide)
            if st != 0:
                if kept:
                    j -= 1  # the label of that row is an illegal move: drop it
                played = i - m0
                break
        result[g, 0] = j - j0
        result[g, 1] = played
        result[g, 2] = st
    return j, games.shape[0]
"""

#: :data:`BATCH_TEMPLATE` for a fill that reads nothing of the position but ``board`` (:attr:`Encoder.board_only`),
#: over games replayed before (a :class:`~gotk.game.replay.BoardTrace`): each game's board is set from its first
#: position and then moves by itself, a stone placed per move and the stones the move took (as the engine found
#: them) lifted, over the ``played[g]`` moves the engine played; no strings, liberties or legality to work out.
#: Only ``e.board`` is kept up to date (the fill reads nothing else). ``result[g]`` = (rows, ``played[g]``, 0).
BOARD_TEMPLATE = """\
def {name}(out, labels, move_numbers, to_play, result, games, played, taken_at, taken, colors, points, e, s_board,
           include_passes, skip_first, zero_rows):
    board = e.board
    n = board.shape[0]
    j = 0
    for g in range(games.shape[0]):
        t = games[g, G_START]
        m0 = games[g, G_M0]
        if t < 0:
            return j, g
        for q in range(n):
            board[q] = s_board[t, q]
        j0 = j
        for i in range(m0, m0 + played[g]):
{row}
            if p != n:
                board[p] = color
            for r in range(taken_at[i], taken_at[i + 1]):
                board[taken[r]] = 0
        result[g, 0] = j - j0
        result[g, 1] = played[g]
        result[g, 2] = 0
    return j, games.shape[0]
"""

#: The row of move ``i`` of a batch loop, filled when kept (``p``, ``color`` and ``kept`` stay set for the move).
#: Named placeholder: ``fill_args``.
_BATCH_ROW = """\
            p = points[i]
            color = colors[i]
            kept = i - m0 >= skip_first and (include_passes or p != n)
            if kept:
                row = out[j]
                if zero_rows:
                    for c in range(row.shape[0]):
                        for q in range(row.shape[1]):
                            row[c, q] = 0
                fill(row, {fill_args})
                labels[j] = p
                move_numbers[j] = i - m0
                to_play[j] = 1 if color == 1 else -1
                j += 1"""


def jit_generated(name: str, source: str, namespace: dict[str, Any], module: str):
    """Compile ``source`` (defining function ``name``) with numba, cached.

    The function's globals are ``namespace`` (plus the engine kernels); it is attributed to
    ``module``, whose file anchors numba's cache (kept fresh by :mod:`gotk.jit`'s cache stamp). It is a
    :func:`gotk.jit.kernel`
    (no reference counting) when every compiled function in ``namespace`` is one, else
    :func:`gotk.jit.compiled`; the generated code itself allocates nothing.
    """
    mod = sys.modules[module]
    filename = str(Path(mod.__file__).resolve())
    env = {"play": K.play, "start_game": B.start_game, "Engine": K.Engine, "np": np, "__name__": module,
           "G_M0": B.G_M0, "G_M1": B.G_M1, "G_SUICIDE": B.G_SUICIDE, "G_START": B.G_START}
    env.update(namespace)
    exec(compile(source, filename, "exec"), env)
    fn = env[name]
    fn.__module__ = module
    fn.__qualname__ = name
    callees = [v for v in namespace.values() if hasattr(v, "targetoptions")]
    return (jit.kernel if all(jit.is_kernel(v) for v in callees) else jit.compiled)(fn)


_LOOPS: dict[tuple[int, bool, int], tuple[Any, ...]] = {}


def game_loop_for(fill, with_state: bool = False, track=None):
    """The compiled game loop calling ``fill`` (built once per fill, cached across processes).

    Signature: ``loop(out, labels, move_numbers, to_play, t, colors, points, allow_suicide, include_passes,
    skip_first)`` (``t``: the position's Engine arrays as a plain tuple, which numba dispatches from Python several
    times faster than the named tuple; the loop rebuilds the Engine) →
    ``(rows_written, moves_replayed, status)``. With ``with_state`` the loop takes one more argument,
    ``state``, passed on as the fill's last argument: what the fill keeps from one position of the
    game to the next (a cache). With ``track`` (a kernel ``track(e, color, state)``, only with ``with_state``) the
    loop calls it before every main-line move, kept as a row or not, before the fill: a state that must see every
    position of the game (the boards of a history, :mod:`gotk.encoders.leelazero`), which the fill alone does not
    (it runs only for kept moves).
    """
    if track is not None and not with_state:
        raise ValueError("a track function needs a per-game state (with_state=True)")
    key = (id(fill), with_state, id(track) if track is not None else 0)
    entry = _LOOPS.get(key)
    if entry is None:
        py = fill.py_func
        name = f"_game_loop_{py.__name__}" + ("_state" if with_state else "")
        if track is not None:
            name += f"_{track.py_func.__name__}"
        state = ", state" if with_state else ""
        source = LOOP_TEMPLATE.format(name=name, fill_args=FILL_ARGS, state_param=state, state_arg=state,
                                      track="        track(e, color, state)\n" if track is not None else "")
        namespace = {"fill": fill}
        if track is not None:
            namespace["track"] = track
        # fill (and track) kept alive: ids stay unique
        entry = (jit_generated(name, source, namespace, py.__module__), fill, track)
        _LOOPS[key] = entry
    return entry[0]


_BATCH_LOOPS: dict[tuple[int, str], tuple[Any, Any]] = {}


def batch_loop_for(fill, template: str = BATCH_TEMPLATE, kind: str = "batch"):
    """The compiled batch loop (:data:`BATCH_TEMPLATE`, or ``template`` with its ``kind`` of loop:
    :func:`board_loop_for`) calling ``fill``, built once per fill (cached across processes, as
    :func:`game_loop_for`'s)."""
    entry = _BATCH_LOOPS.get((id(fill), kind))
    if entry is None:
        py = fill.py_func
        name = f"_{kind}_loop_{py.__name__}"
        source = template.format(name=name, row=_BATCH_ROW.format(fill_args=FILL_ARGS))
        entry = (jit_generated(name, source, {"fill": fill}, py.__module__), fill)
        _BATCH_LOOPS[(id(fill), kind)] = entry
    return entry[0]


def board_loop_for(fill):
    """The compiled board loop (:data:`BOARD_TEMPLATE`) calling ``fill`` (one that reads only the board)."""
    return batch_loop_for(fill, BOARD_TEMPLATE, "board")


_ENTRIES: dict[int, tuple[Any, Any]] = {}


def state_entry_for(fill):
    """``entry(out, t, color)``: ``fill`` of the position whose Engine's arrays are the plain tuple ``t``
    (:attr:`GameState.engine_arrays <gotk.game.state.GameState.engine_arrays>`), the call Python makes per position:
    numba dispatches a plain tuple several times faster than the named tuple."""
    entry = _ENTRIES.get(id(fill))
    if entry is None:
        py = fill.py_func
        name = f"_entry_{py.__name__}"
        source = f"def {name}(out, t, color):\n    fill(out, Engine(*t), color)\n"
        entry = _ENTRIES[id(fill)] = (jit_generated(name, source, {"fill": fill}, py.__module__), fill)
    return entry[0]


def encode_state(fill, num_planes: int, dtype: np.dtype, state, color: int | None = None) -> np.ndarray:
    """Planes ``(C, H, W)`` of ``state`` for ``color`` to move (default: the state's player to move)."""
    color = state.to_play if color is None else int(color)
    if color not in (K.BLACK, K.WHITE):
        raise ValueError(f"color must be 1 (black) or 2 (white), not {color}")
    n = state.size * state.size
    out = np.zeros((num_planes, n), dtype=dtype)
    state_entry_for(fill)(out, state.engine_arrays, color)
    return out.reshape(num_planes, state.size, state.size)


def encode_record(fill, num_planes: int, dtype: np.dtype, record, include_passes: bool = False,
                  skip_first: int = 0, state_maker=None, track=None) -> EncodedGame:
    """Replay ``record`` and encode the position before every kept main-line move, in one compiled loop.

    With ``state_maker`` (``state_maker(n)`` → a fresh per-game state), ``fill`` takes that state as
    its last argument (see :func:`game_loop_for`, also for ``track``).

    Raises :class:`~gotk.errors.SGFError` (``bad_setup``) when the setup stones are unusable; an
    illegal move ends the game there (``moves_replayed``, ``error``), the rows before it are kept.
    """
    size = record.size
    cap = kept_count(record.points, size, include_passes, skip_first)
    out = np.zeros((cap, num_planes, size * size), dtype=dtype)
    labels = np.empty(cap, dtype=np.int16)
    move_numbers = np.empty(cap, dtype=np.int32)
    to_play = np.empty(cap, dtype=np.int8)
    rows, replayed, error = encode_record_into(fill, record, out, labels, move_numbers, to_play, include_passes,
                                               skip_first, state_maker, track)
    return EncodedGame(out[:rows].reshape(rows, num_planes, size, size), labels[:rows], move_numbers[:rows],
                       to_play[:rows], replayed, error)


def encode_record_into(fill, record, out: np.ndarray, labels: np.ndarray, move_numbers: np.ndarray,
                       to_play: np.ndarray, include_passes: bool = False, skip_first: int = 0, state_maker=None,
                       track=None):
    """:func:`encode_record` into arrays the caller owns (e.g. views of a shard's row batch), so the rows are
    written once, where they are kept: ``out`` ``(cap, C, N)`` zeroed, C-contiguous, of the encoder's dtype;
    ``labels`` int16, ``move_numbers`` int32, ``to_play`` int8, each of length ``cap`` ≥
    :func:`~gotk.encoders.base.kept_count` of the whole main line (a row past the last one kept may be
    written and dropped). Returns ``(rows, moves_replayed, error)``."""
    from gotk.game.replay import initial_state

    state = initial_state(record)
    points = np.ascontiguousarray(record.points, dtype=np.int32)
    colors = np.ascontiguousarray(record.colors, dtype=np.int64)
    loop = game_loop_for(fill, state_maker is not None, track)
    args = (out, labels, move_numbers, to_play, state.engine_arrays, colors, points, state.rules.suicide,
            bool(include_passes),
            max(0, int(skip_first)))
    if state_maker is not None:
        args += (state_maker(record.size * record.size),)
    rows, replayed, status = loop(*args)
    rows, replayed = int(rows), int(replayed)
    return rows, replayed, stop_error(record, int(status), replayed, colors, points)


def encode_batch_into(fill, batch: GameBatch, out: np.ndarray, labels: np.ndarray, move_numbers: np.ndarray,
                      to_play: np.ndarray, include_passes: bool = False, skip_first: int = 0,
                      dense: bool = False) -> tuple[np.ndarray, int, int]:
    """:func:`encode_record_into` of every game of ``batch`` in one compiled call, rows end to end in the
    caller's arrays (each at least as long as the sum of the games' :func:`~gotk.encoders.base.kept_count`
    of their whole main lines; ``out`` need not be zeroed: each row is, before its fill, unless ``dense``
    says that ``fill`` writes every element). Returns ``(result, rows, done)``: ``result[g]``
    = (rows, moves replayed, engine status) of game ``g``, the rows written in all, and how many games
    were encoded (fewer than the batch when game ``done``'s setup stones are unusable: redo it alone with
    :func:`encode_record_into`, which raises the error)."""
    result = np.zeros((len(batch), 3), dtype=np.int64)
    b = batch
    rows, done = batch_loop_for(fill)(out, labels, move_numbers, to_play, result, b.games, b.colors, b.points,
                                      b.engine(), b.starts, bool(include_passes), max(0, int(skip_first)),
                                      not dense)
    return result, int(rows), int(done)


def encode_traced_batch_into(fill, batch: GameBatch, trace: BoardTrace, out: np.ndarray, labels: np.ndarray,
                             move_numbers: np.ndarray, to_play: np.ndarray, include_passes: bool = False,
                             skip_first: int = 0, dense: bool = False) -> tuple[np.ndarray, int, int]:
    """:func:`encode_batch_into` of games replayed before (``trace``: theirs, from
    :func:`~gotk.game.replay.replay_batch`), by the board loop (:func:`board_loop_for`): the same rows, for a
    ``fill`` that reads only the board. ``result[g]``'s status is 0 (the trace says only where each game stopped)."""
    result = np.zeros((len(batch), 3), dtype=np.int64)
    b = batch
    rows, done = board_loop_for(fill)(out, labels, move_numbers, to_play, result, b.games, trace.played,
                                      trace.taken_at, trace.taken, b.colors, b.points, b.engine(), b.starts.board,
                                      bool(include_passes), max(0, int(skip_first)), not dense)
    return result, int(rows), int(done)


def encode_record_chunks(fill, num_planes: int, dtype: np.dtype, record, include_passes: bool = False,
                         skip_first: int = 0, chunk_moves: int = 4096, state_maker=None, track=None):
    """:func:`encode_record` in pieces of at most ``chunk_moves`` main-line moves: yields
    :class:`EncodedGame` pieces whose rows, concatenated, are exactly ``encode_record``'s (``move_numbers``
    absolute; the last piece carries ``moves_replayed`` and ``error``). The compiled loop keeps all of the
    game's state in the engine arrays (and a ``state_maker`` fill's per-game state, made once here and passed
    to every piece), so calling it on successive slices of the moves continues the same replay: memory is one
    piece's planes, whatever the game's length."""
    from gotk.game.replay import initial_state

    state = initial_state(record)
    size = record.size
    n = size * size
    points = np.ascontiguousarray(record.points, dtype=np.int32)
    colors = np.ascontiguousarray(record.colors, dtype=np.int64)
    skip_first = max(0, int(skip_first))
    chunk_moves = max(1, int(chunk_moves))
    loop = game_loop_for(fill, state_maker is not None, track)
    extra = (state_maker(n),) if state_maker is not None else ()
    total = len(points)
    a = 0
    while True:
        b = min(total, a + chunk_moves)
        pts, cols = points[a:b], colors[a:b]
        first = max(0, skip_first - a)
        cap = kept_count(pts, size, include_passes, first)
        out = np.zeros((cap, num_planes, n), dtype=dtype)
        labels = np.empty(cap, dtype=np.int16)
        move_numbers = np.empty(cap, dtype=np.int32)
        to_play = np.empty(cap, dtype=np.int8)
        rows, replayed, status = loop(out, labels, move_numbers, to_play, state.engine_arrays, cols, pts,
                                      state.rules.suicide,
                                      bool(include_passes), first, *extra)
        rows, replayed, status = int(rows), a + int(replayed), int(status)
        move_numbers[:rows] += a
        last = status != 0 or b >= total
        error = stop_error(record, status, replayed, colors, points) if last else None
        yield EncodedGame(out[:rows].reshape(rows, num_planes, size, size), labels[:rows], move_numbers[:rows],
                          to_play[:rows], replayed, error)
        if last:
            return
        a = b


class FillEncoder(Encoder):
    """An encoder defined by a compiled fill function (``fill``, a ``staticmethod`` or an instance
    attribute) and its plane names; both paths run that fill, unless ``game_fill`` is set: then
    ``encode_game`` runs ``game_fill``, which takes a per-game state made by ``state_maker(n)``
    (a cache carried from one position to the next; it must give the same planes as ``fill``), and ``game_track``
    when that state must see every position of the game, not only the kept ones (see :func:`game_loop_for`)."""

    fill: Any = None
    dense: bool = False  # the fill writes every element of its output (zero or not): rows need no zeroing first
    writes_into = True
    game_fill: Any = None
    state_maker: Any = None
    game_track: Any = None
    names: tuple[str, ...] = ()

    @property
    def plane_names(self) -> list[str]:
        return list(self.names)

    @property
    def shard_loop(self):
        """The compiled loop ``gotk encode``'s shard step runs (the top of this encoder's compiled tree): the batch
        loop where :attr:`batchable`, else the game loop."""
        if self.game_fill is not None:
            return game_loop_for(self.game_fill, True, self.game_track)
        return batch_loop_for(self.fill)

    def encode(self, state, color: int | None = None) -> np.ndarray:
        """Planes ``(C, H, W)`` of ``state``; ``color`` overrides the player to move."""
        if state.size != self.board_size:
            raise ValueError(f"{self.name} encoder is for {self.board_size}x{self.board_size}, "
                             f"the state is {state.size}x{state.size}")
        return encode_state(self.fill, self.num_planes, self.np_dtype, state, color)

    def encode_game(self, record, include_passes: bool = False, skip_first: int = 0) -> EncodedGame:
        if record.size != self.board_size:
            raise ValueError(f"{self.name} encoder is for {self.board_size}x{self.board_size}, "
                             f"the game is {record.size}x{record.size}")
        if self.game_fill is not None:
            return encode_record(self.game_fill, self.num_planes, self.np_dtype, record, include_passes, skip_first,
                                 self.state_maker, self.game_track)
        return encode_record(self.fill, self.num_planes, self.np_dtype, record, include_passes, skip_first)

    def encode_game_into(self, record, out: np.ndarray, labels: np.ndarray, move_numbers: np.ndarray,
                         to_play: np.ndarray, include_passes: bool = False, skip_first: int = 0):
        """:meth:`encode_game`'s rows written into the caller's arrays (:func:`encode_record_into`):
        ``(rows, moves_replayed, error)``."""
        if record.size != self.board_size:
            raise ValueError(f"{self.name} encoder is for {self.board_size}x{self.board_size}, "
                             f"the game is {record.size}x{record.size}")
        if self.game_fill is not None:
            return encode_record_into(self.game_fill, record, out, labels, move_numbers, to_play, include_passes,
                                      skip_first, self.state_maker, self.game_track)
        return encode_record_into(self.fill, record, out, labels, move_numbers, to_play, include_passes, skip_first)

    @property
    def batchable(self) -> bool:
        """Whether :meth:`encode_batch_into` can encode this encoder's games: a fill without per-game state."""
        return self.game_fill is None

    def _check_batch(self, batch: GameBatch) -> None:
        if batch.size != self.board_size:
            raise ValueError(f"{self.name} encoder is for {self.board_size}x{self.board_size}, "
                             f"the games are {batch.size}x{batch.size}")

    def encode_batch_into(self, batch: GameBatch, out: np.ndarray, labels: np.ndarray, move_numbers: np.ndarray,
                          to_play: np.ndarray, include_passes: bool = False, skip_first: int = 0):
        """:meth:`encode_game_into` of every game of ``batch`` in one compiled call (:func:`encode_batch_into`);
        only where :attr:`batchable`."""
        self._check_batch(batch)
        if not self.batchable:
            raise ValueError(f"{self.name} keeps a state from one position of a game to the next: no batch loop")
        return encode_batch_into(self.fill, batch, out, labels, move_numbers, to_play, include_passes, skip_first,
                                 self.dense)

    def encode_traced_batch_into(self, batch: GameBatch, trace: BoardTrace, out: np.ndarray, labels: np.ndarray,
                                 move_numbers: np.ndarray, to_play: np.ndarray, include_passes: bool = False,
                                 skip_first: int = 0):
        """:meth:`encode_batch_into` of games replayed before, without the engine (:func:`encode_traced_batch_into`);
        only where :attr:`board_only`."""
        self._check_batch(batch)
        if not self.board_only:
            raise ValueError(f"{self.name} reads more of a position than its board: no board loop")
        return encode_traced_batch_into(self.fill, batch, trace, out, labels, move_numbers, to_play, include_passes,
                                        skip_first, self.dense)

    def encode_game_chunks(self, record, include_passes: bool = False, skip_first: int = 0,
                           chunk_moves: int = 4096):
        """:meth:`encode_game` in bounded pieces (:func:`encode_record_chunks`): the same rows."""
        if record.size != self.board_size:
            raise ValueError(f"{self.name} encoder is for {self.board_size}x{self.board_size}, "
                             f"the game is {record.size}x{record.size}")
        if self.game_fill is not None:
            return encode_record_chunks(self.game_fill, self.num_planes, self.np_dtype, record, include_passes,
                                        skip_first, chunk_moves, self.state_maker, self.game_track)
        return encode_record_chunks(self.fill, self.num_planes, self.np_dtype, record, include_passes, skip_first,
                                    chunk_moves)
