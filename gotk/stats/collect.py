"""The games table behind ``gotk stats``: read from a dataset's ``games.parquet``, or built by parsing SGF
sources (no replay: ``num_moves`` is the main line's length), with the counts that say what was left out."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)

from gotk.errors import GotkError
from gotk.sgf.metadata import BotList, normalise_record
from gotk.shards import manifest as M
from gotk.shards.where import Where

#: The columns of a games table built from SGF sources (those of games.parquet known without replaying).
SOURCE_SCHEMA = pa.schema([f for f in M.GAMES_SCHEMA if f.name not in ("positions", "partial", "split")])


def source_games(paths: Iterable[str | os.PathLike], bots: BotList | None = None, where: Where | None = None,
                 progress=None) -> tuple[pa.Table, dict]:
    """Parse every game under ``paths`` → ``(games table, counts)``. A game whose ``game_id`` was already
    seen (same board, setup and moves) counts as ``duplicate`` and is left out of the table, as ``gotk
    encode`` does; unreadable games and inputs are counted by reason. ``counts``: ``games_read``,
    ``skipped`` (reason → n), ``filtered_where`` (first failed term → n), ``metadata_warnings``."""
    from gotk.sgf.reader import iter_sgf
    from gotk.shards.gameid import game_id
    from gotk.sources.archives import SgfSource, iter_sources

    cols: dict[str, list] = {name: [] for name in SOURCE_SCHEMA.names}
    skipped: Counter = Counter()
    filtered: Counter = Counter()
    warnings: Counter = Counter()
    seen: set[str] = set()
    read = 0
    for item in iter_sources(paths):
        if not isinstance(item, SgfSource):
            skipped[f"input:{item.reason}"] += 1
            continue
        try:
            records = list(iter_sgf(item.data, item.archive, item.member))
        except GotkError as e:
            read += 1
            skipped[e.reason] += 1
            continue
        for rec in records:
            read += 1
            if isinstance(rec, GotkError):
                skipped[rec.reason] += 1
                continue
            meta = normalise_record(rec, bots)
            if meta["warnings"]:
                warnings.update(meta["warnings"].split(","))
            gid = game_id(rec)
            row = {"game_id": gid, "archive": item.archive, "member": item.member, "black": rec.black,
                   "white": rec.white, "handicap": int(rec.handicap), "result": str(rec.result),
                   "winner": rec.result.winner, "num_moves": rec.num_moves, **meta}
            if where is not None and (why := where.reason(row)) is not None:
                skipped["filtered_where"] += 1
                filtered[why] += 1
                continue
            if gid in seen:
                skipped["duplicate"] += 1
                continue
            seen.add(gid)
            for name in cols:
                cols[name].append(row[name])
        if progress is not None:
            progress(read)
    counts = {"games_read": read, "skipped": dict(sorted(skipped.items())),
              "filtered_where": dict(sorted(filtered.items())), "metadata_warnings": dict(sorted(warnings.items()))}
    return pa.Table.from_pydict(cols, schema=SOURCE_SCHEMA), counts


def dataset_games(folder: str | os.PathLike, where: Where | None = None,
                  storage_options: dict | None = None) -> tuple[pa.Table, dict]:
    """A dataset folder's ``games.parquet`` (rows ``where`` keeps) and the manifest's counts."""
    m = M.load_manifest(folder, storage_options)
    table = M.read_games(folder, storage_options)
    kept = where.filter_table(table) if where is not None else table
    g = m["games"]
    skipped = dict(g.get("skipped", {}))
    if where is not None and kept.num_rows != table.num_rows:
        skipped["filtered_where (stats)"] = table.num_rows - kept.num_rows
    counts = {"games_read": g["read"], "skipped": skipped, "filtered_where": dict(g.get("filtered_where", {})),
              "metadata_warnings": dict(g.get("metadata_warnings", {})), "partial": g.get("partial", 0),
              "positions": int(pa.compute.sum(kept.column("positions")).as_py() or 0)}
    return kept, counts
