"""``gotk zero-compare``: two real tiny ``gotk zero`` runs, one of each loop (generations; actors and a learner), and a
real head-to-head match between their last networks, on one Elo scale and one picture; its refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gotk.play.elo import fit, read_match_reports

TINY = ["--size", "5", "--chunk-games", "2", "--visits", "4", "--fast-visits", "2", "--blocks", "1",
        "--filters", "8", "--train-steps", "2", "--batch-size", "16", "--eval-games", "2", "--eval-visits", "4",
        "--gnugo-levels", "", "--threads", "1", "--generations", "1"]
LOOPS = {"A": ["--loop", "generations", "--games", "2"],
         "B": ["--loop", "actors", "--workers", "1", "--min-rows", "8", "--calibrate-s", "0"]}
GOTK = [sys.executable, "-m", "gotk"]


def _run(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([*GOTK, *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> tuple[Path, Path, Path]:
    """Runs A (one generation) and B (actors and a learner, one network), seeds 1 and 2, and a 2-game match of A's
    network against B's."""
    root = tmp_path_factory.mktemp("cmp")
    for name, seed in (("A", "1"), ("B", "2")):
        r = _run("zero", "--out", str(root / name), *TINY, *LOOPS[name], "--seed", seed)
        assert r.returncode == 0, r.stderr
    r = _run("match", "--agent", str(root / "A" / "gen-000" / "candidate.gotk"), "--visits", "4", "--opponent",
             f"{sys.executable} -m gotk gtp --agent {root / 'B' / 'networks' / 'net-001.gotk'} --visits 4",
             "--games", "2", "--size", "5", "--komi", "7.5", "--seed", "1", "--json")
    assert r.returncode == 0, r.stderr
    (root / "h2h.json").write_text(r.stdout)
    return root / "A", root / "B", root / "h2h.json"


def test_two_runs_and_a_head_to_head_on_one_scale(two_runs, tmp_path) -> None:
    a, b, h2h = two_runs
    rep = json.loads(h2h.read_text())
    out = tmp_path / "cmp.png"
    res = _run("zero-compare", str(a), str(b), "--match", str(h2h), "--rename", f"{rep['agent']}=A:net-001",
               "--rename", f"{rep['opponent']}=B:net-001", "--out", str(out), "--json")
    assert res.returncode == 0, res.stderr
    result = json.loads(res.stdout)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the same fit made here from the reports, the runs' networks renamed by hand
    games = []
    for run, label in ((a, "A"), (b, "B")):
        reports = sorted(run.glob("gen-*/eval/*.json")) + sorted(run.glob("eval/*/*.json"))
        games += read_match_reports(reports, {"net-001": f"{label}:net-001"})
    assert len(games) == 4  # each run's network against the random player, 2 games
    h2h_games = read_match_reports([h2h], {rep["agent"]: "A:net-001", rep["opponent"]: "B:net-001"})
    assert len(h2h_games) == 2 and {g[0] for g in h2h_games} | {g[1] for g in h2h_games} == {"A:net-001", "B:net-001"}
    expected = {r.name: r.as_dict() for r in fit(games + h2h_games, "random", 0.0)}
    assert result["games"] == len(games) + 2 == sum(r["games"] for r in expected.values()) // 2
    assert [run["label"] for run in result["runs"]] == ["A", "B"]
    for run in result["runs"]:
        (point,) = run["points"]
        name = f"{run['label']}:net-001"
        assert point["name"] == name and point["hours"] > 0
        assert (point["elo"], point["ci95"]) == (expected[name]["elo"], expected[name]["ci95"])
    assert {r["name"]: r["elo"] for r in result["ratings"]}["random"] == 0.0


def test_refusals_are_one_line(two_runs, tmp_path) -> None:
    a, b, _ = two_runs
    png = str(tmp_path / "x.png")
    cases = [
        (["zero-compare", str(a), str(tmp_path), "--out", png], "not a `gotk zero` run"),
        (["zero-compare", str(a), str(a), "--out", png], "share a label"),
        (["zero-compare", str(a), str(b), "--label", "only", "--out", png], "1 labels for 2 runs"),
        (["zero-compare", str(a), "--out", str(tmp_path / "x.txt")], "PNG"),
        (["zero-compare", str(a), "--match", str(tmp_path / "none.json"), "--out", png], "not a `gotk match"),
    ]
    for args, message in cases:
        r = _run(*args, timeout=120)
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
        assert not (tmp_path / "x.png").exists()
