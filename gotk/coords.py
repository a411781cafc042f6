"""The one place that owns coordinate conventions.

gotk's convention (DEVELOPERS.md):

* tensor orientation ``planes[c, row, col]``; row 0 is the *top* edge as an SGF diagram shows it
  (SGF y = ``a``), col 0 the left edge (SGF x = ``a``);
* a point is the flat index ``row * size + col``; a pass is ``size * size``.

Conversions to and from SGF (``"dd"``), GTP (``"D16"``, row 1 at the bottom, no letter I) and
sgfmill's ``(row, col)`` (row 0 at the *bottom*) all live here; nothing else converts by hand.
"""

from __future__ import annotations

import numpy as np

MIN_SIZE = 2
MAX_SIZE = 25
GTP_COLUMNS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"  # GTP skips I
_SGF_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def pass_index(size: int) -> int:
    """The flat index that stands for a pass on a ``size`` board."""
    return size * size


def is_pass(point: int, size: int) -> bool:
    return point == size * size


def to_rc(point: int, size: int) -> tuple[int, int]:
    """Flat index → ``(row, col)`` with row 0 at the top. Raises for a pass."""
    if not 0 <= point < size * size:
        raise ValueError(f"point {point} is not on a {size}x{size} board")
    return divmod(point, size)


def from_rc(row: int, col: int, size: int) -> int:
    """``(row, col)`` with row 0 at the top → flat index."""
    if not (0 <= row < size and 0 <= col < size):
        raise ValueError(f"({row}, {col}) is off a {size}x{size} board")
    return row * size + col


def from_sgf(value: str | bytes, size: int) -> int:
    """SGF point value (``"dd"``) → flat index; ``""`` and ``"tt"`` (size <= 19) are passes."""
    if isinstance(value, bytes):
        value = value.decode("ascii", "replace")
    value = value.strip()
    if value == "" or (value == "tt" and size <= 19):
        return size * size
    if len(value) != 2:
        raise ValueError(f"bad SGF point {value!r}")
    col = _SGF_LETTERS.find(value[0])
    row = _SGF_LETTERS.find(value[1])
    if col < 0 or row < 0 or col >= size or row >= size:
        raise ValueError(f"SGF point {value!r} is off a {size}x{size} board")
    return row * size + col


def to_sgf(point: int, size: int) -> str:
    """Flat index → SGF point value; a pass is ``""`` (FF[4])."""
    if point == size * size:
        return ""
    row, col = to_rc(point, size)
    return _SGF_LETTERS[col] + _SGF_LETTERS[row]


def from_gtp(vertex: str, size: int) -> int:
    """GTP vertex (``"D4"``, ``"pass"``) → flat index. Case-insensitive; raises ValueError."""
    v = vertex.strip().upper()
    if v == "PASS":
        return size * size
    if len(v) < 2 or v[0] not in GTP_COLUMNS or not v[1:].isdigit():
        raise ValueError(f"bad GTP vertex {vertex!r}")
    col = GTP_COLUMNS.index(v[0])
    number = int(v[1:])
    if col >= size or not 1 <= number <= size:
        raise ValueError(f"GTP vertex {vertex!r} is off a {size}x{size} board")
    return (size - number) * size + col


def to_gtp(point: int, size: int) -> str:
    """Flat index → GTP vertex (``"pass"`` for a pass)."""
    if point == size * size:
        return "pass"
    row, col = to_rc(point, size)
    return f"{GTP_COLUMNS[col]}{size - row}"


def from_sgfmill(move: tuple[int, int] | None, size: int) -> int:
    """sgfmill ``(row, col)`` (row 0 at the bottom) or None (pass) → flat index."""
    if move is None:
        return size * size
    row, col = move
    return from_rc(size - 1 - row, col, size)


