"""Matches between an in-process player and any GTP engine run as a subprocess.

Colours alternate (the agent takes black in games 1, 3, ...). A game ends on two passes, a
resignation, ``max_moves`` moves (then it is scored), or a fault of the opponent: an illegal or
unreadable move (``opponent_illegal_move``), an exit or a broken pipe (``opponent_crashed``), no
answer within ``timeout`` seconds (``opponent_timeout``). A fault forfeits that game (SGF ``RE[B+F]``)
and the opponent is restarted for the next one; it does not end the match. Scored games use the
opponent's ``final_score`` where it answers one, else gotk's area score (every stone counted alive).
"""

from __future__ import annotations

import collections
import datetime as _dt
import math
import os
import queue
import re
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gotk import __version__, coords
from gotk.errors import GotkError
from gotk.game.state import BLACK, WHITE, GameState
from gotk.play.gtp import format_score
from gotk.play.players import RESIGN

_SCORE = re.compile(r"^(?:0|[BW]\+(?:[0-9]+(?:\.[0-9]+)?|R|Resign|T|Time|F|Forfeit))$", re.IGNORECASE)


class OpponentFault(Exception):
    """The opponent failed; ``reason`` is the recorded game-end reason."""

    reason = "opponent_error"


class OpponentCrashed(OpponentFault):
    reason = "opponent_crashed"


class OpponentTimeout(OpponentFault):
    reason = "opponent_timeout"


class GtpFailure(Exception):
    """The opponent answered ``? message``."""


class GtpClient:
    """A GTP engine subprocess with a per-command timeout (a reader thread feeds a queue)."""

    def __init__(self, argv: list[str], timeout: float = 30.0, cwd: str | None = None) -> None:
        self.argv = list(argv)
        self.timeout = timeout
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=20)
        self._lines: queue.Queue[str | None] = queue.Queue()
        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, cwd=cwd)
        except OSError as e:
            raise OpponentCrashed(f"cannot start {self.argv!r}: {e}") from e
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for raw in iter(self.proc.stdout.readline, b""):
            self._lines.put(raw.decode("utf-8", "replace").rstrip("\r\n"))
        self._lines.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in iter(self.proc.stderr.readline, b""):
            self.stderr_tail.append(raw.decode("utf-8", "replace").rstrip())

    def _why(self) -> str:
        tail = " | ".join(list(self.stderr_tail)[-3:])
        code = self.proc.poll()
        return f"exit code {code}" + (f"; stderr: {tail}" if tail else "")

    def send(self, command: str, timeout: float | None = None) -> str:
        """Send one command; return the answer's text after ``=``. Raises :class:`GtpFailure` for ``?``,
        :class:`OpponentCrashed` / :class:`OpponentTimeout` when the engine dies or is silent."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((command + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise OpponentCrashed(f"{command!r}: cannot write ({self._why()})") from None
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        lines: list[str] = []
        while True:
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise queue.Empty
                line = self._lines.get(timeout=left)
            except queue.Empty:
                self.kill()
                raise OpponentTimeout(f"{command!r}: no answer in {self.timeout:g} s") from None
            if line is None:
                self._lines.put(None)  # keep reporting EOF
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:  # closed its stdout but lives on
                    self.proc.kill()
                    self.proc.wait()
                raise OpponentCrashed(f"{command!r}: engine exited ({self._why()})")
            if not lines:
                if line.strip() == "" or line[:1] not in "=?":
                    continue  # noise before an answer
                lines.append(line)
            elif line.strip() == "":
                break
            else:
                lines.append(line)
        head = lines[0]
        text = "\n".join([re.sub(r"^[=?][0-9]*\s?", "", head)] + lines[1:]).strip()
        if head.startswith("?"):
            raise GtpFailure(text or "failed")
        return text

    def kill(self) -> None:
        """Stop the engine at once (it is hung)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.close()

    def close(self) -> None:
        """Ask the engine to quit, then kill it if it lingers."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(b"quit\n")
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


@dataclass
class GameResult:
    """One finished game."""

    game: int
    agent_colour: str  # "B" or "W"
    winner: str | None  # "B", "W", or None (draw, or void)
    result: str  # SGF RE value: "B+3.5", "W+R", "B+F", "0", "Void"
    moves: int
    reason: str  # two_passes, max_moves, agent_resigned, opponent_resigned, opponent_* faults
    score_source: str | None = None  # "opponent" or "gotk" for scored games
    detail: str = ""
    sgf: str | None = None
    seconds: float = 0.0
    move_list: list[tuple[int, int]] = field(default_factory=list, repr=False)

    @property
    def agent_won(self) -> bool:
        return self.winner == self.agent_colour

    @property
    def agent_lost(self) -> bool:
        return self.winner is not None and self.winner != self.agent_colour

    def as_dict(self) -> dict:
        d = asdict(self)
        d.pop("move_list")
        return d


def wilson_interval(wins: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95 % with ``z`` = 1.96); ``(0, 1)`` for ``n`` = 0."""
    if n <= 0:
        return 0.0, 1.0
    p = wins / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _sgf_text(value: str) -> str:
    return value.replace("\\", "\\\\").replace("]", "\\]")


