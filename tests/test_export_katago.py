"""KataGo export (gotk.export.katago): rows read back by an independent reader and checked against the engine.

The reader below is written from KataGo's description of the format (``cpp/dataio/trainingwrite.h``:
"packed bitwise, each HW zero-padded to a round byte, bits big-endian within each byte, as numpy's
unpackbits expects"; ``python/katago/train/data_processing_pytorch.py``: ``np.unpackbits(axis=2)``, the
first ``pos_len * pos_len`` bits, reshaped to ``[N, C, 19, 19]``; policy index ``y * 19 + x``, pass 361),
not from the writer. Rows of real KGS games (the package's 2017-01 month) are compared with gotk's engine
(:class:`gotk.game.state.GameState`) replayed move by move; ladders and pass-alive areas with hand-made
positions whose answers are known.
"""

from __future__ import annotations

import tarfile

import numpy as np
import pytest

from gotk.errors import GotkError
from gotk.export import katago_kernels as KK
from gotk.export.katago import katago_game_rows, write_katago_npz
from gotk.game import kernels as K
from gotk.game.scoring import area_for_pla
from gotk.game.state import BLACK, WHITE, GameState, Rules
from gotk.sgf.reader import read_sgf
from gotk.sgf.record import GameRecord, parse_result

KEYS = {  # KataGo's training npz: key -> (dtype, shape after the row axis)
    "binaryInputNCHWPacked": (np.uint8, (22, 46)),
    "globalInputNC": (np.float32, (19,)),
    "policyTargetsNCMove": (np.int16, (2, 362)),
    "globalTargetsNC": (np.float32, (64,)),
    "scoreDistrN": (np.int8, (842,)),
    "valueTargetsNCHW": (np.int8, (5, 19, 19)),
}


