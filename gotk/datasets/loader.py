"""Streaming loader over gotk shards: :class:`ShardDataset` (torch) and :func:`iter_numpy_batches` (numpy).

A split is never loaded into memory; the dataset may be a local folder or an fsspec URL
(``s3://bucket/prefix`` with ``storage_options``, see :mod:`gotk.storage`). Each epoch:

1. the split's Parquet row groups are put in a random order, deterministic from ``(seed, epoch)``
   (file order when ``shuffle=False``);
2. row groups are dealt round-robin to ranks (``order[rank::world_size]``), then each rank's list to
   its DataLoader workers (``[worker::num_workers]``): every row is read by exactly one (rank, worker)
   slot, so **each row is yielded exactly once per epoch** over all ranks and workers;
3. a slot reads its row groups one at a time (only the needed columns) and mixes the rows through a
   bounded shuffle buffer (``shuffle_buffer`` rows, kept *packed*, so 316 bytes per sevenplane row):
   each incoming row displaces a random buffered row, which is emitted; the buffer is drained in random
   order at the end. Memory per slot: about ``shuffle_buffer + 2 * row_group_rows + batch_size`` packed rows;
4. batches of ``batch_size`` rows are cut from the emitted stream and decoded in one vectorised step
   (``np.unpackbits`` of the packed ``(B, bytes)`` block, no per-row Python loop), then one of the 8 board
   symmetries is applied per sample (``symmetries="random"``), features and label alike (pass stays pass).

Consequences worth knowing:

* every (rank, worker) slot ends with its own partial batch (``drop_last=True`` drops it: up to
  ``batch_size - 1`` rows per slot are then skipped that epoch);
* ranks can get **unequal batch counts** (row groups rarely divide evenly, and exactly-once forbids
  padding). A DDP trainer must not assume equal steps: stop every rank at
  ``min(ds.rank_batch_counts(num_workers))`` (the rest of the epoch is skipped), or use
  ``torch.distributed.algorithms.Join``;
* the order depends on ``seed, epoch, world_size, num_workers, batch_size, shuffle_buffer`` and the
  shards; given those it is fully deterministic (DataLoader delivers worker batches round-robin).
  DataLoader with ``num_workers=0`` and ``1`` give the same stream;
* ``set_epoch`` and ``load_state_dict`` act on the dataset object, which DataLoader copies into its
  workers when an iteration starts: keep ``persistent_workers=False`` (the default) or they never reach
  the workers;
* in a DataLoader worker each batch is written into one shared-memory buffer and crosses to the main
  process as a single tensor (its arrays are views of it), instead of one shared segment per array.

``max_positions_per_game=k`` keeps at most ``k`` positions of every game per epoch (for value training,
where positions of one game are highly correlated). The kept positions are a uniform random subset,
chosen again each epoch, deterministic from ``(seed, epoch, game)`` and independent of ranks and workers.
Building it reads the ``game_id`` column of the split once (at construction).

Batches are dicts: ``features`` (B, C, H, W) uint8 0/1 (int8 for ``int8`` encoders such as ``oneplane``),
``label`` int64 (flat move index, pass = size*size), ``value`` float32 (+1 the player to move won,
-1 lost, 0 unknown), ``move_number`` int32, ``to_play`` int8, ``game_index`` int64 — see :func:`game_index`.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gotk.coords import transform_planes
from gotk.datasets.symmetry import NUM_SYMMETRIES, transform_labels
from gotk.storage import Storage, is_url, join

__all__ = ["ShardDataset", "SplitIndex", "game_index", "iter_numpy_batches", "worker_batch_offsets"]  # noqa: F822

_COLUMNS = ["game_id", "move_number", "to_play", "features", "label", "value"]
_MASK64 = (1 << 64) - 1
_SYMMETRY_MODES = ("random", "none")


# --- game ids --------------------------------------------------------------------------------------


def game_index(game_id: str) -> int:
    """The integer id of a game: its first 15 hex digits (a 60-bit int, see ``gotk.shards.gameid``);
    for an id that is not hex, the first 60 bits of its BLAKE2b digest. Stable across runs and processes."""
    try:
        return int(game_id[:15], 16)
    except ValueError:
        import hashlib

        return int.from_bytes(hashlib.blake2b(game_id.encode(), digest_size=8).digest(), "big") >> 4


def _game_codes(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, games)``: per-row index into ``games`` (int64 ids of the distinct games, in order of
    first appearance). Only the distinct ids are handled in Python."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if not pa.types.is_dictionary(column.type):
        column = column.dictionary_encode()
    codes = column.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    games = np.array([game_index(g) for g in column.dictionary.to_pylist()], dtype=np.int64)
    return codes, games


# --- the split: files and row groups -----------------------------------------------------------------


@dataclass(frozen=True)
class RowGroup:
    """One Parquet row group of a split: ``file`` (index into ``SplitIndex.files``), ``index`` within the
    file, ``rows``, and ``start`` (its first row's position in the split, in file order)."""

    file: int
    index: int
    rows: int
    start: int


def _manifest_files(root: Path | str, split: str, st: Storage) -> list[Path | str] | None:
    """Shard paths of ``split`` listed by ``root/manifest.json``; None when there is no usable listing."""
    mpath = join(root, "manifest.json")
    if not st.isfile(mpath):
        return None
    manifest = json.loads(st.read_text(mpath))
    splits = manifest.get("splits")
    if not isinstance(splits, dict):
        return None
    if split not in splits:
        raise ValueError(f"split {split!r} not in {mpath} (splits: {', '.join(sorted(splits)) or 'none'})")
    entry = splits[split]
    shards = entry.get("shards", entry.get("files")) if isinstance(entry, dict) else entry
    if shards is None:
        return None
    out = []
    for s in shards:
        name = s if isinstance(s, str) else next((s[k] for k in ("path", "file", "name") if k in s), None)
        if name is None:
            return None
        if st.is_local:
            p: Path | str = Path(name)
            if not p.is_absolute():  # relative to the dataset folder (``train/part-00000.parquet``)
                p = root / p if (root / p).exists() or not (root / split / p).exists() else root / split / p
        else:
            p = name if is_url(name) else join(root, name)
        out.append(p)
    return out


def _split_files(path: str | os.PathLike, split: str, st: Storage) -> list[Path | str]:
    root: Path | str = str(path).rstrip("/") if is_url(path) else Path(path)
    if st.isfile(root):
        return [root]
    if not st.isdir(root):
        raise FileNotFoundError(f"no dataset at {root}")
    files = _manifest_files(root, split, st)
    if files is None:
        folder = join(root, split)
        if not st.isdir(folder):
            raise FileNotFoundError(f"no split {split!r} in {root} (expected {folder} or a manifest.json listing it)")
        files = [join(folder, name) for name, is_dir in st.listdir(folder) if not is_dir and name.endswith(".parquet")]
    missing = [str(p) for p in files if not st.isfile(p)]
    if missing:
        raise FileNotFoundError(f"shards listed for split {split!r} are missing: {', '.join(missing[:5])}")
    return files


class SplitIndex:
    """The row groups of one split (reads only Parquet footers) and its encoder description.

    ``path``: a dataset folder, one shard file, or an fsspec URL of either (``s3://bucket/data``;
    ``storage_options`` go to fsspec, e.g. ``{"endpoint_url": ...}``)."""

    def __init__(self, path: str | os.PathLike, split: str = "train", storage_options: dict | None = None) -> None:
        self.storage = Storage.for_url(path, storage_options)
        self.path = str(path).rstrip("/") if is_url(path) else Path(path)
        self.split = split
        self.files = [str(p) for p in _split_files(path, split, self.storage)]
        groups: list[RowGroup] = []
        start = 0
        encoder = None
        for i in range(len(self.files)):
            meta = self.read_metadata(i)
            if encoder is None:
                raw = (meta.schema.to_arrow_schema().metadata or {}).get(b"gotk")
                if raw is not None:
                    obj = json.loads(raw)
                    encoder = obj.get("encoder", obj)
            for g in range(meta.num_row_groups):
                n = meta.row_group(g).num_rows
                if n:
                    groups.append(RowGroup(i, g, n, start))
                    start += n
        if encoder is None:
            mpath = join(self.path, "manifest.json")
            if self.storage.isdir(self.path) and self.storage.isfile(mpath):
                encoder = json.loads(self.storage.read_text(mpath)).get("encoder")
        if encoder is None:
            raise ValueError(f"no encoder description for split {split!r} of {self.path} (no gotk metadata)")
        self.encoder: dict = encoder
        self.row_groups = groups
        self.num_rows = start
        c, h, w = (int(x) for x in encoder["shape"])
        self.shape = (c, h, w)
        self.int8 = encoder["dtype"] == "int8"
        self.row_bytes = c * h * w if self.int8 else (c * h * w + 7) // 8

    def read_metadata(self, file: int) -> pq.FileMetaData:
        """The Parquet footer of ``files[file]``."""
        source = self.storage.open_input(self.files[file])
        try:
            return pq.read_metadata(source)
        finally:
            if not isinstance(source, str):
                source.close()

    def open_file(self, file: int) -> pq.ParquetFile:
        """``files[file]`` opened for reading row groups (``game_id`` as a dictionary column)."""
        return pq.ParquetFile(self.storage.open_input(self.files[file]), read_dictionary=["game_id"])

    @property
    def num_planes(self) -> int:
        return self.shape[0]

    @property
    def board_size(self) -> int:
        return self.shape[1]

    def epoch_order(self, epoch: int, seed: int, shuffle: bool) -> np.ndarray:
        """Positions in :attr:`row_groups` in this epoch's reading order."""
        n = len(self.row_groups)
        if not shuffle:
            return np.arange(n)
        return np.random.default_rng([seed, epoch, 0x726F77]).permutation(n)

    def slot_row_groups(self, epoch: int, seed: int, shuffle: bool, rank: int, world_size: int,
                        worker: int, num_workers: int) -> list[RowGroup]:
        """The row groups (in reading order) of one (rank, worker) slot for ``epoch``."""
        order = self.epoch_order(epoch, seed, shuffle)[rank::world_size][worker::num_workers]
        return [self.row_groups[i] for i in order]


# --- max_positions_per_game --------------------------------------------------------------------------


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser on a uint64 array (wrapping arithmetic)."""
    x = x.astype(np.uint64, copy=True)
    with np.errstate(over="ignore"):
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return x


class _GameCap:
    """Per-epoch choice of at most ``k`` positions per game.

    A game's rows are numbered by appearance in file order (``ordinal`` 0..n-1, wherever they lie); ordinal
    ``o`` gets the priority ``mix(game, o, seed, epoch)`` and the ``k`` lowest priorities of the game are
    kept. Needs ``n`` per game, hence one scan of the ``game_id`` column at construction."""

    def __init__(self, index: SplitIndex, k: int) -> None:
        if k < 1:
            raise ValueError(f"max_positions_per_game must be >= 1, got {k}")
        self.k = k
        seen: dict[int, int] = {}
        # per row group: distinct games, their first ordinal in this row group, their row count here
        self.fragments: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        files = [index.open_file(i) for i in range(len(index.files))]
        for rg in index.row_groups:
            codes, games = _game_codes(files[rg.file].read_row_group(rg.index, columns=["game_id"]).column(0))
            counts = np.bincount(codes, minlength=len(games))
            base = np.array([seen.get(int(g), 0) for g in games], dtype=np.int64)
            for g, c in zip(games.tolist(), counts.tolist(), strict=True):
                seen[g] = seen.get(g, 0) + c
            self.fragments.append((games, base, counts))
        self.games = np.array(sorted(seen), dtype=np.int64)
        self.totals = np.array([seen[g] for g in self.games.tolist()], dtype=np.int64)
        self._thresholds: dict[tuple[int, int], np.ndarray] = {}

    @staticmethod
    def _salt(seed: int, epoch: int) -> np.uint64:
        v = _mix64(np.array([(seed * 0x9E3779B97F4A7C15 + epoch * 0xD1B54A32D192ED03 + 1) & _MASK64], np.uint64))
        return v[0]

    def priorities(self, games: np.ndarray, ordinals: np.ndarray, seed: int, epoch: int) -> np.ndarray:
        key = _mix64(games.astype(np.uint64) ^ self._salt(seed, epoch))
        with np.errstate(over="ignore"):
            return _mix64(key + ordinals.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15))

    def thresholds(self, seed: int, epoch: int) -> np.ndarray:
        """Per game (sorted like :attr:`games`): the k-th lowest priority (max uint64 when n <= k)."""
        key = (seed, epoch)
        if key not in self._thresholds:
            out = np.full(len(self.games), np.iinfo(np.uint64).max, dtype=np.uint64)
            big = np.flatnonzero(self.totals > self.k)
            for lo in range(0, len(big), 4096):  # bounded temporaries
                sel = big[lo:lo + 4096]
                n = self.totals[sel]
                rep = np.repeat(np.arange(len(sel)), n)
                starts = np.cumsum(n) - n
                ords = np.arange(len(rep)) - np.repeat(starts, n)
                pr = self.priorities(self.games[sel][rep], ords, seed, epoch)
                order = np.lexsort((pr, rep))
                out[sel] = pr[order][starts + self.k - 1]
            self._thresholds = {key: out}
        return self._thresholds[key]

    def keep(self, rg_pos: int, codes: np.ndarray, seed: int, epoch: int) -> np.ndarray:
        """Boolean mask of the rows of row group ``rg_pos`` (positions in ``SplitIndex.row_groups``)."""
        games, base, _ = self.fragments[rg_pos]
        order = np.argsort(codes, kind="stable")
        counts = np.bincount(codes, minlength=len(games))
        starts = np.cumsum(counts) - counts
        occurrence = np.empty(len(codes), dtype=np.int64)
        occurrence[order] = np.arange(len(codes)) - np.repeat(starts, counts)
        ordinals = base[codes] + occurrence
        thr = self.thresholds(seed, epoch)[np.searchsorted(self.games, games)]
        return self.priorities(games[codes], ordinals, seed, epoch) <= thr[codes]

    def kept_rows(self, rg_pos: int, seed: int, epoch: int) -> int:
        """Rows of row group ``rg_pos`` kept in ``epoch`` (without reading it)."""
        games, base, counts = self.fragments[rg_pos]
        rep = np.repeat(np.arange(len(games)), counts)
        ords = base[rep] + np.arange(len(rep)) - np.repeat(np.cumsum(counts) - counts, counts)
        thr = self.thresholds(seed, epoch)[np.searchsorted(self.games, games)]
        return int(np.count_nonzero(self.priorities(games[rep], ords, seed, epoch) <= thr[rep]))


# --- reading, shuffling, batching --------------------------------------------------------------------


_Cols = dict[str, np.ndarray]  # packed (N, row_bytes) uint8, label, value, move_number, to_play, game_index


def _take(cols: _Cols, idx) -> _Cols:
    return {k: v[idx] for k, v in cols.items()}


def _concat(a: _Cols | None, b: _Cols) -> _Cols:
    if a is None or len(a["label"]) == 0:
        return b
    return {k: np.concatenate([a[k], b[k]]) for k in b}


class _RowGroupReader:
    """Reads row groups of a split into column arrays (features kept packed)."""

    def __init__(self, index: SplitIndex, cap: _GameCap | None, seed: int, epoch: int) -> None:
        self.index = index
        self.cap = cap
        self.seed = seed
        self.epoch = epoch
        self._files: dict[int, pq.ParquetFile] = {}
        self._pos = {(rg.file, rg.index): i for i, rg in enumerate(index.row_groups)}

    def read(self, rg: RowGroup) -> _Cols:
        f = self._files.get(rg.file)
        if f is None:
            f = self._files[rg.file] = self.index.open_file(rg.file)
        table = f.read_row_group(rg.index, columns=_COLUMNS)
        n = table.num_rows
        feats = table.column("features")
        feats = feats.combine_chunks() if feats.num_chunks != 1 else feats.chunk(0)
        width = feats.type.byte_width
        if width != self.index.row_bytes:
            raise ValueError(f"{self.index.files[rg.file]}: features are {width} bytes per row, "
                             f"the encoder description needs {self.index.row_bytes}")
        raw = np.frombuffer(feats.buffers()[1], dtype=np.uint8, count=(feats.offset + n) * width)
        codes, games = _game_codes(table.column("game_id"))
        cols: _Cols = {
            "packed": raw[feats.offset * width:].reshape(n, width),
            "label": table.column("label").to_numpy(),
            "value": table.column("value").to_numpy(),
            "move_number": table.column("move_number").to_numpy(),
            "to_play": table.column("to_play").to_numpy(),
            "game_index": games[codes],
        }
        if self.cap is not None:
            keep = self.cap.keep(self._pos[(rg.file, rg.index)], codes, self.seed, self.epoch)
            cols = _take(cols, np.flatnonzero(keep))
        return cols


class _ShuffleBuffer:
    """Bounded shuffle buffer of ``capacity`` rows: each pushed row displaces a random buffered row."""

    def __init__(self, capacity: int, rng: np.random.Generator) -> None:
        if capacity < 1:
            raise ValueError(f"shuffle_buffer must be >= 1, got {capacity}")
        self.capacity = capacity
        self.rng = rng
        self.fill = 0
        self.cols: _Cols | None = None

    def push(self, cols: _Cols) -> _Cols | None:
        """Add rows; returns the displaced rows (in random order), or None while the buffer fills."""
        n = len(cols["label"])
        if self.cols is None:
            self.cols = {k: np.empty((self.capacity, *v.shape[1:]), dtype=v.dtype) for k, v in cols.items()}
        take = min(self.capacity - self.fill, n)
        if take:
            for k, v in cols.items():
                self.cols[k][self.fill:self.fill + take] = v[:take]
            self.fill += take
        out = None
        for lo in range(take, n, self.capacity):
            chunk = _take(cols, slice(lo, min(lo + self.capacity, n)))
            slots = self.rng.choice(self.capacity, len(chunk["label"]), replace=False)
            out = _concat(out, _take(self.cols, slots))
            for k, v in chunk.items():
                self.cols[k][slots] = v
        return out

    def drain(self) -> _Cols | None:
        """Everything left, in random order; empties the buffer."""
        if self.cols is None or self.fill == 0:
            return None
        out = _take(self.cols, self.rng.permutation(self.fill))
        self.fill = 0
        return out


@dataclass(frozen=True)
class _Config:
    batch_size: int
    shuffle: bool
    seed: int
    symmetries: str
    shuffle_buffer: int
    drop_last: bool


def _slot_batch_count(rows: int, batch_size: int, drop_last: bool) -> int:
    return rows // batch_size if drop_last else math.ceil(rows / batch_size)


def worker_batch_offsets(batches_done: int, counts: list[int]) -> tuple[list[int], int]:
    """Where a DataLoader over workers with ``counts`` batches each stands after yielding ``batches_done``
    batches: ``(delivered, next_worker)``. DataLoader takes one batch from each worker in turn (round
    ``r`` is every worker's ``r``-th batch, in worker order), skipping exhausted workers; ``next_worker``
    is the one due next (0 at a round boundary)."""
    done = [0] * len(counts)
    left = batches_done
    r = 0
    while left > 0:
        active = [w for w, c in enumerate(counts) if c > r]
        if not active:
            break
        if left < len(active):
            for w in active[:left]:
                done[w] += 1
            return done, active[left]
        for w in active:
            done[w] += 1
        left -= len(active)
        r += 1
    return done, 0


def _slot_rows(index: SplitIndex, cap: _GameCap | None, cfg: _Config, epoch: int, rank: int,
               world_size: int, worker: int, num_workers: int) -> int:
    rgs = index.slot_row_groups(epoch, cfg.seed, cfg.shuffle, rank, world_size, worker, num_workers)
    if cap is None:
        return sum(rg.rows for rg in rgs)
    pos = {(rg.file, rg.index): i for i, rg in enumerate(index.row_groups)}
    return sum(cap.kept_rows(pos[(rg.file, rg.index)], cfg.seed, epoch) for rg in rgs)


def _decode(packed: np.ndarray, index: SplitIndex) -> np.ndarray:
    """``(B, row_bytes)`` packed rows → ``(B, C, H, W)`` planes (one vectorised call)."""
    b = packed.shape[0]
    c, h, w = index.shape
    if index.int8:
        return np.ascontiguousarray(packed).view(np.int8).reshape(b, c, h, w)
    return np.unpackbits(packed, axis=1, count=c * h * w, bitorder="big").reshape(b, c, h, w)


def _decode_into(out: np.ndarray, packed: np.ndarray, syms: np.ndarray | None, index: SplitIndex) -> None:
    """Decode ``packed`` rows into ``out`` (``(B, C, H, W)``), sample ``i`` transformed by symmetry
    ``syms[i]`` (none when ``syms`` is None): the rows sharing a symmetry are decoded together and written
    once, transformed, into ``out`` (sample order kept)."""
    b = packed.shape[0]
    if syms is None:
        out[...] = _decode(packed, index)
        return
    for s in range(NUM_SYMMETRIES):
        sel = np.flatnonzero(syms == s)
        if sel.size == b:
            out[...] = transform_planes(_decode(packed, index), s)
        elif sel.size:
            out[sel] = transform_planes(_decode(packed[sel], index), s)


def batch_layout(index: SplitIndex, rows: int) -> list[tuple[str, np.dtype, tuple[int, ...], int]]:
    """``(key, dtype, shape, byte offset)`` of every array of a batch of ``rows`` rows laid out in one
    buffer (offsets 8-byte aligned), and last the total size as ``("", uint8, (nbytes,), 0)``."""
    fdtype = np.dtype(np.int8 if index.int8 else np.uint8)
    specs = [("features", fdtype, (rows, *index.shape)), ("label", np.dtype(np.int64), (rows,)),
             ("game_index", np.dtype(np.int64), (rows,)), ("value", np.dtype(np.float32), (rows,)),
             ("move_number", np.dtype(np.int32), (rows,)), ("to_play", np.dtype(np.int8), (rows,))]
    out = []
    offset = 0
    for key, dtype, shape in specs:
        out.append((key, dtype, shape, offset))
        offset += -(-int(np.prod(shape)) * dtype.itemsize // 8) * 8
    out.append(("", np.dtype(np.uint8), (offset,), 0))
    return out


def _numpy_batch(index: SplitIndex, rows: int) -> dict[str, np.ndarray]:
    return {key: np.empty(shape, dtype) for key, dtype, shape, _ in batch_layout(index, rows)[:-1]}


def _iter_slot(index: SplitIndex, cap: _GameCap | None, cfg: _Config, epoch: int, rank: int, world_size: int,
               worker: int, num_workers: int, skip_batches: int = 0,
               new_batch: Callable[[SplitIndex, int], dict[str, np.ndarray]] = _numpy_batch,
               ) -> Iterator[dict[str, np.ndarray]]:
    """The numpy batches of one (rank, worker) slot; the first ``skip_batches`` are cut but not decoded.
    ``new_batch(index, rows)`` allocates the output arrays of a batch (see :func:`batch_layout`)."""
    rgs = index.slot_row_groups(epoch, cfg.seed, cfg.shuffle, rank, world_size, worker, num_workers)
    slot_seed = [cfg.seed, epoch, rank, world_size, worker, num_workers]
    buffer = _ShuffleBuffer(cfg.shuffle_buffer, np.random.default_rng([*slot_seed, 1])) if cfg.shuffle else None
    sym_rng = np.random.default_rng([*slot_seed, 2])
    reader = _RowGroupReader(index, cap, cfg.seed, epoch)
    bs = cfg.batch_size
    size = index.board_size
    batch_no = 0

    def emit(block: _Cols, final: bool) -> Iterator[dict[str, np.ndarray]]:
        nonlocal batch_no
        n = len(block["label"])
        stop = n if final and not cfg.drop_last else n - n % bs
        for lo in range(0, stop, bs):
            part = _take(block, slice(lo, min(lo + bs, n)))
            m = len(part["label"])
            syms = sym_rng.integers(0, 8, size=m) if cfg.symmetries == "random" else None
            batch_no += 1
            if batch_no <= skip_batches:
                continue
            out = new_batch(index, m)
            _decode_into(out["features"], part["packed"], syms, index)
            out["label"][...] = part["label"] if syms is None else transform_labels(part["label"], syms, size)
            for key in ("value", "move_number", "to_play", "game_index"):
                out[key][...] = part[key]
            yield out

    def rest(block: _Cols) -> _Cols | None:
        n = len(block["label"])
        return _take(block, slice(n - n % bs, n)) if n % bs else None

    pending: _Cols | None = None
    for rg in rgs:
        cols = reader.read(rg)
        out = buffer.push(cols) if buffer is not None else cols
        if out is None:
            continue
        pending = _concat(pending, out)
        yield from emit(pending, final=False)
        pending = rest(pending)
    if buffer is not None:
        drained = buffer.drain()
        if drained is not None:
            pending = _concat(pending, drained)
    if pending is not None:
        yield from emit(pending, final=True)


def _resolve_common(batch_size: int, symmetries: str, shuffle_buffer: int) -> None:
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if symmetries not in _SYMMETRY_MODES:
        raise ValueError(f"symmetries must be one of {_SYMMETRY_MODES}, got {symmetries!r}")
    if shuffle_buffer < 1:
        raise ValueError(f"shuffle_buffer must be >= 1, got {shuffle_buffer}")


def iter_numpy_batches(path: str | os.PathLike, split: str = "train", batch_size: int = 256, shuffle: bool = True,
                       seed: int = 0, symmetries: str = "random", shuffle_buffer: int = 16384,
                       drop_last: bool = False, rank: int = 0, world_size: int = 1,
                       max_positions_per_game: int | None = None, epoch: int = 0, worker: int = 0,
                       num_workers: int = 1, skip_batches: int = 0,
                       storage_options: dict | None = None) -> Iterator[dict[str, np.ndarray]]:
    """Numpy batches of one (rank, worker) slot of ``split``, with exactly :class:`ShardDataset`'s order
    and semantics (module docstring); no torch needed. ``worker``/``num_workers`` select a worker's share
    (the default is the whole rank, as with a DataLoader with ``num_workers`` 0 or 1);
    ``skip_batches`` skips the slot's first batches without decoding them."""
    _resolve_common(batch_size, symmetries, shuffle_buffer)
    index = SplitIndex(path, split, storage_options)
    cap = _GameCap(index, max_positions_per_game) if max_positions_per_game else None
    cfg = _Config(batch_size, shuffle, seed, symmetries, shuffle_buffer, drop_last)
    if not (0 <= rank < world_size and 0 <= worker < num_workers):
        raise ValueError(f"need 0 <= rank < world_size and 0 <= worker < num_workers, got {rank}/{world_size} "
                         f"and {worker}/{num_workers}")
    yield from _iter_slot(index, cap, cfg, epoch, rank, world_size, worker, num_workers, skip_batches)


# --- torch -------------------------------------------------------------------------------------------


def _dist_rank_world() -> tuple[int, int]:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _make_shard_dataset() -> type:
    import torch
    from torch.utils.data import IterableDataset, get_worker_info

    class ShardDataset(IterableDataset):
        """Streaming ``IterableDataset`` over a split of a ``gotk encode`` folder (see the module docstring).

        Use ``DataLoader(ds, batch_size=None, num_workers=k)``: the dataset batches itself. Attributes:
        ``encoder`` (description dict), ``num_rows`` (rows in the split), ``num_planes``, ``board_size``.
        ``rank``/``world_size`` default to ``torch.distributed``'s when it is initialised, else 0/1.

        ``len(ds)`` is the number of batches this rank yields in the current epoch with
        ``num_workers`` DataLoader workers (each worker ends with its own partial batch). It is exact when
        ``num_workers`` here matches the DataLoader's; the default (None) counts as one worker, which
        undercounts by at most ``k - 1`` batches with ``k`` workers (``drop_last=True``: overcounts).

        Resume mid-epoch: ``state = ds.state_dict(batches_done)`` (``batches_done`` = batches of this epoch
        consumed from the DataLoader; without it, the count of batches this object yielded itself, right
        when iterated in-process, e.g. ``num_workers=0``); later ``ds.load_state_dict(state)``: the next
        iteration yields exactly the remaining batches (same seed, batch size, world size and DataLoader
        worker count required). It still reads the skipped row groups, without decoding them.
        ``set_epoch(e)`` with another epoch ends the resume.
        """

        def __init__(self, path: str | os.PathLike, split: str = "train", batch_size: int = 256,
                     shuffle: bool = True, seed: int = 0, symmetries: str = "random", shuffle_buffer: int = 16384,
                     drop_last: bool = False, rank: int | None = None, world_size: int | None = None,
                     max_positions_per_game: int | None = None, epoch: int = 0,
                     num_workers: int | None = None, storage_options: dict | None = None) -> None:
            super().__init__()
            _resolve_common(batch_size, symmetries, shuffle_buffer)
            if rank is None or world_size is None:
                r, w = _dist_rank_world()
                rank = r if rank is None else rank
                world_size = w if world_size is None else world_size
            if not 0 <= rank < world_size:
                raise ValueError(f"need 0 <= rank < world_size, got rank={rank}, world_size={world_size}")
            self.path = str(path)
            self.split = split
            self.index = SplitIndex(path, split, storage_options)
            self.cfg = _Config(batch_size, shuffle, seed, symmetries, shuffle_buffer, drop_last)
            self.rank = rank
            self.world_size = world_size
            self.max_positions_per_game = max_positions_per_game
            self.cap = _GameCap(self.index, max_positions_per_game) if max_positions_per_game else None
            self.num_workers = num_workers
            self.epoch = epoch
            self._resume: tuple[int, int] | None = None  # (epoch, batches_done)
            self._batches_done = 0

        # --- description ---
        @property
        def encoder(self) -> dict:
            return self.index.encoder

        @property
        def num_rows(self) -> int:
            return self.index.num_rows

        @property
        def num_planes(self) -> int:
            return self.index.num_planes

        @property
        def board_size(self) -> int:
            return self.index.board_size

        @property
        def batch_size(self) -> int:
            return self.cfg.batch_size

        # --- epochs, lengths ---
        def set_epoch(self, epoch: int) -> None:
            """Select the epoch (its order and symmetries); call before each epoch, as with DistributedSampler."""
            if self._resume is not None and self._resume[0] != epoch:
                self._resume = None
            self.epoch = epoch

        def worker_batch_counts(self, num_workers: int | None = None, rank: int | None = None) -> list[int]:
            """Batches each DataLoader worker of ``rank`` (default this one) yields in the current epoch."""
            k = max(1, num_workers if num_workers is not None else (self.num_workers or 1))
            r = self.rank if rank is None else rank
            return [_slot_batch_count(_slot_rows(self.index, self.cap, self.cfg, self.epoch, r, self.world_size,
                                                 w, k), self.cfg.batch_size, self.cfg.drop_last) for w in range(k)]

        def rank_batch_counts(self, num_workers: int | None = None) -> list[int]:
            """Batches of every rank in the current epoch (they can differ: see the module docstring)."""
            return [sum(self.worker_batch_counts(num_workers, r)) for r in range(self.world_size)]

        def __len__(self) -> int:
            return sum(self.worker_batch_counts())

        # --- resume ---
        def state_dict(self, batches_done: int | None = None) -> dict[str, Any]:
            """Where this rank is in the current epoch (see the class docstring)."""
            return {
                "epoch": self.epoch,
                "batches_done": self._batches_done if batches_done is None else int(batches_done),
                "seed": self.cfg.seed,
                "batch_size": self.cfg.batch_size,
                "shuffle": self.cfg.shuffle,
                "shuffle_buffer": self.cfg.shuffle_buffer,
                "drop_last": self.cfg.drop_last,
                "symmetries": self.cfg.symmetries,
                "rank": self.rank,
                "world_size": self.world_size,
                "max_positions_per_game": self.max_positions_per_game,
                "num_rows": self.num_rows,
            }

        def load_state_dict(self, state: dict[str, Any]) -> None:
            """Resume at ``state`` (from :meth:`state_dict`): the next iteration yields the remaining batches."""
            mine = self.state_dict()
            for key in ("seed", "batch_size", "shuffle", "shuffle_buffer", "drop_last", "symmetries",
                        "world_size", "max_positions_per_game", "num_rows"):
                if key in state and state[key] != mine[key]:
                    raise ValueError(f"cannot resume: state has {key}={state[key]!r}, this dataset {mine[key]!r}")
            self.epoch = int(state["epoch"])
            self._batches_done = int(state["batches_done"])
            self._resume = (self.epoch, self._batches_done)

        # --- iteration ---
        def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
            info = get_worker_info()
            worker, k = (0, 1) if info is None else (info.id, info.num_workers)
            skip = 0
            if self._resume is not None and self._resume[0] == self.epoch and self._resume[1] > 0:
                if k == 1:
                    skip = self._resume[1]
                else:
                    # DataLoader restarts its round-robin at worker 0: worker w plays the slot that was
                    # due w turns after the resume point, so the batch order is the original one.
                    delivered, due = worker_batch_offsets(self._resume[1], self.worker_batch_counts(k))
                    worker = (worker + due) % k
                    skip = delivered[worker]
            if info is None:
                self._batches_done = skip
            if info is None:
                for batch in _iter_slot(self.index, self.cap, self.cfg, self.epoch, self.rank, self.world_size,
                                        worker, k, skip):
                    self._batches_done += 1
                    yield {key: torch.from_numpy(v) for key, v in batch.items()}
                return
            # in a DataLoader worker: each batch lives in one shared-memory buffer, sent as one tensor
            current: list[_SharedBatch] = []

            def new_batch(index: SplitIndex, rows: int) -> dict[str, np.ndarray]:
                layout = batch_layout(index, rows)
                buf = _shared_bytes(layout[-1][2][0])
                current[:] = [_SharedBatch(buf, layout)]
                raw = buf.numpy()
                return {key: raw[off:off + int(np.prod(shape)) * dt.itemsize].view(dt).reshape(shape)
                        for key, dt, shape, off in layout[:-1]}

            for _batch in _iter_slot(self.index, self.cap, self.cfg, self.epoch, self.rank, self.world_size,
                                     worker, k, skip, new_batch):
                yield current[0]

    def _shared_bytes(n: int) -> torch.Tensor:
        """A uint8 tensor of ``n`` bytes in shared memory (allocated there: ``share_memory_`` would copy)."""
        new_shared = getattr(torch.UntypedStorage, "_new_shared", None)
        if new_shared is None:  # pragma: no cover - older/newer torch without the private allocator
            return torch.empty(n, dtype=torch.uint8).share_memory_()
        return torch.empty(0, dtype=torch.uint8).set_(new_shared(n))

    class _SharedBatch:
        """A batch made in a DataLoader worker: one shared-memory tensor that unpickles, in the main
        process, as the usual dict of tensors (one file descriptor per batch instead of one per array)."""

        __slots__ = ("buf", "layout")

        def __init__(self, buf: torch.Tensor, layout: list) -> None:
            self.buf = buf
            self.layout = layout

        def __reduce__(self):
            return _unpack_shared_batch, (self.buf, [(k, str(d), s, o) for k, d, s, o in self.layout[:-1]])

    ShardDataset.__module__ = __name__
    ShardDataset.__qualname__ = "ShardDataset"
    return ShardDataset


_LAZY: dict[str, type] = {}
_TORCH_DTYPES = {"uint8": "uint8", "int8": "int8", "int32": "int32", "int64": "int64", "float32": "float32"}


def _unpack_shared_batch(buf, layout: list) -> dict:
    """Main-process side of ``_SharedBatch``: the dict of tensors, views of the one shared buffer."""
    import torch

    out = {}
    for key, dtype, shape, offset in layout:
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        out[key] = buf[offset:offset + n].view(getattr(torch, _TORCH_DTYPES[dtype])).view(shape)
    return out


def __getattr__(name: str):
    """``ShardDataset`` is built on first access, so importing this module does not import torch."""
    if name == "ShardDataset":
        if name not in _LAZY:
            _LAZY[name] = _make_shard_dataset()
        return _LAZY[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
