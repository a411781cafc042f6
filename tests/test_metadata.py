"""gotk.sgf.metadata: one test per normalisation rule (raw value as an SGF header → expected value), then every
game of the real KGS archives."""

from __future__ import annotations

import collections

import pytest

from gotk.sgf.metadata import (
    BOTS_ENV,
    COLUMNS,
    RAW_COLUMNS,
    BotList,
    default_bots,
    end_kind,
    guess_source,
    normalise,
    normalise_record,
    parse_komi,
    parse_rank,
    parse_rules,
    parse_time_control,
    rank_label,
)
from gotk.sgf.reader import read_sgf


def meta(header: str, name: str = "") -> dict:
    """The normalised metadata of a hand-made one-move game with root properties ``header``."""
    (rec,) = read_sgf(f"(;GM[1]FF[4]SZ[19]{header};B[pd])".encode(), source=name)
    return normalise_record(rec)


# --- rank ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, value", [
    ("30k", -29), ("1k", 0), ("1d", 1), ("9d", 9), ("1p", 101), ("9p", 109),
    ("5D", 5), ("5 dan", 5), ("5 kyu", -4), ("5段", 5), ("5단", 5), ("5级", -4), ("5級", -4), ("5급", -4),
    ("P5段", 105), ("三段", 3), ("初段", 1), ("九段", 9), ("三级", -2),
    ("3d?", 3), ("2k?", -1), ("4d*", 4),
])
def test_rank_spellings(raw, value):
    m = meta(f"BR[{raw}]WR[{raw}]")
    assert (m["black_rank"], m["white_rank"]) == (value, value)
    assert (m["black_rank_raw"], m["warnings"]) == (raw, None)


@pytest.mark.parametrize("raw", ["?", "", "-"])
def test_rank_unknown_is_null_without_warning(raw):
    m = meta(f"BR[{raw}]")
    assert m["black_rank"] is None and m["warnings"] is None


@pytest.mark.parametrize("raw", ["strong", "45k", "12d", "0d", "d5"])
def test_rank_unreadable_is_null_with_warning(raw):
    m = meta(f"BR[{raw}]WR[3d]")
    assert (m["black_rank"], m["white_rank"], m["warnings"]) == (None, 3, "bad_rank")


def test_rank_scale_orders_kyu_dan_pro_and_labels_round_trip():
    order = ["30k", "10k", "1k", "1d", "5d", "9d", "1p", "9p"]
    values = [parse_rank(r)[0] for r in order]
    assert values == sorted(values) and len(set(values)) == len(values)
    assert [rank_label(v) for v in values] == order and rank_label(None) == "?"


# --- komi ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, value", [
    ("6.5", 6.5), ("6,5", 6.5), ("7.50", 7.5), ("0.50", 0.5), ("-4.5", -4.5), ("0", 0.0),
    ("750", 7.5), ("375", 3.75), ("650", 6.5), ("550", 5.5),   # x100 (Fox)
    ("65", 6.5), ("75", 7.5),                                  # x10
    ("30.50", 30.5),                                           # a real KGS komi, not a multiple: kept
])
def test_komi_repair_rule(raw, value):
    m = meta(f"KM[{raw}]")
    assert (m["komi"], m["komi_raw"], m["warnings"]) == (value, raw, None)


def test_chinese_half_komi_kept_with_the_rules():
    m = meta("KM[3.75]RU[Chinese]")
    assert (m["komi"], m["rules"]) == (3.75, "chinese")
    m = meta("KM[375]RU[chinese]")  # Fox writes it x100
    assert (m["komi"], m["rules"]) == (3.75, "chinese")


@pytest.mark.parametrize("raw", ["abc", "nan", "1234", "inf"])
def test_komi_unreadable_is_null_with_warning(raw):
    m = meta(f"KM[{raw}]")
    assert (m["komi"], m["warnings"]) == (None, "bad_komi")


def test_komi_absent_is_null():
    assert meta("")["komi"] is None and parse_komi("")[1] is None


# --- rules ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, value", [
    ("Japanese", "japanese"), ("JP", "japanese"), ("日本", "japanese"), ("Chinese", "chinese"), ("CN", "chinese"),
    ("中国规则", "chinese"), ("Korean", "korean"), ("한국", "korean"), ("AGA", "aga"), ("NZ", "new-zealand"),
    ("New Zealand", "new-zealand"), ("Tromp-Taylor", "tromp-taylor"), ("TT", "tromp-taylor"), ("Ing", "ing"),
    ("GOE", "ing"), ("应氏", "ing"), ("chinese rules", "chinese"),
])
def test_rules_canonical_names(raw, value):
    m = meta(f"RU[{raw}]")
    assert (m["rules"], m["rules_raw"], m["warnings"]) == (value, raw, None)


