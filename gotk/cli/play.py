"""``gotk gtp`` (a GTP v2 engine on stdin/stdout) and ``gotk match`` (agent vs any GTP engine)."""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import typer

from gotk.cli.common import fail as _fail
from gotk.cli.options import option, with_options
from gotk.cli.player_options import PlayerOptions, with_player_options


@with_player_options
def gtp_cmd(
    agent: Path = typer.Option(None, "--agent", help="Agent package (agent.gotk) to play with."),
    random: bool = typer.Option(False, "--random", help="Play random sensible moves instead (a test opponent)."),
    seed: int = typer.Option(None, help="Seed of the random player / temperature sampling."),
    size: int = typer.Option(None, help="Initial board size (default: the agent's, else 19)."),
    komi: float = typer.Option(7.5, help="Initial komi."),
    *,
    player: PlayerOptions,
) -> None:
    """Run a GTP version 2 engine on stdin/stdout (see docs/gtp.md for the commands and rules)."""
    from gotk.play.analyze import AnalyzingGtpEngine as GtpEngine

    if (agent is None) == (not random):
        _fail("give exactly one of --agent FILE or --random")
    engine_player = player.make_player(None if random else str(agent), seed)
    _check_size(engine_player, size)
    from gotk.search.alphabeta import AlphaBetaPlayer

    if isinstance(engine_player, AlphaBetaPlayer):  # its nodes and speed, a line a move (stderr is free in GTP)
        engine_player.log = lambda line: print(line, file=sys.stderr, flush=True)
    GtpEngine(engine_player, name=engine_player.name, size=size, komi=komi).serve_stdio()


@dataclass(frozen=True)
class MatchOptions:
    """The games of ``gotk match``: how many, who starts, the board, the limits, the records and the players' names
    (:class:`gotk.play.match.MatchConfig`)."""

    games: int = option(2, "--games", help="Games to play (colours alternate, the agent is --agent-first in game 1).")
    agent_first: str = option("black", "--agent-first", help="The agent's colour in game 1: black or white (split "
                              "runs of one match start on both colours).")
    size: int | None = option(None, "--size", help="Board size (default: the agent's, else 19).")
    komi: float | None = option(None, "--komi", help="Komi (area scoring) [7.5; 0.5 with --handicap, as the "
                                "book's handicap games].")
    handicap: int = option(0, "--handicap", help="Black's handicap stones, 2-9 on the fixed points (GTP's "
                           "fixed_handicap; SGF HA/AB); White moves first.")
    max_moves: int | None = option(None, "--max-moves", help="Stop and score a game after this many moves "
                                   "[2 × size²].")
    timeout: float = option(60.0, "--timeout", help="Seconds the opponent may take per command.")
    sgf_out: Path | None = option(None, "--sgf-out", help="Folder for one SGF record per game.")
    name: str | None = option(None, "--name", help="The agent's name in the report, the table and the SGF records "
                              "[its own, e.g. gotk-zero-gumbel32v]: networks told apart for gotk elo / zero-compare.")
    opponent_name: str | None = option(None, "--opponent-name", help="The opponent's name there [its GTP name and "
                                       "version].")


