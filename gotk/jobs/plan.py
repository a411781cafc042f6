"""The plan of an encode run (parent side): which game goes to which split and shard."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pyarrow as pa

from gotk.jobs import scan_files as SF
from gotk.jobs.splits import assign_split, matches_test_from
from gotk.shards import format as S
from gotk.shards import manifest as M
from gotk.storage import Storage, join


class Planner:
    """Consumes scan results in unit order: global dedupe by ``game_id`` (first in source order wins), split
    assignment, ``games.parquet`` rows, and each split's row stream cut into shard specs of exactly
    ``shard_rows`` rows (the digest of a spec identifies its content for ``--resume``)."""

    def __init__(self, out_dir: Path | str, splits: list[tuple[str, float]], shard_rows: int, test_from: list[str],
                 plan_key: str, storage: Storage | None = None) -> None:
        self.out_dir = out_dir
        self.storage = storage if storage is not None else Storage.for_url(out_dir)
        self.splits = splits
        self.shard_rows = shard_rows
        self.test_from = test_from
        self.plan_key = plan_key
        self.seen: set[str] = set()
        self.unit_digests: dict[int, str] = {}
        self.games_read = 0
        self.skipped: Counter = Counter()
        self.partial: Counter = Counter()
        self.examples: dict[str, str] = {}
        self.warnings: Counter = Counter()  # metadata warnings (bad_rank …) over games read
        self.filtered_where: Counter = Counter()  # --where: the first failed term → games
        names = [n for n, _ in splits]
        if "test" not in names and test_from:
            names.append("test")
        self.split_names = names
        self.split_games: Counter = Counter()
        self.split_rows: Counter = Counter()
        self._cur: dict[str, list] = {n: [] for n in names}  # pieces of the shard being filled
        self._cur_rows: Counter = Counter()
        self._next_index: Counter = Counter()
        self.games = S.ShardWriter(join(out_dir, M.GAMES_NAME), M.GAMES_SCHEMA, M.GAMES_ROW_GROUP_ROWS,
                                   dictionary=["archive", "black_rank_raw", "white_rank_raw", "rules", "rules_raw",
                                               "split", "winner", "end", "source", "time_system", "komi_raw"],
                                   statistics=[], storage=self.storage)

    def add_unit(self, unit_id: int, stats: dict, table: pa.Table | None = None) -> list[dict]:
        """Fold one unit's scan result in (``table``: its games, else read from the scan file);
        returns the shard specs completed by it."""
        self.unit_digests[unit_id] = stats["digest"]
        self.games_read += stats["games_read"]
        self.skipped.update(stats["skipped"])
        self.partial.update(stats["partial"])
        self.warnings.update(stats.get("warnings", {}))
        self.filtered_where.update(stats.get("filtered_where", {}))
        for k, v in stats["examples"].items():
            self.examples.setdefault(k, v)
        if not stats["candidates"]:
            return []
        if table is None:
            table = SF.read_scan_table(SF.scan_path(join(self.out_dir, M.WORK_NAME), unit_id), self.storage)
        # only the columns the plan reads become Python lists; the games table rows are taken in Arrow
        t = table.select(["game_id", "archive", "member", "partial", "path", "rows"]).to_pydict()
        ready: list[dict] = []
        keep: list[int] = []
        keep_split: list[str] = []
        keep_rows: list[int] = []
        seen, splits, test_from, shard_rows = self.seen, self.splits, self.test_from, self.shard_rows
        cur, cur_rows = self._cur, self._cur_rows
        for i, gid in enumerate(t["game_id"]):
            if gid in seen:
                where = f"{t['archive'][i]}:{t['member'][i]}" if t["member"][i] else t["archive"][i]
                self.skipped["duplicate"] += 1
                self.examples.setdefault("duplicate", f"{where}: game_id {gid}")
                if t["partial"][i]:
                    self.partial[t["partial"][i]] -= 1
                continue
            seen.add(gid)
            split = "test" if test_from and matches_test_from(t["path"][i], test_from) else assign_split(gid, splits)
            rows = int(t["rows"][i])
            keep.append(i)
            keep_split.append(split)
            keep_rows.append(rows)
            lo = 0
            while lo < rows:
                hi = min(rows, lo + shard_rows - cur_rows[split])
                cur[split].append([unit_id, i, lo, hi])
                cur_rows[split] += hi - lo
                lo = hi
                if cur_rows[split] == shard_rows:
                    ready.append(self._cut(split))
        self.split_games.update(keep_split)
        for split, rows in zip(keep_split, keep_rows, strict=True):
            self.split_rows[split] += rows
        if keep:
            kept = table if len(keep) == table.num_rows else table.take(pa.array(keep, pa.int64()))
            columns = [pa.array(keep_split, f.type) if f.name == "split" else
                       pa.array(keep_rows, f.type) if f.name == "positions" else kept.column(f.name).cast(f.type)
                       for f in M.GAMES_SCHEMA]
            self.games.write(pa.Table.from_arrays(columns, schema=M.GAMES_SCHEMA).combine_chunks())
        return ready

    def _cut(self, split: str) -> dict:
        pieces = self._cur[split]
        index = self._next_index[split]
        self._next_index[split] += 1
        self._cur[split] = []
        self._cur_rows[split] = 0
        units = sorted({p[0] for p in pieces})
        h = hashlib.blake2b(digest_size=16)
        h.update(json.dumps([self.plan_key, split, index, pieces, [self.unit_digests[u] for u in units]]).encode())
        return {"split": split, "index": index, "file": f"{split}/part-{index:05d}.parquet", "digest": h.hexdigest(),
                "pieces": pieces}

    def finish(self) -> list[dict]:
        return [self._cut(n) for n in self.split_names if self._cur[n]]
