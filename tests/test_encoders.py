"""Encoders on hand-made positions (every plane family), the public API, and the two encode paths.

Expected values here are worked out by hand from the diagrams in the comments.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from gotk.encoders import EncodedGame, Encoder, get_encoder, list_encoders
from gotk.game.replay import iter_positions
from gotk.game.state import BLACK, WHITE, GameState
from gotk.sgf.reader import read_sgf
from gotk.sgf.record import GameRecord
from gotk.sources.archives import iter_sources

BASIC = ("oneplane", "sevenplane", "simple", "relative")


def rc(r: int, c: int, size: int) -> int:
    return r * size + c


def pts(cells, size):
    return [rc(r, c, size) for r, c in cells]


def plane_points(plane: np.ndarray) -> set[tuple[int, int]]:
    return {(int(r), int(c)) for r, c in zip(*np.nonzero(plane), strict=True)}


def record(size, moves, black=(), white=()) -> GameRecord:
    """A record with setup stones and ``moves`` = [(color, (row, col) or None for a pass)]."""
    colors = np.array([c for c, _ in moves], dtype=np.int8)
    points = np.array([size * size if m is None else rc(*m, size) for _, m in moves], dtype=np.int16)
    return GameRecord(size=size, setup_black=tuple(pts(black, size)), setup_white=tuple(pts(white, size)),
                      colors=colors, points=points)


# --- API ----------------------------------------------------------------------------------------


def test_registry_lists_the_builtin_encoders():
    names = list_encoders()
    for name in BASIC:
        assert name in names
    with pytest.raises(ValueError, match="unknown encoder"):
        get_encoder("no-such-encoder")


def test_registry_tolerates_a_missing_optional_encoder(monkeypatch):
    from gotk.encoders import registry

    monkeypatch.setitem(registry._BUILTIN, "ghost", "gotk.encoders.no_such_module:GhostEncoder")
    assert "ghost" not in list_encoders()
    with pytest.raises(ValueError, match="unknown encoder 'ghost'"):
        get_encoder("ghost")


def test_register_encoder(monkeypatch):
    from gotk.encoders import registry
    from gotk.encoders.simple import SimpleEncoder

    class Renamed(SimpleEncoder):
        name = "renamed"

    monkeypatch.setattr(registry, "_REGISTERED", dict(registry._REGISTERED))
    registry.register_encoder("renamed", Renamed)
    assert "renamed" in list_encoders()
    assert get_encoder("renamed", board_size=9).shape == (11, 9, 9)
    with pytest.raises(TypeError):
        registry.register_encoder("bad", dict)


def test_alphago_options_pass_through():
    if "alphago" not in list_encoders():
        pytest.skip("gotk.encoders.alphago is not there yet")
    assert get_encoder("alphago").num_planes == 48
    assert get_encoder("alphago", player_plane=True).num_planes == 49


@pytest.mark.parametrize("name, planes, dtype", [("oneplane", 1, "int8"), ("sevenplane", 7, "bit"),
                                                 ("simple", 11, "bit"), ("relative", 11, "bit")])
def test_encoder_attributes(name, planes, dtype):
    enc = get_encoder(name, board_size=9)
    assert isinstance(enc, Encoder)
    assert enc.name == name and enc.version >= 1
    assert enc.num_planes == planes == len(enc.plane_names) == len(set(enc.plane_names))
    assert enc.shape == (planes, 9, 9)
    assert enc.dtype == dtype
    assert enc.describe()["plane_names"] == enc.plane_names
    assert enc.encode_move(80) == 80 and enc.decode_move(81) == 81
    with pytest.raises(ValueError):
        enc.encode_move(82)
    out = enc.encode(GameState(9))
    assert out.shape == (planes, 9, 9) and out.dtype == enc.np_dtype


def test_plane_names_say_what_they_hold():
    assert get_encoder("sevenplane").plane_names == [
        "own_liberties_1", "own_liberties_2", "own_liberties_3plus",
        "opponent_liberties_1", "opponent_liberties_2", "opponent_liberties_3plus", "ko"]
    assert get_encoder("simple").plane_names == [
        "black_liberties_1", "black_liberties_2", "black_liberties_3", "black_liberties_4plus",
        "white_liberties_1", "white_liberties_2", "white_liberties_3", "white_liberties_4plus",
        "black_to_move", "white_to_move", "ko"]


def test_size_mismatch_is_refused():
    enc = get_encoder("simple", board_size=9)
    with pytest.raises(ValueError):
        enc.encode(GameState(19))
    with pytest.raises(ValueError):
        enc.encode_game(record(19, [(BLACK, (3, 3))]))


# --- hand-made positions ------------------------------------------------------------------------

# 9x9, liberties worked out by hand: (row, col) -> liberties of the string there
#   B (0,0) corner: 2     B (0,4) edge: 3       B (4,4) centre: 4
#   B (0,8) with W (1,8) below it: B 1 liberty (0,7); W (1,8): 2 ((1,7), (2,8))
#   B (3,0), W (4,0), B (5,0) on the left edge: B 2 and 2, W 1 ((4,1))
#   W (8,0)-(8,1): 3 ((7,0), (7,1), (8,2))   W (6,6): 4   W (8,8): 2
LIBS_BLACK = {(0, 0): 2, (0, 4): 3, (4, 4): 4, (0, 8): 1, (3, 0): 2, (5, 0): 2}
LIBS_WHITE = {(1, 8): 2, (4, 0): 1, (8, 0): 3, (8, 1): 3, (6, 6): 4, (8, 8): 2}


def liberty_state() -> GameState:
    return GameState(9).setup(pts(LIBS_BLACK, 9), pts(LIBS_WHITE, 9))


def expected_bucket(libs: dict, lo: int, hi: int) -> set:
    return {p for p, n in libs.items() if lo <= n <= hi}


@pytest.mark.parametrize("color", [BLACK, WHITE])
def test_sevenplane_liberty_buckets(color):
    out = get_encoder("sevenplane", board_size=9).encode(liberty_state(), color=color)
    own, opp = (LIBS_BLACK, LIBS_WHITE) if color == BLACK else (LIBS_WHITE, LIBS_BLACK)
    for base, libs in ((0, own), (3, opp)):
        assert plane_points(out[base]) == expected_bucket(libs, 1, 1)
        assert plane_points(out[base + 1]) == expected_bucket(libs, 2, 2)
        assert plane_points(out[base + 2]) == expected_bucket(libs, 3, 99)
    assert not out[6].any()
    assert set(np.unique(out)) <= {0, 1}


@pytest.mark.parametrize("color", [BLACK, WHITE])
def test_simple_liberty_buckets_and_to_move(color):
    out = get_encoder("simple", board_size=9).encode(liberty_state(), color=color)
    for base, libs in ((0, LIBS_BLACK), (4, LIBS_WHITE)):
        assert plane_points(out[base]) == expected_bucket(libs, 1, 1)
        assert plane_points(out[base + 1]) == expected_bucket(libs, 2, 2)
        assert plane_points(out[base + 2]) == expected_bucket(libs, 3, 3)
        assert plane_points(out[base + 3]) == expected_bucket(libs, 4, 99)
    assert (out[8] == (color == BLACK)).all()
    assert (out[9] == (color == WHITE)).all()
    assert not out[10].any()


@pytest.mark.parametrize("color", [BLACK, WHITE])
def test_relative_liberty_buckets_from_the_movers_view(color):
    out = get_encoder("relative", board_size=9).encode(liberty_state(), color=color)
    own, opp = (LIBS_BLACK, LIBS_WHITE) if color == BLACK else (LIBS_WHITE, LIBS_BLACK)
    for base, libs in ((0, own), (4, opp)):
        assert plane_points(out[base]) == expected_bucket(libs, 1, 1)
        assert plane_points(out[base + 1]) == expected_bucket(libs, 2, 2)
        assert plane_points(out[base + 2]) == expected_bucket(libs, 3, 3)
        assert plane_points(out[base + 3]) == expected_bucket(libs, 4, 99)
    assert (out[8] == 1).all()  # the board's extent
    assert (out[9] == (color == WHITE)).all()
    assert not out[10].any()


def test_relative_swaps_own_and_opponent_with_the_side_to_move():
    enc = get_encoder("relative", board_size=9)
    black, white = enc.encode(liberty_state(), color=BLACK), enc.encode(liberty_state(), color=WHITE)
    assert np.array_equal(black[0:4], white[4:8]) and np.array_equal(black[4:8], white[0:4])
    assert np.array_equal(black[8], white[8]) and not black[9].any() and white[9].all()
    # own 1-liberty stones for black: the black stone at (0,8) in atari; for white: the white stone at (4,0)
    assert plane_points(black[0]) == {(0, 8)} and plane_points(white[0]) == {(4, 0)}


@pytest.mark.parametrize("color", [BLACK, WHITE])
def test_oneplane_signs(color):
    out = get_encoder("oneplane", board_size=9).encode(liberty_state(), color=color)
    own, opp = (LIBS_BLACK, LIBS_WHITE) if color == BLACK else (LIBS_WHITE, LIBS_BLACK)
    assert plane_points(out[0] == 1) == set(own)
    assert plane_points(out[0] == -1) == set(opp)
    assert out.dtype == np.int8 and np.count_nonzero(out) == len(own) + len(opp)


# 5x5 before black plays (0,2):           after: two white strings captured at once
#   r0: O O . O X                         r0: . . X . X
#   r1: X X X X .                         r1: X X X X .
# White (0,0)-(0,1) and (0,3) each have the single liberty (0,2). Before the move black's row
# (1,0)-(1,3) has 6 liberties ((0,2), (2,0..3), (1,4)) and (0,4) has 1 ((1,4)). After it the big black
# string (0,2)+(1,0..3) has 8 ((0,0), (0,1), (0,3), (2,0..3), (1,4)) and (0,4) has 2 ((0,3), (1,4)).
CAPTURE_BLACK = [(1, 0), (1, 1), (1, 2), (1, 3), (0, 4)]
CAPTURE_WHITE = [(0, 0), (0, 1), (0, 3)]


def test_multi_string_capture_planes():
    rec = record(5, [(BLACK, (0, 2)), (WHITE, (4, 4))], CAPTURE_BLACK, CAPTURE_WHITE)
    seven = get_encoder("sevenplane", board_size=5).encode_game(rec)
    simple = get_encoder("simple", board_size=5).encode_game(rec)
    assert seven.error is None and seven.moves_replayed == 2
    before, after = seven.features
    # before: black to move
    assert plane_points(before[0]) == {(0, 4)}
    assert plane_points(before[2]) == {(1, 0), (1, 1), (1, 2), (1, 3)}
    assert plane_points(before[3]) == set(CAPTURE_WHITE)
    assert not before[[1, 4, 5, 6]].any()
    # after: white to move, no white stones left, black has a 2-liberty and an 8-liberty string
    assert not after[:3].any()
    assert plane_points(after[4]) == {(0, 4)}
    assert plane_points(after[5]) == {(0, 2), (1, 0), (1, 1), (1, 2), (1, 3)}
    assert not after[3].any() and not after[6].any()  # three stones captured: no ko
    s_after = simple.features[1]
    assert plane_points(s_after[1]) == {(0, 4)}
    assert plane_points(s_after[3]) == {(0, 2), (1, 0), (1, 1), (1, 2), (1, 3)}
    assert not s_after[4:8].any()
    assert s_after[9].all() and not s_after[8].any()
    assert seven.labels.tolist() == [2, 24] and seven.to_play.tolist() == [1, -1]


# 5x5 ko: black plays (1,2) and captures the white stone on (1,1); white may not retake at once.
#   r0: . X O . .        r0: . X O . .
#   r1: X O . O .   ->   r1: X . X O .
#   r2: . X O . .        r2: . X O . .
KO_BLACK = [(0, 1), (1, 0), (2, 1)]
KO_WHITE = [(0, 2), (1, 1), (1, 3), (2, 2)]


def ko_state() -> GameState:
    s = GameState(5).setup(pts(KO_BLACK, 5), pts(KO_WHITE, 5))
    s.play(rc(1, 2, 5), BLACK)
    return s


def test_ko_plane_only_for_the_player_who_may_not_retake():
    state = ko_state()
    seven = get_encoder("sevenplane", board_size=5)
    simple = get_encoder("simple", board_size=5)
    assert plane_points(seven.encode(state, color=WHITE)[6]) == {(1, 1)}
    assert plane_points(simple.encode(state, color=WHITE)[10]) == {(1, 1)}
    assert not seven.encode(state, color=BLACK)[6].any()
    assert not simple.encode(state, color=BLACK)[10].any()
    # the capturing stone sits in atari: own 1-liberty plane for black, opponent's for white
    assert (1, 2) in plane_points(seven.encode(state, color=BLACK)[0])
    assert (1, 2) in plane_points(seven.encode(state, color=WHITE)[3])


def test_ko_plane_in_a_game_lasts_one_move():
    # B captures (ko), W plays elsewhere, B plays elsewhere: only the position right after the
    # capture (white to move) has the ko point; after W's tenuki the ko is gone.
    rec = record(5, [(BLACK, (1, 2)), (WHITE, (4, 4)), (BLACK, (4, 0)), (WHITE, (1, 1))], KO_BLACK, KO_WHITE)
    game = get_encoder("sevenplane", board_size=5).encode_game(rec)
    assert game.error is None and len(game) == 4
    assert [plane_points(f[6]) for f in game.features] == [set(), {(1, 1)}, set(), set()]


def test_illegal_ko_retake_stops_the_game():
    rec = record(5, [(BLACK, (1, 2)), (WHITE, (1, 1)), (BLACK, (4, 4))], KO_BLACK, KO_WHITE)
    for name in BASIC:
        game = get_encoder(name, board_size=5).encode_game(rec)
        assert game.moves_replayed == 1
        assert game.error is not None and game.error.reason == "illegal_move"
        assert len(game) == 1 and game.labels.tolist() == [rc(1, 2, 5)]  # the illegal move is no label


def test_passes_and_skip_first():
    moves = [(BLACK, (2, 2)), (WHITE, None), (BLACK, (1, 1)), (WHITE, (3, 3)), (BLACK, None)]
    rec = record(5, moves)
    enc = get_encoder("simple", board_size=5)
    plain = enc.encode_game(rec)
    assert plain.move_numbers.tolist() == [0, 2, 3]
    assert plain.moves_replayed == 5 and plain.error is None
    with_passes = enc.encode_game(rec, include_passes=True)
    assert with_passes.move_numbers.tolist() == [0, 1, 2, 3, 4]
    assert with_passes.labels.tolist() == [12, 25, 6, 18, 25]
    assert with_passes.to_play.tolist() == [1, -1, 1, -1, 1]
    assert with_passes.features[1, 9].all()  # white to move before its pass
    skipped = enc.encode_game(rec, include_passes=True, skip_first=3)
    assert skipped.move_numbers.tolist() == [3, 4]
    assert np.array_equal(skipped.features, with_passes.features[3:])
    assert isinstance(plain, EncodedGame) and plain.features.shape == (3, 11, 5, 5)


def test_setup_handicap_stones_are_encoded_before_the_first_move():
    rec = record(9, [(WHITE, (2, 6))], black=[(2, 2), (6, 6)])
    game = get_encoder("oneplane", board_size=9).encode_game(rec)
    assert game.to_play.tolist() == [-1]
    assert plane_points(game.features[0, 0] == -1) == {(2, 2), (6, 6)}  # black stones, white to move


# --- real games: both paths agree ---------------------------------------------------------------


def real_records(count: int) -> list[GameRecord]:
    """The first ``count`` games of the package's held-out month (2017-02)."""
    from gotk.data import HELDOUT_ARCHIVE

    out: list[GameRecord] = []
    for src in iter_sources([HELDOUT_ARCHIVE]):
        if hasattr(src, "data"):
            out.extend(read_sgf(src.data))
        if len(out) >= count:
            break
    return out[:count]


