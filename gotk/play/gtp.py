"""A GTP version 2 engine around a :mod:`gotk.play.players` player.

Input is preprocessed as the GTP 2 specification (section 3.1) says: control characters other than
tab and newline are removed, everything from ``#`` on is a comment, tabs become spaces, and empty
lines are ignored. An optional leading integer is the command id and is echoed in the answer
(``=12 ...`` / ``?12 message``). Every other line gets exactly one answer, ending with a blank
line; no input (bytes that are not UTF-8, huge numbers, missing arguments) stops the engine, only
``quit`` or the end of input does.

Rules: simple ko, suicide illegal (the :class:`~gotk.game.state.GameState` defaults). ``final_score``
is the area score of the board as it stands: every stone is counted alive (no dead-stone removal),
plus empty regions bordered by one colour only, minus komi.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Iterable
from typing import BinaryIO, TextIO

import numpy as np

from gotk import __version__, coords
from gotk.errors import GotkError
from gotk.game.handicap import fixed_handicap_points, max_fixed_handicap
from gotk.game.render import render_board
from gotk.game.state import BLACK, EMPTY, WHITE, GameState
from gotk.play.players import RESIGN
from gotk.play.results import format_score

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_VERTEX = re.compile(r"^[A-Za-z][0-9]{1,3}$")
_MAX_GTP_SIZE = coords.MAX_SIZE


#: Longest input line kept (bytes): a longer one is cut to this (the rest is read through and dropped), so
#: an endless line costs no more memory than this and is still answered once.
MAX_LINE_BYTES = 1 << 20


def read_lines(inp: BinaryIO, limit: int = MAX_LINE_BYTES):
    """Lines of binary ``inp`` decoded as UTF-8 (bad bytes replaced); a line over ``limit`` bytes is read to its
    end in pieces and yields only its first ``limit`` bytes."""
    while True:
        line = inp.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            while (rest := inp.readline(limit + 1)) and not rest.endswith(b"\n"):
                pass
            line = line[:limit]
        yield line.decode("utf-8", "replace")


class GtpError(Exception):
    """A command failure: the message goes after ``?``."""


def preprocess(line: str) -> str:
    """GTP 2 section 3.1: drop control characters, comments, turn tabs into spaces; strip."""
    line = _CONTROL.sub("", line.replace("\r", ""))
    line = line.split("#", 1)[0]
    return line.replace("\t", " ").strip()


def split_command(raw: str) -> tuple[str, list[str]]:
    """One input line → (its command id, or '', and [command, arg, ...]) after :func:`preprocess`; the list is
    empty for an empty or comment line, or a line holding only an id."""
    parts = preprocess(raw).split()
    cid = ""
    if parts and parts[0].isdigit() and parts[0].isascii():
        cid = parts.pop(0)
    return cid, parts


def parse_color(text: str) -> int:
    t = text.lower()
    if t in ("b", "black"):
        return BLACK
    if t in ("w", "white"):
        return WHITE
    raise GtpError("syntax error (color)")


def parse_int(text: str, what: str = "integer") -> int:
    if not re.fullmatch(r"[+-]?[0-9]{1,9}", text):
        raise GtpError(f"syntax error ({what})")
    return int(text)


def parse_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise GtpError("syntax error (float)") from None
    if not math.isfinite(value):
        raise GtpError("syntax error (float)")
    return value


LEELA_ZERO_LEVEL = "0.17"
"""The Leela Zero release whose GTP extensions (``lz-analyze``, ``lz-genmove_analyze``) gotk speaks."""

GTP_VERSION = f"{LEELA_ZERO_LEVEL}.0+gotk.{__version__}"
"""What ``version`` answers by default: the Leela Zero level as a semantic version, gotk's own version as its
build metadata (``0.17.0+gotk.0.1.0``). Analysis GUIs read ``version`` as a Leela Zero version: Lizzie takes
the number after the first dot and refuses analysis below 15 (then hangs); gotk's own ``0.1.0`` read that way is
"Leela Zero 0.1". A controller that shows the string (``gotk match``'s ``PW``, GoGui) still sees gotk's version.
Pass ``version=`` to :class:`GtpEngine` to answer something else."""


class GtpEngine:
    """State plus command table. ``handle(line)`` answers one input line (``None`` for an ignored line)."""

    def __init__(self, player, name: str = "gotk", version: str = GTP_VERSION, size: int | None = None,
                 komi: float = 7.5) -> None:
        self.player = player
        self.name = name
        self.version = version
        self.fixed_size: int | None = player.board_size
        self.komi = komi
        self.state = GameState(size or self.fixed_size or 19, komi=komi)
        self.quit = False
        self.commands: dict[str, Callable[[list[str]], str]] = {
            "protocol_version": lambda a: "2",
            "name": lambda a: self.name,
            "version": lambda a: self.version,
            "known_command": self.cmd_known_command,
            "list_commands": lambda a: "\n".join(self.commands),
            "quit": self.cmd_quit,
            "boardsize": self.cmd_boardsize,
            "clear_board": self.cmd_clear_board,
            "komi": self.cmd_komi,
            "play": self.cmd_play,
            "genmove": self.cmd_genmove,
            "undo": self.cmd_undo,
            "showboard": self.cmd_showboard,
            "fixed_handicap": self.cmd_fixed_handicap,
            "place_free_handicap": self.cmd_place_free_handicap,
            "set_free_handicap": self.cmd_set_free_handicap,
            "final_score": self.cmd_final_score,
            "time_settings": self.cmd_time_settings,
            "time_left": self.cmd_time_left,
            "gotk-policy": self.cmd_policy,
        }

    # --- protocol ----------------------------------------------------------------------------

    def handle(self, raw: str) -> str | None:
        """The full answer to one input line (ending ``\\n\\n``), or ``None`` for an empty/comment line."""
        cid, parts = split_command(raw)
        if not parts:
            return f"?{cid} missing command\n\n" if cid else None
        command, args = parts[0], parts[1:]
        fn = self.commands.get(command)
        if fn is None:
            return f"?{cid} unknown command\n\n"
        try:
            result = fn(args)
        except GtpError as e:
            return f"?{cid} {e}\n\n"
        except Exception as e:  # noqa: BLE001 - the engine answers, it does not die
            return f"?{cid} internal error: {type(e).__name__}: {e}".replace("\n", " ") + "\n\n"
        result = result.rstrip("\n")
        return f"={cid} {result}\n\n" if result else f"={cid}\n\n"

    def serve(self, lines: Iterable[str], write: Callable[[str], None], flush: Callable[[], None]) -> None:
        """Answer ``lines`` until ``quit`` or their end."""
        for raw in lines:
            answer = self.handle(raw)
            if answer is None:
                continue
            write(answer)
            flush()
            if self.quit:
                break

    def serve_stdio(self, stdin: BinaryIO | None = None, stdout: TextIO | None = None) -> None:
        """Serve on binary stdin (decoded as UTF-8, bad bytes replaced) and stdout."""
        inp = stdin or sys.stdin.buffer
        out = stdout or sys.stdout
        lines = read_lines(inp)
        try:
            self.serve(lines, out.write, out.flush)
        except BrokenPipeError:  # the controller went away: nothing left to answer
            pass

    # --- helpers -----------------------------------------------------------------------------

    @property
    def size(self) -> int:
        return self.state.size

    def _vertex(self, text: str) -> int:
        if text.lower() == "pass":
            return self.state.pass_point
        if not _VERTEX.match(text):
            raise GtpError("syntax error (vertex)")
        try:
            return coords.from_gtp(text, self.size)
        except ValueError:
            raise GtpError("invalid coordinate") from None

    def _need(self, args: list[str], n: int) -> None:
        if len(args) < n:
            raise GtpError("syntax error (missing argument)")

    def _board_empty(self) -> bool:
        return not bool(np.any(self.state.board != EMPTY)) and not self.state.history

    # --- commands ----------------------------------------------------------------------------

    def cmd_known_command(self, args: list[str]) -> str:
        self._need(args, 1)
        return "true" if args[0] in self.commands else "false"

    def cmd_quit(self, args: list[str]) -> str:
        self.quit = True
        return ""

    def cmd_boardsize(self, args: list[str]) -> str:
        self._need(args, 1)
        size = parse_int(args[0], "size")
        if not coords.MIN_SIZE <= size <= _MAX_GTP_SIZE or (self.fixed_size and size != self.fixed_size):
            raise GtpError("unacceptable size")
        self.state = GameState(size, komi=self.komi)
        self.player.reset()
        return ""

    def cmd_clear_board(self, args: list[str]) -> str:
        self.state = GameState(self.size, komi=self.komi)
        self.player.reset()
        return ""

    def cmd_komi(self, args: list[str]) -> str:
        self._need(args, 1)
        self.komi = parse_float(args[0])
        self.state.komi = self.komi
        return ""

    def cmd_play(self, args: list[str]) -> str:
        self._need(args, 2)
        color = parse_color(args[0])
        point = self._vertex(args[1])
        try:
            self.state.play(point, color)
        except GotkError:
            raise GtpError("illegal move") from None
        return ""

    def cmd_genmove(self, args: list[str]) -> str:
        self._need(args, 1)
        color = parse_color(args[0])
        self.state.to_play = color
        move = self.player.choose(self.state)
        if move == RESIGN:
            return "resign"
        self.state.play(move, color)
        return coords.to_gtp(move, self.size)

    def cmd_undo(self, args: list[str]) -> str:
        if not self.state.history:
            raise GtpError("cannot undo")
        self.state.undo()
        return ""

    def cmd_showboard(self, args: list[str]) -> str:
        b, w = self.state.captures
        to_play = "black" if self.state.to_play == BLACK else "white"
        return (f"\n{render_board(self.state.board, self.size)}\n"
                f"{to_play} to play; captures black {b} white {w}; komi {self.komi:g}")

    def _place_handicap(self, points: list[int]) -> str:
        self.state.setup(black=points, to_play=WHITE)
        return " ".join(coords.to_gtp(p, self.size) for p in points)

    def _handicap_count(self, args: list[str]) -> int:
        self._need(args, 1)
        n = parse_int(args[0], "number of stones")
        if not self._board_empty():
            raise GtpError("board not empty")
        if n < 2:
            raise GtpError("invalid number of stones")
        return n

    def cmd_fixed_handicap(self, args: list[str]) -> str:
        n = self._handicap_count(args)
        try:
            points = fixed_handicap_points(self.size, n)
        except ValueError:
            raise GtpError("invalid number of stones") from None
        return self._place_handicap(points)

    def cmd_place_free_handicap(self, args: list[str]) -> str:
        """The fixed placement where one exists; more stones spread out (never adjacent), possibly fewer."""
        n = self._handicap_count(args)
        if n > self.size * self.size - 1:
            raise GtpError("invalid number of stones")
        fixed = min(n, max_fixed_handicap(self.size))
        points = fixed_handicap_points(self.size, fixed) if fixed >= 2 else []
        size = self.size
        rows, cols = np.divmod(np.arange(size * size), size)
        edge = np.minimum(np.minimum(rows, cols), np.minimum(size - 1 - rows, size - 1 - cols))
        while len(points) < n:
            if points:
                pr, pc = np.divmod(np.array(points), size)
                dist = (np.abs(rows[:, None] - pr[None]) + np.abs(cols[:, None] - pc[None])).min(axis=1)
            else:
                dist = np.full(size * size, 2 * size)
            score = np.minimum(dist, 2 * edge + 2).astype(np.float64)
            score[dist < 2] = -1  # no stone next to another: each stays a one-stone string with liberties
            best = int(np.argmax(score))
            if score[best] < 0:
                break
            points.append(best)
        if len(points) < 2:
            raise GtpError("invalid number of stones")
        return self._place_handicap(points)

    def cmd_set_free_handicap(self, args: list[str]) -> str:
        if not self._board_empty():
            raise GtpError("board not empty")
        if len(args) < 2:
            raise GtpError("bad vertex list")
        try:
            points = [self._vertex(a) for a in args]
        except GtpError:
            raise GtpError("bad vertex list") from None
        if self.state.pass_point in points or len(set(points)) != len(points) or len(points) >= self.size ** 2:
            raise GtpError("bad vertex list")
        try:
            self._place_handicap(points)
        except GotkError:
            self.state = GameState(self.size, komi=self.komi)
            raise GtpError("bad vertex list") from None
        return ""

    def cmd_final_score(self, args: list[str]) -> str:
        return format_score(self.state.score_final())

    def cmd_time_settings(self, args: list[str]) -> str:
        self._need(args, 3)
        for a in args[:3]:
            parse_int(a)
        return ""

    def cmd_time_left(self, args: list[str]) -> str:
        self._need(args, 3)
        parse_color(args[0])
        parse_int(args[1])
        parse_int(args[2])
        return ""

    def cmd_policy(self, args: list[str]) -> str:
        """``gotk-policy [N]``: the N (default 10) most probable moves for the player to move, one
        ``VERTEX PROBABILITY`` per line; with a value head a last line ``value V`` (mover's view)."""
        n = parse_int(args[0], "count") if args else 10
        if n < 1:
            raise GtpError("syntax error (count)")
        probs = np.asarray(self.player.policy(self.state), dtype=np.float64)
        order = np.argsort(-probs, kind="stable")[:n]
        lines = [f"{coords.to_gtp(int(p), self.size)} {probs[p]:.6f}" for p in order if probs[p] > 0]
        if self.player.has_value:
            lines.append(f"value {self.player.value(self.state):.6f}")
        return "\n".join(lines)


__all__ = ["GTP_VERSION", "LEELA_ZERO_LEVEL", "GtpEngine", "GtpError", "preprocess"]
