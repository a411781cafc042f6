"""The SGF reader: metadata, results, charsets, collections, variations, setup, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gotk import coords
from gotk.errors import SGFError
from gotk.game.replay import replay
from gotk.game.state import BLACK, WHITE
from gotk.sgf.reader import MAX_SGF_BYTES, decode_text, iter_sgf, read_sgf, read_sgf_file
from gotk.sgf.record import parse_result


def one(data: bytes):
    (rec,) = read_sgf(data)
    return rec


def reason_of(data: bytes, **kw) -> str:
    with pytest.raises(SGFError) as e:
        read_sgf(data, **kw)
    return e.value.reason


# --- results ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, winner, reason, margin, text", [
    ("B+R", "b", "resign", None, "B+R"),
    ("W+Resign", "w", "resign", None, "W+R"),
    ("W+12.5", "w", "score", 12.5, "W+12.5"),
    ("B+0.5", "b", "score", 0.5, "B+0.5"),
    ("b+3", "b", "score", 3.0, "B+3"),
    ("B+Time", "b", "time", None, "B+T"),
    ("W+T", "w", "time", None, "W+T"),
    ("W+F", "w", "forfeit", None, "W+F"),
    ("B+Forfeit", "b", "forfeit", None, "B+F"),
    ("0", None, "draw", 0.0, "0"),
    ("Draw", None, "draw", 0.0, "0"),
    ("Jigo", None, "draw", 0.0, "0"),
    ("W+0", None, "draw", 0.0, "0"),
    ("Void", None, "void", None, "Void"),
    ("?", None, "unknown", None, "?"),
    ("", None, "unknown", None, "?"),
    ("B+nonsense", "b", "unknown", None, "B+"),
    (" W + 7.5 ", "w", "score", 7.5, "W+7.5"),
])
def test_result_normalisation(raw, winner, reason, margin, text):
    r = parse_result(raw)
    assert (r.winner, r.reason, r.margin) == (winner, reason, margin)
    assert str(r) == text
    assert r.raw == raw.strip()
    # the value a value-network target takes
    if winner is None:
        assert r.value_for(BLACK) == r.value_for(WHITE) == 0
    else:
        assert r.value_for(BLACK) == (1 if winner == "b" else -1) == -r.value_for(WHITE)


def test_result_read_from_the_record():
    assert str(one(b"(;GM[1]RE[B+Time])").result) == "B+T"
    assert one(b"(;GM[1]RE[W+12.5])").result.margin == 12.5
    assert one(b"(;GM[1])").result.reason == "unknown"


# --- metadata --------------------------------------------------------------------------------------

KGS = b"""(;GM[1]
FF[4]
SZ[19]
PW[whitey]
WR[7d]
PB[blacky]
BR[4d]
DT[2017-01-31]
PC[The KGS Go Server at http://www.gokgs.com/]
KM[6.50]
RE[W+Resign]
RU[Chinese]
CA[UTF-8]
HA[0]
;B[pd];W[dp];B[pq];W[dd])"""


def test_metadata():
    rec = one(KGS)
    assert (rec.black, rec.white, rec.black_rank, rec.white_rank) == ("blacky", "whitey", "4d", "7d")
    assert rec.date == "2017-01-31"
    assert rec.place == "The KGS Go Server at http://www.gokgs.com/"
    assert rec.komi == 6.5 and rec.handicap == 0 and rec.rules == "Chinese" and rec.size == 19
    assert rec.result.winner == "w" and rec.result.reason == "resign"
    assert rec.moves == [(BLACK, coords.from_gtp("Q16", 19)), (WHITE, coords.from_gtp("D4", 19)),
                         (BLACK, coords.from_gtp("Q3", 19)), (WHITE, coords.from_gtp("D16", 19))]
    assert rec.move_labels() == ["B Q16", "W D4", "B Q3", "W D16"]
    assert rec.num_moves == 4 and rec.num_passes == 0 and rec.defect is None


def test_komi_and_handicap_oddities():
    assert one(b"(;GM[1]KM[6,5])").komi == 6.5
    assert one(b"(;GM[1]KM[-7.5])").komi == -7.5
    assert one(b"(;GM[1]KM[abc])").komi == 0.0
    for bad in (b"nan", b"inf", b"-inf"):
        assert one(b"(;GM[1]KM[" + bad + b"])").komi == 0.0
        assert one(b"(;GM[1]HA[" + bad + b"])").handicap == 0
    assert one(b"(;GM[1]HA[abc])").handicap == 0
    assert one(b"(;GM[1]HA[4]AB[dd][pd][dp][pp])").handicap == 4
    assert one(b"(;GM[1]PL[W])").first_player == WHITE
    assert one(b"(;GM[1]PL[b])").first_player == BLACK
    assert one(b"(;GM[1])").first_player is None


def test_escaped_text_values():
    rec = one(rb"(;GM[1]PB[a\]b]PW[c\\d]PC[line\
joined])")
    assert rec.black == "a]b" and rec.white == "c\\d" and rec.place == "linejoined"


# --- charsets --------------------------------------------------------------------------------------

def test_utf8_declared():
    rec = one("(;GM[1]CA[UTF-8]PB[李昌镐]PW[Jörg])".encode())
    assert rec.black == "李昌镐" and rec.white == "Jörg"


def test_gb2312_declared_and_undeclared():
    data = "(;GM[1]CA[GB2312]PB[李昌镐]PW[曹薰铉]PC[韩国])".encode("gb2312")
    rec = one(data)
    assert (rec.black, rec.white, rec.place) == ("李昌镐", "曹薰铉", "韩国")
    rec = one("(;GM[1]PB[聂卫平 9p])".encode("gb2312"))
    assert rec.black == "聂卫平 9p"


@pytest.mark.parametrize("name", ["José", "Andrés", "Müller", "François", "Åsa", "Göran"])
def test_latin1_without_charset(name):
    assert one(b"(;GM[1]PB[" + name.encode("latin-1") + b"])").black == name


def test_declared_charset_that_lies_or_is_unknown():
    assert one(b"(;GM[1]CA[UTF-8]PB[Jos\xe9])").black == "José"
    assert one(b"(;GM[1]CA[no-such-charset]PB[abc])").black == "abc"
    assert one(b"(;GM[1]CA[\xff\xfe\x00]PB[abc])").black == "abc"  # a NUL byte: codecs.lookup raises ValueError
    assert one("(;GM[1]CA[ISO-8859-1]PW[Göran])".encode("latin-1")).white == "Göran"


def test_repeated_values_give_the_same_records_and_warnings_every_time():
    """Root values are decoded through per-process caches: a value seen before must come back with the same
    text, and a declared charset that fails on it must be counted again (the warning is per game)."""
    lying = b"(;GM[1]CA[UTF-8]PB[Jos\xe9]PW[abc]AB[dd][pp]HA[2]SZ[19]KM[0.5])"
    plain = b"(;GM[1]PB[Jos\xe9]PW[abc]AB[dd][pp]HA[2]SZ[19]KM[0.5])"
    for _ in range(3):
        a, b = one(lying), one(plain)
        assert a.black == b.black == "Jos\u00e9" and a.white == "abc"
        assert a.warnings == ("charset_mismatch",) and b.warnings == ()
        assert a.setup_black == b.setup_black == (3 * 19 + 3, 15 * 19 + 15) and a.komi == 0.5 and a.handicap == 2
    assert reason_of(b"(;GM[1]AB[dd][zz])") == reason_of(b"(;GM[1]AB[dd][zz])") == "bad_setup"  # errors every time
    assert reason_of(b"(;GM[1]SZ[0])") == reason_of(b"(;GM[1]SZ[0])") == "bad_size"


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=60))
def test_decode_text_never_fails(raw):
    assert isinstance(decode_text(raw, None), str)
    assert isinstance(decode_text(raw, "utf-8"), str)


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(
    st.binary(max_size=300),
    st.lists(st.sampled_from([b"(", b")", b";", b"[", b"]", b"\\", b":", b"B", b"W", b"AB", b"SZ", b"GM", b"HA", b"KM",
                              b"dd", b"tt", b"zz", b"9", b"19", b"1", b"\xff", b"\xe9", b" ", b"\n"]),
             max_size=60).map(b"".join),
))
def test_random_bytes_never_crash(data):
    try:
        items = list(iter_sgf(data))
    except SGFError as e:
        assert e.reason in {"empty", "not_sgf", "parse_error", "too_large"}
        return
    for item in items:
        if isinstance(item, SGFError):
            assert item.reason in {"bad_size", "bad_setup", "not_go"}
            continue
        assert 2 <= item.size <= 25
        n = item.size * item.size
        assert np.all((item.points >= 0) & (item.points <= n))
        assert set(item.colors.tolist()) <= {BLACK, WHITE}
        try:
            replay(item, min_moves=0)
        except SGFError as e:  # a set-up string with no liberties is the only whole-game refusal
            assert e.reason == "bad_setup"


# --- collections, variations, setup --------------------------------------------------------------

def test_collection_of_several_games():
    recs = read_sgf(b"(;GM[1]PB[one];B[aa])\n(;GM[1]PB[two];W[bb];B[cc])(;GM[1]SZ[9]PB[three])")
    assert [r.black for r in recs] == ["one", "two", "three"]
    assert [r.num_moves for r in recs] == [1, 2, 0]
    assert recs[2].size == 9


def test_collection_with_a_bad_game_keeps_the_good_ones():
    data = b"(;GM[1]PB[one];B[aa])(;GM[1]SZ[99];W[bb])(;GM[1]PB[three])"
    items = list(iter_sgf(data))
    assert [type(i).__name__ for i in items] == ["GameRecord", "SGFError", "GameRecord"]
    assert items[1].reason == "bad_size"
    assert reason_of(data) == "bad_size"  # read_sgf is all-or-nothing


def test_variations_are_ignored_main_line_only():
    rec = one(b"(;GM[1]SZ[9];B[aa](;W[bb];B[cc](;W[dd])(;W[ee]))(;W[ff];B[gg]))")
    assert [coords.to_sgf(p, 9) for p in rec.points] == ["aa", "bb", "cc", "dd"]
    assert rec.colors.tolist() == [BLACK, WHITE, BLACK, WHITE]


def test_unknown_properties_are_ignored():
    rec = one(b"(;GM[1]XX[foo]ZZ[bar][baz]SZ[9];B[aa]QQ[x]C[comment];W[bb]LB[cc:hi])")
    assert rec.num_moves == 2 and rec.size == 9 and rec.defect is None


def test_setup_stones_and_compressed_rectangles():
    rec = one(b"(;GM[1]SZ[9]AB[aa:bc][ii]AW[cc:ca]AE[ee])")
    assert sorted(rec.setup_black) == sorted(coords.from_sgf(v, 9) for v in ("aa", "ba", "ab", "bb", "ac", "bc", "ii"))
    assert sorted(rec.setup_white) == sorted(coords.from_sgf(v, 9) for v in ("ca", "cb", "cc"))
    assert rec.setup_empty == (coords.from_sgf("ee", 9),)


def test_bad_setup():
    assert reason_of(b"(;GM[1]AB[aa]AW[aa])") == "bad_setup"
    assert reason_of(b"(;GM[1]AB[zz])") == "bad_setup"
    assert reason_of(b"(;GM[1]AB[aa:zz])") == "bad_setup"
    assert reason_of(b"(;GM[1]AB[])") == "bad_setup"
    # setup in a later node: the moves before it are kept
    rec = one(b"(;GM[1];B[aa];AB[cc];W[dd])")
    assert rec.num_moves == 1 and rec.defect[0] == "bad_setup"


# --- moves -----------------------------------------------------------------------------------------

def test_pass_forms():
    rec = one(b"(;GM[1]SZ[19];B[dd];W[tt];B[];W[pp])")
    assert rec.points.tolist() == [coords.from_gtp("D16", 19), 361, 361, coords.from_gtp("Q4", 19)]
    assert rec.num_passes == 2
    assert one(b"(;GM[1]SZ[9];B[tt])").points.tolist() == [81]  # tt is a pass up to 19x19
    rec21 = one(b"(;GM[1]SZ[21];B[tt])")
    assert rec21.points.tolist() == [coords.from_rc(19, 19, 21)]  # and a real point beyond


def test_move_off_the_board_keeps_earlier_moves():
    rec = one(b"(;GM[1]SZ[19];B[dd];W[pp];B[zz];W[qq])")
    assert rec.num_moves == 2
    assert rec.defect[0] == "bad_move" and rec.defect[1] == 2
    out = replay(rec)
    assert out.moves_played == 2 and out.error is not None and out.error.reason == "bad_move"
    rec9 = one(b"(;GM[1]SZ[9];B[ii];W[jj])")
    assert rec9.num_moves == 1 and rec9.defect[0] == "bad_move"
    rec = one(b"(;GM[1];B[aa]W[bb])")
    assert rec.num_moves == 0 and rec.defect[0] == "bad_move"
    assert one(b"(;GM[1];B[abc])").defect[0] == "bad_move"


def test_illegal_move_in_record_stops_replay():
    rec = one(b"(;GM[1]SZ[9];B[aa];W[bb];B[aa];W[cc])")
    assert rec.defect is None  # readable...
    out = replay(rec)  # ...but the engine refuses the third move
    assert out.moves_played == 2 and out.error.reason == "occupied"


# --- sizes, game type, bad bytes -------------------------------------------------------------------

@pytest.mark.parametrize("data, size", [
    (b"(;GM[1])", 19), (b"(;GM[1]SZ[19:19])", 19), (b"(;GM[1]SZ[ 9 ])", 9), (b"(;GM[1]SZ[13])", 13),
    (b"(;GM[1]SZ[25])", 25), (b"(;GM[1]SZ[2])", 2),
])
def test_sizes(data, size):
    assert one(data).size == size


@pytest.mark.parametrize("sz", [b"abc", b"30", b"1", b"0", b"-19", b"19:13", b"", b"26"])
def test_bad_sizes(sz):
    assert reason_of(b"(;GM[1]SZ[" + sz + b"])") == "bad_size"


def test_not_go():
    assert reason_of(b"(;GM[2]SZ[8];B[aa])") == "not_go"
    assert one(b"(;GM[]SZ[19])").size == 19


@pytest.mark.parametrize("data", [b"", b"   \n\t", b"\n"])
def test_empty_input(data):
    assert reason_of(data) == "empty"


@pytest.mark.parametrize("data", [
    b"(;GM[1]SZ[19];B[dd];W[pp",  # truncated in a value
    b"(;GM[1];B[dd]",  # missing the closing parenthesis
])
def test_unparsable_input(data):
    assert reason_of(data) == "parse_error"


@pytest.mark.parametrize("data", [b"\x00\x01\x02garbage\xff\xfe", b"()", b"no sgf here", bytes(range(256)) * 4,
                                  b"# a README\n(not a game; no tree)"])
def test_input_without_a_game_tree_is_not_sgf(data):
    assert reason_of(data) == "not_sgf"


def test_too_large():
    big = b"(;GM[1]SZ[19]C[" + b"x" * (MAX_SGF_BYTES + 1) + b"])"
    assert reason_of(big) == "too_large"
    assert reason_of(KGS, max_bytes=len(KGS) - 1) == "too_large"
    assert read_sgf(KGS, max_bytes=len(KGS))[0].num_moves == 4


def test_read_sgf_file(tmp_path):
    p = tmp_path / "g.sgf"
    p.write_bytes(KGS)
    (rec,) = read_sgf_file(p)
    assert rec.source == "g.sgf" and rec.num_moves == 4
    with pytest.raises(SGFError) as e:
        read_sgf_file(p, max_bytes=10)
    assert e.value.reason == "too_large"


def test_source_and_member_are_kept():
    (rec,) = read_sgf(KGS, source="a.tar.gz", member="x/y.sgf")
    assert (rec.source, rec.member) == ("a.tar.gz", "x/y.sgf")
    assert not math.isnan(rec.komi)
