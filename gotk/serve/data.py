"""Datasets as the web app sees them: the manifest summary, the games table (filtered, sorted and paged
with ``pyarrow.compute``) and the positions of one game, read through the loader's own APIs
(:class:`gotk.datasets.SplitIndex` for the split's files and row groups, :func:`gotk.shards.decode_features`
for the planes), so the planes shown are the ones training reads.

Every request names a dataset by its id (given at start-up) and a game by its ``game_id`` (looked up
in ``games.parquet``): nothing a request sends is ever used as a path.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gotk.errors import GotkError

GAME_COLUMNS = ("game_id", "split", "date", "black", "black_rank", "white", "white_rank", "result", "komi",
                "handicap", "num_moves", "positions", "partial")
RAW_COLUMNS = {"black_rank": "black_rank_raw", "white_rank": "white_rank_raw"}
SORTABLE = set(GAME_COLUMNS)
MAX_PAGE = 500


# a prefix of an ISO date (the table's dates are YYYY-MM-DD text): "2017", "2017-02", "2017-02-1" (days 10-19)
_DATE_PREFIX = re.compile(r"[0-9]{4}(-([01]|0[1-9]|1[0-2])?(-([0-3]|0[1-9]|[12][0-9]|3[01])?)?)?")


class ServeError(GotkError):
    """A request the app answers with a 4xx status and a message (``status``: the HTTP code)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__("bad_request" if status < 500 else "error", message)
        self.status = status
        self.message = message


@dataclass
class GamePositions:
    """One game's rows of its split, in move order: planes ``(N, C, H, W)`` as the loader decodes them,
    ``label``, ``move_number``, ``to_play``, ``value``, and ``metadata`` ``(N, 192)``: the rows' metadata inputs
    (KataGo's human-SL vector, from the player to move's view) when the shards have that column, else None."""

    planes: np.ndarray
    label: np.ndarray
    move_number: np.ndarray
    to_play: np.ndarray
    value: np.ndarray
    metadata: np.ndarray | None = None