@with_options(setup=MatchOptions, player=PlayerOptions)
def match_cmd(
    player: PlayerOptions,
    setup: MatchOptions,
    opponent: str = typer.Option(..., "--opponent", help='GTP engine command line, e.g. "/usr/games/gnugo --mode '
                                 'gtp --level 10" or "python -m gotk gtp --random".'),
    agent: str = typer.Option(..., "--agent", help="Agent package (agent.gotk), or 'random' (the random player)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (the live table goes to stderr)."),
    seed: int = typer.Option(None, help="Seed of the random player / temperature sampling."),
) -> None:
    """Play games between an agent (in process) and a GTP engine (subprocess); report wins and a 95% interval."""
    from gotk.game.state import BLACK, WHITE
    from gotk.play.match import Match, MatchConfig, OpponentUnavailable, match_report
    from gotk.play.results import summarize

    m = setup
    games, name, opponent_name, max_moves = m.games, m.name, m.opponent_name, m.max_moves
    argv = shlex.split(opponent)
    if not argv:
        _fail("--opponent is empty")
    if games < 1:
        _fail("--games must be >= 1")
    for flag, value in (("--name", name), ("--opponent-name", opponent_name)):
        if value is not None and not value.strip():
            _fail(f"{flag} is empty")
    if name is not None and name == opponent_name:
        _fail("--name and --opponent-name are the same: the report could not tell the players apart")
    if max_moves is not None and max_moves < 1:
        _fail("--max-moves must be >= 1")
    first = {"black": BLACK, "b": BLACK, "white": WHITE, "w": WHITE}.get(m.agent_first.lower())
    if first is None:
        _fail(f"--agent-first must be black or white, not {m.agent_first!r}")
    if m.handicap:
        from gotk.game.handicap import max_fixed_handicap

        top = max_fixed_handicap(m.size or 19)
        if not 2 <= m.handicap <= top:
            _fail(f"--handicap must be from 2 to {top} on {m.size or 19}x{m.size or 19}, not {m.handicap}")
    agent_player = player.make_player(agent, seed)
    _check_size(agent_player, m.size)
    size = m.size or agent_player.board_size or 19
    if m.handicap and m.handicap > max_fixed_handicap(size):
        _fail(f"--handicap must be from 2 to {max_fixed_handicap(size)} on {size}x{size}, not {m.handicap}")

    def emit(line: str) -> None:
        typer.echo(line, err=as_json)

    emit(f"{'game':>4}  {'agent':<5}  {'result':<8}  {'moves':>5}  {'reason':<22}  {'sec':>6}  sgf")

    def on_game(r) -> None:
        emit(f"{r.game:>4}  {r.agent_colour:<5}  {r.result:<8}  {r.moves:>5}  {r.reason:<22}  {r.seconds:>6.1f}  "
             f"{r.sgf or '-'}")

    komi = m.komi if m.komi is not None else (0.5 if m.handicap else 7.5)
    cfg = MatchConfig(size=size, komi=komi, games=games, max_moves=max_moves, timeout=m.timeout, sgf_out=m.sgf_out,
                      agent_first=first, agent_name=name, opponent_name=opponent_name, handicap=m.handicap)
    match = Match(agent_player, argv, cfg, on_game=on_game)
    try:
        results = match.run()
    except OpponentUnavailable as e:
        _fail(str(e))
    s = summarize(results)
    if s.winner_disagreements:  # games the search may have passed into thinking it won (docs/gtp.md)
        emit(f"scores: gotk's count and {match.opponent_name}'s final_score name different winners in "
             f"{s.winner_disagreements} of {s.scores_checked} scored games (different margins in "
             f"{s.margin_disagreements})")
    if as_json:
        typer.echo(json.dumps(match_report(match, results), indent=2))
    else:
        typer.echo(f"{match.agent_name} vs {match.opponent_name}: {s.wins} wins, {s.losses} losses"
                   + (f", {s.draws} draws" if s.draws else "") + (f", {s.void} void" if s.void else "")
                   + f" of {s.games}; win rate {s.win_rate:.3f} (95% CI {s.ci95[0]:.3f}-{s.ci95[1]:.3f})")
    sys.stdout.flush()


def _check_size(player, size: int | None) -> None:
    """``--size`` must be a board the engine handles and, for an agent, the one it was trained on."""
    fixed = player.board_size
    if size is not None and fixed and size != fixed:
        _fail(f"the agent plays {fixed}x{fixed}, not {size}x{size}")
    if size is not None and not 2 <= size <= 25:
        _fail("--size must be 2..25")


def elo_cmd(
    reports: list[Path] = typer.Argument(..., help="`gotk match --json` reports (one JSON file per match)."),
    anchor: str = typer.Option(..., "--anchor", help="The player held at --anchor-elo (a name from the reports, "
                               "e.g. 'GNU Go 3.8')."),
    anchor_elo: float = typer.Option(0.0, "--anchor-elo", help="The anchor's rating."),
    prior_games: float = typer.Option(2.0, "--prior-games", help="Virtual draws of every player against the "
                                      "anchor (keeps a perfect score finite; 0: pure maximum likelihood)."),
    rename: list[str] = typer.Option(None, "--rename", help="OLD=NEW: a report's player name to a table name "
                                     "(repeatable)."),
    as_json: bool = typer.Option(False, "--json", help="Print the ratings as JSON."),
) -> None:
    """Elo ratings (Bradley–Terry fit, 95% intervals) from `gotk match --json` reports."""
    from gotk.cli.common import parse_key_values
    from gotk.play.elo import EloError, fit, format_table, read_match_reports

    names = {old: str(new) for old, new in parse_key_values(rename, "--rename").items()}
    if prior_games < 0:
        _fail("--prior-games must be >= 0")
    try:
        games = read_match_reports(reports, names)
        if not games:
            _fail("no decided game in these reports")
        ratings = fit(games, anchor, anchor_elo, prior_games)
    except EloError as e:
        _fail(str(e))
    if as_json:
        typer.echo(json.dumps({"anchor": anchor, "anchor_elo": anchor_elo, "prior_games": prior_games,
                               "games": len(games), "ratings": [r.as_dict() for r in ratings]}, indent=2))
    else:
        typer.echo(format_table(ratings, anchor))
        typer.echo(f"\n{len(games)} games; {anchor} held at {anchor_elo:g}; prior: {prior_games:g} virtual draws "
                   "of each player against the anchor; 95% intervals from the likelihood's curvature")
