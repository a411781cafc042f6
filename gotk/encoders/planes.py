"""Small named plane functions over the engine's arrays, and the data that composes them.

Every plane function has the signature
``fn(dst, e, color, *params)``:
``dst`` is one zeroed plane ``(N,)`` of the output, ``e`` is the position's
:class:`~gotk.game.kernels.Engine` (read-only), ``color`` is the player to move (1 black,
2 white) and ``params`` are small integers fixed by the encoder's plane list.

An encoder's planes are data: a tuple of :class:`Plane` ``(name, fn, params)``.
:func:`compose_fill` turns it into one compiled fill function with the encoder contract's
signature (see :mod:`gotk.encoders.game_loop`), calling each plane function on ``out[k]``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from gotk.game import kernels as K
from gotk.jit import kernel

# who a stone plane is about: resolved against the player to move by :func:`who_color`
OWN = 0
OPPONENT = 1
BLACK = 2
WHITE = 3
UNBOUNDED = 1 << 30  # an upper liberty bound that never binds


class Plane(NamedTuple):
    """One plane of an encoder: its name, its compiled plane function and its integer params."""

    name: str
    fn: Any
    params: tuple[int, ...] = ()


@kernel
def who_color(who, color):
    """Stone colour (1/2) that ``who`` (OWN, OPPONENT, BLACK, WHITE) names for mover ``color``."""
    if who == OWN:
        return color
    if who == OPPONENT:
        return 3 - color
    if who == BLACK:
        return K.BLACK
    return K.WHITE


@kernel
def stone_sign(dst, e, color):
    """+1 on the mover's stones, -1 on the opponent's, 0 on empty points."""
    board = e.board
    own = np.int8(color)  # int8 like the board: compared as int64 the loop vectorises over wider lanes and runs slower
    opp = np.int8(3 - color)
    for p in range(board.shape[0]):
        v = board[p]
        dst[p] = np.int8(v == own) - np.int8(v == opp)  # branch-free (vectorised)


@kernel
def stones(dst, e, color, who):
    """1 on every stone of ``who``."""
    board = e.board
    c = np.int8(who_color(who, color))  # int8 like the board (see stone_sign)
    for p in range(board.shape[0]):
        dst[p] = board[p] == c  # branch-free: vectorised, no mispredicted branches on random stones


@kernel
def empty(dst, e, color):
    """1 on every empty point."""
    board = e.board
    zero = np.int8(0)  # int8 like the board (see stone_sign)
    for p in range(board.shape[0]):
        dst[p] = board[p] == zero


@kernel
def stones_with_liberties(dst, e, color, who, lo, hi):
    """1 on stones of ``who`` whose string has between ``lo`` and ``hi`` liberties (inclusive)."""
    board, head, libs = e.board, e.head, e.libs
    c = who_color(who, color)
    for p in range(board.shape[0]):
        if board[p] == c:
            n_libs = libs[head[p]]
            if lo <= n_libs <= hi:
                dst[p] = 1


@kernel
def to_move(dst, e, color, who):
    """All ones when the player to move is ``who`` (BLACK or WHITE), else all zeros."""
    board = e.board
    if color == who_color(who, color):
        for p in range(board.shape[0]):
            dst[p] = 1


@kernel
def ones(dst, e, color):
    """All ones (a constant plane, e.g. to mark the board's extent under zero padding)."""
    board = e.board
    for p in range(board.shape[0]):
        dst[p] = 1


@kernel
def ko_forbidden(dst, e, color):
    """1 on the empty point the player to move may not take because of simple ko (if any)."""
    board, meta = e.board, e.meta
    ko = meta[K.M_KO]
    if ko >= 0 and color == meta[K.M_KO_COLOR] and board[ko] == 0:
        dst[ko] = 1


#: The plane functions that write every point of their plane, zero or not: a fill made of these alone needs no
#: zeroed output (:func:`writes_every_point`).
WRITES_EVERY_POINT = frozenset({stone_sign, stones, empty, ones})


def writes_every_point(planes: tuple[Plane, ...]) -> bool:
    """Whether the fill of ``planes`` writes every element of its output (see :data:`WRITES_EVERY_POINT`)."""
    return all(p.fn in WRITES_EVERY_POINT for p in planes)


#: The plane functions that read nothing of the position but ``board`` (and the colour to move): a fill made of these
#: alone can run over boards replayed without the engine (:func:`reads_board_only`).
READS_BOARD_ONLY = frozenset({stone_sign, stones, empty, ones, to_move})


def reads_board_only(planes: tuple[Plane, ...]) -> bool:
    """Whether the fill of ``planes`` reads only the board (see :data:`READS_BOARD_ONLY`)."""
    return all(p.fn in READS_BOARD_ONLY for p in planes)


def compose_fill(name: str, planes: tuple[Plane, ...], module: str):
    """One compiled (cached) fill function calling each plane function on ``out[k]`` in order.

    ``module`` is the ``__name__`` of the encoder module that owns the plane list (the cache files
    sit beside it).
    """
    from gotk.encoders.game_loop import FILL_ARGS, jit_generated

    namespace: dict[str, Any] = {}
    lines = [f"def {name}(out, {FILL_ARGS}):"]
    for k, plane in enumerate(planes):
        fn_name = f"_plane{k}_{plane.fn.__name__}"
        namespace[fn_name] = plane.fn
        params = "".join(f", {int(v)}" for v in plane.params)
        lines.append(f"    {fn_name}(out[{k}], {FILL_ARGS}{params})")
    if not planes:
        lines.append("    pass")
    return jit_generated(name, "\n".join(lines) + "\n", namespace, module)
