"""Text diagrams of boards (GTP-style labels: columns A..T without I, row numbers from the bottom)."""

from __future__ import annotations

import numpy as np

from gotk.coords import GTP_COLUMNS

_STONES = {0: ".", 1: "X", 2: "O"}


def render_board(board: np.ndarray, size: int, marks: dict[int, str] | None = None) -> str:
    """Diagram of a flat board; ``marks`` overrides the character drawn at given points."""
    marks = marks or {}
    header = "   " + " ".join(GTP_COLUMNS[:size])
    lines = [header]
    for row in range(size):
        cells = []
        for col in range(size):
            p = row * size + col
            cells.append(marks.get(p, _STONES[int(board[p])]))
        lines.append(f"{size - row:2d} " + " ".join(cells) + f" {size - row:2d}")
    lines.append(header)
    return "\n".join(lines)
