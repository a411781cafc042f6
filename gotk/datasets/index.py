"""The split index: a split's shard files (from the manifest) and their Parquet row groups, read from the
footers only; game ids as integers."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gotk.shards import format as S
from gotk.shards.manifest import FORMAT, MANIFEST_NAME, check_manifest
from gotk.shards.metadata_column import METADATA
from gotk.storage import Storage, is_url, join

__all__ = ["RowGroup", "SplitIndex", "game_index"]


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


def selected_games(path: str | os.PathLike, where: str, storage_options: dict | None = None) -> np.ndarray:
    """The sorted :func:`game_index` values of the games of dataset folder ``path`` for which the
    :mod:`gotk.shards.where` expression ``where`` over ``games.parquet`` is true (WhereError when it does
    not parse or names an unknown column; ValueError when ``path`` is not a dataset folder)."""
    from gotk.shards.manifest import GAMES_SCHEMA, read_games
    from gotk.shards.where import compile_where

    w = compile_where(where, GAMES_SCHEMA.names)
    table = read_games(path, storage_options, columns=sorted(w.used_columns() | {"game_id"}), where=w)
    return np.unique(np.array([game_index(g) for g in table.column("game_id").to_pylist()], dtype=np.int64))


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
    mpath = join(root, MANIFEST_NAME)
    if not st.isfile(mpath):
        return None
    manifest = json.loads(st.read_text(mpath))
    if manifest.get("format") == FORMAT:
        check_manifest(manifest, str(mpath))
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
    """The row groups of one split (reads only Parquet footers), its encoder description and its target columns
    (:attr:`targets`). Shard paths listed by the manifest are relative to the dataset folder and may lead out
    of it (``../gen-0003/train/part-00000.parquet``: a folder assembled over other folders' shards).

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
        targets: tuple[str, ...] | None = None
        file_targets: list[tuple[str, ...]] = []
        glob: list[dict | None] = []
        meta_cols: list[dict | None] = []
        experience: list[dict | None] = []
        for i in range(len(self.files)):
            meta = self.read_metadata(i)
            schema = meta.schema.to_arrow_schema()
            if encoder is None:
                obj = S.schema_metadata(schema, self.files[i], required=False)
                encoder = obj["encoder"] if obj is not None else None
            t = S.schema_targets(schema)
            file_targets.append(t)
            glob.append(S.schema_globals(schema))
            meta_cols.append(S.schema_globals(schema, METADATA))
            experience.append(S.schema_experience(schema))
            if (experience[-1] is None) != (experience[0] is None):
                raise ValueError(f"{self.files[i]} has {'no ' if experience[-1] is None else ''}experience columns, "
                                 f"the split's first shard the opposite: a split's shards all have them or none")
            if experience[-1] is not None and experience[-1]["columns"] != experience[0]["columns"]:
                raise ValueError(f"{self.files[i]} has the experience columns {experience[-1]['columns']}, the "
                                 f"split's first shard {experience[0]['columns']}: a split's shards all have the same")
            if targets is None:
                targets = t
            elif bool(t) != bool(targets):
                raise ValueError(f"{self.files[i]} has target columns {list(t) or 'none'}, the split's first shard "
                                 f"{list(targets) or 'none'}: a split's shards all have the targets or none")
            for g in range(meta.num_row_groups):
                n = meta.row_group(g).num_rows
                if n:
                    groups.append(RowGroup(i, g, n, start))
                    start += n
        if encoder is None:
            mpath = join(self.path, MANIFEST_NAME)
            if self.storage.isdir(self.path) and self.storage.isfile(mpath):
                encoder = json.loads(self.storage.read_text(mpath)).get("encoder")
        if encoder is None:
            raise ValueError(f"no encoder description for split {split!r} of {self.path} (no gotk metadata)")
        self.encoder: dict = encoder
        #: the self-play target columns of the split's batches (``gotk.shards.format.TARGETS``), or ``()``; a
        #: shard written before ``aux_weight`` (``TARGETS_V1``) gives its rows an aux weight of 1
        self.targets: tuple[str, ...] = S.TARGETS if targets else ()
        #: the target columns each file has (what is read from it)
        self.file_targets: list[tuple[str, ...]] = file_targets
        #: the description of the split's ``globals`` column (``gotk.encoders.global_inputs.describe()``) when every
        #: shard has the same one, else None (the column, where some shards have it, is not read)
        self.globals: dict | None = glob[0] if glob and all(g == glob[0] for g in glob) else None
        #: the description of the split's ``metadata`` column (``gotk.encoders.metadata_inputs.describe()``) when every
        #: shard has the same one, else None
        self.metadata: dict | None = meta_cols[0] if meta_cols and all(m == meta_cols[0] for m in meta_cols) else None
        #: the description of the split's experience columns (``gotk.shards.experience_column``) when its shards
        #: have them (all do or none), else None: batches then carry ``return``, ``play_value`` and ``play_prob``
        self.experience: dict | None = experience[0] if experience else None
        self.row_groups = groups
        self.num_rows = start
        c, h, w = (int(x) for x in encoder["shape"])
        self.shape = (c, h, w)
        self.int8 = encoder["dtype"] == "int8"
        self.row_bytes = S.features_nbytes(encoder)

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
        return pq.ParquetFile(self.storage.open_input(self.files[file]), read_dictionary=["game_id"],
                              page_checksum_verification=True)  # pages' CRC-32: see gotk.shards.format.PAGE_CHECKS

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
