"""The compiled AlphaGo planes against a slow pure-Python reference, on every position of real games.

The reference knows nothing of the encoder: its own flood fill for strings and liberties, its own
turn counter, and ``GameState.copy().play`` (suicide forbidden) to judge and simulate each move.
Planes 0–45 must match exactly; the ladder planes are checked against a slow recursive reader (the
semantics of :mod:`gotk.encoders.ladders`) on a few games.
"""

from __future__ import annotations

import numpy as np
import pytest
from ladder_reference import attacker_wins, defender_dies, try_play

from gotk.encoders.alphago import AlphaGoEncoder
from gotk.errors import IllegalMoveError
from gotk.game.replay import initial_state
from gotk.game.state import GameState, Rules
from gotk.sgf.reader import iter_sgf
from gotk.sources.archives import SgfSource, iter_sources

NUM_GAMES = 20


def real_games(count: int, size: int = 19):
    """The first ``count`` games of the package's held-out month (2017-02) that replay to the end."""
    from gotk.data import HELDOUT_ARCHIVE

    games = []
    for src in iter_sources([HELDOUT_ARCHIVE]):
        if not isinstance(src, SgfSource):
            continue
        for rec in iter_sgf(src.data):
            if isinstance(rec, Exception) or rec.size != size or rec.num_moves < 20 or rec.defect:
                continue
            games.append(rec)
        if len(games) >= count:
            break
    if len(games) < count:
        pytest.skip(f"only {len(games)} usable games")
    return games[:count]


def neighbours(size: int) -> list[list[int]]:
    out = []
    for p in range(size * size):
        r, c = divmod(p, size)
        out.append([rr * size + cc for rr, cc in ((r - 1, c), (r, c - 1), (r, c + 1), (r + 1, c))
                    if 0 <= rr < size and 0 <= cc < size])
    return out


def diagonals(size: int) -> list[list[int]]:
    out = []
    for p in range(size * size):
        r, c = divmod(p, size)
        out.append([rr * size + cc for rr, cc in ((r - 1, c - 1), (r - 1, c + 1), (r + 1, c - 1), (r + 1, c + 1))
                    if 0 <= rr < size and 0 <= cc < size])
    return out


def string_at(board: list[int], p: int, nb) -> tuple[set[int], set[int]]:
    """Stones and liberties of the string through ``p`` (flood fill)."""
    color = board[p]
    stones = {p}
    libs: set[int] = set()
    stack = [p]
    while stack:
        x = stack.pop()
        for q in nb[x]:
            if board[q] == color and q not in stones:
                stones.add(q)
                stack.append(q)
            elif board[q] == 0:
                libs.add(q)
    return stones, libs


def is_own_eye(board: list[int], p: int, color: int, nb, dg) -> bool:
    if any(board[q] != color for q in nb[p]):
        return False
    bad = sum(board[q] == 3 - color for q in dg[p])
    return bad == 0 if len(nb[p]) < 4 else bad <= 1


def reference_planes(state: GameState, color: int, placed_at: dict[int, int], move_no: int, nb, dg) -> np.ndarray:
    """Planes 0–45 computed the slow way."""
    n = state.size * state.size
    out = np.zeros((46, n), dtype=np.uint8)
    board = state.board.tolist()
    lib_count: dict[int, int] = {}
    for p in range(n):
        out[3, p] = 1
        v = board[p]
        if v == 0:
            out[2, p] = 1
            continue
        out[0 if v == color else 1, p] = 1
        age = move_no - placed_at[p] if p in placed_at else 8
        out[6 + min(age, 8) - 1, p] = 1
        if p not in lib_count:
            stones, libs = string_at(board, p, nb)
            for s in stones:
                lib_count[s] = len(libs)
        out[14 + min(lib_count[p], 8) - 1, p] = 1
    opp_before = board.count(3 - color)
    ko = state.ko_point if state.to_play == color else None
    for p in range(n):
        if board[p] != 0 or p == ko:
            continue
        trial = state.copy()
        trial.rules = Rules(suicide=False)
        trial._seen = None
        try:
            trial.play(p, color)
        except IllegalMoveError:
            continue
        after = trial.board.tolist()
        stones, libs = string_at(after, p, nb)
        if not is_own_eye(board, p, color, nb, dg):
            out[5, p] = 1
        out[22 + min(len(libs), 8) - 1, p] = 1
        out[30 + min(opp_before - after.count(3 - color), 7), p] = 1
        if len(libs) == 1:
            out[38 + min(len(stones), 8) - 1, p] = 1
    return out


