"""A GTP engine that searches and streams analysis for GUIs (Lizzie, Sabaki): ``lz-analyze``,
``kata-analyze``, ``analyze``, and their ``genmove_analyze`` forms; ``time_settings`` / ``time_left`` drive
the search's clock.

Input is read by a thread into a queue, so that an analysis runs until the next line arrives (any
command, or an empty line, as in Leela Zero and KataGo) while the engine stays responsive: the search
checks the queue between batches. Formats (Leela Zero's ``lz-analyze``; KataGo's docs/GTP_Extensions.md):

* ``lz-analyze`` / ``analyze``: ``=`` then, every interval, one line of
  ``info move D4 visits 120 winrate 5321 prior 812 order 0 pv D4 Q16 ...`` for each candidate (winrate and
  prior × 10000, rounded, the player to move's view), ended by a blank line when the next command comes;
* ``kata-analyze``: the same with ``winrate`` and ``prior`` in 0..1, ``utility`` (the search's value, −1..1)
  and no ``scoreMean`` / ``scoreLead`` / ``scoreStdev`` / ``scoreSelfplay`` / ``lcb`` (gotk's networks
  estimate no score, and the tree keeps no variance); ``ownership true`` is accepted and gives nothing;
* ``lz-genmove_analyze`` / ``kata-genmove_analyze`` / ``genmove_analyze``: a ``genmove`` whose search streams
  the same lines, then ``play VERTEX`` (or ``play pass`` / ``play resign``).

Arguments: ``[COLOUR] [INTERVAL] [KEY VALUE ...]`` with keys ``interval`` (centiseconds; default 100;
0: a line only when the analysis ends), ``minmoves N``, ``maxmoves N``, ``ownership true|false``. Anything
else (``allow`` / ``avoid`` included) is ``? syntax error``, and the engine goes on.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import BinaryIO, TextIO

from gotk import coords
from gotk.play.gtp import GtpEngine, GtpError, parse_color, parse_float, parse_int, read_lines, split_command
from gotk.play.players import RESIGN

ANALYZE = {"lz-analyze": "lz", "analyze": "lz", "kata-analyze": "kata"}
GENMOVE_ANALYZE = {"lz-genmove_analyze": "lz", "genmove_analyze": "lz", "kata-genmove_analyze": "kata"}
_BOOL_KEYS = ("ownership", "ownershipStdev", "pvVisits", "pvEdgeVisits", "movesOwnership", "rootInfo")
MAX_INTERVAL_CS = 360_000


def parse_analyze_args(args: list[str]) -> dict:
    """``[COLOUR] [INTERVAL] [KEY VALUE ...]`` → ``{color|None, interval (s), minmoves, maxmoves}``."""
    out: dict = {"color": None, "interval": 1.0, "minmoves": 0, "maxmoves": None}
    i = 0
    if i < len(args) and args[i].lower() in ("b", "w", "black", "white"):
        out["color"] = parse_color(args[i])
        i += 1
    if i < len(args) and args[i].isdigit():
        out["interval"] = _centis(args[i])
        i += 1
    while i < len(args):
        key = args[i]
        if i + 1 >= len(args):
            raise GtpError(f"syntax error (no value for {key!r})")
        val = args[i + 1]
        if key == "interval":
            out["interval"] = _centis(val)
        elif key in ("minmoves", "maxmoves"):
            n = parse_int(val, key)
            if n < 0 or n > 100_000:
                raise GtpError(f"syntax error ({key} must be 0..100000)")
            out[key] = n
        elif key in _BOOL_KEYS:
            if val.lower() not in ("true", "false"):
                raise GtpError(f"syntax error ({key} takes true or false)")
        elif key in ("allow", "avoid"):
            raise GtpError(f"{key} is not supported")
        else:
            raise GtpError(f"syntax error (unknown key {key!r})")
        i += 2
    return out


def _centis(text: str) -> float:
    n = parse_int(text, "interval")
    if not 0 <= n <= MAX_INTERVAL_CS:
        raise GtpError(f"syntax error (interval must be 0..{MAX_INTERVAL_CS} centiseconds)")
    return n / 100.0


def format_infos(infos, size: int, style: str) -> str:
    """One line of ``info ...`` records (see the module docstring)."""
    parts = []
    for order, mi in enumerate(infos):
        pv = " ".join(coords.to_gtp(m, size) for m in mi.pv)
        win = (mi.q + 1) / 2
        move = coords.to_gtp(mi.move, size)
        if style == "lz":
            parts.append(f"info move {move} visits {mi.visits} winrate {round(10000 * win)} "
                         f"prior {round(10000 * mi.prior)} order {order} pv {pv}")
        else:
            parts.append(f"info move {move} visits {mi.visits} utility {mi.q:.6f} winrate {win:.6f} "
                         f"prior {mi.prior:.6f} order {order} pv {pv}")
    return " ".join(parts)


def _is_quit(raw: str) -> bool:
    parts = split_command(raw)[1]
    return bool(parts) and parts[0] == "quit"


class AnalyzingGtpEngine(GtpEngine):
    """:class:`GtpEngine` plus analysis commands and a clock, around a :class:`~gotk.search.SearchPlayer`
    (or any player: then the analysis commands answer ``? analysis needs a search``)."""

    def __init__(self, player, **kwargs) -> None:
        super().__init__(player, **kwargs)
        self._inbox: queue.Queue[str | None] = queue.Queue()
        self._write: Callable[[str], None] = sys.stdout.write
        self._flush: Callable[[], None] = sys.stdout.flush
        for name in (*ANALYZE, *GENMOVE_ANALYZE):
            self.commands[name] = self._sync_command(name)

    # --- serving: a reader thread feeds a queue -------------------------------------------------------

    def serve(self, lines: Iterable[str], write: Callable[[str], None], flush: Callable[[], None]) -> None:
        self._write, self._flush = write, flush

        def reader() -> None:
            # stops reading at ``quit``: a daemon thread left blocked in a read of stdin can abort the
            # interpreter's shutdown ("could not acquire lock for <stdin>") while it holds the buffer's lock
            try:
                for raw in lines:
                    self._inbox.put(raw)
                    if _is_quit(raw):
                        break
            finally:
                self._inbox.put(None)

        threading.Thread(target=reader, daemon=True).start()
        while True:
            raw = self._inbox.get()
            if raw is None:
                break
            answer = self._streaming(raw)
            if answer is None:
                answer = self.handle(raw)
            if answer is None:
                continue
            if answer:
                write(answer)
            flush()
            if self.quit:
                break

    def serve_stdio(self, stdin: BinaryIO | None = None, stdout: TextIO | None = None) -> None:
        inp = stdin or sys.stdin.buffer
        out = stdout or sys.stdout
        lines = read_lines(inp)  # lines capped at gtp.MAX_LINE_BYTES
        try:
            self.serve(lines, out.write, out.flush)
        except BrokenPipeError:
            pass

    def _input_waiting(self) -> bool:
        return not self._inbox.empty()

    def _streaming(self, raw: str) -> str | None:
        """Run an analysis command with streaming output; ``None`` when ``raw`` is not one ('' when answered)."""
        cid, parts = split_command(raw)
        if not parts or parts[0] not in ANALYZE and parts[0] not in GENMOVE_ANALYZE:
            return None
        command, args = parts[0], parts[1:]
        try:
            opts = parse_analyze_args(args)
            self._need_search()
        except GtpError as e:
            return f"?{cid} {e}\n\n"
        self._write(f"={cid}\n")
        self._flush()
        try:
            if command in ANALYZE:
                self._analyze(opts, ANALYZE[command], self._input_waiting, self._emit)
                tail = ""
            else:
                tail = self._genmove_analyze(opts, GENMOVE_ANALYZE[command], self._emit) + "\n"
        except Exception as e:  # noqa: BLE001 - the engine answers, it does not die
            tail = f"# analysis stopped: {type(e).__name__}: {e}".replace("\n", " ") + "\n"
        return tail + "\n"

    def _emit(self, line: str) -> None:
        if line:
            self._write(line + "\n")
            self._flush()

    # --- the analyses -----------------------------------------------------------------------------------

    def _need_search(self):
        search = self.player.search
        if search is None:
            raise GtpError("analysis needs a search: start gotk gtp with an agent that has a value head (or "
                           "--value-agent) and --visits N (N >= 2) or --seconds S")
        return search

    def _position(self, color: int | None):
        state = self.state.copy()
        if color is not None:
            state.to_play = color
        return state

    def _analyze(self, opts: dict, style: str, stop: Callable[[], bool], emit: Callable[[str], None]) -> None:
        """Search the position until ``stop()``, emitting a line every interval and one at the end."""
        search = self._need_search()
        state = self._position(opts["color"])
        search.set_position(state)
        interval = opts["interval"]
        last = [time.monotonic()]

        def tick() -> None:
            if interval > 0 and time.monotonic() - last[0] >= interval:
                last[0] = time.monotonic()
                emit(self._line(search, opts, style))

        search.run(visits=search.root_visits + search.cfg.batch)  # one batch at least, even when stopped at once
        search.run(visits=None, stop=stop, on_batch=tick)
        while not stop():  # max_nodes too small for even one batch (see Search.room): wait for the next command
            time.sleep(0.01)
            tick()
        emit(self._line(search, opts, style))

    def _line(self, search, opts: dict, style: str) -> str:
        return format_infos(search.infos(opts["minmoves"], opts["maxmoves"]), self.size, style)

    def _genmove_analyze(self, opts: dict, style: str, emit: Callable[[str], None]) -> str:
        """genmove with streamed analysis; returns ``play VERTEX`` (the move is played on the board)."""
        search = self._need_search()
        color = opts["color"] if opts["color"] is not None else self.state.to_play
        self.state.to_play = color
        interval = opts["interval"]
        last = [time.monotonic()]

        def tick() -> None:
            if interval > 0 and time.monotonic() - last[0] >= interval:
                last[0] = time.monotonic()
                emit(self._line(search, opts, style))

        move = self.player.choose(self.state, on_batch=tick)
        emit(self._line(search, opts, style))
        if move == RESIGN:
            return "play resign"
        self.state.play(move, color)
        return f"play {coords.to_gtp(move, self.size)}"

    def _sync_command(self, name: str) -> Callable[[list[str]], str]:
        """The command through :meth:`handle` (no input queue): one batch of analysis, or a whole genmove."""
        style = ANALYZE.get(name) or GENMOVE_ANALYZE[name]
        lines: list[str] = []

        def run(args: list[str]) -> str:
            opts = parse_analyze_args(args)
            self._need_search()
            lines.clear()
            if name in ANALYZE:
                self._analyze(opts, style, lambda: True, lines.append)
                return "\n" + lines[-1]
            tail = self._genmove_analyze(opts, style, lines.append)
            return "\n" + "\n".join([*lines, tail])

        return run

    # --- time -------------------------------------------------------------------------------------------

    def cmd_time_settings(self, args: list[str]) -> str:
        self._need(args, 3)
        main, byo, stones = (parse_int(a) for a in args[:3])
        clock = self.player.clock
        if main < 0 or byo < 0 or stones < 0:
            raise GtpError("syntax error (time settings must be >= 0)")
        if clock is not None:
            clock.settings(main, byo, stones)
        return ""

    def cmd_time_left(self, args: list[str]) -> str:
        self._need(args, 3)
        color = parse_color(args[0])
        seconds = parse_float(args[1])
        stones = parse_int(args[2])
        if seconds < 0 or stones < 0:
            raise GtpError("syntax error (time left must be >= 0)")
        clock = self.player.clock
        if clock is not None:
            clock.left(color, seconds, stones)
        return ""


__all__ = ["AnalyzingGtpEngine", "format_infos", "parse_analyze_args"]