def game_sgf(size: int, komi: float, black: str, white: str, result: str, moves: list[tuple[int, int]],
             comment: str = "", date: str | None = None) -> str:
    """An FF[4] SGF record (Chinese rules: area scoring, simple ko, no suicide)."""
    date = date or _dt.date.today().isoformat()
    head = (f"(;FF[4]GM[1]CA[UTF-8]AP[gotk:{__version__}]SZ[{size}]KM[{komi:g}]RU[Chinese]DT[{date}]"
            f"PB[{_sgf_text(black)}]PW[{_sgf_text(white)}]RE[{_sgf_text(result)}]")
    if comment:
        head += f"C[{_sgf_text(comment)}]"
    body = "".join(f"\n;{'B' if c == BLACK else 'W'}[{coords.to_sgf(p, size)}]" for c, p in moves)
    return head + body + ")\n"


def parse_score(text: str) -> tuple[str | None, str] | None:
    """A GTP ``final_score`` answer → ``(winner, SGF result)``; None when it is not a score."""
    t = text.strip().split()[0] if text.strip() else ""
    if not _SCORE.match(t):
        return None
    if t == "0":
        return None, "0"
    winner = t[0].upper()
    rest = t[2:]
    try:
        rest = f"{float(rest):g}"
    except ValueError:
        rest = rest[0].upper()
    return winner, f"{winner}+{rest}"


def _colour_name(color: int) -> str:
    return "B" if color == BLACK else "W"


@dataclass
class MatchConfig:
    size: int = 19
    komi: float = 7.5
    games: int = 2
    max_moves: int | None = None  # default: 2 * size * size
    timeout: float = 30.0
    sgf_out: Path | None = None


