"""The moves a player considers in a position and whether a pass wins it: the questions over a whole
:class:`~gotk.game.state.GameState` that every player (GTP, matches, profiles), the search and self-play ask, one
home each, built on the compiled rules of :mod:`gotk.game.rules`.

* :func:`sensible_moves`: legal board moves that fill no own eye (:func:`gotk.game.rules.is_own_eye`); players
  and the search choose among these (and pass).
* :func:`own_eye_mask`: the points that are a player's own eyes.
* :func:`passing_wins`: the opponent has just passed and a pass now ends the game as the mover's win.
"""

from __future__ import annotations

import numpy as np

from gotk.game.kernels import EMPTY
from gotk.game.rules import clear_own_eyes
from gotk.game.state import GameState


def own_eye_mask(state: GameState, color: int) -> np.ndarray:
    """Boolean mask over the ``size*size`` points: empty points that are ``color``'s own eyes
    (:func:`gotk.game.rules.is_own_eye`)."""
    empty = state.board == EMPTY
    rest = empty.astype(np.int8)
    clear_own_eyes(state.board, state.nbr, state.diag, color, rest)
    return empty & (rest == 0)


def sensible_moves(state: GameState, color: int | None = None) -> np.ndarray:
    """The *sensible* moves of ``color`` (default: the player to move): legal board moves (no pass) that fill no
    own eye (:func:`gotk.game.rules.is_own_eye`). Every player and the search choose among these (and pass)."""
    color = state.to_play if color is None else color
    if not state.rules.superko:  # the legal mask and the eye rule in two compiled calls (search and self-play)
        mask = state.legal_mask(color)
        mask[-1] = 0
        clear_own_eyes(state.board, state.nbr, state.diag, color, mask)
        return np.flatnonzero(mask)
    legal = state.legal_moves(color)
    legal = legal[legal != state.pass_point]
    if legal.size == 0:
        return legal
    return legal[~own_eye_mask(state, color)[legal]]


def passing_wins(state: GameState) -> bool:
    """True when the opponent has just passed and a pass now ends the game as a win for the mover by the final
    count (:meth:`GameState.score_final`, komi included, the mover as the answering passer)."""
    if state.passes < 1:
        return False
    score = state.score_final(passer=state.to_play)  # black's view
    return score > 0 if state.to_play == 1 else score < 0


__all__ = ["own_eye_mask", "passing_wins", "sensible_moves"]
