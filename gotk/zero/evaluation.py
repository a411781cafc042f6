"""Matches of a ``gotk zero`` network against the anchors: the random player and GNU Go at each level (when it is
installed), one ``gotk match`` report per opponent, skipped when its report is already there (a rerun resumes)."""

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


def play_match(agent: Path, name: str, argv: list[str], opponent: str, games: int, path: Path, size: int,
               komi: float, visits: int, seed: int, log) -> dict:
    """``games`` games of the network ``agent`` (named ``name``; its own search settings apply) against the GTP
    engine ``argv`` (named ``opponent``), the report written to ``path``; the report already there is returned."""
    if path.is_file():
        return json.loads(path.read_text())
    from gotk.play.factory import make_search_player
    from gotk.play.match import Match, MatchConfig, match_report
    from gotk.search.config import SearchConfig

    player = make_search_player(str(agent), SearchConfig(visits=visits, seed=seed), warn=lambda _: None)
    log(f"  {name} vs {opponent}: {games} games")
    match = Match(player, argv, MatchConfig(size=size, komi=komi, games=games, timeout=120, agent_name=name,
                                            opponent_name=opponent))
    report = match_report(match, match.run())
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(report, indent=2) + "\n")
    return report


def play_anchors(agent: Path, name: str, folder: Path, games: int, gnugo_levels: tuple[int, ...],
                 gnugo: str | None, size: int, komi: float, visits: int, seed: int, log) -> dict:
    """The network against the random player and each GNU Go level: ``{"vs_random": win rate,
    "vs_random_score_disagreements": n, "vs_gnugo_L": ..., ...}``, the reports in ``folder``."""
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
    return out


__all__ = ["RANDOM_NAME", "find_gnugo", "play_anchors", "play_match"]