def test_rules_unknown_name_warns():
    assert meta("RU[Martian]")["rules"] is None and meta("RU[Martian]")["warnings"] == "bad_rules"
    assert parse_rules("")[0] is None and parse_rules("")[1] is None


# --- time control --------------------------------------------------------------------------------

@pytest.mark.parametrize("header, expected", [
    ("TM[300]OT[5x30 byo-yomi]", ("byo-yomi", 300.0, 5, 30.0, None)),
    ("TM[73]OT[1/6 Canadian]", ("canadian", 73.0, None, 6.0, 1)),
    ("TM[600]OT[25/600 Canadian]", ("canadian", 600.0, None, 600.0, 25)),
    ("TM[1h]OT[fischer 10]", ("fischer", 3600.0, None, 10.0, None)),
    ("TM[600]TC[3]TT[30]", ("byo-yomi", 600.0, 3, 30.0, None)),  # Fox / Tygem
    ("TM[1800]", ("absolute", 1800.0, None, None, None)),
    ("TM[0]", (None, 0.0, None, None, None)),
    ("", (None, None, None, None, None)),
])
def test_time_control(header, expected):
    m = meta(header)
    got = tuple(m[k] for k in ("time_system", "time_main_s", "time_periods", "time_period_s", "time_stones"))
    assert got == expected and m["warnings"] is None


def test_time_control_unreadable_warns_and_keeps_readable_parts():
    tc, warning = parse_time_control("soon", "5x30 byo-yomi")
    assert (tc.system, tc.main_s, tc.periods, warning) == ("byo-yomi", None, 5, "bad_time")
    assert meta("OT[whenever]")["warnings"] == "bad_time"


# --- date ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, iso", [
    ("2017-01-13", "2017-01-13"), ("2017-01-13,14", "2017-01-13"), ("2017-01", "2017-01-01"),
    ("1846-09-11..12", "1846-09-11"), ("2006", "2006-01-01"), ("[2006]", "2006-01-01"),
    ("2017/01/13", "2017-01-13"), ("20170113", "2017-01-13"), ("2017-01-13 12:30", "2017-01-13"),
])
def test_date_first_day(raw, iso):
    (rec,) = read_sgf(b"(;GM[1]SZ[19]DT[" + raw.replace("]", "\\]").encode() + b"];B[pd])")
    m = normalise_record(rec)
    assert (m["date"], m["year"], m["date_raw"], m["warnings"]) == (iso, int(iso[:4]), raw, None)


@pytest.mark.parametrize("raw", ["yesterday", "2017-13-01", "2017-02-30"])
def test_date_unreadable_warns(raw):
    m = meta(f"DT[{raw}]")
    assert (m["date"], m["year"], m["warnings"]) == (None, None, "bad_date")


# --- result end kind -----------------------------------------------------------------------------

@pytest.mark.parametrize("raw, kind", [
    ("B+R", "resign"), ("W+Resign", "resign"), ("B+T", "time"), ("W+Time", "time"), ("B+F", "forfeit"),
    ("W+3.5", "score"), ("B+", "score"), ("0", "draw"), ("Jigo", "draw"), ("Void", "void"), ("?", "unknown"),
    ("", "unknown"), ("B+Moon", "unknown"),
])
def test_result_end_kind(raw, kind):
    assert meta(f"RE[{raw}]")["end"] == kind


def test_end_kind_accepts_reason_string():
    assert end_kind("resign") == "resign" and end_kind("nonsense") == "unknown"


# --- source --------------------------------------------------------------------------------------

@pytest.mark.parametrize("header, name, source", [
    ("PC[The KGS Go Server at http://www.gokgs.com/]", "", "kgs"),
    ("PC[The Kiseido Go Server (KGS) at http://kgs.kiseido.com/]", "", "kgs"),
    ("", "KGS-2017_01-19-733-.tar.gz", "kgs"),
    ("AP[foxwq]", "", "fox"), ("PC[野狐围棋]", "", "fox"),
    ("PC[Tygem Baduk]", "", "tygem"), ("PC[타이젬]", "", "tygem"),
    ("PC[OGS: https://online-go.com/game/123]", "", "ogs"),
    ("PC[CGOS]", "", "cgos"), ("EV[Computer Go Server 19x19]", "", "cgos"),
    ("", "GoGoD/1846-09-11a.sgf", "gogod"),
    ("PC[Tokyo]EV[Honinbo]", "game.sgf", "other"),
])
def test_source_guess(header, name, source):
    assert meta(header, name)["source"] == source


def test_source_priority_pc_before_file_name():
    assert guess_source(pc="online-go.com", file_name="kgs-games.zip") == "ogs"