def read_npz(path):
    """The independent reader: arrays as KataGo's loader sees them."""
    with np.load(path) as z:
        out = {k: z[k] for k in z.files}
    bits = np.unpackbits(out["binaryInputNCHWPacked"], axis=2)
    assert bits.shape[2] == ((19 * 19 + 7) // 8) * 8
    out["planes"] = bits[:, :, :361].reshape(-1, 22, 19, 19)
    return out


def planes_of(rows):
    return np.unpackbits(rows["binaryInputNCHWPacked"], axis=2)[:, :, :361].reshape(-1, 22, 19, 19)


def P(r, c):
    return r * 19 + c


def record(black=(), white=(), moves=((BLACK, P(0, 0)),), ru="Japanese", komi=6.5, result="B+R", size=19):
    return GameRecord(size=size, komi=komi, rules=ru, result=parse_result(result), setup_black=tuple(black),
                      setup_white=tuple(white), colors=np.array([c for c, _ in moves], dtype=np.int8),
                      points=np.array([p for _, p in moves], dtype=np.int16))


@pytest.fixture(scope="module")
def kgs_games():
    from gotk.data import TRAIN_ARCHIVE

    games = []
    with tarfile.open(TRAIN_ARCHIVE) as tf:
        for info in tf:
            if info.isfile() and info.name.endswith(".sgf"):
                games += read_sgf(tf.extractfile(info).read(), member=info.name)
            if len(games) >= 30:  # enough final positions with pass-alive groups, in the archive's order
                break
    return games


def test_layout_round_trip(tmp_path, kgs_games):
    rec = kgs_games[0]
    rows = katago_game_rows(rec, game_id=rec.member)
    path = tmp_path / "rows.npz"
    write_katago_npz(rows, path)
    assert [p.name for p in tmp_path.iterdir()] == ["rows.npz"]  # no temp file left behind
    back = read_npz(path)
    n = rec.num_moves
    for key, (dtype, shape) in KEYS.items():
        assert back[key].dtype == dtype, key
        assert back[key].shape == (n, *shape), key
        np.testing.assert_array_equal(back[key], rows[key])
    g = back["globalTargetsNC"]
    assert (g[:, 25] == 1).all() and (g[:, 26] == 1).all() and (g[:, 27] == 0).all() and (g[:, 24] == 1).all()
    assert (g[:-1, 28] == 1).all() and g[-1, 28] == 0 and (back["policyTargetsNCMove"][-1, 1] == 1).all()
    assert (g[:, 63] == 2).all()
    assert (back["scoreDistrN"].sum(axis=1) == 100).all()
    assert (back["valueTargetsNCHW"][:, [0, 1, 4]] == 0).all()


def test_write_refuses_bad_rows(tmp_path, kgs_games):
    rows = katago_game_rows(kgs_games[0], game_id="g")
    rows["globalInputNC"] = rows["globalInputNC"].astype(np.float64)
    with pytest.raises(GotkError):
        write_katago_npz(rows, tmp_path / "x.npz")
    assert list(tmp_path.iterdir()) == []


def _liberty_planes(state):
    libs = state.liberty_grid()
    return [(libs == k).reshape(state.size, state.size) for k in (1, 2, 3)]


def test_planes_match_engine_on_kgs_games(kgs_games):
    checked = 0
    for rec in kgs_games:
        rows = katago_game_rows(rec, game_id=rec.member)
        planes = planes_of(rows)
        pol = rows["policyTargetsNCMove"]
        glob = rows["globalInputNC"]
        assert len(planes) == rec.num_moves  # KGS records stop at the second pass
        state = GameState(19, Rules(), rec.komi)
        if rec.setup_black or rec.setup_white:
            state.setup(rec.setup_black, rec.setup_white)
        history = []
        white_bonus = 0.0
        for t, (color, point) in enumerate(rec.moves):
            state.to_play = color
            pl = planes[t]
            opp = 3 - color
            grid = state.grid()
            assert (pl[0] == 1).all()
            np.testing.assert_array_equal(pl[1], grid == color)
            np.testing.assert_array_equal(pl[2], grid == opp)
            for k, plane in zip((3, 4, 5), _liberty_planes(state), strict=True):
                np.testing.assert_array_equal(pl[k], plane)
            ko = np.zeros(361, dtype=bool)
            if state.ko_point is not None:
                ko[state.ko_point] = True
            np.testing.assert_array_equal(pl[6].ravel(), ko)  # simple-ko rulesets: the ko point only
            for k in range(5):  # previous moves, as long as colours alternate back from the opponent
                want = np.zeros(361, dtype=bool)
                passed = 0.0
                alternate = len(history) > k and all(history[-1 - j][0] == (opp if j % 2 == 0 else color)
                                                     for j in range(k + 1))
                if alternate:
                    prev = history[-1 - k][1]
                    if prev == 361:
                        passed = 1.0
                    else:
                        want[prev] = True
                np.testing.assert_array_equal(pl[9 + k].ravel(), want)
                assert glob[t, k] == passed
            assert np.argmax(pol[t, 0]) == point and pol[t, 0].sum() == 1
            if t + 1 < rec.num_moves:
                assert np.argmax(pol[t, 1]) == rec.points[t + 1] and pol[t, 1].sum() == 1
            # komi from the mover's view; Japanese rules charge a point per stone played
            komi = rec.komi + (white_bonus if rec.rules.lower() == "japanese" else 0.0)
            if rec.rules.lower() == "chinese" and len(rec.setup_black) >= 2 and not rec.setup_white:
                komi += len(rec.setup_black)  # Chinese rules: White gets a point per handicap stone
            assert glob[t, 5] == pytest.approx((komi if color == WHITE else -komi) / 20.0)
            assert glob[t, 9] == (1.0 if rec.rules.lower() == "japanese" else 0.0)
            state.play(point, color)
            history.append((color, point))
            if point != 361:
                white_bonus += 1.0 if color == BLACK else -1.0
            checked += 1
    assert checked > 2000


def test_value_and_future_board(kgs_games):
    rec = next(r for r in kgs_games if r.result.winner is not None)
    rows = katago_game_rows(rec, game_id="g")
    g = rows["globalTargetsNC"]
    for t, color in enumerate(rec.colors):
        won = (rec.result.winner == "b") == (color == BLACK)
        assert tuple(g[t, 0:3]) == ((1, 0, 0) if won else (0, 1, 0))
    state = GameState(19, Rules(), rec.komi)
    if rec.setup_black or rec.setup_white:
        state.setup(rec.setup_black, rec.setup_white)
    boards = [state.grid().copy()]
    for color, point in rec.moves:
        state.play(point, color)
        boards.append(state.grid().copy())
    fut = rows["valueTargetsNCHW"]
    for t in (0, 50, len(rec.colors) - 1):
        color = rec.colors[t]
        b8 = boards[min(t + 8, len(boards) - 1)]
        np.testing.assert_array_equal(fut[t, 2], np.where(b8 == color, 1, np.where(b8 == 3 - color, -1, 0)))
    assert katago_game_rows(record(result="?"), game_id="g")["globalTargetsNC"][0, 35] == 1  # unknown: off


def test_deterministic_for_game_id_and_seed(kgs_games):
    rec = kgs_games[1]
    a = katago_game_rows(rec, game_id="x")
    b = katago_game_rows(rec, game_id="x")
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    c = katago_game_rows(rec, game_id="y")
    assert not np.array_equal(a["globalTargetsNC"][:, 41:47], c["globalTargetsNC"][:, 41:47])


# --- hand-made positions ---------------------------------------------------------------------

LADDER_BLACK = (P(8, 9), P(9, 8), P(10, 10))  # White's stone at (9, 9) has two liberties: (9, 10), (10, 9)


@pytest.mark.parametrize("breakers,works", [
    ((), {P(9, 10), P(10, 9)}),  # both ataris ladder it on an empty board
    ((P(14, 5),), {P(10, 9)}),  # a white stone on the down-left diagonal breaks the ladder that runs there
    ((P(5, 14),), {P(9, 10)}),  # ... on the up-right diagonal
    ((P(14, 5), P(5, 14)), set()),
])
def test_ladder_features(breakers, works):
    rec = record(LADDER_BLACK, (P(9, 9), *breakers), moves=((BLACK, P(3, 15)), (WHITE, P(15, 3))))
    pl = planes_of(katago_game_rows(rec, game_id="l"))
    laddered = {P(9, 9)} if works else set()
    assert set(np.flatnonzero(pl[0, 14])) == laddered
    assert set(np.flatnonzero(pl[0, 17])) == works  # Black to move: moves laddering a White chain
    assert not pl[1, 17].any()  # White to move: no Black chain to ladder
    # no history before the first move: 15 and 16 repeat 14; one move later 15 is the previous board's
    np.testing.assert_array_equal(pl[0, 15], pl[0, 14])
    np.testing.assert_array_equal(pl[0, 16], pl[0, 14])
    np.testing.assert_array_equal(pl[1, 15], pl[0, 14])


# --- a plain recursive ladder search, written here from KataGo's definition (continuous ataris: the
# attacker plays one of the two liberties, the defender captures an adjacent chain in atari or extends;
# a ko point left by the attacker counts as an escape; moves are legal without any suicide and not on the
# board's ko point; the root of a defender-first search ignores the ko point). It leaves out KataGo's
# move ordering, early exits and double-ko shortcut, which must not change the answer on real games.

def _libs_list(st, loc):
    out = []
    for s in st.string_at(loc):
        for q in st.nbr[s]:
            if q >= 0 and st.board[q] == 0 and q not in out:
                out.append(int(q))
    return out


def _legal(st, p, color):
    if st.board[p] != 0 or p == st.meta[K.M_KO]:
        return False
    return K.check_move(st.e, p, color, False) == K.OK


def _after(st, p, color):
    s2 = st.copy()
    s2._seen = None
    K.play(s2.e, p, color, False)
    return s2


def _captured(st, loc, defender, root=False):
    libs = st.liberties_at(loc)
    own = int(st.board[loc])
    att = 3 - own
    if not defender:
        if libs <= 1:
            return True
        if libs >= 3:
            return False
        return any(_legal(st, m, att) and _captured(_after(st, m, att), loc, True) for m in _libs_list(st, loc))
    if libs >= 2:
        return False
    if not root and st.meta[K.M_KO] >= 0:
        return False
    moves = []
    for s in st.string_at(loc):
        for q in st.nbr[s]:
            if q >= 0 and st.board[q] == att and st.liberties_at(q) == 1:
                moves += [m for m in _libs_list(st, q) if m not in moves]
    moves += [m for m in _libs_list(st, loc) if m not in moves]
    return all(not _legal(st, m, own) or _captured(_after(st, m, own), loc, False) for m in moves)


def _reference_ladders(st):
    laddered = np.zeros(361, dtype=np.uint8)
    working = np.zeros((3, 361), dtype=np.uint8)
    for p in np.flatnonzero(st.board):
        c = int(st.board[p])
        libs = st.liberties_at(p)
        if libs == 1:
            s = st.copy()
            s.meta[K.M_KO] = -1
            laddered[p] = _captured(s, p, True, root=True)
        elif libs == 2:
            for m in _libs_list(st, p):
                if _legal(st, m, 3 - c):
                    s = _after(st, m, 3 - c)
                    s.meta[K.M_KO] = -1
                    if _captured(s, p, True, root=True):
                        laddered[p] = 1
                        working[c, m] = 1
    return laddered, working


def test_ladder_planes_match_a_plain_search_on_kgs_games(kgs_games):
    for rec in kgs_games[:2]:
        planes = planes_of(katago_game_rows(rec, game_id="r")).reshape(-1, 22, 361)
        st = GameState(19, Rules(), rec.komi)
        if rec.setup_black or rec.setup_white:
            st.setup(rec.setup_black, rec.setup_white)
        for t, (color, point) in enumerate(rec.moves):
            laddered, working = _reference_ladders(st)
            np.testing.assert_array_equal(planes[t, 14], laddered, err_msg=f"{rec.member} move {t}")
            np.testing.assert_array_equal(planes[t, 17], working[3 - color], err_msg=f"{rec.member} move {t}")
            st.play(point, color)


def test_ladder_one_liberty():
    # White (9, 9) in atari at (10, 9): extending there gives 3 liberties, so not laddered ...
    free = record((P(8, 9), P(9, 8), P(9, 10)), (P(9, 9),), moves=((WHITE, P(0, 0)),))
    assert not planes_of(katago_game_rows(free, game_id="a"))[0, 14].any()
    # ... but with Black at (11, 9) and (10, 10) too the extension has 1 liberty... a net: laddered
    caught = record((P(8, 9), P(9, 8), P(9, 10), P(11, 9), P(10, 10)), (P(9, 9),), moves=((WHITE, P(0, 0)),))
    assert set(np.flatnonzero(planes_of(katago_game_rows(caught, game_id="a"))[0, 14])) == {P(9, 9)}


# Black's corner chain (0,1) (1,0)-(1,4) (0,4): eyes at (0,0) and (0,2)-(0,3); a White stone sits at (0,2)
TWO_EYES = (P(0, 1), P(1, 0), P(1, 1), P(1, 2), P(1, 3), P(1, 4), P(0, 4))


@pytest.mark.parametrize("one_eye", [False, True])
def test_pass_alive_area(one_eye):
    black = TWO_EYES + ((P(0, 0),) if one_eye else ())
    rec = record(black, (P(0, 2), P(10, 10)), moves=((BLACK, P(18, 18)), (WHITE, P(17, 17))), ru="Chinese")
    pl = planes_of(katago_game_rows(rec, game_id="a"))
    mine, theirs = pl[0, 18].ravel(), pl[0, 19].ravel()  # Black to move
    for p in black:
        assert mine[p] == 1
    if one_eye:  # one vital region: not pass-alive, the White stone keeps its point
        assert theirs[P(0, 2)] == 1 and mine[P(0, 2)] == 0 and mine[P(0, 3)] == 0
    else:  # pass-alive (Benson): the White stone inside is Black's area, and so is each eye
        assert mine[P(0, 2)] == 1 and mine[P(0, 3)] == 1 and mine[P(0, 0)] == 1 and theirs[P(0, 2)] == 0
    assert theirs[P(10, 10)] == 1 and mine[P(5, 5)] == 0  # a lone stone is area; open board is nobody's
    np.testing.assert_array_equal(pl[1, 18], pl[0, 19])  # White to move: the same area, seen from White
    japanese = record(black, (P(0, 2),), moves=((BLACK, P(18, 18)),))
    assert not planes_of(katago_game_rows(japanese, game_id="a"))[0, 18:20].any()  # territory: off in main phase


def test_superko_ban_kernel():
    st = GameState(19, Rules(), 7.5)
    st.setup((P(3, 3), P(3, 5), P(2, 4)), (P(4, 4), P(5, 5)))
    after = st.copy()
    after.play(P(3, 4), BLACK)
    history = np.sort(np.array([after.hash, 12345], dtype=np.uint64))
    out = np.zeros(361, dtype=np.uint8)
    keys = np.zeros(3, dtype=np.uint64)
    KK.superko_banned(st.engine_arrays, BLACK, False, False,
                      keys, history, out)
    assert set(np.flatnonzero(out)) == {P(3, 4)}
    keys = np.array([0, 11, 22], dtype=np.uint64)  # situational: the side to move is part of the position
    for to_move, banned in ((WHITE, {P(3, 4)}), (BLACK, set())):
        history = np.sort(np.array([after.hash ^ int(keys[to_move])], dtype=np.uint64))
        KK.superko_banned(st.engine_arrays, BLACK, False, True,
                          keys, history, out)
        assert set(np.flatnonzero(out)) == banned


def test_positional_rules_globals():
    rec = record(moves=((BLACK, P(3, 3)), (WHITE, 361), (BLACK, 361)), ru="Tromp-Taylor", komi=7.5, result="B+0.5")
    rows = katago_game_rows(rec, game_id="g")
    g = rows["globalInputNC"]
    assert tuple(g[0, 6:10]) == (1.0, 0.5, 1.0, 0.0)  # positional ko, suicide legal, area scoring
    assert g[0, 5] == pytest.approx(-7.5 / 20) and g[1, 5] == pytest.approx(7.5 / 20)
    assert tuple(g[:, 14]) == (0.0, 0.0, 1.0)  # only after White's pass would a pass end the game
    assert g[2, 1] == 0.0 and g[2, 0] == 1.0  # the last move was a pass
    assert g[0, 18] == pytest.approx(0.5) or g[0, 18] == pytest.approx(-0.5)


# --- bad input -> skip with a reason ---------------------------------------------------------------

@pytest.mark.parametrize("sgf,reason", [
    (b"(;GM[1]SZ[19]KM[6.5]RE[B+R];B[dd];W[pp];AB[qq];B[dp])", "bad_setup"),
    (b"(;GM[1]SZ[19]KM[6.5]RE[B+R];B[dd];W[dd])", "occupied"),
    (b"(;GM[1]SZ[21]KM[6.5]RE[B+R];B[dd];W[pp])", "bad_size"),
    (b"(;GM[1]SZ[19]KM[6.5]RE[B+R])", "too_short"),
])
def test_bad_games_raise_a_reason(sgf, reason):
    rec = read_sgf(sgf)[0]
    with pytest.raises(GotkError) as e:
        katago_game_rows(rec, game_id="bad")
    assert e.value.reason == reason


def test_small_board_sits_in_the_corner():
    rec = record(moves=((BLACK, 2 * 9 + 2), (WHITE, 81), (BLACK, 6 * 9 + 6)), size=9, result="W+3.5", komi=7.0)
    rows = katago_game_rows(rec, game_id="s")
    pl = planes_of(rows)
    on = np.zeros((19, 19), dtype=np.uint8)
    on[:9, :9] = 1
    np.testing.assert_array_equal(pl[0, 0], on)
    assert pl[1, 2, 2, 2] == 1  # Black's stone at row 2, col 2 of the 9x9 board, seen by White
    pol = rows["policyTargetsNCMove"]
    assert np.argmax(pol[0, 0]) == 2 * 19 + 2 and np.argmax(pol[1, 0]) == 361 and np.argmax(pol[2, 0]) == 6 * 19 + 6


def test_bonus_points_onward_under_territory_scoring():
    moves = ((BLACK, P(3, 3)), (WHITE, P(15, 15)), (BLACK, P(3, 15)), (WHITE, 361), (BLACK, P(15, 3)))
    g = katago_game_rows(record(moves=moves), game_id="b")["globalTargetsNC"]
    # Japanese rules charge a point per stone: Black plays 3, White 1, so White gets 2 onward from the start
    assert g[0, 61] == -2.0 and g[1, 61] == 1.0  # Black to move: -(3 - 1); White after Black's first: +(2 - 1)
    assert g[4, 61] == -1.0 and g[0, 47] == -6.5 and g[1, 47] == 7.5


def _regions(board):
    """Empty regions of a flat 19x19 board and the colours bordering each (a plain flood fill)."""
    seen = np.zeros(361, dtype=bool)
    for start in np.flatnonzero(board == 0):
        if seen[start]:
            continue
        region, borders, stack = [], set(), [int(start)]
        seen[start] = True
        while stack:
            p = stack.pop()
            region.append(p)
            r, c = divmod(p, 19)
            for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                if 0 <= rr < 19 and 0 <= cc < 19:
                    q = rr * 19 + cc
                    if board[q] == 0 and not seen[q]:
                        seen[q] = True
                        stack.append(q)
                    elif board[q] != 0:
                        borders.add(int(board[q]))
        yield region, borders


def test_area_planes_on_chinese_kgs_games(kgs_games):
    """Area scoring without tax: every stone and every empty region bordered by one colour is someone's
    area; the only other points marked are inside pass-alive territory (Benson), where a stone can count
    for the opponent."""
    games = [r for r in kgs_games if r.rules.lower() == "chinese"][:2]
    assert games
    for rec in games:
        planes = planes_of(katago_game_rows(rec, game_id="c")).reshape(-1, 22, 361)
        st = GameState(19, Rules(), rec.komi)
        if rec.setup_black or rec.setup_white:
            st.setup(rec.setup_black, rec.setup_white)
        for t, (color, point) in enumerate(rec.moves):
            mine, theirs = planes[t, 18], planes[t, 19]
            assert not (mine & theirs).any()
            owner = np.where(mine == 1, color, np.where(theirs == 1, 3 - color, 0))
            stones = st.board != 0
            assert (owner[stones] != 0).all()  # every stone counts for somebody
            for region, borders in _regions(st.board):
                if len(borders) == 1:
                    assert (owner[region] == borders.pop()).all()
            st.play(point, color)


def test_rows_stop_where_katago_main_phase_ends():
    moves = ((BLACK, P(3, 3)), (WHITE, 361), (BLACK, 361), (WHITE, P(15, 15)), (BLACK, P(3, 15)))
    rows = katago_game_rows(record(moves=moves), game_id="e")
    assert rows["globalInputNC"].shape[0] == 3  # the two passes end the main phase; the rest is encore
    assert tuple(rows["globalInputNC"][:, 14]) == (0.0, 0.0, 1.0)
    assert rows["globalTargetsNC"][2, 28] == 0  # no next move inside the exported rows


def test_grid_index():
    from gotk import coords

    np.testing.assert_array_equal(coords.to_grid(19, 19), np.arange(362))
    idx = coords.to_grid(9, 19)
    assert idx[0] == 0 and idx[8] == 8 and idx[9] == 19 and idx[80] == 8 * 19 + 8 and idx[81] == 361
    with pytest.raises(ValueError):
        coords.to_grid(21, 19)


# --- Benson's algorithm from its textbook statement: chains of colour c and the regions (maximal connected
# sets of points that are not c, holding at least one empty point); a region is vital to a chain when all its
# empty points are liberties of the chain; drop chains with fewer than two vital regions and regions next to
# a dropped chain until nothing changes. What is left is pass-alive.

def _components(board, pred):
    seen, out = set(), []
    for s in range(361):
        if s in seen or not pred(board[s]):
            continue
        comp, stack = {s}, [s]
        seen.add(s)
        while stack:
            p = stack.pop()
            r, c = divmod(p, 19)
            for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                q = rr * 19 + cc
                if 0 <= rr < 19 and 0 <= cc < 19 and q not in seen and pred(board[q]):
                    seen.add(q)
                    comp.add(q)
                    stack.append(q)
        out.append(frozenset(comp))
    return out


def _benson(board, color):
    def nbrs(p):
        r, c = divmod(p, 19)
        return [rr * 19 + cc for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1))
                if 0 <= rr < 19 and 0 <= cc < 19]

    chains = set(_components(board, lambda v: v == color))
    regions = {r for r in _components(board, lambda v: v != color) if any(board[p] == 0 for p in r)}
    libs = {ch: {q for p in ch for q in nbrs(p) if board[q] == 0} for ch in chains}
    touching = {r: {ch for ch in chains if any(q in ch for p in r for q in nbrs(p))} for r in regions}
    while True:
        vital = {ch: sum(1 for r in regions if ch in touching[r] and all(p in libs[ch] for p in r if board[p] == 0))
                 for ch in chains}
        alive = {ch for ch in chains if vital[ch] >= 2}
        kept = {r for r in regions if touching[r] <= alive}
        if alive == chains and kept == regions:
            return set().union(*chains) if chains else set()
        chains, regions = alive, kept


def test_pass_alive_chains_match_textbook_benson(kgs_games):
    positions = [record(TWO_EYES, (P(0, 2),)), record(TWO_EYES + (P(0, 0),), (P(0, 2),))]
    states = []
    for rec in positions:
        st = GameState(19, Rules(), 6.5)
        st.setup(rec.setup_black, rec.setup_white)
        states.append(st)
    for rec in kgs_games:  # final positions: where pass-alive groups occur
        st = GameState(19, Rules(), rec.komi)
        if rec.setup_black or rec.setup_white:
            st.setup(rec.setup_black, rec.setup_white)
        for color, point in rec.moves:
            st.play(point, color)
        states.append(st)
    found = 0
    for st in states:
        for color in (BLACK, WHITE):
            res = np.zeros(361, dtype=np.int8)
            area_for_pla(st.board, st.head, st.nxt, st.nbr, color, False, False, False, res)
            ours = {int(p) for p in np.flatnonzero((res == color) & (st.board == color))}
            ref = _benson(st.board, color)
            assert ours == ref
            found += bool(ref)
    assert found >= 3  # the two-eye group and some real games
