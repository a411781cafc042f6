"""Area scoring (stones + territory) on a flat board, compiled."""

from __future__ import annotations

import numpy as np

from gotk.jit import compiled


@compiled
def _area(board, nbr, owner):
    """Black's area minus White's; ``owner[p]`` gets +1 (Black's area), -1 (White's) or 0 (neither)."""
    n = board.shape[0]
    seen = np.zeros(n, dtype=np.uint8)
    stack = np.empty(n, dtype=np.int32)
    region = np.empty(n, dtype=np.int32)
    black = 0
    white = 0
    for p in range(n):
        owner[p] = 0
        if board[p] == 1:
            black += 1
            owner[p] = 1
        elif board[p] == 2:
            white += 1
            owner[p] = -1
    for p in range(n):
        if board[p] != 0 or seen[p]:
            continue
        # flood the empty region, noting which colours border it
        borders = 0
        count = 0
        top = 0
        stack[top] = p
        top += 1
        seen[p] = 1
        while top > 0:
            top -= 1
            x = stack[top]
            region[count] = x
            count += 1
            for k in range(4):
                q = nbr[x, k]
                if q < 0:
                    break
                v = board[q]
                if v == 0:
                    if not seen[q]:
                        seen[q] = 1
                        stack[top] = q
                        top += 1
                else:
                    borders |= v
        if borders == 1:
            black += count
            for i in range(count):
                owner[region[i]] = 1
        elif borders == 2:
            white += count
            for i in range(count):
                owner[region[i]] = -1
    return black - white


def area_score(board: np.ndarray, nbr: np.ndarray) -> int:
    """Black's area minus White's, every stone on the board counted alive (no komi)."""
    return int(_area(board, nbr, np.empty(board.shape[0], dtype=np.int8)))


def area_ownership(board: np.ndarray, nbr: np.ndarray) -> tuple[int, np.ndarray]:
    """``(black's area minus white's, owner)``: ``owner`` int8 per point, +1 Black's area (stone or territory),
    -1 White's, 0 neither (dame, or a region both border); every stone counted alive, no komi."""
    owner = np.empty(board.shape[0], dtype=np.int8)
    return int(_area(board, nbr, owner)), owner