@pytest.mark.parametrize("name", list_encoders())
def test_encode_state_equals_encode_game_rows(name):
    enc = get_encoder(name)
    for rec in real_records(4):
        game = enc.encode_game(rec, include_passes=True)
        rows = {int(m): k for k, m in enumerate(game.move_numbers)}
        seen = 0
        for state, i, color, point in iter_positions(rec):
            assert state.to_play == color
            assert np.array_equal(enc.encode(state), game.features[rows[i]]), (name, i)
            assert game.labels[rows[i]] == point
            seen += 1
        assert seen == len(game)


def test_game_loop_is_loaded_from_cache_in_a_new_process():
    code = textwrap.dedent("""
        import numpy as np
        from gotk.encoders import get_encoder
        from gotk.encoders.game_loop import game_loop_for
        from gotk.sgf.record import GameRecord
        enc = get_encoder("sevenplane", board_size=9)
        rec = GameRecord(size=9, colors=np.array([1, 2], np.int8), points=np.array([40, 41], np.int16))
        assert len(enc.encode_game(rec)) == 2
        loop = game_loop_for(enc.fill)
        print(sum(loop.stats.cache_hits.values()), sum(loop.stats.cache_misses.values()))
    """)
    exec(compile(code.replace("print(", "(", 1), "<first run>", "exec"), {})  # compiles (or loads) here
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    hits, misses = (int(x) for x in run.stdout.split())
    assert (hits, misses) == (1, 0), run.stdout


