"""Replay whole real KGS archives on gotk's engine and on sgfmill's reference board, move by move.

The game list is parsed twice, independently: by gotk's reader (``iter_sources`` + ``read_sgf``) and by
sgfmill (``Sgf_game.from_bytes`` + ``get_main_sequence`` + ``get_move``), so the reader is checked as
well as the engine. After every move the whole board, the capture counts, the simple-ko point and the
position hash are compared. The package's two months by default; the larger ``../shared/kgs`` adds slow cases.
"""

from __future__ import annotations

import tarfile

import numpy as np
import pytest
from sgfmill import boards, sgf

from gotk import coords
from gotk.game import loops as KL
from gotk.game.replay import first_to_play, initial_state, replay
from gotk.game.state import BLACK, WHITE
from gotk.sgf.reader import read_sgf
from gotk.sources.archives import SgfSource, iter_sources

_COLOR = {"b": BLACK, "w": WHITE}
_AS_SGFMILL = np.array([None, "b", "w"], dtype=object)  # gotk colour code -> sgfmill's cell value


def _sgfmill_order(size: int) -> np.ndarray:
    """``perm[k]`` = gotk flat index of the k-th point in sgfmill's row-major order (row 0 at the bottom)."""
    return np.array([coords.from_sgfmill(divmod(k, size), size) for k in range(size * size)], dtype=np.int64)


def _same_board(state, board: boards.Board, perm: np.ndarray) -> bool:
    """The whole of gotk's board, in sgfmill's layout and cell values, equals sgfmill's board."""
    return _AS_SGFMILL[state.board[perm]].reshape(board.side, board.side).tolist() == board.board


def _stones(board: boards.Board) -> dict[int, int]:
    return {BLACK: sum(row.count("b") for row in board.board), WHITE: sum(row.count("w") for row in board.board)}


def _members(path) -> dict[str, bytes]:
    """Member name → bytes, read straight with ``tarfile`` (independent of gotk's sources)."""
    out = {}
    with tarfile.open(path) as tf:
        for info in tf:
            if info.isfile() and info.name.lower().endswith(".sgf"):
                out[info.name] = tf.extractfile(info).read()
    return out


def _check_game(name: str, data: bytes, record, perm: np.ndarray) -> tuple[int, int]:
    """Compare one game; returns (moves, captures) checked."""
    game = sgf.Sgf_game.from_bytes(data)
    size = game.get_size()
    assert record.size == size, name
    root = game.get_root()
    ref_moves = []
    for node in game.get_main_sequence():
        colour, move = node.get_move()
        if colour is not None:
            ref_moves.append((_COLOR[colour], coords.from_sgfmill(move, size)))
    assert record.moves == ref_moves, f"{name}: reader's main line differs from sgfmill's"

    ab, aw, ae = root.get_setup_stones()
    assert sorted(record.setup_black) == sorted(coords.from_sgfmill(p, size) for p in ab), name
    assert sorted(record.setup_white) == sorted(coords.from_sgfmill(p, size) for p in aw), name
    assert sorted(record.setup_empty) == sorted(coords.from_sgfmill(p, size) for p in ae), name

    board = boards.Board(size)
    assert board.apply_setup(ab, aw, ae), f"{name}: setup leaves a dead string"
    state = initial_state(record)
    assert state.to_play == first_to_play(record)
    if ref_moves:
        assert state.to_play == ref_moves[0][0]
    assert _same_board(state, board, perm), f"{name}: setup position differs"
    stones = _stones(board)
    captures = {BLACK: 0, WHITE: 0}
    hashes = [state.hash]
    captured_total = 0
    for i, (color, point) in enumerate(ref_moves):
        where = f"{name} move {i + 1} ({'BW'[color - 1]} {coords.to_gtp(point, size)})"
        state.play(point, color)
        hashes.append(state.hash)
        if point == size * size:
            assert state.ko_point is None, where
            assert _same_board(state, board, perm), where
            continue
        ko = board.play(*coords.to_sgfmill(point, size), "bw"[color - 1])
        assert _same_board(state, board, perm), f"{where}: board differs from sgfmill"
        opp = 3 - color
        after = _stones(board)
        captures[color] += stones[opp] - after[opp]
        assert after[color] == stones[color] + 1, f"{where}: a suicide in a real game?"
        stones = after
        assert state.captures == (captures[BLACK], captures[WHITE]), where
        ref_ko = None if ko is None else coords.from_sgfmill(ko, size)
        assert state.ko_point == ref_ko, f"{where}: simple ko point differs"
    captured_total = captures[BLACK] + captures[WHITE]

    # the compiled whole-game loop agrees with the move-by-move path
    out = replay(record, min_moves=0)
    assert out.error is None, f"{name}: {out.error}"
    assert out.moves_played == len(ref_moves)
    assert out.state.board.tobytes() == state.board.tobytes(), name
    assert out.state.captures == state.captures, name
    assert np.array_equal(out.hashes, np.array(hashes, dtype=np.uint64)), name
    assert int(out.hashes[-1]) == int(KL.board_hash(out.state.board, out.state.zob)), name
    return len(ref_moves), captured_total


# the package's two months by default (1,258 games; re-packed as tar.gz by conftest.build_sample_kgs), and as
# added slow cases every other archive of ../shared/kgs (one format each: the .zip / .tar.bz2 copies hold the same
# games): 25,889 games and about 5.2 million moves in all, about 3.5 minutes on one core (`make test-slow`)
_SLOW = pytest.mark.slow
ALL_ARCHIVES = [pytest.param("shared", name, marks=_SLOW) for name in (
    "KGS-2001-19-2298-.tar.gz", "KGS-2002-19-3646-.tar.gz", "KGS-2003-19-7582-.tar.gz", "KGS-2006-19-10388-.tar.gz",
    "KGS-2017_03-19-717-.tar.gz")]
ALL_ARCHIVES += [("sample", "KGS-2017_01-19-733-.tar.gz"), ("sample", "KGS-2017_02-19-525-.tar.gz")]


@pytest.mark.timeout(1800)  # the 2006 archive is ~40% of the work: well past 600 s on a host 5x slower than usual
@pytest.mark.parametrize(("collection", "archive"), ALL_ARCHIVES)
def test_whole_archive_matches_sgfmill(collection, archive, request):
    path = request.getfixturevalue("sample_kgs" if collection == "sample" else "kgs_dir") / archive
    if not path.exists():
        pytest.skip(f"{path} is absent")
    raw = _members(path)
    expected_games = int(archive.split("-")[-2])  # the archive name says how many games it holds
    assert len(raw) == expected_games

    seen = 0
    moves = 0
    captures = 0
    perm = _sgfmill_order(19)
    for item in iter_sources([path]):
        assert isinstance(item, SgfSource), item
        assert item.data == raw[item.member]
        (record,) = read_sgf(item.data, item.archive, item.member)
        assert record.defect is None, (item.member, record.defect)
        m, c = _check_game(item.member, item.data, record, perm)
        seen += 1
        moves += m
        captures += c
    assert seen == expected_games
    assert moves > 100 * seen  # sanity: real games, not empty records
    assert captures > 0
