"""Fixed handicap placement, as the GTP specification (section 4.1.1, ``fixed_handicap``) lays it out.

On 19x19 the stones go, in order, on D4 Q16 D16 Q4, then K10 for an odd count; 6 and more use the
side star points D10 Q10, and 8 and more K4 K16. Boards 13x13 and up use the 4-4 points, smaller
ones the 3-3 points. Even sizes and 7x7 have no centre point, so at most 4 stones there; other
sizes from 9x9 up take 2..9.
"""

from __future__ import annotations

from gotk import coords

# (row-from-bottom, col) as 0 = low line, 1 = middle line, 2 = high line
_PATTERN = ((0, 0), (2, 2), (2, 0), (0, 2), (1, 0), (1, 2), (0, 1), (2, 1))


def max_fixed_handicap(size: int) -> int:
    """The largest fixed handicap defined for a ``size`` board (0 when none is)."""
    if not 7 <= size <= coords.MAX_SIZE:
        return 0
    return 4 if size % 2 == 0 or size == 7 else 9


def fixed_handicap_points(size: int, n: int) -> list[int]:
    """Flat indices (see :mod:`gotk.coords`) of ``n`` fixed handicap stones, GTP order.

    Raises ``ValueError`` when the GTP specification defines no placement for ``n`` on ``size``.
    """
    if not 2 <= n <= max_fixed_handicap(size):
        raise ValueError(f"no fixed placement of {n} handicap stones on {size}x{size}")
    low = 2 if size < 13 else 3
    line = (low, (size - 1) // 2, size - 1 - low)
    if n <= 4:
        picks = _PATTERN[:n]
    elif n % 2 == 0:  # 6, 8: side points, no centre
        picks = _PATTERN[:n]
    else:  # 5, 7, 9: the even layout below it plus the centre
        picks = _PATTERN[: n - 1] + ((1, 1),)
    return [coords.from_sgfmill((line[r], line[c]), size) for r, c in picks]