def test_bit_planes_hold_only_zero_and_one():
    rec = real_records(1)[0]
    for name in ("sevenplane", "simple"):
        f = get_encoder(name).encode_game(rec).features
        assert set(np.unique(f).tolist()) <= {0, 1}
    # each stone is in exactly one liberty plane of its colour
    f = get_encoder("simple").encode_game(rec).features
    assert f[:, :8].sum(axis=1).max() == 1
    assert (f[:, 8] ^ f[:, 9]).all()  # exactly one side to move


# --- rows written into the caller's arrays (the shard writer's path) -----------------------------


@pytest.mark.parametrize("name", list_encoders())
def test_encode_game_into_writes_the_rows_of_encode_game(name):
    """``encode_game_into`` (rows straight into a shard batch) gives exactly ``encode_game``'s rows, on real
    games and on hand-made ones that stop early (illegal ko retake) or keep passes / skip moves."""
    from gotk.encoders.base import kept_count

    enc = get_encoder(name)
    ko = record(19, [(BLACK, (1, 2)), (WHITE, (1, 1)), (BLACK, (4, 4))], KO_BLACK, KO_WHITE)
    passes = record(19, [(BLACK, (2, 2)), (WHITE, None), (BLACK, (1, 1)), (WHITE, (3, 3)), (BLACK, None)])
    cases = [(rec, {}) for rec in real_records(3)] + [(ko, {}), (passes, {"include_passes": True}),
                                                                 (passes, {"skip_first": 2})]
    for rec, kw in cases:
        want = enc.encode_game(rec, **kw)
        cap = kept_count(rec.points, rec.size, kw.get("include_passes", False), kw.get("skip_first", 0))
        out = np.zeros((cap, enc.num_planes, enc.num_points), dtype=enc.np_dtype)
        labels, moves = np.full(cap, -7, np.int16), np.full(cap, -7, np.int32)
        to_play = np.zeros(cap, np.int8)
        rows, replayed, error = enc.encode_game_into(rec, out, labels, moves, to_play, **kw)
        assert rows == len(want) and replayed == want.moves_replayed
        assert (error is None) == (want.error is None) and str(error) == str(want.error)
        assert np.array_equal(out[:rows].reshape(want.features.shape), want.features)
        assert np.array_equal(labels[:rows], want.labels) and np.array_equal(moves[:rows], want.move_numbers)
        assert np.array_equal(to_play[:rows], want.to_play)


