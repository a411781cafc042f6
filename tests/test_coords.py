"""Coordinate conventions, checked against sgfmill's own SGF / GTP conversions."""

from __future__ import annotations

import numpy as np
import pytest
from sgfmill import common, sgf_properties

from gotk import coords

SIZES = [2, 5, 9, 13, 19, 25]


@pytest.mark.parametrize("size", SIZES)
def test_every_point_agrees_with_sgfmill(size):
    for p in range(size * size):
        row, col = coords.to_rc(p, size)
        assert coords.from_rc(row, col, size) == p
        mill = coords.to_sgfmill(p, size)
        assert coords.from_sgfmill(mill, size) == p
        # sgfmill's (row, col) counts rows from the bottom; gotk's row 0 is the top
        assert mill == (size - 1 - row, col)
        sgf_value = coords.to_sgf(p, size)
        assert sgf_properties.serialise_go_point(mill, size) == sgf_value.encode()
        assert coords.from_sgf(sgf_value, size) == p
        assert coords.from_sgf(sgf_value.encode(), size) == p
        gtp = coords.to_gtp(p, size)
        assert common.format_vertex(mill) == gtp
        assert common.move_from_vertex(gtp, size) == mill
        assert coords.from_gtp(gtp, size) == p
        assert coords.from_gtp(gtp.lower(), size) == p


def test_known_points():
    assert coords.from_sgf("aa", 19) == 0  # top-left
    assert coords.to_gtp(0, 19) == "A19"
    assert coords.from_sgf("sa", 19) == 18  # top-right
    assert coords.to_gtp(18, 19) == "T19"
    assert coords.from_sgf("as", 19) == 18 * 19  # bottom-left
    assert coords.to_gtp(18 * 19, 19) == "A1"
    assert coords.from_gtp("D4", 19) == coords.from_sgf("dp", 19)
    assert coords.from_gtp("Q16", 19) == coords.from_sgf("pd", 19)
    assert coords.from_gtp("J10", 19) == coords.from_sgf("ij", 19)  # no letter I in GTP
    assert coords.from_sgfmill((0, 0), 19) == coords.from_gtp("A1", 19)


@pytest.mark.parametrize("size", SIZES)
def test_passes(size):
    n = size * size
    assert coords.pass_index(size) == n and coords.is_pass(n, size) and not coords.is_pass(0, size)
    assert coords.from_sgf("", size) == n
    assert coords.to_sgf(n, size) == ""
    assert coords.from_gtp("pass", size) == n and coords.from_gtp("PASS", size) == n
    assert coords.to_gtp(n, size) == "pass"
    assert coords.from_sgfmill(None, size) == n and coords.to_sgfmill(n, size) is None
    if size <= 19:
        assert coords.from_sgf("tt", size) == n


def test_tt_is_a_point_beyond_19():
    assert coords.from_sgf("tt", 20) == coords.from_rc(19, 19, 20)


@pytest.mark.parametrize("bad", ["zz", "a", "abc", "a1", "ja"])
def test_bad_sgf_points(bad):
    with pytest.raises(ValueError):
        coords.from_sgf(bad, 9)


@pytest.mark.parametrize("bad", ["I5", "Z1", "A0", "A10", "K1", "", "4D", "pas"])
def test_bad_gtp_vertices(bad):
    with pytest.raises(ValueError):
        coords.from_gtp(bad, 9)


def test_off_board_rc():
    for bad in (-1, 81):
        with pytest.raises(ValueError):
            coords.to_rc(bad, 9)
    for r, c in ((-1, 0), (0, 9), (9, 0)):
        with pytest.raises(ValueError):
            coords.from_rc(r, c, 9)


@pytest.mark.parametrize("size", [5, 19])
def test_symmetries_are_the_eight_dihedral_maps(size):
    n = size * size
    grid = np.arange(n).reshape(size, size)
    perms = [coords.symmetry_permutation(size, s) for s in range(8)]
    assert np.array_equal(perms[0], np.arange(n + 1))
    assert len({p.tobytes() for p in perms}) == 8
    expected = [grid, np.rot90(grid, 1), np.rot90(grid, 2), np.rot90(grid, 3), np.fliplr(grid),
                np.rot90(np.fliplr(grid), 1), np.rot90(np.fliplr(grid), 2), np.rot90(np.fliplr(grid), 3)]
    for s, perm in enumerate(perms):
        assert perm[n] == n  # a pass stays a pass
        assert sorted(perm[:n].tolist()) == list(range(n))
        moved = coords.transform_planes(grid, s)
        assert np.array_equal(moved, expected[s])
        # the value that sat on p now sits on perm[p]
        assert np.array_equal(moved.ravel()[perm[:n]], np.arange(n))
        for p in (0, size + 2, n - 1):
            assert coords.transform_point(p, size, s) == perm[p]
    # closure: composing two symmetries gives one of the eight
    keys = {p.tobytes() for p in perms}
    for a in perms:
        for b in perms:
            assert b[a].tobytes() in keys
    # leading axes (planes) are carried along
    planes = np.stack([grid, grid * 2])
    assert np.array_equal(coords.transform_planes(planes, 5)[1], 2 * coords.transform_planes(grid, 5))
