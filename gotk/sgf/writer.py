"""Writing SGF: a finished game as an FF[4] record (the reader's counterpart, :mod:`gotk.sgf.reader`)."""

from __future__ import annotations

import datetime as _dt

from gotk import __version__, coords
from gotk.sgf.record import BLACK


def escape_text(value: str) -> str:
    """An SGF Text/SimpleText value escaped: ``\\`` and ``]`` get a backslash."""
    return value.replace("\\", "\\\\").replace("]", "\\]")


def game_sgf(size: int, komi: float, black: str, white: str, result: str, moves: list[tuple[int, int]],
             comment: str = "", date: str | None = None, move_comments: list[str] | None = None,
             handicap: list[int] | tuple[int, ...] = ()) -> str:
    """An FF[4] SGF record (Chinese rules: area scoring, simple ko, no suicide). ``move_comments[i]``, when
    given and not empty, is the ``C`` property of move ``i``'s node. ``handicap``: Black's handicap stones (flat
    points), written as ``HA`` and ``AB`` in the root."""
    date = date or _dt.date.today().isoformat()
    head = (f"(;FF[4]GM[1]CA[UTF-8]AP[gotk:{__version__}]SZ[{size}]KM[{komi:g}]RU[Chinese]DT[{date}]"
            f"PB[{escape_text(black)}]PW[{escape_text(white)}]RE[{escape_text(result)}]")
    if handicap:
        head += f"HA[{len(handicap)}]AB" + "".join(f"[{coords.to_sgf(p, size)}]" for p in handicap)
    if comment:
        head += f"C[{escape_text(comment)}]"
    notes = move_comments or []
    body = "".join(f"\n;{'B' if c == BLACK else 'W'}[{coords.to_sgf(p, size)}]"
                   + (f"C[{escape_text(notes[i])}]" if i < len(notes) and notes[i] else "")
                   for i, (c, p) in enumerate(moves))
    return head + body + ")\n"