# --- bots ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, bot", [
    ("HiraBot41", True), ("AyaBotD2", True), ("LeelaBot", True), ("GNUgoXX", True), ("Zen19X", True),
    ("Golois4", True), ("AyaMC", True), ("KataGo-b40", True), ("Leela Zero", True),
    ("MyMaster", False), ("Crazywind", False), ("stzeng", False), ("HYang", False), ("", False),
])
def test_is_bot_default_list(name, bot):
    m = meta(f"PB[{name}]PW[HYang]")
    assert (m["black_is_bot"], m["white_is_bot"]) == (bot, False)


def test_is_bot_cgos_convention():
    m = meta("PC[CGOS]PB[somebody]PW[else]")
    assert m["black_is_bot"] and m["white_is_bot"]


def test_bot_list_user_file_and_env(tmp_path):
    f = tmp_path / "mybots.txt"
    f.write_text("# my programs\nmymaster   # a comment\nsakata\n", encoding="utf-8")
    headers = {"PB": "MyMaster", "PW": "Sakata"}
    assert not any(normalise(headers)[k] for k in ("black_is_bot", "white_is_bot"))
    m = normalise(headers, bots=BotList.load(files=[f]))
    assert m["black_is_bot"] and m["white_is_bot"]
    m = normalise(headers, bots=BotList.load(env={BOTS_ENV: str(f)}))
    assert m["black_is_bot"] and m["white_is_bot"]
    assert BotList.load(patterns=["hyang"]).is_bot("HYang") and not default_bots().is_bot("HYang")
    with pytest.raises(ValueError, match="cannot read bot list"):
        BotList.load(files=[tmp_path / "absent.txt"])
    with pytest.raises(ValueError, match="bad bot name pattern"):
        BotList.load(patterns=["(unclosed"])


def test_columns_all_present_and_raw_kept():
    m = meta("BR[5段]WR[3k?]KM[750]RU[Japanese]DT[2017-01-13,14]TM[300]OT[5x30 byo-yomi]RE[B+R]")
    assert set(m) == {c for c, _ in COLUMNS} | set(RAW_COLUMNS)
    assert (m["black_rank_raw"], m["white_rank_raw"], m["komi_raw"], m["date_raw"]) == \
        ("5段", "3k?", "750", "2017-01-13,14")
    assert m["time_raw"] == "TM[300] OT[5x30 byo-yomi]"


# --- real data -----------------------------------------------------------------------------------

@pytest.mark.parametrize("collection", ["sample", pytest.param("shared", marks=pytest.mark.slow)])
def test_every_kgs_game(collection, request):
    """Every game of the package's two months, and (slow) of the shared KGS archives (the .tar.gz of each
    archive: the other formats hold the same games): no crash, every non-empty rank that is not ``?``/``-``
    reads, counts are sensible."""
    from gotk.sgf.reader import iter_sgf
    from gotk.sources.archives import SgfSource, iter_sources

    folder = request.getfixturevalue("sample_kgs" if collection == "sample" else "kgs_dir")
    paths = sorted(folder.glob("*.tar.gz"))
    n = 0
    warnings: collections.Counter = collections.Counter()
    count: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for item in iter_sources(paths):
        if not isinstance(item, SgfSource):
            continue
        for rec in iter_sgf(item.data, item.archive, item.member):
            if isinstance(rec, Exception):
                continue
            m = normalise_record(rec)
            n += 1
            warnings.update((m["warnings"] or "").split(",") if m["warnings"] else [])
            for key in ("source", "rules", "end", "year", "time_system"):
                count[key][m[key]] += 1
            for side in ("black", "white"):
                raw = m[f"{side}_rank_raw"].rstrip("?")
                assert (m[f"{side}_rank"] is None) == (raw in ("", "-")), m[f"{side}_rank_raw"]
                count["rank"][m[f"{side}_rank"] is not None and m[f"{side}_rank"] >= 7] += 1
            count["bot"][m["black_is_bot"] or m["white_is_bot"]] += 1
    assert n == (1_258 if collection == "sample" else 25_889)  # 733 + 525; the shared collection: the README's
    assert warnings == collections.Counter()
    assert count["source"] == {"kgs": n}
    if collection == "sample":
        assert set(count["year"]) == {2017}
    else:
        assert {2001, 2002, 2003, 2006, 2017} <= set(count["year"]) <= set(range(2000, 2018))  # a few 2000 in 2001
    assert set(count["rules"]) <= {"japanese", "chinese", "aga", "new-zealand", None}
    assert count["rules"]["japanese"] > n / 2
    assert set(count["end"]) <= {"resign", "score", "time", "forfeit", "void", "draw", "unknown"}
    assert count["end"]["resign"] > count["end"]["score"] > count["end"]["time"] > 0
    assert count["rank"][True] > n / 2  # high-dan archives: one player 7d+ in most games
    # some bots (HiraBot, AyaBot, Zen19…): a small share of the whole collection, a third of the 2017 months
    assert 0 < count["bot"][True] < n / (2 if collection == "sample" else 10)
    assert count["time_system"]["byo-yomi"] > count["time_system"]["canadian"] > 0
