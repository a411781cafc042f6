"""gotk serve's games table on a large games.parquet: milliseconds per request for typical table queries.

A copy of a real dataset folder gets a ``games.parquet`` of ``--games`` rows (default 200,000): the real rows
tiled, each copy with its own ``game_id`` and its date shifted by whole years so that the filters keep
selecting real-looking subsets. Each query runs through :meth:`gotk.serve.data.DatasetView.query_games` (what
the HTTP handler calls) ``--repeat`` times in a fresh process: the first run (which sorts the whole table by
that column the first time the column is asked for), the median of the repeats and the best are reported,
plus the one-off cost of loading the table and of the summary page's ``gotk stats`` report and charts
(computed once per dataset, then kept).

Usage::

    python bench/serve_games.py DATASET [--games N] [--repeat R] [--json-out FILE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from gotk.serve.data import DatasetView  # noqa: E402

QUERIES = {
    "first page, by date": {},
    "sorted by moves, descending": {"sort": "num_moves", "desc": True},
    "player substring": {"player": "dinh"},
    "rank 6d + result W+": {"rank": "6d", "result": "W+"},
    "date range (one month)": {"date_from": "2030-02-01", "date_to": "2030-02"},
    "all filters, sorted by black": {"player": "bot", "rank": "6d", "result": "B+", "date_from": "2020",
                                     "sort": "black"},
    "last page": {"offset": -1},
}


def tiled(games: pa.Table, n: int) -> pa.Table:
    reps = -(-n // games.num_rows)
    parts = []
    for r in range(reps):
        t = games
        t = t.set_column(t.schema.get_field_index("game_id"), "game_id",
                         pc.binary_join_element_wise(t["game_id"], pa.scalar(f"-{r}"), ""))
        year = pc.cast(pc.add(pc.cast(pc.utf8_slice_codeunits(t["date"], 0, 4), pa.int32()), r % 40), pa.string())
        t = t.set_column(t.schema.get_field_index("date"), "date",
                         pc.binary_join_element_wise(year, pc.utf8_slice_codeunits(t["date"], 4, 10), ""))
        parts.append(t)
    return pa.concat_tables(parts).slice(0, n)


def viewer_times(folder: Path) -> dict:
    """The game viewer on the real dataset: first game (reads the split's game_id column once), five other
    games of the same split (median), and drawing one position (median of 20)."""
    from gotk.serve.data import position_board
    from gotk.serve.draw import to_svg

    ds = DatasetView(folder, "real")
    split = max(ds.manifest["splits"], key=lambda s: ds.manifest["splits"][s]["rows"])
    ids = pq.read_table(folder / "games.parquet", columns=["game_id", "split"]).to_pylist()
    ids = [g["game_id"] for g in ids if g["split"] == split]
    t0 = time.perf_counter()
    _m, gp = ds.positions(ids[0])
    first = 1000 * (time.perf_counter() - t0)
    later = []
    for g in ids[len(ids) // 7::len(ids) // 7][:5]:  # five other games, spread over the split (none cached)
        t0 = time.perf_counter()
        _m, gp = ds.positions(g)
        later.append(1000 * (time.perf_counter() - t0))
    second = statistics.median(later)
    names = ds.encoder["plane_names"][:2]
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        to_svg(position_board(gp, len(gp.label) // 2, ds.encoder, names))
        times.append(1000 * (time.perf_counter() - t0))
    return {"rows": ds.manifest["splits"][split]["rows"], "first_game_ms": first, "next_game_ms": second,
            "position_ms": statistics.median(times)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--games", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json-out", type=Path)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "big"
        shutil.copytree(a.dataset, folder, ignore=shutil.ignore_patterns(".work"))
        big = tiled(pq.read_table(a.dataset / "games.parquet"), a.games)
        pq.write_table(big, folder / "games.parquet")
        ds = DatasetView(folder, "big")
        t0 = time.perf_counter()
        ds.games()
        load_ms = 1000 * (time.perf_counter() - t0)
        results = {}
        for name, q in QUERIES.items():
            q = dict(q)
            if q.get("offset") == -1:
                q["offset"] = (a.games - 1) // 50 * 50
            times, total = [], 0
            for _ in range(a.repeat):
                t0 = time.perf_counter()
                total = ds.query_games(**q)["total"]
                times.append(1000 * (time.perf_counter() - t0))
            results[name] = {"first_ms": times[0], "median_ms": statistics.median(times[1:] or times),
                             "best_ms": min(times), "matches": total}
        t0 = time.perf_counter()
        ds.stats()
        stats_ms = 1000 * (time.perf_counter() - t0)
        t0 = time.perf_counter()
        ds.chart("years")  # draws all six
        charts_ms = 1000 * (time.perf_counter() - t0)
    viewer = viewer_times(a.dataset)
    out = {"games": a.games, "load_ms": load_ms, "repeat": a.repeat, "queries": results, "viewer": viewer,
           "stats_ms": stats_ms, "charts_ms": charts_ms}
    print(f"games.parquet with {a.games:,} games: loaded in {load_ms:.0f} ms (once per dataset)")
    print("| query | matching games | first ms | median ms (repeats) | best ms |\n|---|--:|--:|--:|--:|")
    for name, r in results.items():
        print(f"| {name} | {r['matches']:,} | {r['first_ms']:.1f} | {r['median_ms']:.1f} | {r['best_ms']:.1f} |")
    print(f"\ngame viewer on {a.dataset} ({viewer['rows']:,} positions in its largest split): first game opened "
          f"in {viewer['first_game_ms']:.0f} ms (builds the split's game index), other games in "
          f"{viewer['next_game_ms']:.0f} ms (median of 5), one position drawn as SVG with 2 planes in "
          f"{viewer['position_ms']:.2f} ms")
    print(f"summary page statistics (once per dataset): gotk stats report {stats_ms:.0f} ms, its six charts "
          f"{charts_ms:.0f} ms")
    if a.json_out:
        a.json_out.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
