"""``sevenplane``, ``simple``, ``relative``, ``oneplane`` and ``leelazero`` against an independent computation on
every position of 200 real KGS games.

The reference side plays the moves on sgfmill's board (``sgfmill.boards.Board``), finds strings and
their liberties with its own flood fill, and tracks simple ko from sgfmill's ``play`` result (a
single stone captured by a single stone left with one liberty); ``leelazero``'s history planes are sgfmill's boards
of the last eight positions (the setup position the first).
"""

from __future__ import annotations

from collections import deque

import numpy as np
from sgfmill import boards

from gotk import coords
from gotk.data import HELDOUT_ARCHIVE, TRAIN_ARCHIVE
from gotk.encoders import get_encoder
from gotk.game.state import BLACK, WHITE
from gotk.sgf.reader import read_sgf
from gotk.sources.archives import iter_sources

GAMES_PER_ARCHIVE = 100
ARCHIVES = (TRAIN_ARCHIVE, HELDOUT_ARCHIVE)  # the package's months (2017-01, 2017-02)
_CELL = {None: 0, "b": BLACK, "w": WHITE}
_SGFMILL_COLOR = {BLACK: "b", WHITE: "w"}


def _neighbours(size: int) -> list[list[int]]:
    out = []
    for p in range(size * size):
        r, c = divmod(p, size)
        out.append([(r + dr) * size + c + dc for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1))
                    if 0 <= r + dr < size and 0 <= c + dc < size])
    return out


def reference_liberties(board: boards.Board, nbrs: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """(colour, liberties of the string there) per gotk flat point, by flood fill over sgfmill's board."""
    cells = [_CELL[x] for row in reversed(board.board) for x in row]  # sgfmill row 0 is the bottom
    n = len(cells)
    libs = [0] * n
    done = [False] * n
    for start in range(n):
        colour = cells[start]
        if colour == 0 or done[start]:
            continue
        group = [start]
        done[start] = True
        liberties = set()
        queue = deque([start])
        while queue:
            p = queue.popleft()
            for q in nbrs[p]:
                v = cells[q]
                if v == 0:
                    liberties.add(q)
                elif v == colour and not done[q]:
                    done[q] = True
                    group.append(q)
                    queue.append(q)
        for p in group:
            libs[p] = len(liberties)
    return np.array(cells, dtype=np.int8), np.array(libs, dtype=np.int32)


def expected_sevenplane(cells, libs, ko: int | None, color: int) -> np.ndarray:
    out = np.zeros((7, cells.size), dtype=np.uint8)
    for base, who in ((0, color), (3, 3 - color)):
        mine = cells == who
        out[base] = mine & (libs == 1)
        out[base + 1] = mine & (libs == 2)
        out[base + 2] = mine & (libs >= 3)
    if ko is not None:
        out[6, ko] = 1
    return out


def expected_simple(cells, libs, ko: int | None, color: int) -> np.ndarray:
    out = np.zeros((11, cells.size), dtype=np.uint8)
    for base, who in ((0, BLACK), (4, WHITE)):
        mine = cells == who
        for k in range(3):
            out[base + k] = mine & (libs == k + 1)
        out[base + 3] = mine & (libs >= 4)
    out[8 if color == BLACK else 9] = 1
    if ko is not None:
        out[10, ko] = 1
    return out


def expected_relative(cells, libs, ko: int | None, color: int) -> np.ndarray:
    out = np.zeros((11, cells.size), dtype=np.uint8)
    for base, who in ((0, color), (4, 3 - color)):
        mine = cells == who
        for k in range(3):
            out[base + k] = mine & (libs == k + 1)
        out[base + 3] = mine & (libs >= 4)
    out[8] = 1
    out[9] = color == WHITE
    if ko is not None:
        out[10, ko] = 1
    return out


def real_records():
    for name in ARCHIVES:
        got = 0
        for src in iter_sources([name]):
            if not hasattr(src, "data"):
                continue
            for rec in read_sgf(src.data):
                yield rec
                got += 1
            if got >= GAMES_PER_ARCHIVE:
                break


def expected_leelazero(history: list[np.ndarray], color: int) -> np.ndarray:
    """Leela Zero's 18 planes from the boards of the positions so far (``history[-1]`` the current one)."""
    out = np.zeros((18, len(history[-1])), dtype=np.uint8)
    for h, cells in enumerate(history[::-1][:8]):
        out[h] = cells == color
        out[8 + h] = cells == 3 - color
    out[16 if color == BLACK else 17] = 1
    return out


def test_planes_match_sgfmill_reference_on_real_games():
    encoders = {name: get_encoder(name) for name in ("oneplane", "sevenplane", "simple", "relative", "leelazero")}
    games = positions = kos = handicap = 0
    nbrs = _neighbours(19)
    for rec in real_records():
        assert rec.size == 19
        encoded = {name: enc.encode_game(rec, include_passes=True) for name, enc in encoders.items()}
        rows = len(encoded["sevenplane"])
        assert all(len(g) == rows for g in encoded.values())
        board = boards.Board(19)
        board.apply_setup([coords.to_sgfmill(p, 19) for p in rec.setup_black],
                          [coords.to_sgfmill(p, 19) for p in rec.setup_white],
                          [coords.to_sgfmill(p, 19) for p in rec.setup_empty])
        handicap += bool(rec.setup_black)
        ko_point, ko_for = None, 0
        seven, simple, one, lz = (encoded[k] for k in ("sevenplane", "simple", "oneplane", "leelazero"))
        history: list[np.ndarray] = []  # sgfmill's boards of the positions so far, the newest last
        assert seven.move_numbers.tolist() == list(range(rows))
        for i in range(rows):
            color, point = int(rec.colors[i]), int(rec.points[i])
            cells, libs = reference_liberties(board, nbrs)
            history.append(cells)
            ko = ko_point if ko_for == color else None
            kos += ko is not None
            where = f"{rec.member} move {i}"
            assert np.array_equal(seven.features[i].reshape(7, -1), expected_sevenplane(cells, libs, ko, color)), where
            assert np.array_equal(simple.features[i].reshape(11, -1), expected_simple(cells, libs, ko, color)), where
            assert np.array_equal(encoded["relative"].features[i].reshape(11, -1),
                                  expected_relative(cells, libs, ko, color)), where
            sign = np.where(cells == color, 1, np.where(cells == 0, 0, -1))
            assert np.array_equal(one.features[i, 0].ravel(), sign), where
            assert np.array_equal(lz.features[i].reshape(18, -1), expected_leelazero(history, color)), where
            assert seven.labels[i] == point and seven.to_play[i] == (1 if color == BLACK else -1)
            ko_point, ko_for = None, 0
            if point != 19 * 19:
                captured_ko = board.play(*coords.to_sgfmill(point, 19), _SGFMILL_COLOR[color])
                if captured_ko is not None:
                    ko_point, ko_for = coords.from_sgfmill(captured_ko, 19), 3 - color
            positions += 1
        games += 1
    assert games == len(ARCHIVES) * GAMES_PER_ARCHIVE
    assert positions > 100 * games  # whole games, not openings
    assert kos > 0 and handicap > 0  # the ko and setup paths were exercised