class Match:
    """Plays ``config.games`` games of ``player`` against the GTP engine started by ``opponent_argv``."""

    def __init__(self, player, opponent_argv: list[str], config: MatchConfig,
                 on_game: Callable[[GameResult], None] | None = None) -> None:
        self.player = player
        self.argv = opponent_argv
        self.cfg = config
        self.on_game = on_game
        self.client: GtpClient | None = None
        self.opponent_name = os.path.basename(opponent_argv[0]) if opponent_argv else "opponent"
        self.results: list[GameResult] = []

    def _client(self) -> GtpClient:
        if self.client is None or self.client.proc.poll() is not None:
            if self.client is not None:
                self.client.close()
            self.client = GtpClient(self.argv, self.cfg.timeout)
            try:
                name = self.client.send("name")
                try:
                    version = self.client.send("version")
                except GtpFailure:
                    version = ""
                self.opponent_name = f"{name} {version}".strip() or self.opponent_name
            except GtpFailure:
                pass
        return self.client

    def _restart(self) -> None:
        if self.client is not None:
            self.client.close()
        self.client = None

    def run(self) -> list[GameResult]:
        try:
            for i in range(self.cfg.games):
                res = self.play_game(i + 1, BLACK if i % 2 == 0 else WHITE)
                self.results.append(res)
                if self.on_game:
                    self.on_game(res)
        finally:
            self._restart()
        return self.results

    def play_game(self, number: int, agent_color: int) -> GameResult:
        cfg = self.cfg
        size = cfg.size
        max_moves = cfg.max_moves if cfg.max_moves is not None else 2 * size * size
        t0 = time.monotonic()
        state = GameState(size, komi=cfg.komi)
        self.player.reset()
        winner: str | None = None
        result = ""
        reason = ""
        detail = ""
        source: str | None = None
        opp_color = 3 - agent_color
        try:
            client = self._client()
            for cmd in (f"boardsize {size}", "clear_board", f"komi {cfg.komi:g}"):
                try:
                    client.send(cmd)
                except GtpFailure as e:
                    raise OpponentFault(f"{cmd!r} refused: {e}") from None
            while True:
                if state.passes >= 2:
                    reason = "two_passes"
                    break
                if len(state.history) >= max_moves:
                    reason = "max_moves"
                    break
                color = state.to_play
                cname = _colour_name(color)
                if color == agent_color:
                    move = self.player.choose(state)
                    if move == RESIGN:
                        winner, result, reason = _colour_name(opp_color), f"{_colour_name(opp_color)}+R", \
                            "agent_resigned"
                        break
                    state.play(move, color)
                    try:
                        client.send(f"play {cname} {coords.to_gtp(move, size)}")
                    except GtpFailure as e:
                        winner, result, reason = None, "Void", "opponent_rejected_move"
                        detail = f"{cname} {coords.to_gtp(move, size)}: {e}"
                        break
                else:
                    answer = client.send(f"genmove {cname}")
                    word = answer.split()[0] if answer.split() else ""
                    if word.lower() == "resign":
                        winner, result, reason = _colour_name(agent_color), f"{_colour_name(agent_color)}+R", \
                            "opponent_resigned"
                        break
                    try:
                        point = coords.from_gtp(word, size)
                        state.play(point, color)
                    except (ValueError, GotkError) as e:
                        winner, result = _colour_name(agent_color), f"{_colour_name(agent_color)}+F"
                        reason, detail = "opponent_illegal_move", f"{cname} {answer!r}: {e}"
                        break
            if reason in ("two_passes", "max_moves"):
                winner, result, source, detail = self._score(client, state)
        except GtpFailure as e:  # a genmove that failed
            winner, result = _colour_name(agent_color), f"{_colour_name(agent_color)}+F"
            reason, detail = "opponent_error", str(e)
        except OpponentFault as e:
            winner, result = _colour_name(agent_color), f"{_colour_name(agent_color)}+F"
            reason, detail = e.reason, str(e)
        if reason.startswith("opponent_") and reason != "opponent_resigned":
            self._restart()
        names = {agent_color: self.player.name, opp_color: self.opponent_name}
        res = GameResult(number, _colour_name(agent_color), winner, result, len(state.history), reason, source,
                         detail, None, round(time.monotonic() - t0, 3), list(state.history))
        if cfg.sgf_out is not None:
            out = Path(cfg.sgf_out)
            out.mkdir(parents=True, exist_ok=True)
            path = out / f"game-{number:04d}.sgf"
            comment = f"gotk match game {number}: {reason}" + (f" ({detail})" if detail else "")
            path.write_text(game_sgf(size, cfg.komi, names[BLACK], names[WHITE], result, res.move_list, comment),
                            encoding="utf-8")
            res.sgf = str(path)
        return res

    def _score(self, client: GtpClient, state: GameState) -> tuple[str | None, str, str, str]:
        """``(winner, result, score_source, detail)``: the opponent's ``final_score``, else gotk's area
        score (when it refuses, answers no score, times out or dies: a fault here forfeits nothing)."""
        try:
            answer = client.send("final_score")
            parsed = parse_score(answer)
            if parsed is not None:
                return parsed[0], parsed[1], "opponent", ""
            why = f"final_score answer {answer!r} is not a score"
        except GtpFailure as e:
            why = f"final_score refused: {e}"
        except OpponentFault as e:
            why = f"final_score failed ({e.reason}): {e}"
            self._restart()
        text = format_score(state.score_area())
        winner = None if text == "0" else text[0]
        return winner, text, "gotk", why


@dataclass
class MatchSummary:
    games: int
    wins: int
    losses: int
    draws: int
    void: int
    win_rate: float
    ci95: tuple[float, float]

    def as_dict(self) -> dict:
        d = asdict(self)
        d["ci95"] = list(self.ci95)
        return d


def summarize(results: list[GameResult]) -> MatchSummary:
    """Wins, losses, draws (half a win each), void games (not counted) and a Wilson 95 % interval."""
    wins = sum(r.agent_won for r in results)
    losses = sum(r.agent_lost for r in results)
    void = sum(r.result == "Void" for r in results)
    draws = len(results) - wins - losses - void
    decided = wins + losses + draws
    score = wins + 0.5 * draws
    rate = score / decided if decided else 0.0
    return MatchSummary(len(results), wins, losses, draws, void, rate, wilson_interval(score, decided))


__all__ = ["GameResult", "GtpClient", "Match", "MatchConfig", "MatchSummary", "OpponentCrashed", "OpponentFault",
           "OpponentTimeout", "game_sgf", "parse_score", "summarize", "wilson_interval"]
