"""The compiled SGF reader (gotk.sgf.fast) against the sgfmill path: same records, or a decline.

Reference: ``iter_sgf(..., fast=False)`` (sgfmill's grammar layer). Every comparison also checks
which path the input took, so an equality cannot come from both sides running sgfmill.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import fields

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gotk import coords
from gotk.errors import SGFError
from gotk.sgf.fast import Declined
from gotk.sgf.reader import iter_sgf, read_fast


def run(data: bytes, fast: bool, counts: Counter | None = None):
    """What ``iter_sgf`` gives: a list of records / per-game errors, or the whole-input error."""
    try:
        return list(iter_sgf(data, "src.zip", "m/g.sgf", fast=fast, counts=counts))
    except SGFError as e:
        return e


def same(a, b) -> bool:
    """Records equal field by field (arrays: same dtype and values); errors: same type, reason, text."""
    if isinstance(a, SGFError) or isinstance(b, SGFError):
        return type(a) is type(b) and a.reason == b.reason and str(a) == str(b)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is not type(b):
        return False
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            if not isinstance(y, np.ndarray) or x.dtype != y.dtype or not np.array_equal(x, y):
                return False
        elif type(x) is not type(y) or x != y:
            return False
    return True


def check(data: bytes, path: str):
    """Fast and sgfmill paths agree on ``data``, and it went ``path`` ("fast" or "fallback")."""
    counts: Counter = Counter()
    got = run(data, True, counts)
    ref = run(data, False)
    assert same(got, ref), (got, ref)
    assert counts[path] == 1, counts
    return got


def fast_one(data: bytes):
    (rec,) = check(data, "fast")
    return rec


# --- inputs the compiled reader takes -----------------------------------------------------------------

def test_escapes_and_soft_line_breaks():
    rec = fast_one(b"(;GM[1]PB[a\\]b]PW[c\\\\d]PC[line\\\njoined]RE[W\\+R]C[x\\]y\\\\];B[aa]C[\\]];W[bb])")
    assert (rec.black, rec.white, rec.place, str(rec.result)) == ("a]b", "c\\d", "linejoined", "W+R")
    assert rec.num_moves == 2
    # a soft line break with CRLF, LFCR or CR; hard line breaks become spaces in simpletext
    for brk in (b"\r\n", b"\n\r", b"\r"):
        assert fast_one(b"(;GM[1]PC[ab\\" + brk + b"cd]PB[x" + brk + b"y])").place == "abcd"
    assert fast_one(b"(;GM[1]PB[x\ny]PW[a\tb])").black == "x y"


def test_escaped_bracket_in_a_comment_does_not_end_the_value():
    rec = fast_one(b"(;GM[1]SZ[9];B[aa]C[B[bb\\] \\] W[cc\\]];W[dd])")
    assert [coords.to_sgf(p, 9) for p in rec.points] == ["aa", "dd"]


def test_lower_and_mixed_case_property_names():
    rec = fast_one(b"(;GaMe[1]SiZe[9]PlayerBlack[bob]AddBlack[aa][bb];Black[cc];White[dd];b[ee];W[ff])")
    assert rec.size == 9 and rec.black == "bob" and rec.setup_black == (0, 10)
    assert [coords.to_sgf(p, 9) for p in rec.points] == ["cc", "dd", "ff"]  # "b" has no capital: ignored
    assert rec.colors.tolist() == [1, 2, 2]


def test_pass_forms_ff3_tt_and_empty():
    rec = fast_one(b"(;FF[3]GM[1]SZ[19];B[dd];W[tt];B[];W[pp])")
    assert rec.points.tolist() == [coords.from_gtp("D16", 19), 361, 361, coords.from_gtp("Q4", 19)]
    assert fast_one(b"(;FF[3]SZ[9];B[tt])").points.tolist() == [81]
    assert fast_one(b"(;SZ[21];B[tt])").points.tolist() == [coords.from_rc(19, 19, 21)]  # a point beyond 19x19


def test_several_games_in_one_file_with_junk_between():
    data = (b"junk (;GM[1]PB[one];B[aa])\n text (;GM[1]SZ[99]PB[bad size])"
            b"(;GM[1]SZ[9]PB[x];W[bb]) ( ; GM[1]PB[three])trailing")
    counts: Counter = Counter()
    got = run(data, True, counts)
    assert counts["fallback:unusual_size"] == 1  # SZ[99] is declined: sgfmill's path reports it
    assert same(got, run(data, False))
    data = b"(;GM[1]PB[one];B[aa])\n(;GM[2]PB[chess])(;GM[1]SZ[9]PB[three];W[bb];B[cc])"
    items = check(data, "fast")
    assert [type(i).__name__ for i in items] == ["GameRecord", "SGFError", "GameRecord"]
    assert items[1].reason == "not_go" and items[2].num_moves == 2 and items[2].size == 9


def test_variations_main_line_only():
    rec = fast_one(b"(;GM[1]SZ[9];B[aa](;W[bb];B[cc](;W[dd])(;W[ee]))(;W[ff];B[gg]))")
    assert [coords.to_sgf(p, 9) for p in rec.points] == ["aa", "bb", "cc", "dd"]
    rec = fast_one(b"(;GM[1]SZ[9](;B[aa])(;B[bb];W[cc]))")
    assert [coords.to_sgf(p, 9) for p in rec.points] == ["aa"]


def test_whitespace_everywhere():
    rec = fast_one(b" \t\n( \n; GM \n[1] SZ\t[ 9 ]\r\nPB [ x ]\n;\nB\n[aa]\n\n ; W [bb] \n(\n;B[cc]\n)\n)\n\n")
    assert rec.size == 9 and rec.black == "x" and rec.num_moves == 3


def test_bom_and_crlf():
    data = "\ufeff(;GM[1]\r\nSZ[19]\r\nCA[UTF-8]\r\nPB[Jörg]\r\n;B[pd]\r\n;W[dp]\r\n)\r\n".encode()
    rec = fast_one(data)
    assert rec.black == "Jörg" and rec.num_moves == 2


def test_charsets_and_text_go_through_the_shared_code():
    fast_one("(;GM[1]CA[GB2312]PB[李昌镐]PC[韩国])".encode("gb2312"))
    fast_one(b"(;GM[1]PB[Jos\xe9]PW[M\xfcller]KM[6,5]HA[abc]PL[w]RE[ b + 12.5 ])")
    fast_one(b"(;GM[1]CA[no-such-charset]PB[abc]DT[2017-01-01]BR[4d]WR[5d]RU[NZ])")


def test_duplicate_properties_and_multiple_values():
    rec = fast_one(b"(;GM[1]SZ[9]AB[aa]AB[bb:bc]PB[first][second];B[cc]B[dd];W[ee][ff])")
    assert rec.setup_black == (0, 1 * 9 + 1, 2 * 9 + 1) and rec.black == "first"
    assert [coords.to_sgf(p, 9) for p in rec.points] == ["cc", "ee"]


def test_defects_setup_after_root_and_both_colours():
    rec = fast_one(b"(;GM[1];B[aa];AB[cc];W[dd])")
    assert rec.num_moves == 1 and rec.defect == ("bad_setup", 1, "setup stones after the root node")
    rec = fast_one(b"(;GM[1];B[aa];W[bb]B[cc];W[dd])")
    assert rec.num_moves == 1 and rec.defect == ("bad_move", 1, "a node with both B and W")
    rec = fast_one(b"(;GM[1]B[aa];W[bb])")  # a move in the root node counts
    assert rec.num_moves == 2


def test_per_game_errors_come_from_the_shared_code():
    for data in (b"(;GM[1]AB[aa]AW[aa])", b"(;GM[1]AB[zz])", b"(;GM[1]AB[])", b"(;GM[3];B[aa])"):
        (item,) = check(data, "fast")
        assert isinstance(item, SGFError)


def test_no_moves_sizes_and_empty_values():
    for data in (b"(;GM[1])", b"(;)", b"(;GM[]SZ[2])", b"(;SZ[25];B[yy])", b"(;SZ[019])", b"(;PB[];B[];W[])"):
        fast_one(data)


# --- inputs the compiled reader declines: the sgfmill path answers ----------------------------------------

@pytest.mark.parametrize("data, why", [
    (b"(;GM[1]SZ[19:19];B[aa])", "unusual_size"),
    (b"(;GM[1]SZ[+19])", "unusual_size"),
    (b"(;GM[1]SZ[1])", "unusual_size"),
    (b"(;GM[1]SZ[abc])", "unusual_size"),
    (b"(;GM[1]SZ[19];B[zz];W[aa])", "unusual_move"),  # off the board: a defect with sgfmill's message
    (b"(;GM[1]SZ[19];B[ dd ])", "unusual_move"),  # spaces: sgfmill's path strips them
    (b"(;GM[1];B[Dd])", "unusual_move"),
    (b"(;GM[1];B[abc])", "unusual_move"),
    (b"(;GM[1]SZ[21];B[ba];W[vv])", "unusual_move"),
    (b"(;" + b"A" * 65 + b"[x])", "long_name"),
])
def test_declined_but_read_by_sgfmill(data, why):
    counts: Counter = Counter()
    got = run(data, True, counts)
    assert counts[f"fallback:{why}"] == 1 and counts["fallback"] == 1 and not counts["fast"]
    assert same(got, run(data, False))
    with pytest.raises(Declined):
        read_fast(data)


@pytest.mark.parametrize("data", [
    b"(;GM[1]SZ[19];B[dd];W[pp",  # truncated in a value
    b"(;GM[1];B[dd]",  # no closing parenthesis
    b"(;GM[1];B[dd]\\",
    b"(;GM[1];B[dd\\]",  # the escaped bracket does not close the value
    b"()", b"no sgf here", b"(;[aa])", b"(;B[aa]W)", b"(;B[aa]())", b"(;B[aa](;W[bb]);B[cc])",
    b"(B[aa];W[bb])", b"(;B[aa]1)", b"(;B[aa]\xff)", b"(;B[aa])(;W[bb]", b"(;B[aa])junk(;", b"(;B[aa](;W[bb])",
    b"\x00\x01\x02garbage\xff\xfe", bytes(range(256)) * 4,
])
def test_malformed_is_never_accepted(data):
    ref = run(data, False)
    assert isinstance(ref, SGFError) and ref.reason in ("parse_error", "not_sgf")
    with pytest.raises(Declined):
        read_fast(data)
    counts: Counter = Counter()
    assert same(run(data, True, counts), ref)
    # input with no game tree at all is refused before either reader
    assert counts["fallback"] == (ref.reason == "parse_error") and not counts["fast"]


def test_empty_and_too_large_are_checked_before_either_path():
    counts: Counter = Counter()
    assert run(b"  \n", True, counts).reason == "empty"
    assert not counts


def test_strict_read_sgf_raises_the_first_bad_game():
    from gotk.sgf.reader import read_sgf

    with pytest.raises(SGFError) as e:
        read_sgf(b"(;GM[1]PB[one];B[aa])(;GM[1]AB[zz])")
    assert e.value.reason == "bad_setup"


TOKENS = [b"(", b")", b";", b"[", b"]", b"\\", b":", b" ", b"\n", b"\r\n", b"B", b"W", b"b", b"AB", b"AW", b"AE",
          b"SZ", b"GM", b"HA", b"KM", b"PB", b"Add", b"C", b"[dd]", b"[tt]", b"[]", b"[aa:cc]", b"[zz]", b"[19]",
          b"[9]", b"[1]", b"[x\\]y]", b"[\xe9]", b"\xff", b"(;", b";B[cc]", b";W[dd]", b"(;GM[1]SZ[9]", b"9"]


@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(
    st.lists(st.sampled_from(TOKENS), max_size=40).map(b"".join),
    st.lists(st.sampled_from(TOKENS), max_size=30).map(lambda t: b"(;GM[1]SZ[9]" + b"".join(t) + b")"),
    st.binary(max_size=80).map(lambda b: b"(;" + b + b")"),
))
def test_random_inputs_agree_or_decline(data):
    counts: Counter = Counter()
    got = run(data, True, counts)
    ref = run(data, False)
    assert same(got, ref), (data, got, ref)
    if isinstance(ref, SGFError) and ref.reason == "parse_error":
        assert not counts["fast"]  # never accepted what sgfmill rejects


# --- every real KGS game ------------------------------------------------------------------------------------

@pytest.mark.parametrize("collection", ["sample", pytest.param("shared", marks=pytest.mark.slow)])
def test_every_kgs_game_is_identical(collection, request):
    """Every game of the package's two months (1,258 games) and (slow) of the 7 .tar.gz archives of ../shared/kgs
    (25,889 games): the compiled reader takes every one and gives the sgfmill path's record exactly."""
    from gotk.sources.archives import SgfSource, iter_sources

    folder = request.getfixturevalue("sample_kgs" if collection == "sample" else "kgs_dir")
    archives = sorted(folder.glob("*.tar.gz"))
    assert len(archives) == (2 if collection == "sample" else 7)
    counts: Counter = Counter()
    n = games = 0
    bad = []
    for src in iter_sources(archives):
        assert isinstance(src, SgfSource)
        n += 1
        got = run(src.data, True, counts)
        ref = run(src.data, False)
        if not same(got, ref):
            bad.append(src.member)
        games += len(ref) if isinstance(ref, list) else 0
    assert not bad, bad[:5]
    assert n == games == (1_258 if collection == "sample" else 25_889)
    assert counts["fast"] == counts["fast_games"] == n, counts