def to_sgfmill(point: int, size: int) -> tuple[int, int] | None:
    """Flat index → sgfmill ``(row, col)`` (row 0 at the bottom); None for a pass."""
    if point == size * size:
        return None
    row, col = to_rc(point, size)
    return size - 1 - row, col


def to_grid(size: int, grid: int) -> np.ndarray:
    """``idx[p]``: where point ``p`` of a ``size`` board lands on a larger ``grid x grid`` array that holds the
    board in its top-left corner (row 0 at the top); ``idx[size * size]`` (a pass) is ``grid * grid``.
    KataGo's fixed data grid (``pos = y * 19 + x``, pass 361) is such an array."""
    if size > grid:
        raise ValueError(f"a {size}x{size} board does not fit a {grid}x{grid} grid")
    p = np.arange(size * size + 1, dtype=np.int64)
    return np.where(p == size * size, grid * grid, (p // size) * grid + p % size)


# --- the eight board symmetries (dihedral group D4), on flat indices -------------------------

SYMMETRIES = ("identity", "rot90", "rot180", "rot270", "flip", "flip_rot90", "flip_rot180", "flip_rot270")


def transform_planes(planes: np.ndarray, sym: int) -> np.ndarray:
    """Apply symmetry ``sym`` (0..7) to arrays whose last two axes are (row, col)."""
    out = planes
    if sym >= 4:
        out = np.flip(out, axis=-1)
    k = sym % 4
    if k:
        out = np.rot90(out, k=k, axes=(-2, -1))
    return out


def symmetry_permutation(size: int, sym: int) -> np.ndarray:
    """Index array ``perm`` with ``perm[p]`` = where point ``p`` goes under ``sym``; pass is fixed."""
    src = np.arange(size * size).reshape(size, size)
    # transform_planes moves the value at p to position q; invert to map p -> q.
    moved = transform_planes(src, sym)
    perm = np.empty(size * size + 1, dtype=np.int64)
    perm[moved.ravel()] = np.arange(size * size)
    perm[size * size] = size * size
    return perm


def transform_point(point: int, size: int, sym: int) -> int:
    """Where ``point`` goes under symmetry ``sym`` (a pass stays a pass)."""
    return int(symmetry_permutation(size, sym)[point])


# --- Leela Zero's vertex order ----------------------------------------------------------------
#
# Leela Zero numbers the points of its 19x19 planes and policy vector ``y * 19 + x`` with x the
# column (A = 0, left) and y counted from the *bottom* row (A1 = 0, T19 = 360); the pass is 361.
# gotk's rows count from the top, so the two orders differ by a vertical flip.


def to_leelazero(point: int, size: int = 19) -> int:
    """gotk flat index → Leela Zero vertex index (``y*size + x``, y = 0 the bottom row); pass → ``size*size``."""
    if point == size * size:
        return point
    row, col = to_rc(point, size)
    return (size - 1 - row) * size + col


def from_leelazero(index: int, size: int = 19) -> int:
    """Leela Zero vertex index (A1 = 0 at the bottom left, pass = ``size*size``) → gotk flat index."""
    if index == size * size:
        return index
    if not 0 <= index < size * size:
        raise ValueError(f"Leela Zero index {index} is not on a {size}x{size} board")
    y, x = divmod(index, size)
    return (size - 1 - y) * size + x


def leelazero_order(size: int = 19) -> np.ndarray:
    """``order[i]`` = the gotk flat index of Leela Zero vertex ``i`` (so ``plane[order]`` turns a
    flat gotk plane into Leela Zero's order); length ``size*size``, no pass."""
    return np.arange(size * size).reshape(size, size)[::-1].ravel().copy()


def leelazero_kernel(weights: np.ndarray) -> np.ndarray:
    """Convolution weights ``(..., kh, kw)`` for gotk's planes (row 0 at the top) → the same convolution over Leela
    Zero's planes (row 0 at the bottom): the kernel's rows reversed. A copy."""
    return np.ascontiguousarray(np.asarray(weights)[..., ::-1, :])
