"""Leela Zero's supervised training data: the version-1 text chunks that ``leelaz``'s
``dump_supervised`` writes (``src/Training.cpp``) and ``training/tf/chunkparser.py`` reads.

A chunk is a gzip file of records, one per main-line move, 19 lines each (see ``docs/export.md``):

* lines 1-16: the input planes, each 361 bits in Leela Zero's vertex order (``y*19 + x``, A1 = 0 at
  the bottom left, :func:`gotk.coords.to_leelazero`): the side to move's stones at T, T-1 … T-7, then
  the opponent's at T … T-7 (T = the position before the move; a history before the game's first
  position is empty). Bits 0-359 are written as 90 lowercase hex digits, four bits each, the first
  bit the most significant; bit 360 follows as one digit ``0``/``1``;
* line 17: the side to move, ``0`` black, ``1`` white;
* line 18: 362 probabilities separated by single spaces, ``1`` on the played move (index
  ``y*19 + x``, 361 = pass) and ``0`` elsewhere, as ``dump_supervised`` writes a recorded move; or, given a
  search's policy (a self-play folder's shard rows, ``game_text(..., policy=...)``), those probabilities in
  Leela Zero's order, each the shortest decimal that reads back as the same float16, and then only the
  positions that have one are written (as ``dump_training`` writes a self-play game's visit distribution);
* line 19: ``1`` if the side to move won the game, ``-1`` if it lost.

As ``dump_supervised``: only 19x19 games with a winner, not won on time, every move of the main line
(passes included), a game whose main line the engine refuses is dropped whole. gzip bytes carry no time
stamp or file name, so the same games give the same chunk bytes.
"""

from __future__ import annotations

import gzip

import numpy as np

from gotk import coords
from gotk.encoders.leelazero import HISTORY, NUM_PLANES, history_planes
from gotk.errors import GotkError
from gotk.game import kernels as K
from gotk.jit import compiled
from gotk.sgf.record import BLACK, GameRecord, value_targets

SIZE = 19
N = SIZE * SIZE
PLANE_LINE = 92  # 90 hex digits, the last bit, newline
STM_LINE = 2
POLICY_LINE = 2 * (N + 1)  # 362 one-character values, 361 spaces, newline
FIXED = 16 * PLANE_LINE + STM_LINE + POLICY_LINE  # before the winner line ("1\n" or "-1\n")
GAMES_PER_CHUNK = 32  # OutputChunker::CHUNK_SIZE in Leela Zero
COMPRESS_LEVEL = 6  # leelaz writes 9 (gzopen "wb9"): slower to write for somewhat smaller files

_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_LZ_ORDER = coords.leelazero_order(SIZE)
_POLICY_ZEROS = np.frombuffer((" ".join(["0"] * (N + 1)) + "\n").encode(), dtype=np.uint8)


@compiled
def _boards(t, colors, points, allow_suicide, out):
    """``out[0]`` = the start position (its Engine's arrays as a plain tuple ``t``), ``out[i + 1]`` = the board after
    move ``i``. Returns ``(moves_played, status)`` (status != 0: move ``moves_played`` is illegal)."""
    e = K.Engine(*t)
    out[0] = e.board
    for i in range(points.shape[0]):
        st = K.play(e, points[i], colors[i], allow_suicide)
        if st != 0:
            return i, st
        out[i + 1] = e.board
    return points.shape[0], 0


