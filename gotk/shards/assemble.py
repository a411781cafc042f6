"""A dataset folder assembled from shard files that already exist: ``games.parquet``, the dataset card and
``manifest.json`` (last, atomically), in the format ``gotk encode`` writes, around shards written by another
program (self-play).

Shard paths are relative to the folder and may point into sibling folders (``../gen-0003/train/part-00000.parquet``):
a training window over several self-play generations is one small folder that lists the generations' shards,
without copying them. Every reader of a dataset folder (:class:`gotk.datasets.SplitIndex`, the loader,
:func:`gotk.shards.manifest.verify_dataset`, :func:`gotk.shards.position.read_row`, ``gotk inspect``) joins the
listed path to the folder, so such paths work wherever the folder is read locally.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gotk.hashing import sha256_stream
from gotk.shards import format as S
from gotk.shards import manifest as M
from gotk.storage import Storage, is_url, join

__all__ = ["assemble_dataset"]

#: ``games.parquet`` columns stored as dictionaries (as ``gotk encode`` writes them)
_GAMES_DICTIONARY = ["archive", "black_rank_raw", "white_rank_raw", "rules", "rules_raw", "split", "winner", "end",
                     "source", "time_system", "komi_raw"]


def _open(st: Storage, path):
    """A Python file object over ``path``, for reading it in Python (its hash); never handed to pyarrow."""
    src = st.open_input(path)
    return open(src, "rb") if isinstance(src, str) else src


@contextmanager
def _parquet(st: Storage, path) -> Iterator[pq.ParquetFile]:
    """``path`` as a Parquet file, closed on leaving. A local file is opened by Arrow itself, from its path: a Python
    file object would be read by Arrow's I/O threads (pre-buffering), which take the GIL for every read and once more
    to release the object, so one finishing as the command ends could meet a finalizing interpreter, which ends such
    a thread (``pthread_exit``) inside C++ code that cannot be unwound: the process aborts ("terminate called without
    an active exception") with its work done. Remote storage has no path Arrow opens, so its file object is read
    without pre-buffering, in the calling thread only."""
    src = st.open_input(path)
    local = isinstance(src, str)
    try:
        with pq.ParquetFile(src, read_dictionary=["game_id"], pre_buffer=local, **S.PAGE_CHECKS) as pf:
            yield pf
    finally:
        if not local:
            src.close()


def _shard_entry(st: Storage, folder, rel: str, encoder_desc: dict) -> tuple[dict, tuple[str, ...], Counter, int]:
    """``(manifest entry, (its target columns, its experience description), rows per game id, largest row group)``
    of one listed shard, its encoder checked against ``encoder_desc``."""
    path = join(folder, rel)
    if not st.isfile(path):
        raise FileNotFoundError(f"shard {rel} (listed for {folder}) does not exist")
    with _open(st, path) as f:
        digest, size = sha256_stream(f)
    with _parquet(st, path) as pf:
        schema = pf.schema_arrow
        meta = S.schema_metadata(schema, str(rel))
        if meta["encoder"] != encoder_desc:
            raise ValueError(f"shard {rel} was written with encoder {meta['encoder'].get('name')!r} "
                             f"{meta['encoder']}, the dataset's is {encoder_desc}")
        targets = S.schema_targets(schema), S.schema_experience(schema)
        counts: Counter = Counter()
        biggest = 0
        for g in range(pf.metadata.num_row_groups):
            biggest = max(biggest, pf.metadata.row_group(g).num_rows)
            col = pf.read_row_group(g, columns=["game_id"], use_threads=False).column(0).combine_chunks()
            if not pa.types.is_dictionary(col.type):
                col = col.dictionary_encode()
            per = np.bincount(col.indices.to_numpy(zero_copy_only=False), minlength=len(col.dictionary))
            for gid, n in zip(col.dictionary.to_pylist(), per.tolist(), strict=True):
                if n:
                    counts[gid] += n
        rows = pf.metadata.num_rows
    return {"file": rel, "rows": rows, "bytes": size, "sha256": digest}, targets, counts, biggest


def _games_table(games: list[dict], in_shards: dict[str, tuple[str, int]]) -> tuple[pa.Table, dict]:
    """The ``games.parquet`` table (GAMES_SCHEMA) of the games found in the shards, in the order given (then the
    games the shards hold that ``games`` does not describe, with only their id, split and positions), and the
    counts for the manifest."""
    names = set(M.GAMES_SCHEMA.names)
    rows: list[dict] = []
    seen: set[str] = set()
    dropped = duplicates = 0
    for g in games:
        unknown = sorted(set(g) - names)
        if unknown:
            raise ValueError(f"games rows take the columns of games.parquet ({', '.join(M.GAMES_SCHEMA.names)}); "
                             f"unknown {unknown}")
        gid = g.get("game_id")
        if not isinstance(gid, str):
            raise ValueError(f"every games row needs a string game_id, got {gid!r}")
        if gid in seen:
            duplicates += 1
            continue
        if gid not in in_shards:
            dropped += 1
            continue
        seen.add(gid)
        split, positions = in_shards[gid]
        rows.append({**g, "split": split, "positions": positions})
    bare = [{"game_id": gid, "split": split, "positions": n} for gid, (split, n) in in_shards.items()
            if gid not in seen]
    rows += bare
    table = pa.Table.from_arrays(
        [pa.array([r.get(f.name) for r in rows], f.type) for f in M.GAMES_SCHEMA], schema=M.GAMES_SCHEMA)
    counts = {"read": len(games), "kept": len(rows), "partial": 0, "partial_reasons": {}, "skipped": {},
              "examples": {}, "filtered_where": {}, "metadata_warnings": {},
              "not_in_shards": dropped, "duplicate_rows": duplicates, "without_record": len(bare)}
    return table, counts


def _one_experience(descs: list[dict | None]) -> dict | None:
    """The experience description the shards share (their discounts may differ: then listed, ``discount`` None)."""
    if not descs or descs[0] is None:
        return None
    discounts = sorted({d["discount"] for d in descs})
    return {**descs[0], "discount": discounts[0] if len(discounts) == 1 else None}


def assemble_dataset(folder: str | os.PathLike, encoder_desc: dict, splits: dict[str, list[str]],
                     games: list[dict], options: dict, generator: dict | None = None) -> dict:
    """Make ``folder`` a gotk dataset over existing shards; returns the manifest written.

    ``splits``: per split, its shard files in order, as paths relative to ``folder`` (they may lead out of it:
    ``../gen-0003/train/part-00000.parquet``); each must exist, hold shards of ``encoder_desc`` (its
    ``Encoder.describe()``) and, across the whole dataset, the self-play targets or none (shards written before
    ``aux_weight`` may join newer ones: the manifest then lists the columns they all have). ``games``: dicts of
    some ``games.parquet`` columns (``game_id`` required; ``black``, ``white``, ``komi``, ``result``, ``winner``
    (``'b'``/``'w'``/None), ``end``, ``num_moves``, ``rules``, ``source``...; the others are null): the rows of
    the games found in the shards are kept in the order given, their ``split`` and ``positions`` taken from the
    shards; a game of the shards without a dict gets a row with its id, split and positions only. ``options``:
    what made the data (stored as the manifest's ``options``); ``generator``: who made it (``{"name": "gotk
    selfplay", ...}``, stored as ``generator``).

    Writes ``games.parquet``, the dataset card ``README.md`` when every shard lies in its split's folder inside
    ``folder`` (the card's Hub configuration names ``<split>/*.parquet``), and ``manifest.json`` last (atomic:
    its presence means the folder is complete; an older one is removed first). The manifest holds what
    ``gotk encode``'s does (``sources`` empty), plus ``targets`` (the target columns), ``experience`` (the
    experience columns' description, when the shards have them: all or none) and ``generator``."""
    st = Storage.for_url(folder)
    if is_url(folder):
        folder = str(folder).rstrip("/")
    else:
        os.makedirs(folder, exist_ok=True)
    if not isinstance(splits, dict) or not splits:
        raise ValueError("splits must name at least one split and its shard files")
    old = join(folder, M.MANIFEST_NAME)
    if st.isfile(old):
        st.rm(old)  # the folder is incomplete until the new manifest is written
    targets: tuple[str, ...] | None = None
    experience: list[dict | None] = []
    in_shards: dict[str, tuple[str, int]] = {}
    splits_out: dict[str, dict] = {}
    row_group_rows = 0
    for name, files in splits.items():
        entries = []
        split_games: set[str] = set()
        for rel in files:
            entry, (t, x), counts, biggest = _shard_entry(st, folder, str(rel), encoder_desc)
            if experience and (x is None) != (experience[0] is None):
                raise ValueError(f"shard {rel} has {'no ' if x is None else ''}experience columns, the dataset's "
                                 "other shards the opposite: a dataset's shards all have them or none")
            experience.append(x)
            if targets is not None and bool(t) != bool(targets):
                raise ValueError(f"shard {rel} has target columns {list(t) or 'none'}, the dataset's other shards "
                                 f"{list(targets) or 'none'}: a dataset's shards all have the targets or none")
            if targets is None or len(t) < len(targets):  # old shards beside new ones: the columns all have
                targets = t
            for gid, n in counts.items():
                prev = in_shards.get(gid)
                if prev is not None and prev[0] != name:
                    raise ValueError(f"game {gid} is in splits {prev[0]!r} and {name!r}: a game is in one split")
                in_shards[gid] = (name, n + (prev[1] if prev else 0))
            split_games.update(counts)
            row_group_rows = max(row_group_rows, biggest)
            entries.append(entry)
        splits_out[name] = {"games": len(split_games), "rows": sum(e["rows"] for e in entries),
                            "bytes": sum(e["bytes"] for e in entries), "shards": entries}
    table, game_counts = _games_table(games, in_shards)
    writer = S.ShardWriter(join(folder, M.GAMES_NAME), M.GAMES_SCHEMA, M.GAMES_ROW_GROUP_ROWS,
                           dictionary=_GAMES_DICTIONARY, statistics=[], storage=st)
    try:
        writer.write(table)
        games_info = writer.close()
    except BaseException:
        writer.abort()
        raise
    manifest = M.dataset_manifest(encoder_desc, dict(options), game_counts, games_info, splits_out,
                                  row_group_rows or S.ROW_GROUP_ROWS, targets=list(targets or ()),
                                  generator=generator, experience=_one_experience(experience))
    local_layout = all(e["file"].replace("\\", "/").startswith(f"{name}/") and ".." not in e["file"].split("/")
                       for name, s in splits_out.items() for e in s["shards"])
    if local_layout:
        from gotk.shards.card import write_card

        size = int(encoder_desc["shape"][1])
        card_options = {"board_size": size, "split": ",".join(splits_out), **manifest["options"]}
        write_card(folder, {**manifest, "options": card_options}, st)
    M.write_json_atomic(join(folder, M.MANIFEST_NAME), manifest, st)
    return manifest