# --- the run reports count which way each input went -----------------------------------------------------

def test_replay_and_encode_reports_count_the_paths(tmp_path, sample_archive):
    import json
    import tarfile

    from typer.testing import CliRunner

    from gotk.cli.main import app

    folder = tmp_path / "in"
    folder.mkdir()
    with tarfile.open(sample_archive) as tf:
        members = [m for m in tf if m.isfile() and m.name.endswith(".sgf")][:3]
        for i, m in enumerate(members):
            (folder / f"real{i}.sgf").write_bytes(tf.extractfile(m).read())
    (folder / "rect.sgf").write_bytes(b"(;GM[1]SZ[19:19];B[dd];W[pp];B[dp])")  # declined, read by sgfmill
    (folder / "broken.sgf").write_bytes(b"(;GM[1]SZ[19];B[dd];W[p")  # sgfmill rejects it too
    (folder / "two.sgf").write_bytes(b"(;GM[1];B[dd];W[pp])(;GM[1];B[pp];W[dd])")
    expected = {"fast": {"inputs": 4, "games": 5},
                "fallback": {"inputs": 2, "games": 1, "declined": {"parse_error": 1, "unusual_size": 1}}}
    runner = CliRunner()
    r = runner.invoke(app, ["replay", str(folder), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["sgf_reader"] == expected
    assert d["games_read"] == 7 and d["skipped"] == {"parse_error": 1}
    r = runner.invoke(app, ["replay", str(folder)])
    assert "4  by the compiled reader, 2 by sgfmill (declined: parse_error 1, unusual_size 1)" in r.output
    out = tmp_path / "out"
    r = runner.invoke(app, ["encode", str(folder), "-e", "oneplane", "-o", str(out), "--workers", "1", "--no-progress"])
    assert r.exit_code == 0, r.output
    assert ("SGF inputs: 4 read by the compiled reader, 2 by sgfmill (declined: parse_error 1, unusual_size 1)"
            in r.output)
    assert json.loads((out / "run-report.json").read_text())["sgf_reader"] == expected