@pytest.mark.parametrize("include_passes", [False, True])
@pytest.mark.parametrize("skip_first", [0, 1, 3, 99, -2])
def test_kept_count_is_the_rows_encode_game_yields(include_passes, skip_first):
    from gotk.encoders.base import kept_count

    moves = [(BLACK, (2, 2)), (WHITE, None), (BLACK, (1, 1)), (WHITE, (3, 3)), (BLACK, None), (WHITE, None)]
    rec = record(5, moves)
    game = get_encoder("oneplane", board_size=5).encode_game(rec, include_passes, skip_first)
    assert kept_count(rec.points, 5, include_passes, skip_first) == len(game)
    expect = sum(1 for i, p in enumerate(rec.points.tolist()) if i >= skip_first and (include_passes or p != 25))
    assert len(game) == expect


@pytest.mark.parametrize("name", BASIC)
@pytest.mark.parametrize("kw", [{}, {"include_passes": True}, {"skip_first": 2}])
def test_encode_batch_into_writes_the_rows_of_encode_game(name, kw):
    """``encode_batch_into`` (many games in one compiled call, rows end to end) gives exactly each game's
    ``encode_game`` rows, into arrays full of junk (each row is zeroed first), also where a game stops at an
    illegal move (its dropped row is the next game's first) and on a handicap game; a game with unusable
    setup stones stops the batch at its index."""
    from gotk.encoders.base import kept_count, kept_counts
    from gotk.game.replay import GameBatch

    enc = get_encoder(name)
    ko = record(19, [(BLACK, (1, 2)), (WHITE, (1, 1)), (BLACK, (4, 4))], KO_BLACK, KO_WHITE)
    passes = record(19, [(BLACK, (2, 2)), (WHITE, None), (BLACK, (1, 1)), (WHITE, (3, 3)), (BLACK, None)])
    handicap = record(19, [(WHITE, (2, 2)), (BLACK, (5, 5))], black=[(3, 3), (15, 15)])
    recs = [ko, *real_records(2), passes, ko, handicap, ko]
    ip, sf = kw.get("include_passes", False), kw.get("skip_first", 0)
    caps = [kept_count(r.points, r.size, ip, sf) for r in recs]
    batch = GameBatch.from_records(recs)
    moves = np.append(batch.games[:, 0], batch.games[-1, 1])
    assert kept_counts(batch.points, moves, np.diff(moves), 19, ip, sf).tolist() == caps
    cap = sum(caps)
    out = np.full((cap, enc.num_planes, enc.num_points), 5, dtype=enc.np_dtype)
    labels, move_numbers, to_play = np.full(cap, -7, np.int16), np.full(cap, -7, np.int32), np.zeros(cap, np.int8)
    result, rows, done = enc.encode_batch_into(batch, out, labels, move_numbers, to_play, **kw)
    assert done == len(recs)
    j = 0
    for rec, (k, replayed, status) in zip(recs, result.tolist(), strict=True):
        want = enc.encode_game(rec, **kw)
        assert k == len(want) and replayed == want.moves_replayed and (status == 0) == (want.error is None)
        assert np.array_equal(out[j:j + k].reshape(want.features.shape), want.features)
        assert np.array_equal(labels[j:j + k], want.labels) and np.array_equal(move_numbers[j:j + k],
                                                                               want.move_numbers)
        assert np.array_equal(to_play[j:j + k], want.to_play)
        j += k
    assert rows == j
    bad = GameRecord(size=19, setup_black=(1, 19), setup_white=(0,))  # white's corner stone has no liberty
    _, rows, done = enc.encode_batch_into(GameBatch.from_records([passes, bad, passes]), out, labels, move_numbers,
                                          to_play, **kw)
    assert done == 1 and rows == len(enc.encode_game(passes, **kw))