def check_game(record: GameRecord, time_wins: bool = False) -> None:
    """Raise :class:`GotkError` with a skip reason when ``record`` cannot give Leela Zero data:
    ``bad_size`` (not 19x19), ``no_result`` (no winner: draw, void, unknown), ``won_on_time`` (as
    ``dump_supervised``, which drops results naming ``Time``), ``too_short`` (no move), or the reader's
    defect (``bad_setup`` for setup stones after the root, ``bad_move``). ``time_wins``: keep games won on
    time (their winner is known, but leelaz leaves them out)."""
    if record.size != SIZE:
        raise GotkError("bad_size", f"board {record.size}x{record.size}: Leela Zero data is 19x19 only")
    if record.result.winner not in ("b", "w"):
        raise GotkError("no_result", f"result {record.result.raw or '(none)'!r} names no winner")
    if record.result.reason == "time" and not time_wins:
        raise GotkError("won_on_time", f"result {record.result.raw!r}: dump_supervised skips games won on time")
    if record.num_moves == 0:
        raise GotkError("too_short", "no move")
    if record.defect is not None:
        reason, index, message = record.defect
        raise GotkError(reason, f"move {index + 1}: {message}")


def game_boards(record: GameRecord) -> np.ndarray:
    """The board (gotk order, 0 empty / 1 black / 2 white) before each main-line move and after the
    last: shape ``(moves + 1, size*size)``. Raises :class:`GotkError` when the engine refuses a move
    (the whole game is dropped, as ``dump_supervised`` does)."""
    from gotk.game.replay import initial_state, stop_error

    state = initial_state(record)  # rules from RU (suicide under NZ / Tromp-Taylor); simple ko, as the scan
    n = record.size * record.size
    boards = np.empty((record.num_moves + 1, n), dtype=np.int8)
    played, status = _boards(state.engine_arrays, record.colors.astype(np.int64), record.points.astype(np.int32),
                             state.rules.suicide, boards)
    error = stop_error(record, int(status), int(played), record.colors, record.points)
    if error is not None:
        raise error
    return boards


