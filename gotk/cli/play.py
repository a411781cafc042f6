"""``gotk gtp`` (a GTP v2 engine on stdin/stdout) and ``gotk match`` (agent vs any GTP engine)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import typer

from gotk.cli.common import fail as _fail

_TEMP = typer.Option(0.0, help="0 plays the most probable sensible move; >0 samples from p^(1/T).")
_PASS = typer.Option(1e-3, "--pass-threshold", help="Pass when no sensible move has at least this policy probability.")
_RESIGN = typer.Option(True, "--resign/--no-resign", help="Allow resignation (only agents with a value head resign).")
_RES_T = typer.Option(-0.95, "--resign-threshold", help="Resign when the value (mover's view, -1..1) stays below this.")
_RES_K = typer.Option(3, "--resign-moves", help="... for this many consecutive own moves.")
_THREADS = typer.Option(1, help="torch CPU threads for inference (0: torch's default).")
# search (gotk.search; docs/gtp.md "Search")
_VALUE_AGENT = typer.Option(None, "--value-agent", help="Agent giving the search's leaf values (same encoder and "
                            "board size); default: the agent's own value head.")
_VISITS = typer.Option(0, "--visits", help="PUCT search with this many root visits per move; 0 or 1 plays the "
                       "policy alone.")
_SECONDS = typer.Option(None, "--seconds", help="Search for this many seconds per move (with --visits: whichever "
                        "comes first).")
_BATCH = typer.Option(8, "--batch", help="Leaves evaluated per network call (virtual loss).")
_CPUCT = typer.Option(1.25, "--c-puct", help="PUCT exploration constant.")
_FPU = typer.Option(0.25, "--fpu", help="First-play-urgency reduction for unvisited moves.")
_RES_MIN = typer.Option(30, "--resign-min-move", help="A searching agent never resigns before this move number.")


def _search_config(visits, seconds, batch, c_puct, fpu, temperature, resign, resign_threshold, resign_moves,
                   resign_min_move, seed):
    from gotk.search.puct import SearchConfig

    return SearchConfig(visits=visits, seconds=seconds, batch=batch, c_puct=c_puct, fpu=fpu,
                        temperature=temperature, resign_threshold=resign_threshold if resign else None,
                        resign_moves=resign_moves, resign_min_move=resign_min_move, seed=seed)


def gtp_cmd(
    agent: Path = typer.Option(None, "--agent", help="Agent package (agent.gotk) to play with."),
    random: bool = typer.Option(False, "--random", help="Play random sensible moves instead (a test opponent)."),
    seed: int = typer.Option(None, help="Seed of the random player / temperature sampling."),
    size: int = typer.Option(None, help="Initial board size (default: the agent's, else 19)."),
    komi: float = typer.Option(7.5, help="Initial komi."),
    temperature: float = _TEMP,
    pass_threshold: float = _PASS,
    resign: bool = _RESIGN,
    resign_threshold: float = _RES_T,
    resign_moves: int = _RES_K,
    threads: int = _THREADS,
    value_agent: Path = _VALUE_AGENT,
    visits: int = _VISITS,
    seconds: float = _SECONDS,
    batch: int = _BATCH,
    c_puct: float = _CPUCT,
    fpu: float = _FPU,
    resign_min_move: int = _RES_MIN,
) -> None:
    """Run a GTP version 2 engine on stdin/stdout (see docs/gtp.md for the commands and rules)."""
    from gotk.play.analyze import AnalyzingGtpEngine as GtpEngine

    if (agent is None) == (not random):
        _fail("give exactly one of --agent FILE or --random")
    cfg = _search_config(visits, seconds, batch, c_puct, fpu, temperature, resign, resign_threshold, resign_moves,
                         resign_min_move, seed)
    player = _player(None if random else str(agent), cfg, value_agent, threads, temperature=temperature,
                     pass_threshold=pass_threshold, resign=resign, resign_threshold=resign_threshold,
                     resign_moves=resign_moves)
    _check_size(player, size)
    GtpEngine(player, name=player.name, size=size, komi=komi).serve_stdio()


def match_cmd(
    opponent: str = typer.Option(..., "--opponent", help='GTP engine command line, e.g. "/usr/games/gnugo --mode '
                                 'gtp --level 10" or "python -m gotk gtp --random".'),
    agent: str = typer.Option(..., "--agent", help="Agent package (agent.gotk), or 'random' (the random player)."),
    games: int = typer.Option(2, help="Games to play (colours alternate, the agent is black first)."),
    size: int = typer.Option(None, help="Board size (default: the agent's, else 19)."),
    komi: float = typer.Option(7.5),
    max_moves: int = typer.Option(None, "--max-moves", help="Stop and score a game after this many moves "
                                  "[2 × size²]."),
    timeout: float = typer.Option(60.0, help="Seconds the opponent may take per command."),
    sgf_out: Path = typer.Option(None, "--sgf-out", help="Folder for one SGF record per game."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (the live table goes to stderr)."),
    seed: int = typer.Option(None, help="Seed of the random player / temperature sampling."),
    temperature: float = _TEMP,
    pass_threshold: float = _PASS,
    resign: bool = _RESIGN,
    resign_threshold: float = _RES_T,
    resign_moves: int = _RES_K,
    threads: int = _THREADS,
    value_agent: Path = _VALUE_AGENT,
    visits: int = _VISITS,
    seconds: float = _SECONDS,
    batch: int = _BATCH,
    c_puct: float = _CPUCT,
    fpu: float = _FPU,
    resign_min_move: int = _RES_MIN,
) -> None:
    """Play games between an agent (in process) and a GTP engine (subprocess); report wins and a 95% interval."""
    from gotk.play.match import Match, MatchConfig, OpponentUnavailable
    from gotk.play.results import summarize

    argv = shlex.split(opponent)
    if not argv:
        _fail("--opponent is empty")
    if games < 1:
        _fail("--games must be >= 1")
    if max_moves is not None and max_moves < 1:
        _fail("--max-moves must be >= 1")
    cfg = _search_config(visits, seconds, batch, c_puct, fpu, temperature, resign, resign_threshold, resign_moves,
                         resign_min_move, seed)
    player = _player(agent, cfg, value_agent, threads, temperature=temperature, pass_threshold=pass_threshold,
                     resign=resign, resign_threshold=resign_threshold, resign_moves=resign_moves)
    _check_size(player, size)
    size = size or getattr(player, "board_size", None) or 19

    def emit(line: str) -> None:
        typer.echo(line, err=as_json)

    emit(f"{'game':>4}  {'agent':<5}  {'result':<8}  {'moves':>5}  {'reason':<22}  {'sec':>6}  sgf")

    def on_game(r) -> None:
        emit(f"{r.game:>4}  {r.agent_colour:<5}  {r.result:<8}  {r.moves:>5}  {r.reason:<22}  {r.seconds:>6.1f}  "
             f"{r.sgf or '-'}")

    cfg = MatchConfig(size=size, komi=komi, games=games, max_moves=max_moves, timeout=timeout, sgf_out=sgf_out)
    match = Match(player, argv, cfg, on_game=on_game)
    try:
        results = match.run()
    except OpponentUnavailable as e:
        _fail(str(e))
    s = summarize(results)
    if as_json:
        out = s.as_dict()
        out.update(agent=player.name, opponent=match.opponent_name, size=size, komi=komi,
                   per_game=[r.as_dict() for r in results])
        typer.echo(json.dumps(out, indent=2))
    else:
        typer.echo(f"{player.name} vs {match.opponent_name}: {s.wins} wins, {s.losses} losses"
                   + (f", {s.draws} draws" if s.draws else "") + (f", {s.void} void" if s.void else "")
                   + f" of {s.games}; win rate {s.win_rate:.3f} (95% CI {s.ci95[0]:.3f}-{s.ci95[1]:.3f})")
    sys.stdout.flush()


def _player(agent, cfg, value_agent, threads, **policy_kwargs):
    """:func:`gotk.search.factory.make_search_player`, its refusals as a one-line error (exit 2)."""
    from gotk.errors import GotkError
    from gotk.search.factory import make_search_player

    try:
        return make_search_player(agent, cfg, str(value_agent) if value_agent else None, threads, **policy_kwargs)
    except GotkError as e:
        _fail(str(e))


def _check_size(player, size: int | None) -> None:
    """``--size`` must be a board the engine handles and, for an agent, the one it was trained on."""
    fixed = getattr(player, "board_size", None)
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
