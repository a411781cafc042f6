"""Mutated real SGF (truncations, byte flips, unbalanced brackets, huge and out-of-range values, deep nesting,
charset tricks): reading gives records or reason-coded skips, never another exception, and whatever is kept
fits the scan table (the row written for games.parquet)."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gotk.errors import GotkError
from gotk.jobs.workers import ScanOptions, ScanUnit, scan_unit
from gotk.sgf.reader import iter_sgf, read_sgf

from .conftest import peak_run

PROPS = [b"HA", b"KM", b"SZ", b"MN", b"TM", b"PL", b"CA", b"RE", b"PB", b"AB", b"AW", b"B", b"W"]
VALUES = [b"3000000000", b"-3000000000", b"1e400", b"-1e308", b"nan", b"inf", b"99999999999999999999999",
          b"19:19", b"0", b"-1", b"", b"UTF-16", b"UTF-32-BE", b"cp037", b"GB18030", b"\xff\xfe\x00",
          b"B+R", b"aa:ss", b"zz", b"tt", b"\\]", b"\xe9t\xe9"]


@st.composite
def mutants(draw, game: bytes) -> bytes:
    data = bytearray(game)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["truncate", "flip", "bracket", "insert_prop", "delete", "nest"]))
        pos = draw(st.integers(0, max(0, len(data) - 1)))
        if kind == "truncate":
            del data[pos:]
        elif kind == "flip":
            if data:
                data[pos] ^= 1 << draw(st.integers(0, 7))
        elif kind == "bracket":
            data[pos:pos] = draw(st.sampled_from([b"[", b"]", b"(", b")", b";", b"\\"]))
        elif kind == "insert_prop":
            root = data.find(b";") + 1
            data[root:root] = draw(st.sampled_from(PROPS)) + b"[" + draw(st.sampled_from(VALUES)) + b"]"
        elif kind == "delete":
            del data[pos:pos + draw(st.integers(1, 50))]
        else:
            depth = draw(st.integers(1, 3000))
            data[pos:pos] = b"(;B[aa]" * depth + b")" * depth
    return bytes(data)


@pytest.fixture(scope="module")
def game(real_games) -> bytes:
    return real_games[0][1]


def test_mutants_are_records_or_reason_coded_skips(game, tmp_path_factory):
    work = tmp_path_factory.mktemp("scan")
    opts = ScanOptions(work_dir=str(work))

    @settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
    @given(mutants(game))
    def check(data):
        try:
            items = list(iter_sgf(data, "m.sgf"))
        except GotkError as e:
            assert e.reason
            items = []
        for rec in items:
            if isinstance(rec, GotkError):
                assert rec.reason and " " not in rec.reason
                continue
            assert -(2 ** 31) < rec.handicap < 2 ** 31
            for text in (rec.black, rec.white, rec.rules, rec.date, str(rec.result)):
                text.encode("utf-8")
        # the whole scan path, good game first: the good one is always kept
        stats = scan_unit(ScanUnit(0, [("good.zip", "good.zip", "g.sgf", game), ("m.sgf", "m.sgf", "", data)]),
                          opts)
        assert stats["games"].column("member").to_pylist()[0] == "g.sgf"
        assert stats["games_read"] == stats["candidates"] + sum(stats["skipped"].values())

    check()


@pytest.mark.parametrize("data,reason", [
    (b"(;GM[1]SZ[19]HA[3000000000];B[aa])", "bad_property"),
    (b"(;GM[1]SZ[99999999999999999999];B[aa])", "bad_size"),
    (b"(;GM[1]SZ[19]" + b"AB[aa:ss]" * 5000 + b";B[aa])", "bad_setup"),
])
def test_out_of_range_values_have_a_reason(data, reason):
    with pytest.raises(GotkError) as e:
        read_sgf(data)
    assert e.value.reason == reason


def test_charset_tricks_never_change_an_ascii_result():
    for ca in (b"UTF-16", b"UTF-16-LE", b"UTF-32", b"cp037", b"nonsense", b"UTF-8", b"latin-1", b"GB18030"):
        rec = read_sgf(b"(;GM[1]CA[" + ca + b"]RE[W+12.5]PB[black]KM[6.5];B[aa])")[0]
        assert str(rec.result) == "W+12.5" and rec.black == "black" and rec.komi == 6.5, ca
    rec = read_sgf(b"(;GM[1]CA[UTF-8]PB[Andr\xe9s]RE[B+R];B[aa])")[0]
    assert rec.black == "Andrés" and rec.warnings == ("charset_mismatch",)
    rec = read_sgf(b"(;GM[1]CA[UTF-16]RE[B+R];B[aa])")[0]
    assert rec.warnings == ("charset_mismatch",)
    assert read_sgf(b"(;GM[1]RE[B+R];B[aa])")[0].warnings == ()


def test_deep_nesting_is_bounded():
    """100,000 nested variations (700 KB): read in bounded time and memory, or a reason-coded skip."""
    data = b"(;GM[1]SZ[19]" + b"(;B[aa];W[bb]" * 100_000 + b")" * 100_001
    code = ("import sys\nfrom gotk.errors import GotkError\nfrom gotk.sgf.reader import iter_sgf\n"
            "data = open(sys.argv[1], 'rb').read()\ntry:\n"
            "    result = [getattr(r, 'reason', 'record') for r in iter_sgf(data)]\n"
            "except GotkError as e:\n    result = [e.reason]\n")
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".sgf") as f:
        f.write(data)
        f.flush()
        t = time.monotonic()
        result, peak = peak_run(code, f.name)
    assert result and all(isinstance(r, str) for r in result)
    assert time.monotonic() - t < 60 and peak < 1024
