"""bench/search.py --leelaz: gotk's search and Leela Zero's engine on the same positions (a tiny network)."""

from __future__ import annotations

import json

import pytest

from gotk.export.leelaz_check import find_leelaz


def test_search_bench_against_leelaz(tmp_path):
    if find_leelaz() is None:
        pytest.skip("leelaz is not installed")
    from bench.search import main

    out = tmp_path / "r.json"
    assert main(["--leelaz", "--amp", "--net", "1x8", "--visits", "24", "--positions", "2", "--json", str(out)]) == 0
    r = json.loads(out.read_text())
    rows = {row["engine"]: row for row in r["results"]}
    assert set(rows) == {"gotk batch 8", "gotk batch 1", "gotk bf16 batch 8", "leelaz"}
    # both searched each position to the visits asked (leelaz's playouts: its root visit is not one)
    assert rows["gotk batch 8"]["playouts"] >= 2 * 20
    assert 2 * 20 <= rows["leelaz"]["playouts"] <= 2 * 24
    assert rows["leelaz"]["vs_leelaz_wall"] == 1.0 and rows["leelaz"]["own_nps"] > 0
    for row in rows.values():
        assert row["playouts_per_s"] > 0 and row["playouts_per_cpu_s"] > 0


@pytest.mark.slow
def test_search_bench_plays_leelaz_on_the_shipped_agents_weights(tmp_path):
    """``--agent kgs-lz --games 2``: the speed rows and then two real games against leelaz on the same weights,
    each recorded in the JSON report that ``gotk elo`` reads (once extracted) and as SGF."""
    if find_leelaz() is None:
        pytest.skip("leelaz is not installed")
    from bench.search import main
    from gotk.play.elo import read_match_reports

    out, sgf = tmp_path / "r.json", tmp_path / "sgf"
    assert main(["--leelaz", "--agent", "kgs-lz", "--visits", "8", "--positions", "1", "--games", "2",
                 "--json", str(out), "--sgf-out", str(sgf)]) == 0
    r = json.loads(out.read_text())
    assert r["model"].startswith("kgs-lz: leelaz 6x64")
    assert {row["engine"] for row in r["results"]} == {"gotk batch 8", "gotk batch 1", "leelaz"}
    match = r["match"]
    assert match["games"] == 2 and match["agent"] == "gotk-search-8" and match["opponent"] == "leelaz-8"
    assert [g["agent_colour"] for g in match["per_game"]] == ["B", "W"]
    assert all(g["winner"] in ("B", "W") and g["moves"] > 20 for g in match["per_game"])
    assert len(list(sgf.glob("*.sgf"))) == 2
    (tmp_path / "m.json").write_text(json.dumps(match))
    assert read_match_reports([tmp_path / "m.json"])  # gotk elo reads it
