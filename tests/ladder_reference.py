"""Slow pure-Python reference of the alphago encoder's ladder semantics, shared by the ladder tests.

Plays on ``GameState`` copies with suicide illegal (as the encoder's planes always treat it).
"""

from __future__ import annotations

from gotk.errors import IllegalMoveError
from gotk.game.state import GameState, Rules


def liberties(st: GameState, p: int) -> list[int]:
    """Sorted liberties of the string through ``p``."""
    return sorted({int(q) for x in st.string_at(p) for q in st.nbr[int(x)] if q >= 0 and st.board[q] == 0})


def try_play(st: GameState, p: int, color: int) -> GameState | None:
    """The state after ``color`` plays ``p`` on a copy, or None if illegal (suicide illegal)."""
    s = st.copy()
    s.rules = Rules(suicide=False)
    s._seen = None
    try:
        return s.play(p, color)
    except IllegalMoveError:
        return None


def defender_dies(st: GameState, t: int, depth: int = 80) -> bool:
    """Defender to move, the string at ``t`` in atari: True if every defence fails."""
    if depth <= 0:
        return False
    dcol = int(st.board[t])
    moves = liberties(st, t)
    for x in st.string_at(t):
        for q in st.nbr[int(x)]:
            if q >= 0 and st.board[q] == 3 - dcol and st.liberties_at(int(q)) == 1:
                moves += liberties(st, int(q))
    for m in dict.fromkeys(moves):
        s = try_play(st, m, dcol)
        if s is None:
            continue
        n = s.liberties_at(t)
        if n >= 3 or (n == 2 and not attacker_wins(s, t, depth - 1)):
            return False
        if n == 1 and try_play(s, liberties(s, t)[0], 3 - dcol) is None:
            return False
    return True


def attacker_wins(st: GameState, t: int, depth: int = 80) -> bool:
    """Attacker to move against the 2-liberty string at ``t``: True if some atari wins the ladder."""
    if depth <= 0:
        return False
    for m in liberties(st, t):
        s = try_play(st, m, 3 - int(st.board[t]))
        if s is not None and s.liberties_at(t) == 1 and defender_dies(s, t, depth - 1):
            return True
    return False
