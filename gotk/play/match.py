"""Matches between an in-process player and any GTP engine run as a subprocess.

Colours alternate (the agent takes black in games 1, 3, ...). A game ends on two passes, a
resignation, ``max_moves`` moves (then it is scored), or a fault of the opponent: an illegal or
unreadable move (``opponent_illegal_move``), an exit or a broken pipe (``opponent_crashed``), no
answer within ``timeout`` seconds (``opponent_timeout``). A fault forfeits that game (SGF ``RE[B+F]``)
and the opponent is restarted for the next one; it does not end the match. An engine that never
answers its first command (it cannot start, or dies at once) is not an opponent at all: the match stops
with :class:`OpponentUnavailable` instead of counting forfeits as wins. Scored games use the
opponent's ``final_score`` where it answers one, else gotk's own count (:meth:`GameState.score_final`: area,
the stones dead inside the opponent's pass-alive area removed, every other stone alive). Every scored game also
records both counts (``gotk_score``, ``opponent_score``, black minus white, komi included) and whether they name
the same winner (``scores_agree``); the summary counts the games where they do not: gotk's search passes by its
own count, so a disagreement is a game it may have passed into believing it won (or lost).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gotk import coords
from gotk.errors import GotkError
from gotk.game.handicap import fixed_handicap_points
from gotk.game.state import BLACK, WHITE, GameState
from gotk.play.gtp_client import GtpClient, GtpFailure, OpponentFault
from gotk.play.players import RESIGN
from gotk.play.results import GameResult, format_score, parse_score, score_value
from gotk.sgf.writer import game_sgf


class OpponentUnavailable(GotkError):
    """The opponent engine never answered a command: nothing was played, the match cannot go on."""

    def __init__(self, message: str) -> None:
        super().__init__("opponent_unavailable", message)


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
    agent_first: int = BLACK  # the agent's colour in game 1; colours alternate from there
    agent_name: str | None = None  # the players' names in the SGF records and the report [the player's own,
    opponent_name: str | None = None  # the engine's GTP name and version]: two networks of one model told apart
    handicap: int = 0  # 0, or 2..9 Black stones on GTP's fixed points (game.handicap); White moves first




class Match:
    """Plays ``config.games`` games of ``player`` against the GTP engine started by ``opponent_argv``."""

    def __init__(self, player, opponent_argv: list[str], config: MatchConfig,
                 on_game: Callable[[GameResult], None] | None = None) -> None:
        self.player = player
        self.argv = opponent_argv
        self.cfg = config
        self.on_game = on_game
        self.client: GtpClient | None = None
        self.agent_name = config.agent_name or player.name
        self.opponent_name = config.opponent_name or (os.path.basename(opponent_argv[0]) if opponent_argv
                                                      else "opponent")
        self.results: list[GameResult] = []
        self._answered = False  # the engine has answered at least one command in this match

    def _client(self) -> GtpClient:
        if self.client is None or self.client.proc.poll() is not None:
            if self.client is not None:
                self.client.close()
            try:
                self.client = GtpClient(self.argv, self.cfg.timeout)
                name = self.client.send("name")
                self._answered = True
                try:
                    version = self.client.send("version")
                except GtpFailure:
                    version = ""
                if not self.cfg.opponent_name:
                    self.opponent_name = f"{name} {version}".strip() or self.opponent_name
            except GtpFailure:
                self._answered = True  # "? ..." is an answer: a GTP engine without ``name``
            except OpponentFault as e:
                if not self._answered:
                    self._restart()
                    raise OpponentUnavailable(f"{' '.join(self.argv)!r} did not answer 'name': {e}") from None
                raise
        return self.client

    def _restart(self) -> None:
        if self.client is not None:
            self.client.close()
        self.client = None

    def run(self) -> list[GameResult]:
        try:
            for i in range(self.cfg.games):
                first = self.cfg.agent_first
                res = self.play_game(i + 1, first if i % 2 == 0 else 3 - first)
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
        stones = fixed_handicap_points(size, cfg.handicap) if cfg.handicap else []
        if stones:
            state.setup(black=stones, to_play=WHITE)
        self.player.reset()
        winner: str | None = None
        result = ""
        reason = ""
        detail = ""
        source: str | None = None
        scores: tuple[float | None, float | None] = (None, None)
        opp_color = 3 - agent_color
        try:
            client = self._client()
            for cmd in (f"boardsize {size}", "clear_board", f"komi {cfg.komi:g}"):
                try:
                    client.send(cmd)
                except GtpFailure as e:
                    raise OpponentFault(f"{cmd!r} refused: {e}") from None
            if stones:
                self._place_handicap(client, stones)
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
                scores = (state.score_final(), score_value(result) if source == "opponent" else None)
        except GtpFailure as e:  # a genmove that failed
            winner, result = _colour_name(agent_color), f"{_colour_name(agent_color)}+F"
            reason, detail = "opponent_error", str(e)
        except OpponentFault as e:
            winner, result = _colour_name(agent_color), f"{_colour_name(agent_color)}+F"
            reason, detail = e.reason, str(e)
        if reason.startswith("opponent_") and reason != "opponent_resigned":
            self._restart()
        names = {agent_color: self.agent_name, opp_color: self.opponent_name}
        res = GameResult(number, _colour_name(agent_color), winner, result, len(state.history), reason, source,
                         detail, None, round(time.monotonic() - t0, 3), list(state.history), *scores)
        if cfg.sgf_out is not None:
            out = Path(cfg.sgf_out)
            out.mkdir(parents=True, exist_ok=True)
            path = out / f"game-{number:04d}.sgf"
            comment = f"gotk match game {number}: {reason}" + (f" ({detail})" if detail else "")
            path.write_text(game_sgf(size, cfg.komi, names[BLACK], names[WHITE], result, res.move_list, comment,
                                     handicap=stones), encoding="utf-8")
            res.sgf = str(path)
        return res

    def _place_handicap(self, client: GtpClient, stones: list[int]) -> None:
        """The handicap stones on the opponent's board: GTP ``fixed_handicap`` (its answer must name the same
        points), else ``set_free_handicap`` with them (an engine that refuses both cannot play the match)."""
        size = self.cfg.size
        want = {coords.to_gtp(p, size).upper() for p in stones}
        try:
            got = {v.upper() for v in client.send(f"fixed_handicap {len(stones)}").split()}
            if got == want:
                return
            client.send("clear_board")
        except GtpFailure:
            pass
        try:
            client.send("set_free_handicap " + " ".join(coords.to_gtp(p, size) for p in stones))
        except GtpFailure as e:
            raise OpponentFault(f"the handicap stones refused: {e}") from None

    def _score(self, client: GtpClient, state: GameState) -> tuple[str | None, str, str, str]:
        """``(winner, result, score_source, detail)``: the opponent's ``final_score``, else gotk's area
        count (when it refuses, answers no score, times out or dies: a fault here forfeits nothing)."""
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
        text = format_score(state.score_final())
        winner = None if text == "0" else text[0]
        return winner, text, "gotk", why




def match_report(match: Match, results: list[GameResult], agent: str | None = None,
                 opponent: str | None = None) -> dict:
    """The ``gotk match --json`` report of a match (what :func:`gotk.play.elo.read_match_reports` reads): the
    summary, the players' names (``agent`` / ``opponent`` override the match's) and every game."""
    from gotk.play.results import summarize

    out = summarize(results).as_dict()
    out.update(agent=agent or match.agent_name, opponent=opponent or match.opponent_name,
               size=match.cfg.size, komi=match.cfg.komi, per_game=[r.as_dict() for r in results])
    if match.cfg.handicap:
        out["handicap"] = match.cfg.handicap
    return out


__all__ = ["Match", "MatchConfig", "OpponentUnavailable", "match_report"]