def replay_positions(record):
    """Yield ``(state, i, color, placed_at)`` before each non-pass move, tracking stone ages."""
    state = initial_state(record, Rules.from_sgf(record.rules))
    n = record.size * record.size
    placed_at: dict[int, int] = {}
    for i, (color, point) in enumerate(record.moves):
        state.to_play = color
        if point != n:
            yield state, i, color, placed_at
        state.play(point, color)
        if point != n:
            placed_at[point] = i
        for p in [p for p in placed_at if state.board[p] == 0]:
            del placed_at[p]


def test_non_ladder_planes_match_reference():
    games = real_games(NUM_GAMES)
    enc = AlphaGoEncoder(19, ladders=False)
    nb, dg = neighbours(19), diagonals(19)
    checked = 0
    for rec in games:
        game = enc.encode_game(rec)
        assert game.error is None
        feats = game.features.reshape(len(game), 48, 361)
        for j, (state, i, color, placed_at) in enumerate(replay_positions(rec)):
            assert game.move_numbers[j] == i
            want = reference_planes(state, color, placed_at, i, nb, dg)
            got = feats[j, :46]
            if not np.array_equal(got, want):
                bad = np.argwhere(got != want)
                raise AssertionError(f"{rec.member} move {i}: {len(bad)} differences, first (plane, point) "
                                     f"{bad[:5].tolist()}")
            assert not feats[j, 46:].any()
            checked += 1
    assert checked >= 20 * NUM_GAMES


# --- ladders ------------------------------------------------------------------------------------










def reference_ladders(state: GameState, color: int, depth: int = 80) -> np.ndarray:
    out = np.zeros((2, state.size * state.size), dtype=np.uint8)
    for p in np.flatnonzero(state.board == 0):
        p = int(p)
        adj = [int(q) for q in state.nbr[p] if q >= 0 and state.board[q] != 0]
        targets = [q for q in adj if state.board[q] == 3 - color and state.liberties_at(q) == 2]
        runs = [q for q in adj if state.board[q] == color and state.liberties_at(q) == 1]
        if not targets and not runs:
            continue
        after = try_play(state, p, color) if p != state.ko_point else None
        if after is None:
            continue
        if any(after.liberties_at(q) == 1 and defender_dies(after, q, depth) for q in targets):
            out[0, p] = 1
        if runs:
            k = after.liberties_at(p)
            out[1, p] = k >= 3 or (k == 2 and not attacker_wins(after, p, depth))
    return out


def test_ladder_planes_match_reference():
    games = real_games(8)
    enc = AlphaGoEncoder(19)
    hits = 0
    for rec in games:
        game = enc.encode_game(rec)
        feats = game.features.reshape(len(game), 48, 361)
        for j, (state, i, color, _) in enumerate(replay_positions(rec)):
            want = reference_ladders(state, color)
            got = feats[j, 46:]
            assert np.array_equal(got, want), f"{rec.member} move {i}: {np.argwhere(got != want).tolist()}"
            hits += int(want.sum())
    assert hits > 0


def test_planes_follow_board_symmetries():
    """Every plane, ladders included, is equivariant under the eight symmetries of the board."""
    from dataclasses import replace

    from gotk import coords

    rec = real_games(1)[0]
    enc = AlphaGoEncoder(19)
    base = enc.encode_game(rec)
    assert base.features[:, 46:].any()
    for sym in range(1, 8):
        perm = coords.symmetry_permutation(19, sym)
        moved = replace(rec, points=perm[rec.points].astype(np.int16),
                        setup_black=tuple(int(perm[p]) for p in rec.setup_black),
                        setup_white=tuple(int(perm[p]) for p in rec.setup_white))
        got = enc.encode_game(moved)
        assert np.array_equal(got.labels, perm[base.labels])
        assert np.array_equal(got.features, coords.transform_planes(base.features, sym)), sym
