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
    ``not_sgf``, ``too_short``.
    """


class IllegalMoveError(GotkError):
    """A move the rules engine refuses.

    Reasons: ``occupied``, ``suicide``, ``ko``, ``superko``, ``off_board``.
    """


class SourceError(GotkError):
    """A path or archive that cannot be read (``missing``, ``bad_archive``, ``member_too_large``)."""