@pytest.mark.parametrize("kw", [{}, {"include_passes": True, "skip_first": 3}])
def test_encode_traced_batch_into_writes_the_rows_of_encode_batch_into(kw):
    """A board-only encoder (``oneplane``) over the boards of a :class:`BoardTrace` (no engine) writes exactly the
    rows of its batch loop (which replays with the engine): captures, suicides, setup stones, games stopped by an
    illegal move (its row dropped), real games; it stops at a game with unusable setup stones as the batch loop
    does. An encoder that reads liberties has no board loop."""
    from test_engine import random_record, trace_records

    from gotk.encoders import oneplane, sevenplane
    from gotk.encoders import planes as P
    from gotk.game.replay import GameBatch, replay_batch

    assert P.reads_board_only(oneplane.PLANES) and get_encoder("oneplane").board_only
    assert not P.reads_board_only(sevenplane.PLANES) and not get_encoder("sevenplane").board_only
    traced = trace_records()
    bad = len(traced) - 2  # the game with unusable setup stones
    cases = [(5, traced[:bad] + traced[bad + 1:] + [random_record(5, 9, 80, "NZ")], None),
             (19, real_records(6), None), (5, traced, bad)]
    for size, records, stop in cases:
        enc = get_encoder("oneplane", board_size=size)
        batch = GameBatch.from_records(records)
        cap = sum(len(r.points) for r in records)
        got = [np.full((cap, 1, size * size), 7, np.int8), np.full(cap, -7, np.int16), np.full(cap, -7, np.int32),
               np.full(cap, 9, np.int8)]
        want = [np.zeros_like(a) for a in got]
        w_result, w_rows, w_done = enc.encode_batch_into(batch, *want, **kw)
        result, rows, done = enc.encode_traced_batch_into(batch, replay_batch(batch, trace=True)[1], *got, **kw)
        assert (rows, done) == (w_rows, w_done) and done == (len(records) if stop is None else stop) and rows > 0
        assert np.array_equal(result[:done, :2], w_result[:done, :2])
        for a, b in zip(got, want, strict=True):
            assert np.array_equal(a[:rows], b[:rows])
    with pytest.raises(ValueError, match="board loop"):
        get_encoder("sevenplane", board_size=5).encode_traced_batch_into(batch, None, *got)


