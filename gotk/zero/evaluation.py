"""Matches of a ``gotk zero`` network against the anchors: the random player and GNU Go at each level (when it is
installed), and the further GNU Go anchors a run names (:func:`parse_anchor`: its Monte Carlo mode, a level in
handicap games), one ``gotk match`` report per opponent, skipped when its report is already there (a rerun
resumes)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from gotk.atomic import atomic_path

RANDOM_NAME = "random"


def find_gnugo(given: str | None = None) -> str | None:
    """The GNU Go binary: ``given`` (a path or a name on PATH), else ``gnugo`` on PATH, else Debian's
    ``/usr/games/gnugo``; None when there is none."""
    for cand in ([given] if given else ["gnugo", "/usr/games/gnugo"]):
        found = shutil.which(cand) or (cand if Path(cand).is_file() and os.access(cand, os.X_OK) else None)
        if found:
            return found
    return None


def parse_anchor(spec: str) -> tuple[str, list[str], int]:
    """A GNU Go anchor named on the command line (``--gnugo-anchors``): ``mcN`` its Monte Carlo mode with N
    simulations a move (``--monte-carlo --mc-games-per-level N`` at level 1; the network-free searches' peer),
    ``LhH`` level L in handicap games of H stones (fixed points, komi 0.5, colours alternating as every match's).
    Returns ``(name, GNU Go arguments, handicap)``; ValueError for a spec of neither form."""
    s = spec.strip().lower()
    try:
        if s.startswith("mc"):
            n = int(s[2:])
            if not 100 <= n <= 1_000_000:
                raise ValueError
            return f"gnugo-mc{n}", ["--monte-carlo", "--level", "1", "--mc-games-per-level", str(n)], 0
        level, _, stones = s.partition("h")
        lv, h = int(level), int(stones)
        if not 1 <= lv <= 10 or not 2 <= h <= 9:
            raise ValueError
        return f"gnugo-{lv}-h{h}", ["--level", str(lv)], h
    except ValueError:
        raise ValueError(f"a GNU Go anchor is mcN (Monte Carlo mode, N = 100..1000000 simulations a move) or LhH "
                         f"(level 1..10 with 2..9 handicap stones), not {spec!r}") from None


def play_match(agent: Path, name: str, argv: list[str], opponent: str, games: int, path: Path, size: int,
               komi: float, visits: int, seed: int, log, handicap: int = 0, temperature: float = 0.0) -> dict:
    """``games`` games of the network ``agent`` (named ``name``; its own search settings apply) against the GTP
    engine ``argv`` (named ``opponent``), the report written to ``path``; the report already there is returned.
    ``handicap``: games of that many stones at komi 0.5 (the book's handicap games); ``temperature``: a policy
    player (``visits`` < 2) samples its moves at it (0: the most probable)."""
    if path.is_file():
        return json.loads(path.read_text())
    from gotk.play.factory import make_search_player
    from gotk.play.match import Match, MatchConfig, match_report
    from gotk.search.config import SearchConfig

    kw = {"temperature": temperature} if visits < 2 else {}
    player = make_search_player(str(agent), SearchConfig(visits=visits, seed=seed), warn=lambda _: None, **kw)
    log(f"  {name} vs {opponent}: {games} games")
    match = Match(player, argv, MatchConfig(size=size, komi=0.5 if handicap else komi, games=games, timeout=120,
                                            agent_name=name, opponent_name=opponent, handicap=handicap))
    report = match_report(match, match.run())
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(report, indent=2) + "\n")
    return report


def play_anchors(agent: Path, name: str, folder: Path, games: int, gnugo_levels: tuple[int, ...],
                 gnugo: str | None, size: int, komi: float, visits: int, seed: int, log,
                 anchors: tuple[str, ...] = ()) -> dict:
    """The network against the random player, each GNU Go level and each further GNU Go ``anchors``
    (:func:`parse_anchor`): ``{"vs_random": win rate, "vs_random_score_disagreements": n, "vs_gnugo_L": ...,
    "vs_gnugo-mc8000": ..., ...}``, the reports in ``folder``."""
    out: dict = {}
    rep = play_match(agent, name, [sys.executable, "-m", "gotk", "gtp", "--agent", "random", "--seed", str(seed)],
                     RANDOM_NAME, games, folder / "vs-random.json", size, komi, visits, seed, log)
    out["vs_random"] = rep["win_rate"]
    out["vs_random_score_disagreements"] = rep.get("winner_disagreements", 0)
    binary = find_gnugo(gnugo)
    for level in gnugo_levels if binary else ():
        rep = play_match(agent, name, [binary, "--mode", "gtp", "--level", str(level), "--chinese-rules"],
                         f"gnugo-{level}", games, folder / f"vs-gnugo-{level}.json", size, komi, visits, seed, log)
        out[f"vs_gnugo_{level}"] = rep["win_rate"]
        # games whose final_score names another winner than the count the network passes by
        out[f"vs_gnugo_{level}_score_disagreements"] = rep.get("winner_disagreements", 0)
    for spec in anchors if binary else ():
        opponent, args, handicap = parse_anchor(spec)
        rep = play_match(agent, name, [binary, "--mode", "gtp", *args, "--chinese-rules"], opponent, games,
                         folder / f"vs-{opponent}.json", size, komi, visits, seed, log, handicap)
        out[f"vs_{opponent}"] = rep["win_rate"]
    return out


__all__ = ["RANDOM_NAME", "find_gnugo", "parse_anchor", "play_anchors", "play_match"]