class DatasetView:
    """One dataset folder named on the command line (``ident``: its id in URLs)."""

    def __init__(self, path: str | Path, ident: str) -> None:
        from gotk.shards.manifest import load_manifest

        self.path = Path(path)
        self.ident = ident
        self.manifest = load_manifest(self.path)
        self._stamp = self._manifest_stamp()
        self.encoder = self.manifest["encoder"]
        self.size = int(self.encoder["board_size"])
        self._lock = threading.Lock()
        self._games: pa.Table | None = None
        self._folded: dict[str, pa.ChunkedArray] = {}
        self._game_rows: dict[str, dict[str, list[int]]] = {}  # split -> game_id -> row-group positions
        self._indexes: dict = {}
        self._cache: OrderedDict[str, GamePositions] = OrderedDict()
        self._orders: OrderedDict[tuple[str, bool], pa.Array] = OrderedDict()
        self._stats: dict | None = None
        self._charts: dict[str, bytes] | None = None

    # --- availability --------------------------------------------------------------------------

    def _manifest_stamp(self) -> tuple[int, int] | None:
        from gotk.shards.manifest import MANIFEST_NAME

        try:
            st = (self.path / MANIFEST_NAME).stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def check(self) -> None:
        """Raise a 410 :class:`ServeError` when the dataset has gone (removed or moved while serving) or was
        written again (its manifest changed: what was read at start-up no longer describes it)."""
        from gotk.shards.manifest import MANIFEST_NAME

        stamp = self._manifest_stamp()
        if stamp is None:
            raise ServeError(410, f"dataset {self.ident!r} is no longer there ({MANIFEST_NAME} is missing): "
                                  "was it removed or moved while gotk serve was running?")
        if stamp != self._stamp:
            raise ServeError(410, f"dataset {self.ident!r} was written again while gotk serve was running "
                                  f"({MANIFEST_NAME} changed): restart gotk serve to see the new data")

    def _gone(self, e: Exception) -> ServeError:
        return ServeError(410, f"dataset {self.ident!r} cannot be read any more ({type(e).__name__}: "
                               f"{str(e).replace(str(self.path), '<dataset>')}); was it changed while serving?")

    # --- summary -------------------------------------------------------------------------------

    def summary(self) -> dict:
        from gotk.shards.manifest import summary_lines

        self.check()
        m = self.manifest
        return {"id": self.ident, "name": self.path.name, "lines": summary_lines(m), "encoder": self.encoder,
                "splits": {k: {"games": v["games"], "rows": v["rows"], "shards": len(v["shards"])}
                           for k, v in m["splits"].items()},
                "games": m["games"]}

    def stats(self) -> dict:
        """The ``gotk stats`` report of this dataset's games (:func:`gotk.stats.build_report` over
        :func:`gotk.stats.dataset_games`: the same numbers ``gotk stats DATASET --json`` prints)."""
        from gotk.stats import build_report, dataset_games

        self.check()
        with self._lock:
            if self._stats is None:
                try:
                    table, counts = dataset_games(self.path)
                except (OSError, ValueError, pa.ArrowInvalid) as e:
                    raise self._gone(e) from e
                self._stats = build_report(table, counts)
            return self._stats

    def chart(self, name: str) -> bytes:
        """One chart of :meth:`stats` as PNG (every chart is drawn on the first request, then kept)."""
        from gotk.stats.plots import CHARTS, render_charts

        if name not in CHARTS:
            raise ServeError(404, f"no chart {name[:40]!r}; the charts are: {', '.join(CHARTS)}")
        report = self.stats()
        with self._lock:
            if self._charts is None:
                self._charts = render_charts(report)
            return self._charts[name]

    # --- games table ---------------------------------------------------------------------------

    def games(self) -> pa.Table:
        with self._lock:
            if self._games is None:
                from gotk.shards.manifest import read_games

                self.check()
                try:
                    # ranks shown and matched as the files wrote them (games.parquet v2 keeps them as *_raw);
                    # read through the format's owner, which verifies the page checksums
                    t = read_games(self.path, columns=[RAW_COLUMNS.get(c, c) for c in GAME_COLUMNS])
                    t = t.rename_columns(list(GAME_COLUMNS))
                except (OSError, ValueError, pa.ArrowInvalid) as e:
                    raise self._gone(e) from e
                self._games = t.combine_chunks()
                # case-folded copies for the substring filters: plain substring matching on them is cheaper than
                # ignore_case matching on every query
                self._folded = {c: pc.utf8_lower(self._games[c]) for c in ("black", "white", "result")}
            return self._games

    def query_games(self, player: str = "", rank: str = "", date_from: str = "", date_to: str = "",
                    result: str = "", split: str = "", sort: str = "date", desc: bool = False, offset: int = 0,
                    limit: int = 50) -> dict:
        """Filter (player: substring of either name, case-insensitive; rank: either player's rank, exact;
        dates as ISO prefixes, inclusive; result: prefix of the SGF result, e.g. ``B+`` or ``W+R``), sort
        (nulls last) and page the games table."""
        if sort not in SORTABLE:
            raise ServeError(400, f"cannot sort by {sort!r}; sortable columns: {', '.join(GAME_COLUMNS)}")
        if not 1 <= limit <= MAX_PAGE:
            raise ServeError(400, f"limit must be 1..{MAX_PAGE}, got {limit}")
        if offset < 0:
            raise ServeError(400, f"offset must be >= 0, got {offset}")
        for name, value in (("date_from", date_from), ("date_to", date_to)):
            if value and not _DATE_PREFIX.fullmatch(value):
                raise ServeError(400, f"{name} must be a date or its start (YYYY, YYYY-MM, YYYY-MM-DD, 2017-02-1), "
                                      f"got {value[:40]!r}")
        if split and split not in self.manifest["splits"]:
            raise ServeError(400, f"no split {split[:40]!r}; this dataset has: {', '.join(self.manifest['splits'])}")
        self.check()
        t = self.games()
        mask = None

        def both(expr_b, expr_w):
            return pc.or_kleene(expr_b, expr_w)

        conds = []
        low = self._folded
        if player:
            conds.append(both(pc.match_substring(low["black"], player.lower()),
                              pc.match_substring(low["white"], player.lower())))
        if rank:
            conds.append(both(pc.equal(t["black_rank"], rank), pc.equal(t["white_rank"], rank)))
        if date_from:
            conds.append(pc.greater_equal(t["date"], date_from))
        if date_to:
            # inclusive of every date starting with date_to ("2017-02" keeps the whole month)
            conds.append(pc.less_equal(pc.utf8_slice_codeunits(t["date"], 0, len(date_to)), date_to))
        if result:
            conds.append(pc.starts_with(low["result"], result.lower()))
        if split:
            conds.append(pc.equal(t["split"], split))
        for c in conds:
            mask = c if mask is None else pc.and_kleene(mask, c)
        idx = self._order(sort, desc)
        if mask is not None:  # the sorted order, kept where the filter holds: no sort per request
            idx = idx.filter(pc.take(pc.fill_null(mask, False), idx))
        total = len(idx)
        if offset >= total and total:
            raise ServeError(400, f"offset {offset} is past the {total:,} matching games")
        page = t.take(idx[offset:offset + limit])
        return {"total": total, "offset": offset, "limit": limit, "sort": sort, "desc": desc,
                "columns": list(GAME_COLUMNS), "rows": page.to_pylist()}

    def _order(self, sort: str, desc: bool) -> pa.Array:
        """Row indices of the whole games table sorted by ``sort`` (nulls last, ties by game_id), computed once
        per column and direction (the last 6 kept)."""
        key = (sort, desc)
        with self._lock:
            if key in self._orders:
                self._orders.move_to_end(key)
                return self._orders[key]
        t = self.games()
        idx = pc.sort_indices(t, sort_keys=[(sort, "descending" if desc else "ascending"), ("game_id", "ascending")])
        with self._lock:
            self._orders[key] = idx
            while len(self._orders) > 6:
                self._orders.popitem(last=False)
        return idx

    def game_meta(self, game_id: str) -> dict:
        t = self.games()
        hit = pc.indices_nonzero(pc.equal(t["game_id"], game_id))
        if len(hit) == 0:
            raise ServeError(404, f"no game {game_id!r} in dataset {self.ident!r}")
        row = t.take(hit[:1]).to_pylist()[0]
        if row["split"] not in self.manifest["splits"]:
            raise ServeError(404, f"game {game_id!r} has no positions (split {row['split']!r} is empty)")
        return row

    # --- positions -----------------------------------------------------------------------------

    def _index(self, split: str):
        from gotk.datasets import SplitIndex

        if split not in self._indexes:
            try:
                self._indexes[split] = SplitIndex(self.path, split)
            except (OSError, ValueError) as e:
                raise self._gone(e) from e
        return self._indexes[split]

    def _rows_of_games(self, split: str) -> dict[str, list[int]]:
        """game_id -> positions (in ``SplitIndex.row_groups``) of the row groups that hold its rows; built once
        per split from the ``game_id`` column only."""
        if split not in self._game_rows:
            index = self._index(split)
            where: dict[str, list[int]] = {}
            try:
                files = {}
                for pos, rg in enumerate(index.row_groups):
                    if rg.file not in files:
                        files[rg.file] = index.open_file(rg.file)
                    col = files[rg.file].read_row_group(rg.index, columns=["game_id"]).column(0).combine_chunks()
                    used = np.unique(col.indices.to_numpy(zero_copy_only=False))
                    for g in col.dictionary.take(pa.array(used)).to_pylist():
                        where.setdefault(g, []).append(pos)
            except (OSError, pa.ArrowInvalid) as e:
                raise self._gone(e) from e
            self._game_rows[split] = where
        return self._game_rows[split]

    def positions(self, game_id: str) -> tuple[dict, GamePositions]:
        """The game's metadata and its positions (cached: the last 8 games opened)."""
        from gotk.shards import decode_features
        from gotk.shards.metadata_column import decode_metadata

        self.check()
        meta = self.game_meta(game_id)
        with self._lock:
            if game_id in self._cache:
                self._cache.move_to_end(game_id)
                return meta, self._cache[game_id]
            split = meta["split"]
            index = self._index(split)
            groups = self._rows_of_games(split).get(game_id)
            if not groups:
                raise ServeError(404, f"game {game_id!r} has no rows in split {split!r}")
            parts = []
            try:
                for pos in groups:
                    rg = index.row_groups[pos]
                    t = index.open_file(rg.file).read_row_group(rg.index)
                    parts.append(t.filter(pc.equal(t["game_id"].cast(pa.string()), game_id)))
                table = pa.concat_tables(parts)
            except (OSError, pa.ArrowInvalid) as e:
                raise self._gone(e) from e
            table = table.take(pc.sort_indices(table, [("move_number", "ascending")]))
            meta_rows = decode_metadata(table)  # copied below: Arrow's buffers are read-only, torch warns on them
            gp = GamePositions(
                planes=decode_features(table, index.encoder),
                label=table["label"].to_numpy().astype(np.int64),
                move_number=table["move_number"].to_numpy().astype(np.int64),
                to_play=table["to_play"].to_numpy().astype(np.int64),
                value=table["value"].to_numpy().astype(np.int64),
                metadata=None if meta_rows is None else np.array(meta_rows),
            )
            self._cache[game_id] = gp
            while len(self._cache) > 8:
                self._cache.popitem(last=False)
            return meta, gp


