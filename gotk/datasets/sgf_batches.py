"""SGF files, folders or archives → encoded rows on the fly, without writing shards (``gotk eval`` on SGF)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator

import numpy as np

from gotk.encoders import global_inputs as GI
from gotk.encoders import metadata_inputs as MI
from gotk.errors import GotkError
from gotk.sgf.reader import read_sgf
from gotk.sgf.record import value_targets
from gotk.sources.archives import Skip, iter_sources


def sgf_batches(paths: Iterable[str | os.PathLike], encoder, batch_size: int,
                stats: dict | None = None) -> Iterator[dict]:
    """Encode SGF files/folders/archives on the fly with ``encoder``; batches shaped like the loader's
    (``features``, ``label``, ``value``, ``move_number``, ``globals``: the global inputs of the record's komi,
    normalised as ``gotk encode`` does (0 when unknown), and the colour to move; plus ``rank``: the rank scale
    value of the player to move, NaN when unknown, see gotk.sgf.metadata; and ``metadata``: KataGo's human-SL row of
    the record from the player to move's view, as ``gotk encode --metadata`` writes it). ``stats`` counts games
    read/skipped."""
    from gotk.sgf.metadata import normalise_record, parse_komi, rank_value, record_headers

    stats = stats if stats is not None else {}
    buf: list[tuple[np.ndarray, ...]] = []
    held = 0

    def flush() -> dict:
        parts = list(zip(*buf, strict=True))
        return {"features": np.concatenate(parts[0]), "label": np.concatenate(parts[1]).astype(np.int64),
                "value": np.concatenate(parts[2]).astype(np.float32),
                "move_number": np.concatenate(parts[3]).astype(np.int32),
                "rank": np.concatenate(parts[4]).astype(np.float64), "globals": np.concatenate(parts[5]),
                "metadata": np.concatenate(parts[6])}

    for src in iter_sources(paths):
        if isinstance(src, Skip):
            stats["skipped"] = stats.get("skipped", 0) + 1
            continue
        try:
            records = read_sgf(src.data, src.archive, src.member)
        except GotkError:  # an unreadable SGF is counted and skipped, as the pipeline does
            stats["skipped"] = stats.get("skipped", 0) + 1
            continue
        for rec in records:
            if rec.size != encoder.board_size:
                stats["skipped"] = stats.get("skipped", 0) + 1
                continue
            try:  # a long game comes in bounded pieces (the same rows as encode_game)
                pieces = encoder.encode_game_chunks(rec, chunk_moves=max(256, batch_size))
                first = next(pieces)
            except GotkError:  # unusable setup stones: counted and skipped
                stats["skipped"] = stats.get("skipped", 0) + 1
                continue
            stats["games"] = stats.get("games", 0) + 1
            komi = parse_komi(record_headers(rec).get("KM"))[0] or 0.0  # normalised as gotk encode's (0: unknown)
            ranks = [rank_value(rec.black_rank), rank_value(rec.white_rank)]
            b, w = (np.nan if r is None else float(r) for r in ranks)
            pair = MI.game_rows(MI.from_normalised(normalise_record(rec)), rec.size * rec.size)
            for enc in itertools.chain([first], pieces):
                if len(enc) == 0:
                    continue
                value = value_targets(rec.result.winner, enc.to_play)
                buf.append((enc.features, enc.labels, value, enc.move_numbers, np.where(enc.to_play == 1, b, w),
                            GI.from_to_play(komi, enc.to_play, rec.size), MI.rows_for(pair, enc.to_play)))
                held += len(enc)
                if held >= batch_size:
                    yield flush()
                    buf, held = [], 0
    if buf:
        yield flush()
