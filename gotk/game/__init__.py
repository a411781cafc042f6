"""Rules engine: board, strings and liberties, captures, ko and superko, hashing, replay."""

from gotk.game.state import BLACK, EMPTY, WHITE, GameState, Rules, opponent

__all__ = ["BLACK", "WHITE", "EMPTY", "GameState", "Rules", "opponent"]
