"""Game metadata that means the same everywhere: the one owner of every normalisation rule.

Pure functions turn the raw SGF header values (as the file wrote them) into normalised values; the raw
values are always kept beside them (``games.parquet`` has ``black_rank_raw`` beside ``black_rank`` …).
An absent or "unknown" value (``?``, ``-``, empty) becomes None silently; a value that is present but
cannot be read becomes None **and** a warning reason (``bad_rank``, ``bad_komi``, ``bad_date``,
``bad_rules``, ``bad_time``) that runs count. Nothing here ever drops a game.

**Rank scale** (one number for every kind of rank, orderable):
``30k`` → -29 … ``1k`` → 0, ``1d`` → 1 … ``9d`` → 9, ``1p`` → 101 … ``9p`` → 109 (every professional
above every amateur dan). So ``rank >= 5`` means "5 dan amateur or stronger", ``rank <= 0`` "a kyu player".

**Komi repair** (some servers write komi × 100 or × 10): a komi that is an integer of magnitude ≥ 100
and a multiple of 25 is divided by 100 (Fox ``750`` → 7.5, ``375`` → 3.75, ``650`` → 6.5); an integer of
magnitude in [20, 100) that is a multiple of 5 is divided by 10 (``65`` → 6.5, ``75`` → 7.5). Real komi
such as KGS's ``30.50`` (not an integer) is kept. Any other magnitude over 150 is ``bad_komi``. Chinese
half-counting komi (``KM[3.75]``, counted in stones: 7.5 points) is kept as written; the ``rules`` column
(``chinese``) says how to read it.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

RANK_PRO_BASE = 100  # 1p = 101
WARNINGS = ("bad_rank", "bad_komi", "bad_date", "bad_rules", "bad_time")
END_KINDS = ("resign", "time", "forfeit", "score", "draw", "void", "unknown")
SOURCES = ("kgs", "fox", "tygem", "ogs", "cgos", "gogod", "other")
RULES = ("japanese", "chinese", "korean", "aga", "new-zealand", "tromp-taylor", "ing")
DEFAULT_BOTS_FILE = Path(__file__).resolve().parent / "bots.txt"
BOTS_ENV = "GOTK_BOTS"

# --- rank ----------------------------------------------------------------------------------------

_UNKNOWN = {"", "?", "-", "--", "?k", "?d", "nr", "unranked", "none", "null"}
_CJK_DIGITS = {"初": 1, "一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10,
               "二十": 20}
_KIND = {"k": "k", "kyu": "k", "级": "k", "級": "k", "급": "k",
         "d": "d", "dan": "d", "段": "d", "단": "d",
         "p": "p", "pro": "p"}
_RANK_RE = re.compile(r"^(p|pro\s*)?(\d{1,2}|[初一二三四五六七八九十]{1,3})\s*(kyu|dan|pro|k|d|p|级|級|급|段|단)$")


#: Distinct raw values remembered per parser: archives repeat ranks, rules, komi, time settings and
#: dates thousands of times, and every parser here is a pure function of its strings.
_PARSE_CACHE = 8192


def _cjk_number(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    if text in _CJK_DIGITS:
        return _CJK_DIGITS[text]
    if len(text) == 2 and text[0] == "十":  # 十一 … 十九
        return 10 + _CJK_DIGITS.get(text[1], 99)
    if len(text) in (2, 3) and text[1] == "十":  # 二十, 二十五
        return 10 * _CJK_DIGITS.get(text[0], 99) + (_CJK_DIGITS.get(text[2], 99) if len(text) == 3 else 0)
    return None


@lru_cache(maxsize=_PARSE_CACHE)
def parse_rank(raw: str | None) -> tuple[int | None, str | None]:
    """``(value on the rank scale, warning)`` of a rank as written.

    ``30k``…``1k``, ``1d``…``9d``, ``1p``…``9p``; case and spaces ignored (``5D``, ``5 dan``, ``3 kyu``);
    CJK spellings ``5段`` / ``5단`` (dan), ``5级`` / ``5級`` / ``5급`` (kyu), kanji numerals (``三段``, ``初段``);
    a ``P`` or ``pro`` prefix marks a professional (``P5段`` → 105). A bare ``段`` is read as amateur dan (the
    file cannot tell). A trailing ``?`` or ``*`` (KGS: rank not yet sure) is ignored. ``?``, ``-``, empty →
    ``(None, None)``; anything else unreadable (``strong``, ``45k``, ``12d``) → ``(None, "bad_rank")``."""
    text = (raw or "").strip().lower().rstrip("?*").strip()
    if text in _UNKNOWN or (raw or "").strip() in ("?", "-"):
        return None, None
    m = _RANK_RE.match(text)
    if not m:
        return None, "bad_rank"
    n = _cjk_number(m.group(2))
    kind = "p" if m.group(1) else _KIND[m.group(3).strip()]
    if n is None or n < 1:
        return None, "bad_rank"
    if kind == "k":
        return (1 - n, None) if n <= 30 else (None, "bad_rank")
    if n > 9:
        return None, "bad_rank"
    return (n if kind == "d" else RANK_PRO_BASE + n), None


def rank_value(raw: str | None) -> int | None:
    """The rank scale value of ``raw`` (:func:`parse_rank` without the warning)."""
    return parse_rank(raw)[0]


def rank_label(value: float | None) -> str:
    """A rank scale value back as text: ``-2`` → ``3k``, ``5`` → ``5d``, ``103`` → ``3p``, None → ``?``."""
    if value is None:
        return "?"
    v = int(value)
    if v > RANK_PRO_BASE:
        return f"{v - RANK_PRO_BASE}p"
    return f"{v}d" if v >= 1 else f"{1 - v}k"


#: Rank bands for reports (``gotk eval --by rank``, ``gotk stats``): (name, lowest, highest) on the rank scale.
#: One rule for every rank a report writes: a rank is its :func:`rank_label` (``3p``) and a band is named by
#: the labels of its ends (``1p-9p``), so a chart of ranks and a table of bands say the same thing.
RANK_BANDS: tuple[tuple[str, int, int], ...] = tuple(
    (rank_label(lo) if lo == hi else f"{rank_label(lo)}-{rank_label(hi)}", lo, hi)
    for lo, hi in ((-29, -9), (-8, 0), (1, 3), (4, 5), (6, 6), (7, 7), (8, 8), (9, 9),
                   (RANK_PRO_BASE + 1, RANK_PRO_BASE + 9)))


def rank_band(value: float | None) -> str:
    """The :data:`RANK_BANDS` name of a rank scale value; ``?`` for None/NaN (unknown rank)."""
    if value is None or value != value:
        return "?"
    for name, lo, hi in RANK_BANDS:
        if lo <= value <= hi:
            return name
    return "?"


# --- komi ----------------------------------------------------------------------------------------

@lru_cache(maxsize=_PARSE_CACHE)
def parse_komi(raw: str | None) -> tuple[float | None, str | None]:
    """``(komi in points, warning)`` with the ×100 / ×10 repair rule of the module docstring.
    ``6.5``, ``6,5``, ``7.50`` read as written; ``750`` → 7.5; ``65`` → 6.5; ``30.5`` kept; ``3.75`` kept;
    empty → ``(None, None)``; ``abc``, ``nan``, ``1234`` → ``(None, "bad_komi")``."""
    text = (raw or "").strip().replace(",", ".")
    if not text or text in ("?", "-"):
        return None, None
    try:
        k = float(text)
    except ValueError:
        return None, "bad_komi"
    if k != k or k in (float("inf"), float("-inf")):
        return None, "bad_komi"
    if k.is_integer():
        n = abs(int(k))
        if n >= 100 and n % 25 == 0:
            return k / 100, None
        if 20 <= n < 100 and n % 5 == 0:
            return k / 10, None
    if abs(k) > 150:
        return None, "bad_komi"
    return k, None


# --- rules ---------------------------------------------------------------------------------------

_RULES = {
    "japanese": "japanese", "japan": "japanese", "jp": "japanese", "ja": "japanese", "jpn": "japanese",
    "日本": "japanese", "日本规则": "japanese", "日本ルール": "japanese", "일본": "japanese",
    "chinese": "chinese", "china": "chinese", "cn": "chinese", "zh": "chinese", "chn": "chinese",
    "中国": "chinese", "中国规则": "chinese", "中國": "chinese", "중국": "chinese",
    "korean": "korean", "korea": "korean", "ko": "korean", "kr": "korean", "韩国": "korean", "한국": "korean",
    "aga": "aga", "american": "aga", "bga": "aga",
    "nz": "new-zealand", "new zealand": "new-zealand", "new-zealand": "new-zealand", "newzealand": "new-zealand",
    "tromp-taylor": "tromp-taylor", "tromp taylor": "tromp-taylor", "tromptaylor": "tromp-taylor",
    "tt": "tromp-taylor", "cgos": "tromp-taylor",
    "ing": "ing", "goe": "ing", "ing sst": "ing", "应氏": "ing", "應氏": "ing",
}


@lru_cache(maxsize=_PARSE_CACHE)
def parse_rules(raw: str | None) -> tuple[str | None, str | None]:
    """``(canonical rules name, warning)``: one of :data:`RULES`. ``Japanese``/``JP``/``日本`` → japanese,
    ``Chinese``/``CN``/``中国`` → chinese, ``Korean``/``KR``/``한국`` → korean, ``AGA`` → aga, ``NZ`` →
    new-zealand, ``Tromp-Taylor``/``TT`` → tromp-taylor, ``Ing``/``GOE``/``应氏`` → ing; a trailing " rules"
    is ignored. Empty → ``(None, None)``; an unknown name → ``(None, "bad_rules")``."""
    text = re.sub(r"\s+", " ", (raw or "").strip().lower())
    text = re.sub(r"\s*(rules?|规则|ルール)$", "", text)
    if not text or text in ("?", "-"):
        return None, None
    name = _RULES.get(text)
    return (name, None) if name else (None, "bad_rules")


# --- time control --------------------------------------------------------------------------------

@dataclass(frozen=True)
class TimeControl:
    """A game's clock: ``system`` (``byo-yomi``, ``canadian``, ``fischer``, ``simple``, ``absolute``, or None when
    not said), ``main_s`` main time in seconds, ``periods`` byo-yomi periods, ``period_s`` seconds per byo-yomi
    period (or per Canadian period, the Fischer increment, or simple time's seconds per move), ``stones`` moves per
    Canadian period."""

    system: str | None = None
    main_s: float | None = None
    periods: int | None = None
    period_s: float | None = None
    stones: int | None = None


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(h|hr|hours?|m|min|minutes?|s|sec|seconds?|分|秒|小时|時間)?\s*$",
                       re.IGNORECASE)
_UNIT_S = {"h": 3600, "m": 60, "s": 1, "分": 60, "秒": 1, "小": 3600, "時": 3600}


def parse_duration(raw: str | None) -> float | None:
    """Seconds of ``1800``, ``30m``, ``1h``, ``90 min``, ``30秒``; None when not a duration."""
    m = _DURATION.match(raw or "")
    if not m:
        return None
    unit = (m.group(2) or "s").lower()[0]
    return float(m.group(1)) * _UNIT_S.get(unit, 1)


_BYO = re.compile(r"(\d+)\s*[x×*]\s*(\d+(?:\.\d+)?)\s*(?:s|sec)?\s*byo-?\s*yomi", re.IGNORECASE)
_CANADIAN = re.compile(r"(\d+)\s*/\s*(\d+(?:\.\d+)?)\s*(?:s|sec)?\s*canadian", re.IGNORECASE)
_SIMPLE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:s|sec)?\s*simple", re.IGNORECASE)
_FISCHER = re.compile(r"(?:fischer\s*\+?\s*(\d+(?:\.\d+)?))|(?:(\d+(?:\.\d+)?)\s*(?:s|sec)?\s*fischer)", re.IGNORECASE)


@lru_cache(maxsize=_PARSE_CACHE)
def parse_time_control(tm: str | None = None, ot: str | None = None, tc: str | None = None,
                       tt: str | None = None) -> tuple[TimeControl, str | None]:
    """``(TimeControl, warning)`` from ``TM`` (main time: seconds or ``30m``/``1h``), ``OT`` (overtime:
    ``5x30 byo-yomi``, ``25/600 Canadian``, ``Fischer 10``/``10 fischer``, ``30 simple``: 30 s per move) and
    Fox/Tygem's ``TC`` (byo-yomi periods) and ``TT`` (seconds per period). ``TM[0]`` with no overtime is
    ``absolute`` only when a main time is given without overtime. Unreadable values → ``bad_time`` (the readable
    parts kept)."""
    warning = None
    main = None
    if tm and tm.strip():
        main = parse_duration(tm)
        if main is None:
            warning = "bad_time"
    system = periods = period_s = stones = None
    ot = (ot or "").strip()
    if ot:
        if m := _BYO.search(ot):
            system, periods, period_s = "byo-yomi", int(m.group(1)), float(m.group(2))
        elif m := _CANADIAN.search(ot):
            system, stones, period_s = "canadian", int(m.group(1)), float(m.group(2))
        elif m := _FISCHER.search(ot):
            system, period_s = "fischer", float(m.group(1) or m.group(2))
        elif m := _SIMPLE.search(ot):
            system, period_s = "simple", float(m.group(1))
        elif ot.lower() in ("none", "absolute", "sudden death"):
            system = "absolute"
        else:
            warning = "bad_time"
    if (tc or "").strip() or (tt or "").strip():
        try:
            periods = int(float(tc)) if (tc or "").strip() else periods
            period_s = parse_duration(tt) if (tt or "").strip() else period_s
            if (tt or "").strip() and period_s is None:
                raise ValueError(tt)
            system = system or "byo-yomi"
        except ValueError:
            warning = "bad_time"
    if system is None and main is not None and not ot:
        system = "absolute" if main > 0 else None
    return TimeControl(system, main, periods, period_s, stones), warning


# --- date ----------------------------------------------------------------------------------------

_DATE = re.compile(r"^\s*\[?\s*(\d{4})(?:\s*[-/.]\s*(\d{1,2})(?:\s*[-/.]\s*(\d{1,2}))?)?(?=$|[^\d])")
_DATE_COMPACT = re.compile(r"^\s*(\d{4})(\d{2})(\d{2})(?=$|[^\d])")


@lru_cache(maxsize=_PARSE_CACHE)
def parse_date(raw: str | None) -> tuple[str | None, str | None]:
    """``(ISO date YYYY-MM-DD of the first day, warning)`` from SGF ``DT`` variants: ``2017-01-13``,
    ``2017-01-13,14`` (several days), ``2017-01`` (→ the 1st), ``1846-09-11..12``, ``2006`` or ``[2006]``
    (→ January 1st), ``2017/01/13``, ``2017.1.13``, ``20170113``, ``2017-01-13 12:30``. Empty → ``(None,
    None)``; ``yesterday``, ``2017-13-01`` → ``(None, "bad_date")``."""
    text = (raw or "").strip()
    if not text or text in ("?", "-"):
        return None, None
    m = _DATE_COMPACT.match(text) or _DATE.match(text)
    if not m:
        return None, "bad_date"
    y, mo, d = int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1)
    try:
        return _dt.date(y, mo, d).isoformat(), None
    except ValueError:
        return None, "bad_date"


# --- result, source ------------------------------------------------------------------------------

def end_kind(result) -> str:
    """How the game ended, from a normalised :class:`gotk.sgf.record.Result` (or its ``reason`` string):
    one of :data:`END_KINDS` (``resign``, ``time``, ``forfeit``, ``score``, ``draw``, ``void``, ``unknown``)."""
    reason = getattr(result, "reason", result)
    return reason if reason in END_KINDS else "unknown"


_SOURCE_PATTERNS = [  # checked in order against PC, AP, GN, EV, then the file name (lower case)
    ("kgs", re.compile(r"\bkgs\b|gokgs|kiseido go server|k go server")),
    ("fox", re.compile(r"foxwq|\bfox\b|野狐")),
    ("tygem", re.compile(r"tygem|타이젬|弈城")),
    ("ogs", re.compile(r"online-go\.com|\bogs\b|online go server")),
    ("cgos", re.compile(r"\bcgos\b|computer go server|boardspace\.net")),
    ("gogod", re.compile(r"gogod")),
]


def guess_source(pc: str = "", ap: str = "", gn: str = "", ev: str = "", file_name: str = "") -> str:
    """The server or collection a game comes from: one of :data:`SOURCES`. The first pattern that matches
    ``PC`` (place), then ``AP`` (application), ``GN`` (game name), ``EV`` (event), then the file name
    (archive + member) wins: ``PC[The KGS Go Server …]`` or ``KGS-2017_01-….tar.gz`` → kgs, ``foxwq``/``野狐``
    → fox, ``Tygem``/``타이젬`` → tygem, ``online-go.com``/``OGS`` → ogs, ``CGOS`` → cgos, ``GoGoD`` → gogod;
    else ``other``."""
    return _source_in_headers(pc or "", ap or "", gn or "", ev or "") or _source_in(file_name) or "other"


@lru_cache(maxsize=_PARSE_CACHE)
def _source_in_headers(pc: str, ap: str, gn: str, ev: str) -> str | None:
    """:func:`guess_source`'s answer from the headers alone (None: none matches); they repeat across an archive."""
    for text in (pc, ap, gn, ev):
        if (name := _source_in(text)) is not None:
            return name
    return None


def _source_in(text: str | None) -> str | None:
    """The first source whose pattern matches ``text`` (lower-cased), or None."""
    low = (text or "").lower()
    if low:
        for name, pat in _SOURCE_PATTERNS:
            if pat.search(low):
                return name
    return None


# --- bots ----------------------------------------------------------------------------------------

def _read_patterns(path: str | os.PathLike) -> list[str]:
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = re.split(r"\s+#", line, maxsplit=1)[0].strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


@dataclass
class BotList:
    """Which player names are programs: whole-name, case-insensitive regular expressions from the default
    list (``gotk/sgf/bots.txt``), the files named in ``$GOTK_BOTS`` (os.pathsep-separated) and the caller's
    ``files`` / ``patterns``; plus the source convention that every CGOS player is a program."""

    patterns: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        try:
            self._re = re.compile("|".join(f"(?:{p})" for p in self.patterns) or r"(?!x)x", re.IGNORECASE)
        except re.error as e:
            raise ValueError(f"bad bot name pattern: {e}") from e
        self._seen: dict[str, bool] = {}

    @classmethod
    def load(cls, files: Iterable[str | os.PathLike] = (), patterns: Iterable[str] = (), default: bool = True,
             env: Mapping[str, str] | None = None) -> BotList:
        """The default list + ``$GOTK_BOTS`` files + ``files`` + ``patterns`` (ValueError for a missing
        file or a bad pattern)."""
        env = os.environ if env is None else env
        paths = [DEFAULT_BOTS_FILE] if default else []
        paths += [p for p in env.get(BOTS_ENV, "").split(os.pathsep) if p.strip()]
        paths += list(files)
        pats: list[str] = []
        for p in paths:
            try:
                pats += _read_patterns(p)
            except OSError as e:
                raise ValueError(f"cannot read bot list {p}: {e}") from e
        return cls(pats + list(patterns))

    def is_bot(self, name: str | None, source: str = "other") -> bool:
        """Whether ``name`` is a program (always true on ``cgos``)."""
        if source == "cgos":
            return True
        if not name:
            return False
        hit = self._seen.get(name)
        if hit is None:  # names repeat across an archive: match each distinct one once
            if len(self._seen) >= _PARSE_CACHE:
                self._seen.clear()
            hit = self._seen[name] = self._re.fullmatch(name.strip()) is not None
        return hit


_DEFAULT_BOTS: BotList | None = None


def default_bots() -> BotList:
    """:meth:`BotList.load` with no extra files (cached)."""
    global _DEFAULT_BOTS
    if _DEFAULT_BOTS is None:
        _DEFAULT_BOTS = BotList.load()
    return _DEFAULT_BOTS


# --- one game ------------------------------------------------------------------------------------

#: The normalised columns (name, Arrow type name) added to the games table, in order.
COLUMNS = [
    ("black_rank", "int16"), ("white_rank", "int16"), ("komi", "float64"), ("rules", "string"),
    ("date", "string"), ("year", "int16"), ("end", "string"), ("source", "string"),
    ("black_is_bot", "bool"), ("white_is_bot", "bool"), ("time_system", "string"), ("time_main_s", "float64"),
    ("time_periods", "int32"), ("time_period_s", "float64"), ("time_stones", "int32"), ("warnings", "string"),
]
#: The raw columns kept beside them (as the file wrote them).
RAW_COLUMNS = ["black_rank_raw", "white_rank_raw", "komi_raw", "rules_raw", "date_raw", "time_raw"]


def normalise(headers: Mapping[str, str], result=None, file_name: str = "", bots: BotList | None = None) -> dict:
    """Every normalised column (:data:`COLUMNS`) and raw column (:data:`RAW_COLUMNS`) of one game, from its
    raw root properties ``headers`` (``BR``, ``WR``, ``KM``, ``RU``, ``DT``, ``TM``, ``OT``, ``TC``, ``TT``,
    ``PB``, ``PW``, ``PC``, ``AP``, ``GN``, ``EV``; missing keys are empty) and its normalised ``result``.
    ``warnings`` is the comma-joined sorted warning reasons, or None."""
    h = {k: (headers.get(k) or "").strip() for k in
         ("BR", "WR", "KM", "RU", "DT", "TM", "OT", "TC", "TT", "PB", "PW", "PC", "AP", "GN", "EV")}
    warns: set[str] = set()

    def take(pair):
        value, warning = pair
        if warning:
            warns.add(warning)
        return value

    date = take(parse_date(h["DT"]))
    tc = take(parse_time_control(h["TM"], h["OT"], h["TC"], h["TT"]))
    source = guess_source(h["PC"], h["AP"], h["GN"], h["EV"], file_name)
    bots = bots if bots is not None else default_bots()
    time_raw = " ".join(f"{k}[{h[k]}]" for k in ("TM", "OT", "TC", "TT") if h[k])
    return {
        "black_rank": take(parse_rank(h["BR"])), "white_rank": take(parse_rank(h["WR"])),
        "komi": take(parse_komi(h["KM"])), "rules": take(parse_rules(h["RU"])),
        "date": date, "year": int(date[:4]) if date else None,
        "end": end_kind(result) if result is not None else "unknown", "source": source,
        "black_is_bot": bots.is_bot(h["PB"], source), "white_is_bot": bots.is_bot(h["PW"], source),
        "time_system": tc.system, "time_main_s": tc.main_s, "time_periods": tc.periods,
        "time_period_s": tc.period_s, "time_stones": tc.stones,
        "warnings": ",".join(sorted(warns)) or None,
        "black_rank_raw": h["BR"], "white_rank_raw": h["WR"], "komi_raw": h["KM"], "rules_raw": h["RU"],
        "date_raw": h["DT"], "time_raw": time_raw,
    }


def record_headers(rec) -> dict[str, str]:
    """The raw header values of a :class:`gotk.sgf.record.GameRecord` as :func:`normalise` takes them."""
    h = dict(getattr(rec, "headers", None) or {})
    h.setdefault("BR", rec.black_rank)
    h.setdefault("WR", rec.white_rank)
    h.setdefault("RU", rec.rules)
    h.setdefault("DT", rec.date)
    h.setdefault("PB", rec.black)
    h.setdefault("PW", rec.white)
    h.setdefault("PC", rec.place)
    if "KM" not in h and rec.komi:
        h["KM"] = f"{rec.komi:g}"
    return h


def normalise_record(rec, bots: BotList | None = None) -> dict:
    """:func:`normalise` of a :class:`gotk.sgf.record.GameRecord` (file name: its archive and member)."""
    name = f"{rec.source}/{rec.member}" if rec.member else rec.source
    return normalise(record_headers(rec), rec.result, name, bots)
