"""Every encoder commutes with the eight board symmetries on real games.

Encoding a rotated / reflected game (setup and move points mapped with
:func:`coords.symmetry_permutation`) must equal transforming the encoding of the original game with
:func:`coords.transform_planes`; labels map with the same permutation.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gotk import coords
from gotk.encoders import get_encoder, list_encoders
from gotk.sgf.reader import read_sgf
from gotk.sources.archives import iter_sources


def transformed(record, sym: int):
    perm = coords.symmetry_permutation(record.size, sym)

    def move(points):
        return tuple(int(perm[p]) for p in points)

    return dataclasses.replace(record, setup_black=move(record.setup_black), setup_white=move(record.setup_white),
                               setup_empty=move(record.setup_empty),
                               points=perm[record.points.astype(np.int64)].astype(record.points.dtype))


@pytest.fixture(scope="module")
def games():
    """Two real games of the package's months: a handicap game (setup stones) and an even game."""
    from gotk.data import HELDOUT_ARCHIVE, TRAIN_ARCHIVE

    out = []
    for archive, want_setup in ((TRAIN_ARCHIVE, True), (HELDOUT_ARCHIVE, False)):
        for src in iter_sources([archive]):
            recs = read_sgf(src.data) if hasattr(src, "data") else []
            if recs and bool(recs[0].setup_black) == want_setup and recs[0].num_moves >= 150:
                out.append(recs[0])
                break
    assert len(out) == 2
    return out


@pytest.mark.parametrize("name", list_encoders())
def test_encoding_commutes_with_symmetries(games, name):
    enc = get_encoder(name)
    for rec in games:
        base = enc.encode_game(rec, include_passes=True)
        assert len(base) > 100
        for sym in range(8):
            perm = coords.symmetry_permutation(rec.size, sym)
            moved = enc.encode_game(transformed(rec, sym), include_passes=True)
            assert moved.moves_replayed == base.moves_replayed
            assert np.array_equal(moved.labels, perm[base.labels.astype(np.int64)]), (name, sym)
            assert np.array_equal(moved.move_numbers, base.move_numbers)
            assert np.array_equal(moved.to_play, base.to_play)
            expected = coords.transform_planes(base.features, sym)
            if not np.array_equal(moved.features, expected):
                diff = np.argwhere(moved.features != expected)
                planes = sorted({enc.plane_names[c] for c in diff[:, 1]})
                pytest.fail(f"{name}, {coords.SYMMETRIES[sym]}: {len(diff)} values differ in planes {planes}, "
                            f"first at move {int(base.move_numbers[diff[0, 0]])}")


def test_symmetry_permutation_moves_a_known_point():
    # sanity of the test's own tool: rot90 (counter-clockwise, as numpy's rot90) takes the top-left
    # corner to the bottom-left corner, and a flip takes it to the top-right corner
    size = 19
    assert coords.transform_point(0, size, 1) == (size - 1) * size
    assert coords.transform_point(0, size, 4) == size - 1
