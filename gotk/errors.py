"""Typed errors shared by every stage.

Every failure that the pipeline may skip carries a short machine-readable ``reason`` code
(``parse_error``, ``bad_size``, ``illegal_move`` ...) so runs can count skips by reason.
"""

from __future__ import annotations


class GotkError(Exception):
    """Base class: ``reason`` is a stable code, the message says what and where."""

    reason: str = "error"

    def __init__(self, reason: str, message: str = "") -> None:
        self.reason = reason
        super().__init__(f"{reason}: {message}" if message else reason)


class SGFError(GotkError):
    """The bytes are not a usable SGF game record.

    Reasons: ``empty``, ``too_large``, ``parse_error``, ``bad_size``, ``bad_setup``, ``bad_move``,
    ``not_sgf``, ``too_short``, ``bad_property`` (a numeric property out of range: ``HA``),
    ``too_long`` (more moves than the encode's ``--max-moves``).

    Warnings (the game is kept; runs count them with the metadata warnings of :mod:`gotk.sgf.metadata`,
    and games.parquet's ``warnings`` column lists them): ``charset_mismatch`` (the declared ``CA`` did
    not decode a value, or cannot be the file's charset: the value was read as if no ``CA`` were given).
    """


class IllegalMoveError(GotkError):
    """A move the rules engine refuses.

    Reasons: ``occupied``, ``suicide``, ``ko``, ``superko``, ``off_board``.
    """


class SourceError(GotkError):
    """A path or archive that cannot be read.

    Reasons (archive members, :mod:`gotk.sources.archives`): ``missing``, ``unreadable``, ``too_large``,
    ``bad_archive``, ``member_too_large`` (over the byte cap: by its header, or while it streams),
    ``not_sgf``, ``not_regular`` (a link, device or fifo member), ``nested_archive``.
    """
