"""Metadata benchmark: what normalising a game's header costs next to parsing the game.

Times, in one process on one core: ``read_sgf`` of every game (archive members already in memory), then
``gotk.sgf.metadata.normalise_record`` of every parsed record (rank, komi, rules, time, date, end, source,
bots), and one ``--where`` predicate (``Where.matches``) per game. Ratios are measured in the same run.

Usage::

    python bench/metadata.py [PATHS...] [--json-out FILE]      (default: the 2006 KGS archive)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import kgs_dir  # noqa: E402
from gotk.sgf.metadata import default_bots, normalise_record  # noqa: E402
from gotk.sgf.reader import iter_sgf  # noqa: E402
from gotk.shards.manifest import ENCODE_WHERE_COLUMNS  # noqa: E402
from gotk.shards.where import compile_where  # noqa: E402
from gotk.sources.archives import SgfSource, iter_sources  # noqa: E402

WHERE = "min(black_rank, white_rank) >= 5d and handicap = 0 and not (black_is_bot or white_is_bot) and year >= 2015"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--json-out")
    a = ap.parse_args()
    paths = a.paths or [str(kgs_dir() / "KGS-2006-19-10388-.tar.gz")]
    items = [i for i in iter_sources(paths) if isinstance(i, SgfSource)]
    t = time.perf_counter()
    recs = [r for i in items for r in iter_sgf(i.data, i.archive, i.member) if not isinstance(r, Exception)]
    parse_s = time.perf_counter() - t
    default_bots()  # load the list once, as a run does
    t = time.perf_counter()
    metas = [normalise_record(r) for r in recs]
    norm_s = time.perf_counter() - t
    w = compile_where(WHERE, ENCODE_WHERE_COLUMNS)
    rows = [{"handicap": r.handicap, **m} for r, m in zip(recs, metas, strict=True)]
    t = time.perf_counter()
    kept = sum(w.matches(row) for row in rows)
    where_s = time.perf_counter() - t
    n = len(recs)
    out = {"games": n, "parse_s": round(parse_s, 3), "normalise_s": round(norm_s, 3), "where_s": round(where_s, 3),
           "us_per_game": {"parse": round(1e6 * parse_s / n, 1), "normalise": round(1e6 * norm_s / n, 1),
                           "where": round(1e6 * where_s / n, 1)},
           "normalise_over_parse": round(norm_s / parse_s, 4), "where_kept": kept, "paths": paths}
    print(json.dumps(out, indent=2))
    print(f"\n| step | µs/game | share of parse |\n|---|--:|--:|\n| read_sgf | {out['us_per_game']['parse']} | 1 |"
          f"\n| normalise_record | {out['us_per_game']['normalise']} | {norm_s / parse_s:.3f} |"
          f"\n| --where matches | {out['us_per_game']['where']} | {where_s / parse_s:.4f} |")
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
