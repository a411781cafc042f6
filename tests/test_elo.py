"""Elo ratings from match reports (``gotk elo``): the Bradley–Terry fit against closed forms and simulated
players of known strength, real ``gotk match --json`` reports, and the refusals."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gotk.play.elo import EloError, fit, read_match_reports

REPO = Path(__file__).resolve().parents[1]


def games_between(a: str, b: str, wins: int, losses: int, draws: int = 0) -> list[tuple]:
    return [(a, b, 1.0)] * wins + [(b, a, 1.0)] * losses + [(a, b, 0.5)] * draws


def by_name(ratings) -> dict:
    return {r.name: r for r in ratings}


def test_two_players_match_the_closed_form() -> None:
    # 300 of 400: the maximum-likelihood gap is 400 log10(300 / 100); its standard error 400/ln10 / sqrt(n p q)
    r = by_name(fit(games_between("A", "B", 300, 100), anchor="B", anchor_elo=1000, prior_games=0))
    assert r["B"].elo == 1000 and r["B"].ci95 == 0
    assert r["A"].elo == pytest.approx(1000 + 400 * math.log10(3), abs=1e-6)
    se = 400 / math.log(10) / math.sqrt(400 * 0.75 * 0.25)
    assert r["A"].ci95 == pytest.approx(1.96 * se, rel=1e-6)
    assert (r["A"].games, r["A"].score) == (400, 300)
    # draws are half a win: 100 wins + 200 draws + 100 losses is an even match
    r = by_name(fit(games_between("A", "B", 100, 100, 200), anchor="B", prior_games=0))
    assert r["A"].elo == pytest.approx(0, abs=1e-6)


def test_simulated_players_of_known_strength_are_recovered() -> None:
    rng = np.random.default_rng(7)
    true = {"gnugo": 0.0, "policy": 150.0, "search50": 350.0, "search200": 500.0}
    games = []
    names = list(true)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            p = 1 / (1 + 10 ** ((true[b] - true[a]) / 400))
            for _ in range(600):
                games.append((a, b, float(rng.random() < p)))
    r = by_name(fit(games, anchor="gnugo"))
    for name, elo in true.items():
        assert abs(r[name].elo - elo) < max(r[name].ci95, 1e-9) + 1e-6, (name, r[name], elo)
    assert [x.name for x in fit(games, anchor="gnugo")] == ["search200", "search50", "policy", "gnugo"]


def test_a_perfect_score_stays_finite_with_the_prior() -> None:
    games = games_between("search", "policy", 10, 0)
    r = by_name(fit(games, anchor="policy", prior_games=2))
    # 10 wins + 2 virtual draws against the anchor: 11 of 12, i.e. 400 log10(11)
    assert r["search"].elo == pytest.approx(400 * math.log10(11), abs=1e-6)
    with pytest.raises(EloError, match="won or lost every game"):
        fit(games, anchor="policy", prior_games=0)


def test_refusals() -> None:
    games = games_between("A", "B", 3, 2) + games_between("C", "D", 2, 2)
    with pytest.raises(EloError, match="no chain of games links C, D"):
        fit(games, anchor="A")
    with pytest.raises(EloError, match="anchor 'Z' played no game"):
        fit(games, anchor="Z")


def report(agent: str, opponent: str, results: list[tuple[str, str | None]]) -> dict:
    """A ``gotk match --json``-shaped report: (agent colour, winner) per game."""
    return {"agent": agent, "opponent": opponent, "per_game": [
        {"game": i + 1, "agent_colour": c, "winner": w, "result": "Void" if w == "void" else
         ("0" if w is None else f"{w}+R")} for i, (c, w) in enumerate(results)]}


def test_reports_read_colours_draws_and_void_games(tmp_path) -> None:
    f = tmp_path / "m.json"
    f.write_text(json.dumps(report("gotk-x-puct50v", "GNU Go 3.8",
                                   [("B", "B"), ("W", "B"), ("B", None), ("W", "void")])))
    games = read_match_reports([f])
    assert games == [("gotk-x-puct50v", "GNU Go 3.8", 1.0), ("GNU Go 3.8", "gotk-x-puct50v", 1.0),
                     ("gotk-x-puct50v", "GNU Go 3.8", 0.5)]
    assert read_match_reports([f], {"GNU Go 3.8": "gnugo10"})[0][1] == "gnugo10"
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(EloError, match="not a `gotk match --json` report"):
        read_match_reports([bad])
    same = tmp_path / "same.json"
    same.write_text(json.dumps(report("gotk-x", "gotk-x", [("B", "B")])))
    with pytest.raises(EloError, match="--rename"):
        read_match_reports([same])


def test_cli_rates_real_match_reports(tmp_path) -> None:
    """Two real ``gotk match --json`` runs (the random player against ``gotk gtp --random`` on 5x5), rated by
    ``gotk elo``; then the refusals exit 2 with a one-line message."""
    env_cmd = [sys.executable, "-m", "gotk"]
    files = []
    for seed in (1, 2):
        out = subprocess.run(env_cmd + ["match", "--agent", "random", "--opponent",
                                        f"{sys.executable} -m gotk gtp --random --seed {seed}", "--games", "2",
                                        "--size", "5", "--seed", str(seed), "--json"],
                             capture_output=True, text=True, timeout=300, cwd=REPO, check=True).stdout
        f = tmp_path / f"m{seed}.json"
        f.write_text(out)
        files.append(f)
    rep = json.loads(files[0].read_text())
    res = subprocess.run(env_cmd + ["elo", *map(str, files), "--anchor", rep["opponent"], "--rename",
                                    f"{rep['agent']}=me", "--json"], capture_output=True, text=True, timeout=120,
                         cwd=REPO)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    rated = {r["name"]: r for r in out["ratings"]}
    decided = sum(len(read_match_reports([f])) for f in files)
    assert out["games"] == decided and rated["me"]["games"] == decided
    assert rated[rep["opponent"]]["elo"] == 0 and rated[rep["opponent"]]["ci95"] == 0
    table = subprocess.run(env_cmd + ["elo", *map(str, files), "--anchor", rep["opponent"]], capture_output=True,
                           text=True, timeout=120, cwd=REPO)
    assert table.returncode == 0 and "| player | Elo |" in table.stdout
    bad = subprocess.run(env_cmd + ["elo", str(files[0]), "--anchor", "nobody"], capture_output=True, text=True,
                         timeout=120, cwd=REPO)
    assert bad.returncode == 2 and "anchor 'nobody' played no game" in bad.stderr and "Traceback" not in bad.stderr
