"""Sampling a split: the order, sharding, game cap, shuffle buffer and batching behind
:func:`iter_numpy_batches` (numpy) and :class:`gotk.datasets.torchdata.ShardDataset` (torch).

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
   (:func:`gotk.shards.format.unpack_features` of the packed ``(B, bytes)`` block, no per-row Python loop),
   then one of the 8 board symmetries is applied per sample (``symmetries="random"``), features and label
   alike (pass stays pass); experience rows that recorded the symmetry their acting network saw
   (:mod:`gotk.shards.experience_column`) are shown under that one, their ``choices`` permuted like the labels.

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

``where="<expression>"`` keeps only the rows of games for which a :mod:`gotk.shards.where` expression over
the dataset's ``games.parquet`` is true (e.g. ``"min(black_rank, white_rank) >= 7d and not white_is_bot"``),
at read time, without re-encoding; it also reads the ``game_id`` column once, and batch counts stay exact.

Batches are dicts: ``features`` (B, C, H, W) uint8 0/1 (int8 for ``int8`` encoders such as ``oneplane``),
``label`` int64 (flat move index, pass = size*size), ``value`` float32 (+1 the player to move won,
-1 lost, 0 unknown), ``move_number`` int32, ``to_play`` int8, ``game_index`` int64 — see :func:`game_index`.
When the split's shards carry the self-play targets (``SplitIndex.targets``, docs/shards.md), batches also
have ``policy`` float32 (B, size*size+1), ``root_value`` float32 (B,), ``ownership`` float32 (B, size, size)
(-1/0/+1), ``score``, ``weight`` and ``aux_weight`` float32 (B,) (``aux_weight`` 1 on shards written before
it); under a symmetry the policy is permuted exactly
like ``label`` and the ownership transformed exactly like a plane. They are kept packed (float16, int8) in the
shuffle buffer and follow the rows through every selection (game cap, ``where``, resume).

When every shard of the split has the ``globals`` column (``SplitIndex.globals``), batches also have ``globals``
float32 (B, G): the position's global inputs (komi from the player to move's view, side to move:
:mod:`gotk.encoders.global_inputs`), which no board symmetry changes. Likewise, when every shard has the ``metadata``
column (``SplitIndex.metadata``), batches have ``metadata`` float32 (B, 192): KataGo's human-SL inputs of the
position's game from the player to move's view (:mod:`gotk.encoders.metadata_inputs`), unchanged by symmetries.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow.parquet as pq

from gotk.coords import transform_planes
from gotk.datasets.index import RowGroup, SplitIndex, _game_codes, selected_games
from gotk.datasets.symmetry import NUM_SYMMETRIES, label_permutations, transform_labels
from gotk.shards import experience_column as X
from gotk.shards.format import unpack_features
from gotk.shards.globals_column import GLOBALS, decode_globals
from gotk.shards.metadata_column import METADATA, decode_metadata

__all__ = ["Sampling", "iter_numpy_batches", "worker_batch_offsets"]

_COLUMNS = ["game_id", "move_number", "to_play", "features", "label", "value"]
_MASK64 = (1 << 64) - 1
_SYMMETRY_MODES = ("random", "none")


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
    """Per-epoch choice of at most ``k`` positions per game (``k`` None: all of them), and, with
    ``allowed`` (sorted int64 game indices), only the rows of those games.

    A game's rows are numbered by appearance in file order (``ordinal`` 0..n-1, wherever they lie); ordinal
    ``o`` gets the priority ``mix(game, o, seed, epoch)`` and the ``k`` lowest priorities of the game are
    kept. Needs ``n`` per game, hence one scan of the ``game_id`` column at construction."""

    def __init__(self, index: SplitIndex, k: int | None, allowed: np.ndarray | None = None) -> None:
        if k is not None and k < 1:
            raise ValueError(f"max_positions_per_game must be >= 1, got {k}")
        self.k = k
        self.allowed = allowed
        self.ok: list[np.ndarray] = []  # per row group: which of its games are allowed
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
            self.ok.append(np.isin(games, allowed) if allowed is not None else np.ones(len(games), bool))
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
        ok = self.ok[rg_pos][codes]
        if self.k is None:
            return ok
        order = np.argsort(codes, kind="stable")
        counts = np.bincount(codes, minlength=len(games))
        starts = np.cumsum(counts) - counts
        occurrence = np.empty(len(codes), dtype=np.int64)
        occurrence[order] = np.arange(len(codes)) - np.repeat(starts, counts)
        ordinals = base[codes] + occurrence
        thr = self.thresholds(seed, epoch)[np.searchsorted(self.games, games)]
        return ok & (self.priorities(games[codes], ordinals, seed, epoch) <= thr[codes])

    def kept_rows(self, rg_pos: int, seed: int, epoch: int) -> int:
        """Rows of row group ``rg_pos`` kept in ``epoch`` (without reading it)."""
        games, base, counts = self.fragments[rg_pos]
        ok = self.ok[rg_pos]
        if self.k is None:
            return int(counts[ok].sum())
        rep = np.repeat(np.arange(len(games)), counts)
        ords = base[rep] + np.arange(len(rep)) - np.repeat(np.cumsum(counts) - counts, counts)
        thr = self.thresholds(seed, epoch)[np.searchsorted(self.games, games)]
        return int(np.count_nonzero(ok[rep] & (self.priorities(games[rep], ords, seed, epoch) <= thr[rep])))


def _row_filter(index: SplitIndex, max_positions_per_game: int | None, where: str | None,
                storage_options: dict | None) -> _GameCap | None:
    """The per-row selection of a split: the game cap and/or the ``where`` game filter (None: every row)."""
    if not max_positions_per_game and not where:
        return None
    allowed = selected_games(index.path, where, storage_options) if where else None
    return _GameCap(index, max_positions_per_game or None, allowed)


# --- reading, shuffling, batching --------------------------------------------------------------------


# packed (N, row_bytes) uint8, label, value, move_number, to_play, game_index; with targets also policy (N, moves)
# float16, root_value, ownership (N, points) int8, score, weight, aux_weight
_Cols = dict[str, np.ndarray]


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
        extra = list(self.index.file_targets[rg.file]) + ([GLOBALS] if self.index.globals is not None else []) + (
            [METADATA] if self.index.metadata is not None else []) + (
            list(X.NUMBERS) if self.index.experience is not None else []) + (
            list(X.PLAY_VIEW) if X.has_play_view(self.index.experience) else [])
        table = f.read_row_group(rg.index, columns=_COLUMNS + extra)
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
        if self.index.targets:
            for name in ("policy", "ownership"):
                col = table.column(name)
                col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
                w = col.type.byte_width
                raw = np.frombuffer(col.buffers()[1], dtype=np.uint8, count=(col.offset + n) * w)[col.offset * w:]
                cols[name] = raw.reshape(n, w).view("<f2" if name == "policy" else np.int8)
            for name in ("root_value", "score", "weight", "aux_weight"):
                cols[name] = table.column(name).to_numpy() if name in table.column_names else np.ones(n, np.float32)
        if self.index.experience is not None:
            cols.update(X.decode_experience(table))
        if self.index.globals is not None:
            cols[GLOBALS] = decode_globals(table)
        if self.index.metadata is not None:
            cols[METADATA] = decode_metadata(table)
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
class Sampling:
    """How a split's rows are drawn into batches: ``batch_size`` rows a batch, shuffled (``shuffle``, from ``seed``,
    through a bounded buffer of ``shuffle_buffer`` rows) or in order, each under a random board symmetry
    (``symmetries="random"``) or as stored (``"none"``), the last short batch of a slot kept or dropped
    (``drop_last``). :meth:`check` raises ValueError for a value out of range."""

    batch_size: int = 256
    shuffle: bool = True
    seed: int = 0
    symmetries: str = "random"
    shuffle_buffer: int = 16384
    drop_last: bool = False

    def check(self) -> Sampling:
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.symmetries not in _SYMMETRY_MODES:
            raise ValueError(f"symmetries must be one of {_SYMMETRY_MODES}, got {self.symmetries!r}")
        if self.shuffle_buffer < 1:
            raise ValueError(f"shuffle_buffer must be >= 1, got {self.shuffle_buffer}")
        return self


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


def _slot_rows(index: SplitIndex, cap: _GameCap | None, cfg: Sampling, epoch: int, rank: int,
               world_size: int, worker: int, num_workers: int) -> int:
    rgs = index.slot_row_groups(epoch, cfg.seed, cfg.shuffle, rank, world_size, worker, num_workers)
    if cap is None:
        return sum(rg.rows for rg in rgs)
    pos = {(rg.file, rg.index): i for i, rg in enumerate(index.row_groups)}
    return sum(cap.kept_rows(pos[(rg.file, rg.index)], cfg.seed, epoch) for rg in rgs)


def _decode(packed: np.ndarray, index: SplitIndex) -> np.ndarray:
    """``(B, row_bytes)`` packed rows → ``(B, C, H, W)`` planes (one vectorised call)."""
    return unpack_features(packed, index.shape, index.encoder["dtype"])


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


def _targets_into(out: dict[str, np.ndarray], part: _Cols, syms: np.ndarray | None, size: int) -> None:
    """The target columns of a batch into ``out``, sample ``i`` under symmetry ``syms[i]``: the policy permuted
    like the move labels (``label_permutations``: the probability of move ``p`` moves to where ``p`` goes), the
    ownership transformed like a plane (``transform_planes``); the scalars as they are."""
    m = len(part["label"])
    policy = part["policy"].astype(np.float32)
    owner = part["ownership"].reshape(m, size, size)
    if syms is None:
        out["policy"][...] = policy
        out["ownership"][...] = owner
    else:
        out["policy"][np.arange(m)[:, None], label_permutations(size)[syms]] = policy
        for s in range(NUM_SYMMETRIES):
            sel = np.flatnonzero(syms == s)
            if sel.size == m:
                out["ownership"][...] = transform_planes(owner, s)
            elif sel.size:
                out["ownership"][sel] = transform_planes(owner[sel], s)
    for key in ("root_value", "score", "weight", "aux_weight"):
        out[key][...] = part[key]


def batch_layout(index: SplitIndex, rows: int) -> list[tuple[str, np.dtype, tuple[int, ...], int]]:
    """``(key, dtype, shape, byte offset)`` of every array of a batch of ``rows`` rows laid out in one
    buffer (offsets 8-byte aligned), and last the total size as ``("", uint8, (nbytes,), 0)``."""
    fdtype = np.dtype(np.int8 if index.int8 else np.uint8)
    specs = [("features", fdtype, (rows, *index.shape)), ("label", np.dtype(np.int64), (rows,)),
             ("game_index", np.dtype(np.int64), (rows,)), ("value", np.dtype(np.float32), (rows,)),
             ("move_number", np.dtype(np.int32), (rows,)), ("to_play", np.dtype(np.int8), (rows,))]
    if index.targets:  # float32 targets after the others (every offset stays 8-byte aligned)
        h, w = index.shape[1], index.shape[2]
        f32 = np.dtype(np.float32)
        specs += [("policy", f32, (rows, h * w + 1)), ("root_value", f32, (rows,)), ("ownership", f32, (rows, h, w)),
                  ("score", f32, (rows,)), ("weight", f32, (rows,)), ("aux_weight", f32, (rows,))]
    if index.experience is not None:
        specs += [(name, np.dtype(np.float32), (rows,)) for name in X.NUMBERS]
    if X.has_play_view(index.experience):  # a bool per move: the moves the player could choose
        specs.append(("choices", np.dtype(bool), (rows, index.shape[1] * index.shape[2] + 1)))
    if index.globals is not None:
        specs.append((GLOBALS, np.dtype(np.float32), (rows, len(index.globals["names"]))))
    if index.metadata is not None:
        specs.append((METADATA, np.dtype(np.float32), (rows, int(index.metadata["width"]))))
    out = []
    offset = 0
    for key, dtype, shape in specs:
        out.append((key, dtype, shape, offset))
        offset += -(-int(np.prod(shape)) * dtype.itemsize // 8) * 8
    out.append(("", np.dtype(np.uint8), (offset,), 0))
    return out


def _numpy_batch(index: SplitIndex, rows: int) -> dict[str, np.ndarray]:
    return {key: np.empty(shape, dtype) for key, dtype, shape, _ in batch_layout(index, rows)[:-1]}


def _iter_slot(index: SplitIndex, cap: _GameCap | None, cfg: Sampling, epoch: int, rank: int, world_size: int,
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
            if syms is not None and "symmetry" in part:  # experience: each row as the acting network saw it
                syms = part["symmetry"]
            batch_no += 1
            if batch_no <= skip_batches:
                continue
            out = new_batch(index, m)
            _decode_into(out["features"], part["packed"], syms, index)
            out["label"][...] = part["label"] if syms is None else transform_labels(part["label"], syms, size)
            for key in ("value", "move_number", "to_play", "game_index"):
                out[key][...] = part[key]
            if index.globals is not None:  # the same under every symmetry
                out[GLOBALS][...] = part[GLOBALS]
            if index.metadata is not None:  # likewise
                out[METADATA][...] = part[METADATA]
            if index.targets:
                _targets_into(out, part, syms, size)
            if index.experience is not None:  # one number a row: no symmetry changes it
                for name in X.NUMBERS:
                    out[name][...] = part[name]
            if "choices" in part:  # permuted like the move labels
                choices = X.unpack_choices(part["choices"], size * size + 1)
                if syms is None:
                    out["choices"][...] = choices
                else:
                    out["choices"][...] = False
                    out["choices"][np.arange(m)[:, None], label_permutations(size)[syms]] = choices
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


def iter_numpy_batches(path: str | os.PathLike, split: str = "train", sampling: Sampling | None = None, *,
                       rank: int = 0, world_size: int = 1, max_positions_per_game: int | None = None, epoch: int = 0,
                       worker: int = 0, num_workers: int = 1, skip_batches: int = 0,
                       storage_options: dict | None = None, where: str | None = None,
                       ) -> Iterator[dict[str, np.ndarray]]:
    """Numpy batches of one (rank, worker) slot of ``split``, with exactly :class:`ShardDataset`'s order
    and semantics (module docstring); no torch needed. ``worker``/``num_workers`` select a worker's share
    (the default is the whole rank, as with a DataLoader with ``num_workers`` 0 or 1);
    ``skip_batches`` skips the slot's first batches without decoding them."""
    cfg = (sampling or Sampling()).check()
    index = SplitIndex(path, split, storage_options)
    cap = _row_filter(index, max_positions_per_game, where, storage_options)
    if not (0 <= rank < world_size and 0 <= worker < num_workers):
        raise ValueError(f"need 0 <= rank < world_size and 0 <= worker < num_workers, got {rank}/{world_size} "
                         f"and {worker}/{num_workers}")
    yield from _iter_slot(index, cap, cfg, epoch, rank, world_size, worker, num_workers, skip_batches)
