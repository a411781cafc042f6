"""The ``gotk stats`` report: counts over a games table (see :mod:`gotk.stats.collect`) as one JSON-able
dict, and its terminal rendering."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa

from gotk.sgf.metadata import END_KINDS, RANK_BANDS, rank_band, rank_label

LENGTH_BINS = (0, 50, 100, 150, 200, 250, 300, 350, 400)  # main-line moves; the last bin is open


def _col(table: pa.Table, name: str) -> list:
    return table.column(name).to_pylist() if name in table.column_names else [None] * table.num_rows


def _key(v) -> str:
    if v is None:
        return "?"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _counts(values, order: list | None = None) -> dict[str, int]:
    """value → count with string keys: in ``order`` when given (others after), else sorted (None last)."""
    c = Counter(values)
    keys = list(order or []) + sorted((k for k in c if order is None or k not in order),
                                      key=lambda k: (k is None, k if not isinstance(k, str) else 0, str(k)))
    return {_key(k): c[k] for k in keys if c.get(k)}


def build_report(table: pa.Table, counts: dict) -> dict:
    """Every table of the report (games by year and source, ranks, black × white rank bands, handicap,
    komi, rules, result kinds, lengths, bots, time systems) plus the skip/duplicate/warning ``counts``."""
    n = table.num_rows
    years, sources = _col(table, "year"), _col(table, "source")
    by_year_source: dict[str, dict[str, int]] = {}
    for y, s in zip(years, sources, strict=True):
        d = by_year_source.setdefault(_key(y), {})
        d[s or "?"] = d.get(s or "?", 0) + 1
    by_year_source = {k: by_year_source[k] for k in sorted(by_year_source, key=lambda k: (k == "?", k))}
    black, white = _col(table, "black_rank"), _col(table, "white_rank")
    players = [r for r in black + white]
    band_names = [b for b, _, _ in RANK_BANDS] + ["?"]
    matrix = np.zeros((len(band_names), len(band_names)), dtype=np.int64)
    for b, w in zip(black, white, strict=True):
        matrix[band_names.index(rank_band(b)), band_names.index(rank_band(w))] += 1
    moves = np.array(_col(table, "num_moves"), dtype=np.int64)
    edges = list(LENGTH_BINS) + [max(int(moves.max()) + 1 if n else 0, LENGTH_BINS[-1] + 1)]
    hist = np.histogram(moves, bins=edges)[0] if n else np.zeros(len(LENGTH_BINS), np.int64)
    labels = [f"{lo}-{hi - 1}" for lo, hi in zip(LENGTH_BINS[:-1], LENGTH_BINS[1:], strict=True)] \
        + [f"{LENGTH_BINS[-1]}+"]
    bb, wb = _col(table, "black_is_bot"), _col(table, "white_is_bot")
    any_bot = sum(bool(x) or bool(y) for x, y in zip(bb, wb, strict=True))
    skipped = dict(counts.get("skipped", {}))
    return {
        "games": n,
        "games_read": counts.get("games_read", n),
        "duplicates": skipped.get("duplicate", 0),
        "skipped": skipped,
        "filtered_where": counts.get("filtered_where", {}),
        "metadata_warnings": counts.get("metadata_warnings", {}),
        **({"positions": counts["positions"]} if counts.get("positions") is not None else {}),
        "by_year": _counts(years),
        "by_source": _counts(sources),
        "by_year_source": by_year_source,
        "ranks": {rank_label(k) if k is not None else "?": v
                  for k, v in sorted(Counter(players).items(), key=lambda kv: (kv[0] is None, kv[0] or 0))},
        "rank_bands": _counts([rank_band(r) for r in players], band_names),
        "rank_matrix": {"rows": "black", "columns": "white", "bands": band_names, "counts": matrix.tolist()},
        "handicap": _counts(_col(table, "handicap")),
        "komi": _counts(_col(table, "komi")),
        "rules": _counts(_col(table, "rules")),
        "results": _counts(_col(table, "end"), list(END_KINDS)),
        "winner": _counts(["black" if w == "b" else "white" if w == "w" else "none" for w in _col(table, "winner")],
                          ["black", "white", "none"]),
        "length": {"bins": labels, "counts": [int(x) for x in hist],
                   "mean": round(float(moves.mean()), 1) if n else None,
                   "median": float(np.median(moves)) if n else None},
        "bots": {"games_with_bot": any_bot, "share": round(any_bot / n, 4) if n else None,
                 "black_bot": sum(bool(x) for x in bb), "white_bot": sum(bool(x) for x in wb),
                 "bot_vs_bot": sum(bool(x) and bool(y) for x, y in zip(bb, wb, strict=True))},
        "time_system": _counts(_col(table, "time_system")),
    }


def _table(title: str, d: dict, width: int = 12) -> list[str]:
    if not d:
        return []
    total = sum(d.values()) or 1
    lines = ["", title]
    for k, v in d.items():
        lines.append(f"  {k:<{width}} {v:>9,}  {100 * v / total:5.1f}%")
    return lines


def format_report(r: dict) -> str:
    """The report as terminal tables."""
    lines = [f"games {r['games']:,} (read {r['games_read']:,}, duplicates {r['duplicates']:,}, "
             f"skipped {sum(v for k, v in r['skipped'].items() if k != 'duplicate'):,})"]
    if "positions" in r:
        lines[0] += f", positions {r['positions']:,}"
    sources = list(r["by_source"])
    if r["by_year_source"]:
        lines += ["", "games by year and source", "  year   " + "".join(f"{s:>9}" for s in sources) + "    total"]
        for y, d in r["by_year_source"].items():
            lines.append(f"  {y:<6} " + "".join(f"{d.get(s, 0):>9,}" for s in sources) + f"{sum(d.values()):>9,}")
    lines += _table("ranks (every player of every game)", r["rank_bands"], 8)
    bands = r["rank_matrix"]["bands"]
    m = r["rank_matrix"]["counts"]
    used = [i for i in range(len(bands)) if any(m[i]) or any(row[i] for row in m)]
    if used:
        lines += ["", "black rank (rows) x white rank (columns)",
                  "  " + " " * 8 + "".join(f"{bands[j]:>8}" for j in used)]
        for i in used:
            lines.append(f"  {bands[i]:<8}" + "".join(f"{m[i][j]:>8,}" for j in used))
    lines += _table("handicap", r["handicap"], 6)
    lines += _table("komi", r["komi"], 6)
    lines += _table("rules", r["rules"])
    lines += _table("result kinds", r["results"], 8)
    lines += _table("winner", r["winner"], 8)
    lines += _table("time system", r["time_system"])
    ln = r["length"]
    lines += _table(f"game length (main-line moves; mean {ln['mean']}, median {ln['median']})",
                    dict(zip(ln["bins"], ln["counts"], strict=True)), 8)
    b = r["bots"]
    if r["games"]:
        lines += ["", f"bots: {b['games_with_bot']:,} games with a program ({100 * (b['share'] or 0):.1f}%): "
                      f"black {b['black_bot']:,}, white {b['white_bot']:,}, both {b['bot_vs_bot']:,}"]
    lines += _table("skipped by reason", r["skipped"], 20)
    lines += _table("filtered out by --where (first failed term)", r["filtered_where"], 40)
    lines += _table("metadata read as null (games kept)", r["metadata_warnings"], 10)
    return "\n".join(lines)
