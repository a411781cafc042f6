"""Long games are encoded in bounded pieces with the same bytes, and the per-game move cap
(``--max-moves``) is an explicit option with a counted skip."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gotk.encoders import get_encoder
from gotk.sgf.reader import read_sgf

from .hostile import long_game


@pytest.mark.parametrize("encoder", ["oneplane", "sevenplane", "alphago"])
@pytest.mark.parametrize("include_passes,skip_first", [(False, 0), (True, 1500)])
def test_chunks_give_the_same_rows(encoder, include_passes, skip_first):
    rec = read_sgf(long_game(3))[0]
    enc = get_encoder(encoder)
    whole = enc.encode_game(rec, include_passes=include_passes, skip_first=skip_first)
    pieces = list(enc.encode_game_chunks(rec, include_passes=include_passes, skip_first=skip_first,
                                         chunk_moves=333))
    assert len(pieces) > 5
    for field in ("features", "labels", "move_numbers", "to_play"):
        np.testing.assert_array_equal(np.concatenate([getattr(p, field) for p in pieces]), getattr(whole, field))
    assert pieces[-1].moves_replayed == whole.moves_replayed == rec.num_moves


def test_chunks_stop_at_an_illegal_move_like_the_whole_game():
    data = long_game(2)
    cut = data.index(b";B[", 3000)
    bad = data[:cut] + b";B[aa];B[aa]" + data[cut:]  # a move onto a stone: the game stops there
    rec = read_sgf(bad)[0]
    enc = get_encoder("sevenplane")
    whole = enc.encode_game(rec)
    pieces = list(enc.encode_game_chunks(rec, chunk_moves=100))
    np.testing.assert_array_equal(np.concatenate([p.features for p in pieces]), whole.features)
    assert pieces[-1].moves_replayed == whole.moves_replayed < rec.num_moves
    assert str(pieces[-1].error) == str(whole.error)


def test_max_moves_is_a_counted_skip(tmp_path, good_zip):
    from .test_encode_faults import data_files, encode

    long_sgf = tmp_path / "long.sgf"
    long_sgf.write_bytes(long_game(8))  # 5,776 moves
    ref = tmp_path / "ref"
    encode(ref, good_zip, extra=("--max-moves", "5000"))
    out = tmp_path / "out"
    encode(out, good_zip, long_sgf, extra=("--max-moves", "5000"))
    m = json.loads((out / "manifest.json").read_text())
    assert m["games"]["skipped"] == {"too_long": 1}
    assert m["options"]["max_moves"] == 5000
    assert data_files(out) == data_files(ref)


@pytest.mark.slow
def test_a_300k_move_game_encodes_in_bounded_memory(tmp_path):
    """The issue's case: a legal 300,352-move game (1.5 MB, under the member cap) through
    ``gotk encode -e alphago --max-moves 0``: every position kept, peak memory per process < 1 GiB
    (it was ~5.4 GB when the whole game's planes were allocated at once)."""
    from .test_encode_faults import encode

    src = tmp_path / "long.sgf"
    src.write_bytes(long_game(416))
    out = tmp_path / "out"
    res = encode(out, src, extra=("--max-moves", "0", "--json", "--shard-rows", "50000"), timeout=600)
    m = json.loads(res.stdout)
    assert m["rows"] == 150_176
    rss = m["run"]["peak_rss_mib"]
    assert max(rss["parent"], rss["worker"]) < 1024, rss
