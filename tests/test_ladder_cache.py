"""The cached ladder planes (gotk.encoders.ladder_cache) against the uncached reader, bit for bit:
every position of a whole real archive, random games, and hand-made far-away ladder breakers."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gotk.encoders import ladder_cache as LC
from gotk.encoders import ladders as LD
from gotk.encoders.alphago import AlphaGoEncoder
from gotk.encoders.game_loop import encode_record
from gotk.game import kernels as K
from gotk.game.state import BLACK, WHITE, GameState
from gotk.sgf.reader import iter_sgf
from gotk.sgf.record import GameRecord
from gotk.sources.archives import SgfSource, iter_sources


def encode_both(rec: GameRecord, **kw):
    """(cached, uncached) encodings of one game, and the cache's counters for the cached run."""
    made = []

    def maker(n):
        made.append(LC.make_cache(n))
        return made[-1]

    enc = AlphaGoEncoder(rec.size)
    cached = encode_record(LC.fill_cached, enc.num_planes, enc.np_dtype, rec, state_maker=maker, **kw)
    plain = AlphaGoEncoder(rec.size, cache_ladders=False).encode_game(rec, **kw)
    return cached, plain, made[0][LC.C_STATS]


def assert_same(cached, plain, what: str) -> None:
    assert cached.moves_replayed == plain.moves_replayed and np.array_equal(cached.labels, plain.labels)
    if not np.array_equal(cached.features, plain.features):
        bad = np.argwhere(cached.features != plain.features)
        raise AssertionError(f"{what}: {len(bad)} differences, first (row, plane, r, c) {bad[:5].tolist()}")


def test_encoder_uses_the_cache_and_the_uncached_path_stays_callable():
    enc, plain = AlphaGoEncoder(19), AlphaGoEncoder(19, cache_ladders=False)
    assert enc.game_fill is LC.fill_cached and plain.game_fill is None
    assert enc.describe() == plain.describe()  # not an option of the format


def test_whole_archive_matches_uncached(sample_archive):
    """Every position of every game of a real archive (KGS 2017-02, 525 games)."""
    games = positions = 0
    hits = reads = 0
    for src in iter_sources([sample_archive]):
        if not isinstance(src, SgfSource):
            continue
        for rec in iter_sgf(src.data):
            if isinstance(rec, Exception) or rec.num_moves == 0:
                continue
            cached, plain, stats = encode_both(rec)
            assert_same(cached, plain, f"{src.member}")
            games += 1
            positions += len(plain)
            hits += int(stats[LC.S_HITS])
            reads += int(stats[LC.S_READS])
    assert games >= 500 and positions > 50_000
    assert hits > 2 * reads > 0  # the cache answers most queries; the comparison is not vacuous


def random_record(size: int, seed: int, moves: int) -> GameRecord:
    """A random legal game (passes and occasional repeated colours included): lots of ataris, ladders,
    captures and ko fights on a small board."""
    rng = np.random.default_rng(seed)
    state = GameState(size)
    colors, points = [], []
    color = BLACK
    n = size * size
    for _ in range(moves):
        legal = [int(p) for p in state.legal_moves(color) if p < n]
        p = n if not legal or rng.random() < 0.03 else legal[int(rng.integers(len(legal)))]
        state.play(p, color)
        colors.append(color)
        points.append(p)
        if rng.random() > 0.05:  # now and then the same colour moves twice
            color = WHITE if color == BLACK else BLACK
    return GameRecord(size=size, colors=np.array(colors, dtype=np.int8), points=np.array(points, dtype=np.int16))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(size=st.sampled_from([7, 9, 13, 19]), seed=st.integers(0, 2**32 - 1), skip=st.integers(0, 3))
def test_random_games_match_uncached(size, seed, skip):
    rec = random_record(size, seed, moves=int(size * size * 1.2))
    cached, plain, _ = encode_both(rec, include_passes=True, skip_first=skip)
    assert_same(cached, plain, f"size {size} seed {seed}")