@compiled
def _write_records(lz_boards, colors, lz_moves, values, hexdigits, policy_zeros, planes, out, ks, policy_text,
                   policy_ends):
    """Write the text of the records of moves ``ks`` (ascending) into ``out`` (uint8, large enough); return its
    length. ``lz_boards``: (moves + 1, 361) boards in Leela Zero order; ``lz_moves``: Leela Zero indices;
    ``values``: +1/-1, the game's result for the player of each move; ``planes``: (18, 361) uint8 scratch, where
    the encoder's :func:`~gotk.encoders.leelazero.history_planes` (the one owner of the history) writes each
    position's planes before they are written as text. ``policy_ends`` empty: the one-hot of the move played;
    else record ``j``'s policy line is ``policy_text[policy_ends[j - 1]:policy_ends[j]]`` (newline included)."""
    n = lz_boards.shape[1]
    pos = 0
    for j in range(ks.shape[0]):
        k = ks[j]
        c = colors[k]
        history_planes(planes, lz_boards, k, k + 1, c)
        for plane in range(2 * HISTORY):
            row = planes[plane]
            for d in range((n - 1) // 4):
                out[pos] = hexdigits[8 * row[4 * d] + 4 * row[4 * d + 1] + 2 * row[4 * d + 2] + row[4 * d + 3]]
                pos += 1
            out[pos] = 49 if row[n - 1] else 48  # '1' / '0'
            out[pos + 1] = 10
            pos += 2
        out[pos] = 48 if c == 1 else 49
        out[pos + 1] = 10
        pos += 2
        if policy_ends.shape[0] == 0:
            out[pos: pos + policy_zeros.shape[0]] = policy_zeros
            out[pos + 2 * lz_moves[k]] = 49
            pos += policy_zeros.shape[0]
        else:
            lo = policy_ends[j - 1] if j > 0 else 0
            hi = policy_ends[j]
            out[pos: pos + hi - lo] = policy_text[lo:hi]
            pos += hi - lo
        if values[k] > 0:
            out[pos] = 49
            out[pos + 1] = 10
            pos += 2
        else:
            out[pos] = 45  # '-'
            out[pos + 1] = 49
            out[pos + 2] = 10
            pos += 3
    return pos


_F16_TEXT: list[bytes] = []


def policy_lines(policy: np.ndarray) -> list[bytes]:
    """Line 18 of each record for search policies ``policy`` (``(rows, 362)`` float16, gotk's flat order, pass
    last): the values in Leela Zero's order, each the shortest decimal that reads back as the same float16
    (``0``, ``1``, ``0.25``, ``0.0001``), separated by spaces. Raises :class:`GotkError` ``bad_policy`` for a
    row of another width, a negative or non-finite value."""
    policy = np.asarray(policy, dtype="<f2")
    if policy.ndim != 2 or policy.shape[1] != N + 1:
        raise GotkError("bad_policy", f"policy of shape {policy.shape}: Leela Zero needs {N + 1} moves per row")
    if not (np.isfinite(policy).all() and (policy >= 0).all()):
        raise GotkError("bad_policy", "policy with a negative or non-finite probability")
    if not _F16_TEXT:  # the text of every float16 bit pattern, made once
        values = np.arange(1 << 16, dtype=np.uint16).view("<f2")
        _F16_TEXT.extend(np.format_float_positional(v, unique=True, trim="-").encode() for v in values)
        _F16_TEXT[0x8000] = b"0"  # -0.0
    lz = np.concatenate([policy[:, _LZ_ORDER], policy[:, N:]], axis=1).view(np.uint16)
    return [b" ".join([_F16_TEXT[b] for b in row.tolist()]) + b"\n" for row in lz]


def game_text(record: GameRecord, time_wins: bool = False,
              policy: tuple[np.ndarray, np.ndarray] | None = None) -> bytes:
    """The version-1 records (19 lines each) of every main-line move of ``record``, as one bytes
    string. Raises :class:`GotkError` (see :func:`check_game`, :func:`game_boards`) to skip.

    ``policy``: ``(move_numbers, probabilities)`` of a search (move numbers from 0, ascending; probabilities
    ``(rows, 362)`` float16 in gotk's flat order, pass last, as a self-play shard's ``policy`` column):
    only those moves are written, each with its search's policy (:func:`policy_lines`) instead of the one-hot
    move. ``no_search`` when there is none; ``bad_policy`` for a move number outside the game."""
    check_game(record, time_wins)
    colors = np.asarray(record.colors, dtype=np.int8)
    m = colors.shape[0]
    if policy is None:
        ks = np.arange(m, dtype=np.int64)
        text, ends = np.empty(0, dtype=np.uint8), np.empty(0, dtype=np.int64)
    else:
        ks = np.asarray(policy[0], dtype=np.int64)
        if ks.shape[0] == 0:
            raise GotkError("no_search", "no position of the game has a search policy")
        if ks[0] < 0 or ks[-1] >= m or (np.diff(ks) <= 0).any():
            raise GotkError("bad_policy", f"policy move numbers {ks.min()}..{ks.max()} are not ascending moves "
                            f"of a {m}-move game")
        lines = policy_lines(policy[1])
        text = np.frombuffer(b"".join(lines), dtype=np.uint8)
        ends = np.cumsum([len(x) for x in lines], dtype=np.int64)
    boards = game_boards(record)
    points = record.points.astype(np.int64)
    lz_moves = np.where(points == N, N, _LZ_ORDER[np.minimum(points, N - 1)])  # the flip is its own inverse
    values = value_targets(record.result.winner, np.where(colors == BLACK, 1, -1))  # ±1: check_game wants a winner
    out = np.empty(ks.shape[0] * (FIXED + 3) + text.shape[0], dtype=np.uint8)
    used = _write_records(np.ascontiguousarray(boards[:, _LZ_ORDER]), colors, lz_moves, values, _HEX,
                          _POLICY_ZEROS, np.empty((NUM_PLANES, N), dtype=np.uint8), out, ks, text, ends)
    return out[:used].tobytes()


def chunk_bytes(games: list[bytes], level: int = COMPRESS_LEVEL) -> bytes:
    """The gzip file of a chunk: the games' records concatenated; no time stamp, no file name."""
    return gzip.compress(b"".join(games), compresslevel=level, mtime=0)
