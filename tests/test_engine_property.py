"""Random legal games (hypothesis) with the engine's incremental structures checked after every move
against from-scratch pure-Python recounts: strings, liberties, head/nxt lists, the Zobrist hash, the
legality of every point, ko, and the board itself against a plain Python replay of the same moves."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gotk.errors import IllegalMoveError
from gotk.game import kernels as K
from gotk.game import loops as KL
from gotk.game.state import BLACK, WHITE, GameState, Rules


def neighbours(p: int, size: int) -> list[int]:
    r, c = divmod(p, size)
    out = []
    if r > 0:
        out.append(p - size)
    if c > 0:
        out.append(p - 1)
    if c < size - 1:
        out.append(p + 1)
    if r < size - 1:
        out.append(p + size)
    return out


def components(board: list[int], size: int) -> list[tuple[int, set[int], set[int]]]:
    """Every string as (colour, stones, liberties), by flood fill."""
    seen: set[int] = set()
    out = []
    for p, color in enumerate(board):
        if color == 0 or p in seen:
            continue
        stones, libs, todo = {p}, set(), [p]
        while todo:
            x = todo.pop()
            for q in neighbours(x, size):
                if board[q] == 0:
                    libs.add(q)
                elif board[q] == color and q not in stones:
                    stones.add(q)
                    todo.append(q)
        seen |= stones
        out.append((color, stones, libs))
    return out


class Reference:
    """A deliberately naive Go board: flood fills for everything, no incremental state."""

    def __init__(self, size: int, black=(), white=(), suicide: bool = False):
        self.size = size
        self.board = [0] * (size * size)
        for p in black:
            self.board[p] = BLACK
        for p in white:
            self.board[p] = WHITE
        self.suicide = suicide
        self.ko: tuple[int, int] | None = None  # (point, colour that may not play it)
        self.captures = [0, 0, 0]

    def _string(self, board, p):
        """(colour, stones, liberties) of the string through ``p``, by flood fill from it."""
        color = board[p]
        stones, libs, todo = {p}, set(), [p]
        while todo:
            x = todo.pop()
            for q in neighbours(x, self.size):
                if board[q] == 0:
                    libs.add(q)
                elif board[q] == color and q not in stones:
                    stones.add(q)
                    todo.append(q)
        return color, stones, libs

    def try_move(self, p: int, color: int):
        """(status name, new board, captured count, suicided count)."""
        if self.board[p] != 0:
            return "occupied", None, 0, 0
        if self.ko == (p, color):
            return "ko", None, 0, 0
        board = list(self.board)
        board[p] = color
        captured = 0
        for q in neighbours(p, self.size):
            if board[q] == 3 - color:
                _, stones, libs = self._string(board, q)
                if not libs:
                    for s in stones:
                        board[s] = 0
                    captured += len(stones)
        _, own, libs = self._string(board, p)
        if libs:
            return "ok", board, captured, 0
        if not self.suicide:
            return "suicide", None, 0, 0
        for s in own:
            board[s] = 0
        return "ok", board, captured, len(own)

    def play(self, p: int, color: int) -> None:
        if p == self.size * self.size:
            self.ko = None
            return
        status, board, captured, suicided = self.try_move(p, color)
        assert status == "ok", status
        self.captures[color] += captured
        self.captures[3 - color] += suicided
        self.ko = None
        if captured == 1 and not suicided:
            _, own, libs = self._string(board, p)
            if len(own) == 1 and len(libs) == 1:
                self.ko = (next(iter(libs)), 3 - color)
        self.board = board


def check_invariants(state: GameState, ref: Reference, color_to_check: int, sample: list[int]) -> None:
    size = state.size
    n = size * size
    assert state.board.tolist() == ref.board, "board differs from the plain reference"
    assert state.captures == (ref.captures[BLACK], ref.captures[WHITE])
    # strings: one head per component, inside it, size and liberties right, nxt a cycle over it
    heads = set()
    for _color, stones, libs in components(ref.board, size):
        hs = {int(state.head[p]) for p in stones}
        assert len(hs) == 1, "a string with several heads"
        h = hs.pop()
        assert h in stones and h not in heads
        heads.add(h)
        assert state.ssize[h] == len(stones)
        assert state.libs[h] == len(libs), "incremental liberty count differs from a recount"
        cycle, p = [], h
        while True:
            cycle.append(p)
            p = int(state.nxt[p])
            if p == h or len(cycle) > n:
                break
        assert p == h and len(cycle) == len(stones) and set(cycle) == stones, "nxt is not the string's cycle"
        for p in stones:
            assert state.liberties_at(p) == len(libs)
    # an empty point is its own one-point ring of size and liberties 0 (the ladder reader's undo log relies
    # on it: placing a stone logs only the point)
    for p in np.flatnonzero(state.board == 0).tolist():
        assert (state.head[p], state.nxt[p], state.ssize[p], state.libs[p]) == (p, p, 0, 0), p
    # hash: compiled recount and a Python XOR of the keys
    assert state.hash == int(KL.board_hash(state.board, state.zob))
    expected = 0
    for p, v in enumerate(ref.board):
        if v:
            expected ^= int(state.zob[v, p])
    assert state.hash == expected
    # ko and legality against the naive rules
    ko = ref.ko[0] if ref.ko and ref.ko[1] == state.to_play else None
    assert state.ko_point == ko
    for p in sample:
        status = ref.try_move(p, color_to_check)[0]
        got = K.STATUS_NAMES[K.check_move(state.e, p,
                                          color_to_check, state.rules.suicide)]
        assert got == status, f"check_move({p}, {color_to_check}) = {got}, naive rules say {status}"


def random_game(size: int, seed: int, moves: int, suicide: bool, full_check: bool) -> None:
    rng = random.Random(seed)
    n = size * size
    # a few random setup stones, dropped where they would leave a dead string
    black = rng.sample(range(n), rng.randint(0, n // 8))
    white = [p for p in rng.sample(range(n), rng.randint(0, n // 8)) if p not in black]
    board = [0] * n
    for p in black:
        board[p] = BLACK
    for p in white:
        board[p] = WHITE
    if any(not libs for _, _, libs in components(board, size)):
        black, white = [], []
    state = GameState(size, Rules(suicide=suicide)).setup(black, white)
    ref = Reference(size, black, white, suicide)
    everything = list(range(n))
    for _ in range(moves):
        color = state.to_play
        sample = everything if full_check else rng.sample(everything, 24)
        check_invariants(state, ref, color, sample)
        check_invariants(state, ref, 3 - color, sample[:8])
        legal = state.legal_moves().tolist()
        assert legal[-1] == n
        # the legal list must match the naive rules exactly (on what was sampled)
        for p in sample:
            assert (p in legal) == (ref.try_move(p, color)[0] == "ok")
        # mostly real moves; a pass now and then (it lifts ko)
        p = n if (len(legal) == 1 or rng.random() < 0.03) else rng.choice(legal[:-1])
        state.play(p)
        ref.play(p, color)
        assert state.to_play == 3 - color
    check_invariants(state, ref, state.to_play, everything if full_check else everything[: 3 * size])
    assert np.array_equal(state.board, np.array(ref.board, dtype=np.int8))


SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


@settings(max_examples=100, **SETTINGS)
@given(size=st.sampled_from([2, 3, 4, 5, 7]), seed=st.integers(0, 2**32 - 1), suicide=st.booleans(),
       moves=st.integers(1, 120))
def test_random_games_small_boards(size, seed, suicide, moves):
    random_game(size, seed, moves, suicide, full_check=True)


@settings(max_examples=6, **SETTINGS)
@given(seed=st.integers(0, 2**32 - 1), suicide=st.booleans())
def test_random_games_19x19(seed, suicide):
    random_game(19, seed, 250, suicide, full_check=False)


@settings(max_examples=25, **SETTINGS)
@given(size=st.sampled_from([3, 5, 9]), seed=st.integers(0, 2**32 - 1), moves=st.integers(1, 80))
def test_undo_returns_to_every_earlier_position(size, seed, moves):
    rng = random.Random(seed)
    state = GameState(size)
    snaps = []
    for _ in range(moves):
        snaps.append((state.board.copy(), state.ko_point, state.to_play, state.captures, state.hash))
        legal = state.legal_moves().tolist()
        state.play(rng.choice(legal[:-1]) if len(legal) > 1 else legal[-1])
    for board, ko, to_play, captures, h in reversed(snaps):
        state.undo()
        assert np.array_equal(state.board, board)
        assert (state.ko_point, state.to_play, state.captures, state.hash) == (ko, to_play, captures, h)


def _position(state: GameState) -> dict[str, np.ndarray]:
    """Every array of the position but the de-duplication scratch (``mark``, its stamp) and the undo stack."""
    meta = state.meta.copy()
    meta[[K.M_STAMP, K.M_DEPTH, K.M_TOP]] = 0
    return {"board": state.board.copy(), "head": state.head.copy(), "nxt": state.nxt.copy(),
            "libs": state.libs.copy(), "ssize": state.ssize.copy(), "placed": state.placed.copy(), "meta": meta,
            "hash": state.hashv.copy()}


@settings(max_examples=40, **SETTINGS)
@given(size=st.sampled_from([2, 3, 5, 9]), seed=st.integers(0, 2**32 - 1), suicide=st.booleans(),
       moves=st.integers(1, 120))
def test_recorded_moves_undo_exactly(size, seed, suicide, moves):
    """``play_recorded`` + ``undo`` restore every array of the position field for field (strings' heads and links,
    liberty counts, sizes, move numbers, ko, captures, passes, last move, hash), through captures, suicides
    (when the rules allow them), ko and passes, from a position with setup stones; and a position reached by
    recorded moves is the one unrecorded moves reach (the two compilations of the one rule agree)."""
    rng = random.Random(seed)
    n = size * size
    black = rng.sample(range(n), rng.randint(0, n // 6))
    state = GameState(size, Rules(suicide=suicide))
    try:
        state.setup(black, [])
    except IllegalMoveError:
        state = GameState(size, Rules(suicide=suicide))
    plain = state.copy()
    snaps = []
    for _ in range(moves):
        snaps.append(_position(state))
        legal = state.legal_moves().tolist()
        p = n if (len(legal) == 1 or rng.random() < 0.05) else rng.choice(legal[:-1])
        color = state.to_play
        state.play(p)
        assert K.play(plain.e, p, color, suicide) == K.OK
        now, other = _position(state), _position(plain)
        for name in now:
            assert np.array_equal(now[name], other[name]), name
    assert state.undoable == moves
    for snap in reversed(snaps):
        state.undo()
        now = _position(state)
        for name in snap:
            assert np.array_equal(now[name], snap[name]), name
    assert state.undoable == 0