def ladder_game(breaker_move: int | None):
    """A 19x19 game: black's ladder on the white stone at (2, 2) runs diagonally to the lower right
    corner; the players then trade moves far from the ladder, and at ``breaker_move`` white plays a
    stone on the ladder's path near the far corner (at (16, 17)), which breaks it."""
    size = 19

    def pt(r, c):
        return r * size + c

    far = [pt(0, 16), pt(0, 18), pt(1, 16), pt(1, 18), pt(2, 16), pt(2, 18), pt(18, 0), pt(18, 2), pt(17, 0),
           pt(17, 2), pt(16, 0), pt(16, 2)]  # along the two other corners, off the ladder's diagonal
    moves = []
    for i, p in enumerate(far):
        color = BLACK if i % 2 == 0 else WHITE
        if breaker_move is not None and i == breaker_move:
            p = pt(16, 17)
        moves.append((color, p))
    rec = GameRecord(size=size, colors=np.array([c for c, _ in moves], dtype=np.int8),
                     points=np.array([p for _, p in moves], dtype=np.int16),
                     setup_black=(pt(1, 2), pt(2, 1), pt(1, 3)), setup_white=(pt(2, 2),))
    return rec, pt(3, 2)


def test_far_breaker_invalidates_the_cached_ladder():
    """A stone 14 rows away on the ladder's diagonal flips the plane at once, while moves elsewhere
    leave the cached answer in use."""
    rec, atari = ladder_game(breaker_move=7)  # move 7 is white's
    cached, plain, stats = encode_both(rec)
    assert_same(cached, plain, "breaker")
    black_rows = [j for j in range(len(plain)) if plain.to_play[j] == 1]
    works = [int(plain.features[j, 46].reshape(-1)[atari]) for j in black_rows]
    # black to move at moves 0, 2, 4, 6, 8, 10: the ladder works until white's breaker at move 7
    assert works == [1, 1, 1, 1, 0, 0]
    assert stats[LC.S_HITS] > 0
    rec_none, _ = ladder_game(breaker_move=None)
    cached, plain, _ = encode_both(rec_none)
    assert_same(cached, plain, "no breaker")
    assert all(plain.features[j, 46].reshape(-1)[atari] == 1 for j in range(len(plain)) if plain.to_play[j] == 1)


