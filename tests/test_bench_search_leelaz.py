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