def test_planes_said_to_write_every_point_do():
    """A plane function in ``WRITES_EVERY_POINT`` gives the same plane over junk as over zeros (the batch loop
    then skips zeroing the rows of a fill made of such planes, e.g. ``oneplane``)."""
    from gotk.encoders import planes as P

    state = GameState(5).setup([1, 2, 7], [3, 12, 13])
    args = (state.e,)
    for fn in P.WRITES_EVERY_POINT:
        params = (P.OWN,) if fn in (P.stones,) else ()
        for color in (BLACK, WHITE):
            zeros, junk = np.zeros(25, np.int8), np.full(25, 7, np.int8)
            fn(zeros, *args, color, *params)
            fn(junk, *args, color, *params)
            assert np.array_equal(zeros, junk), fn.py_func.__name__
    assert get_encoder("oneplane").dense and not get_encoder("sevenplane").dense


def test_the_contract_declares_the_fast_paths():
    """``Encoder`` names every path ``gotk encode`` may take and the flags that say which an encoder offers: an
    encoder with only the two required paths offers none (its fast paths refuse, it has no compiled shard loop,
    so the encode run takes it by chunks); every compiled encoder writes into given arrays, and those without
    per-game state also batch."""

    class Plain(Encoder):
        name = "plain"

        def __init__(self, board_size: int = 9) -> None:
            super().__init__(board_size)
            self.inner = get_encoder("simple", board_size=board_size)

        @property
        def plane_names(self) -> list[str]:
            return self.inner.plane_names

        def encode(self, state):
            return self.inner.encode(state)

        def encode_game(self, record, include_passes=False, skip_first=0):
            return self.inner.encode_game(record, include_passes, skip_first)

    plain = Plain()
    assert (plain.writes_into, plain.batchable, plain.board_only, plain.compile_ahead) == (False,) * 4
    assert plain.shard_loop is None
    rec = read_sgf(b"(;GM[1]SZ[9];B[ee];W[ec])")[0]
    out = np.zeros((2, plain.num_planes, 81), dtype=np.uint8)
    rows = (np.zeros(2, np.int16), np.zeros(2, np.int32), np.zeros(2, np.int8))
    with pytest.raises(NotImplementedError):
        plain.encode_game_into(rec, out, *rows)
    with pytest.raises(NotImplementedError):
        plain.encode_batch_into(None, out, *rows)
    with pytest.raises(NotImplementedError):
        plain.encode_traced_batch_into(None, None, out, *rows)
    assert [len(p) for p in plain.encode_game_chunks(rec)] == [2]
    for name in list_encoders():
        enc = get_encoder(name, board_size=9)
        assert enc.writes_into and enc.shard_loop is not None
        assert enc.batchable == (enc.game_fill is None)