@pytest.mark.parametrize("size", [9, 19])
def test_answer_ignores_stones_outside_the_footprint(size):
    """The invariance the cache rests on, checked directly: on random positions, a ladder-capture
    answer stays the same when a stone of either colour is played anywhere outside the query's
    footprint (a move that captures nothing, so only that point changes)."""

    rng = np.random.default_rng(size)
    n = size * size
    scr = LD.new_scratch(n, LD.max_plies(n))
    fp = np.zeros((n + 63) // 64, dtype=np.uint64)
    checked = flipped_inside = 0
    for _ in range(10):
        rec = random_record(size, int(rng.integers(1 << 31)), moves=int(n * 0.6))
        state = GameState(size)
        for c, p in rec.moves:
            state.play(p, c)
        color = int(state.to_play)
        for p in np.flatnonzero(state.board == 0):
            p = int(p)
            if not state.is_legal(p, color):
                continue
            for q in state.nbr[p]:
                if q < 0 or state.board[q] != 3 - color or state.libs[state.head[q]] != 2:
                    continue
                t = int(state.head[q])
                LD.load_position(scr, state.e)
                want = LD.ladder_capture(scr, p, color, t)
                LD.footprint(scr, fp)
                inside = np.array([int(fp[x >> 6]) >> (x & 63) & 1 for x in range(n)], dtype=bool)
                assert inside[p] and inside[t]
                for x in rng.permutation(np.flatnonzero(state.board == 0))[:6]:
                    other = state.copy()
                    other._seen = None
                    try:
                        other.play(int(x), 1 + int(rng.integers(2)))
                    except Exception:
                        continue
                    if np.count_nonzero(other.board != state.board) != 1 or not other.is_legal(p, color):
                        continue
                    LD.load_position(scr, other.e)
                    got = LD.ladder_capture(scr, p, color, t)
                    if inside[x]:
                        flipped_inside += got != want
                    else:
                        assert got == want, (p, t, int(x))
                        checked += 1
    assert checked > 50
    assert flipped_inside > 0  # stones inside a footprint do change answers: the check can fail


@pytest.mark.parametrize("size", [9, 19])
def test_every_query_undoes_its_moves(size):
    """The reader plays on one scratch copy and undoes every move: after each query (ladder capture or
    escape, whatever its answer) the scratch holds the loaded position again, field for field (stones,
    heads, links, liberty counts, sizes, ko point), with an empty undo log."""
    rng = np.random.default_rng(100 + size)
    n = size * size
    scr = LD.new_scratch(n, LD.max_plies(n))
    queries = nodes = 0
    for _ in range(8):
        rec = random_record(size, int(rng.integers(1 << 31)), moves=int(n * 0.6))
        state = GameState(size)
        for c, p in rec.moves:
            state.play(p, c)
        LD.load_position(scr, state.e)
        color = int(state.to_play)
        for p in np.flatnonzero(state.board == 0):
            p = int(p)
            if not state.is_legal(p, color):
                continue
            asks = [(q, 3 - color) for q in state.nbr[p] if q >= 0 and state.board[q] == 3 - color]
            asks += [(q, color) for q in state.nbr[p] if q >= 0 and state.board[q] == color]
            for q, owner in asks:
                h = int(state.head[q])
                if owner != color and state.libs[h] == 2:
                    LD.ladder_capture(scr, p, color, h)
                elif owner == color and state.libs[h] == 1:
                    LD.ladder_escape(scr, p, color)
                else:
                    continue
                queries += 1
                nodes += int(scr.ctl[LD.NODES])
                s = scr.eng
                assert s.meta[K.M_DEPTH] == 0 and s.meta[K.M_TOP] == 0
                for name in ("board", "head", "nxt", "libs", "ssize"):
                    assert np.array_equal(getattr(s, name), getattr(state, name)), name
                own = [K.M_STAMP, K.M_DEPTH, K.M_TOP]  # the scratch's stamp and (empty) undo stack
                assert np.array_equal(np.delete(s.meta, own), np.delete(state.meta, own))
                assert s.hashv[0] == state.hashv[0]
    assert queries > 50 and nodes > 2 * queries


def test_one_cache_per_thread_reused_from_game_to_game():
    import threading

    first = LC.game_cache(361)
    assert LC.game_cache(361) is first and LC.game_cache(81) is not first
    other = []
    t = threading.Thread(target=lambda: other.append(LC.game_cache(361)))
    t.start()
    t.join()
    assert other[0] is not first  # the game loop writes into it: never shared between threads


def test_a_reused_cache_gives_the_planes_of_a_fresh_one(sample_archive):
    """Games encoded one after another (and two games' chunks interleaved) through the encoder's reused
    per-thread cache give exactly the uncached planes: nothing carries over from one game to the next."""
    recs = []
    for src in iter_sources([sample_archive]):
        if isinstance(src, SgfSource):
            recs += [r for r in iter_sgf(src.data) if not isinstance(r, Exception) and r.num_moves > 100]
        if len(recs) >= 4:
            break
    recs = recs[:4]
    enc, plain = AlphaGoEncoder(19), AlphaGoEncoder(19, cache_ladders=False)
    want = [plain.encode_game(r) for r in recs]
    assert sum(int(w.features[:, 46:48].sum()) for w in want) > 0  # there are ladder planes to get wrong
    for i in (0, 1, 2, 3, 0, 2):
        assert_same(enc.encode_game(recs[i]), want[i], f"game {i}")
    a, b = enc.encode_game_chunks(recs[0], chunk_moves=40), enc.encode_game_chunks(recs[1], chunk_moves=40)
    pieces: dict[int, list] = {0: [], 1: []}
    for pa, pb in itertools.zip_longest(a, b):  # one piece of each game in turn, on the same cache
        pieces[0] += [pa] if pa is not None else []
        pieces[1] += [pb] if pb is not None else []
    for i in (0, 1):
        feats = np.concatenate([p.features for p in pieces[i]])
        assert np.array_equal(feats, want[i].features), f"interleaved chunks of game {i}"


@pytest.mark.parametrize("size", [9, 19])
def test_the_python_scratch_is_the_compiled_one(size):
    """The per-thread caches build the reader's scratch in plain Python (nothing to compile); compiled
    callers build it with the same function compiled: same arrays, dtypes and initial values."""
    from gotk.encoders.alphago import make_lists, new_lists

    n = size * size
    plies = LD.max_plies(n)
    py, nb = LD.new_scratch(n, plies), LD.make_scratch(GameState(size).e, plies)
    arrays = [*py.eng, *py[1:]]
    for i, (a, b) in enumerate(zip(arrays, [*nb.eng, *nb[1:]], strict=True)):
        assert a.shape == b.shape and a.dtype == b.dtype, i
    for name in ("ctl", "bits"):  # the arrays that start with values (the others are written first)
        assert np.array_equal(getattr(py, name), getattr(nb, name)), name
    assert np.array_equal(py.eng.mark, nb.eng.mark)
    for name in ("nbr", "diag", "zob"):  # the size's shared tables
        assert getattr(py.eng, name) is getattr(GameState(size).e, name)
    assert py.bits[3, 0] == size and py.bits[2].sum() > 0
    for a, b in zip(new_lists(n), make_lists(n), strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