def stones_at(gp: GamePositions, k: int, encoder: dict) -> np.ndarray | None:
    """The stones of position ``k`` recovered from its planes (None when the encoder has no stone planes)."""
    from gotk.encoders.stones import stones_from_planes

    return stones_from_planes(gp.planes[k], encoder["plane_names"], int(gp.to_play[k]))


def move_numbers(gp: GamePositions, k: int, stones: np.ndarray, size: int) -> dict[int, int]:
    """Move number (1-based) of each stone on the board at position ``k``: the latest earlier recorded move
    at that point (setup and handicap stones get none)."""
    out: dict[int, int] = {}
    for j in range(k):
        p = int(gp.label[j])
        if p < size * size:
            out[p] = int(gp.move_number[j]) + 1
    return {p: n for p, n in out.items() if stones[p] != 0}


def position_board(gp: GamePositions, k: int, encoder: dict, overlay: list[str] | tuple[str, ...] = ()):
    """The :class:`~gotk.serve.draw.Board` of position ``k``: stones from the planes with their move numbers,
    the recorded next move ringed, the previous move dotted, the ``overlay`` planes (by name) coloured.
    The game viewer and ``gotk show --svg/--png`` both draw this. ValueError for an unknown plane name."""
    from gotk.serve.draw import PALETTE, Board

    names = encoder["plane_names"]
    unknown = [n for n in overlay if n not in names]
    if unknown:
        raise ValueError(f"no plane {unknown[0][:60]!r} in encoder {encoder['name']}; planes: {', '.join(names)}")
    if len(overlay) > len(PALETTE):
        raise ValueError(f"at most {len(PALETTE)} planes at once")
    size = int(encoder["board_size"])
    stones = stones_at(gp, k, encoder)
    label = int(gp.label[k])
    return Board(size, stones=stones, numbers=move_numbers(gp, k, stones, size) if stones is not None else {},
                 next_move=label if label < size * size else None,
                 last_move=int(gp.label[k - 1]) if k > 0 else None,
                 overlays=[(n, gp.planes[k][names.index(n)]) for n in overlay])


def row_board(folder, row: dict, planes: np.ndarray, encoder: dict, overlay: list[str]):
    """The board ``gotk show --svg/--png`` draws for one shard row (``row``: its columns as a dict,
    ``planes``: its decoded planes): for a local dataset the whole game is read, so the picture is the
    game viewer's (move numbers included); for a URL only that row is known (no move numbers)."""
    from gotk.storage import is_url

    if not is_url(folder):
        try:
            ds = DatasetView(folder, "show")
            _meta, gp = ds.positions(row["game_id"])
            hit = np.flatnonzero(gp.move_number == int(row["move_number"]))
            if hit.size:
                return position_board(gp, int(hit[0]), encoder, overlay)
        except ServeError:
            pass
    one = GamePositions(planes=planes[None], label=np.array([row["label"]]),
                        move_number=np.array([row["move_number"]]), to_play=np.array([row["to_play"]]),
                        value=np.array([row["value"]]))
    return position_board(one, 0, encoder, overlay)


__all__ = ["DatasetView", "GamePositions", "ServeError", "move_numbers", "position_board", "row_board", "stones_at"]
