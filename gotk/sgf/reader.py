"""Read SGF bytes into :class:`GameRecord` objects.

Parsing uses sgfmill's grammar layer (``sgf_grammar.parse_sgf_collection``), then walks the main
line of the coarse tree directly, decoding only the properties gotk keeps. That skips building
sgfmill's node objects, which is most of the cost of ``Sgf_game.from_bytes``.

Every failure raises :class:`gotk.errors.SGFError` with a reason code.
"""

from __future__ import annotations

import codecs
import math
import os
import re
from collections import Counter
from functools import lru_cache

import numpy as np
from sgfmill import sgf_grammar

from gotk import coords
from gotk.errors import SGFError
from gotk.sgf.fast import Declined, scan_trees
from gotk.sgf.record import BLACK, WHITE, GameRecord, parse_result
from gotk.sources.archives import MAX_SGF_BYTES

FAST_DEFAULT = os.environ.get("GOTK_SGF_FAST", "1") != "0"  # the compiled reader first (gotk.sgf.fast)
HEADER_KEYS = ("KM", "TM", "OT", "TC", "TT", "AP", "GN", "EV")  # raw text kept for gotk.sgf.metadata
MAX_SETUP_FACTOR = 4  # AB/AW/AE may list at most this many times the board's points (rectangles expanded)
_SGF_LETTER_VALUES = {c: i for i, c in enumerate(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")}


_ASCII_PROBE = b"(;GM[1]SZ[19]PB[ab]) +-.0123456789"
# Root values repeat from game to game (players, ranks, rules, komi, time settings, results): short ones
# are decoded once per process. Pure functions of their arguments, so the caches change no result.
_CACHED_VALUE_BYTES = 256


def _charset(root: dict) -> tuple[str | None, bool]:
    """The declared ``CA`` charset (a codec name, None when absent or unknown) and whether the declaration
    is a lie on its face: a charset that does not read ASCII as ASCII (UTF-16, UTF-32, ...) cannot be the
    charset of a file the SGF grammar just parsed, so it is ignored (``charset_mismatch``)."""
    raw = root.get("CA")
    if not raw:
        return None, False
    value = bytes(raw[0])
    return _charset_of(value) if len(value) <= _CACHED_VALUE_BYTES else _charset_uncached(value)


@lru_cache(maxsize=256)
def _charset_of(value: bytes) -> tuple[str | None, bool]:
    return _charset_uncached(value)


def _charset_uncached(value: bytes) -> tuple[str | None, bool]:
    name = value.decode("ascii", "replace").strip()
    try:
        codec = codecs.lookup(name).name
    except (LookupError, ValueError):  # ValueError: a name with a NUL byte (CA[\xff\xfe\x00], found by the fuzzer)
        return None, False
    try:
        if _ASCII_PROBE.decode(codec) != _ASCII_PROBE.decode("ascii"):
            return None, True
    except (UnicodeDecodeError, LookupError, ValueError):
        return None, True
    return codec, False


_HIGH_RUN = re.compile(rb"[\x80-\xff]+")
_GAME_START = re.compile(rb"\(\s*;")  # where a game tree starts (sgfmill ignores everything before the first)
_TEXT_SPECIAL = re.compile(rb"[\\\n\r\t\f\v]")  # without these, simpletext_value returns its input


def _looks_like_gb(value: bytes) -> bool:
    """GB2312-style text comes in whole two-byte characters, so its runs of non-ASCII bytes have
    even lengths; latin-1 names ("Andr\xe9s", "M\xfcller") have lone high bytes before ASCII
    letters that GB18030 would otherwise happily read as CJK characters."""
    return all(len(m) % 2 == 0 for m in _HIGH_RUN.findall(value))


def decode_text(raw: bytes, charset: str | None, mismatch: list | None = None) -> str:
    """Decode an SGF simpletext value: ASCII as ASCII whatever the charset says, else the declared
    charset, else UTF-8, else GB18030 when that reads as CJK text made of whole two-byte characters,
    else latin-1 (which never fails). A declared charset that fails on the value appends to
    ``mismatch`` (counted as a ``charset_mismatch`` warning)."""
    raw = bytes(raw)
    text, failed = (_decode_cached if len(raw) <= _CACHED_VALUE_BYTES else _decode)(raw, charset)
    if failed and mismatch is not None:
        mismatch.append(charset)
    return text


def _decode(value: bytes, charset: str | None) -> tuple[str, bool]:
    """:func:`decode_text`'s rules: ``(text, whether the declared charset failed on the value)``."""
    if _TEXT_SPECIAL.search(value):
        value = sgf_grammar.simpletext_value(value)
    if value.isascii():
        return value.decode("ascii"), False
    failed = False
    if charset:
        try:
            return value.decode(charset), False
        except (UnicodeDecodeError, LookupError):
            failed = True
    return _decode_fallbacks(value), failed


_decode_cached = lru_cache(maxsize=16384)(_decode)


@lru_cache(maxsize=16384)
def _stripped_text(value: bytes, charset: str | None) -> tuple[str, bool]:
    """:func:`_decode`, stripped: what :func:`record_from_root` keeps of a short root value."""
    text, failed = _decode(value, charset)
    return text.strip(), failed


def _decode_fallbacks(value: bytes) -> str:
    """UTF-8, else GB18030 when that reads as CJK text of whole two-byte characters, else latin-1."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        pass
    if _looks_like_gb(value):
        try:
            text = value.decode("gb18030")
            if any("\u4e00" <= ch <= "\u9fff" for ch in text):
                return text
        except UnicodeDecodeError:
            pass
    return value.decode("latin-1")


def _parse_size(root: dict) -> int:
    raw = root.get("SZ")
    if not raw:
        return 19
    value = bytes(raw[0])
    return _size_of(value) if len(value) <= _CACHED_VALUE_BYTES else _size_uncached(value)


@lru_cache(maxsize=256)
def _size_of(value: bytes) -> int:
    return _size_uncached(value)  # a bad size raises, and exceptions are not cached: same error every time


def _size_uncached(value: bytes) -> int:
    text = value.decode("ascii", "replace").strip()
    try:
        if ":" in text:
            cols, rows = (int(x) for x in text.split(":"))
            if cols != rows:
                raise SGFError("bad_size", f"rectangular board SZ[{text}] is not supported")
            size = cols
        else:
            size = int(text)
    except ValueError as e:
        raise SGFError("bad_size", f"SZ[{text}] is not a number") from e
    if not coords.MIN_SIZE <= size <= coords.MAX_SIZE:
        raise SGFError("bad_size", f"SZ[{size}] outside {coords.MIN_SIZE}..{coords.MAX_SIZE}")
    return size


def _point(raw: bytes, size: int) -> int:
    """Raw SGF point → flat index (pass = size*size); raises ValueError when off the board."""
    n = len(raw)
    if n == 0:
        return size * size
    if n == 2:
        col = _SGF_LETTER_VALUES.get(raw[0], 99)
        row = _SGF_LETTER_VALUES.get(raw[1], 99)
        if col < size and row < size:
            return row * size + col
        if raw == b"tt" and size <= 19:
            return size * size
    return coords.from_sgf(bytes(raw).strip(), size)  # tolerant path; raises with a message


def _point_list(values: list, size: int) -> list[int]:
    """AB/AW/AE values, compressed rectangles (``aa:cc``) expanded; ValueError past
    ``MAX_SETUP_FACTOR`` times the board's points (a hostile file could list millions of rectangles)."""
    out: list[int] = []
    cap = MAX_SETUP_FACTOR * size * size
    for raw in values:
        if len(out) > cap:
            raise ValueError(f"more than {cap} setup points")
        raw = bytes(raw).strip()
        if b":" in raw:
            a, b = raw.split(b":", 1)
            p, q = _point(a, size), _point(b, size)
            if p == size * size or q == size * size:
                raise ValueError(f"bad rectangle {raw!r}")
            (r0, c0), (r1, c1) = divmod(p, size), divmod(q, size)
            for r in range(min(r0, r1), max(r0, r1) + 1):
                for c in range(min(c0, c1), max(c0, c1) + 1):
                    out.append(r * size + c)
        else:
            p = _point(raw, size)
            if p == size * size:
                raise ValueError("a setup stone cannot be a pass")
            out.append(p)
    return out


def _setup_points(values: list | None, size: int) -> list[int]:
    """:func:`_point_list` of an AB/AW/AE property; short lists (the usual handicap placements, which
    repeat from game to game) come from a cache of the pure function."""
    if not values:
        return []
    key = tuple(bytes(v) for v in values)
    if len(key) <= 32 and sum(len(v) for v in key) <= _CACHED_VALUE_BYTES:
        return list(_setup_points_of(key, size))
    return _point_list(values, size)


@lru_cache(maxsize=1024)
def _setup_points_of(values: tuple[bytes, ...], size: int) -> tuple[int, ...]:
    return tuple(_point_list(list(values), size))  # an invalid list raises, and is never cached


def _float(root: dict, key: str, default: float, charset: str | None) -> float:
    raw = root.get(key)
    if not raw:
        return default
    text = decode_text(raw[0], charset).strip().replace(",", ".")
    try:
        value = float(text)
    except ValueError:
        return default
    return value if math.isfinite(value) else default


def _handicap(root: dict, size: int) -> int:
    """``HA``: unreadable or negative values read as 0 (as always); more stones than the board has
    points is ``bad_property`` (it would not even fit the games table's integer column)."""
    raw = root.get("HA")
    if not raw:
        return 0
    text = decode_text(raw[0], None).strip()
    try:
        handicap = max(0, int(float(text or 0)))
    except (ValueError, OverflowError):  # "HA[abc]", "HA[nan]", "HA[inf]"
        return 0
    if handicap > size * size:
        raise SGFError("bad_property", f"HA[{text[:40]}] outside 0..{size * size}")
    return handicap


def record_from_tree(tree, source: str = "", member: str = "") -> GameRecord:
    """Build a :class:`GameRecord` from one sgfmill ``Coarse_game_tree``."""
    nodes = list(sgf_grammar.main_sequence_iter(tree))
    return record_from_root(nodes[0], lambda size: _main_line(nodes, size), source, member)


def read_fast(data: bytes, source: str = "", member: str = "") -> list[GameRecord | SGFError]:
    """Every game tree of ``data`` read by the compiled scanner (:func:`gotk.sgf.fast.scan_trees`) as a
    :class:`GameRecord`, or an :class:`SGFError` in its place (as :func:`iter_sgf` yields them). Raises
    :class:`~gotk.sgf.fast.Declined` when the input needs the sgfmill path."""
    out: list[GameRecord | SGFError] = []
    for root, main_line in scan_trees(data):
        try:
            out.append(record_from_root(root, main_line, source, member))
        except SGFError as e:
            out.append(e)
    return out


def record_from_root(root: dict, main_line, source: str = "", member: str = "") -> GameRecord:
    """Build a :class:`GameRecord` from the root's property map (name -> raw values) and
    ``main_line(size) -> (colors, points, defect)``; shared by the sgfmill and the compiled reader."""
    gm = root.get("GM")
    if gm and bytes(gm[0]).strip() not in (b"1", b""):
        raise SGFError("not_go", f"GM[{bytes(gm[0]).decode('ascii', 'replace')}] is not Go")
    size = _parse_size(root)
    charset, lying = _charset(root)
    mismatch: list[str] = ["CA"] if lying else []

    def text(key: str) -> str:
        raw = root.get(key)
        if not raw:
            return ""
        value = bytes(raw[0])
        if len(value) > _CACHED_VALUE_BYTES:
            return decode_text(value, charset, mismatch).strip()
        stripped, failed = _stripped_text(value, charset)
        if failed:
            mismatch.append(charset)
        return stripped

    try:
        setup_b = _setup_points(root.get("AB"), size)
        setup_w = _setup_points(root.get("AW"), size)
        setup_e = _setup_points(root.get("AE"), size)
    except ValueError as e:
        raise SGFError("bad_setup", str(e)) from e
    if set(setup_b) & set(setup_w):
        raise SGFError("bad_setup", "a point is set up both black and white")

    handicap = _handicap(root, size)
    pl = text("PL").upper()
    first_player = BLACK if pl.startswith("B") else WHITE if pl.startswith("W") else None

    colors, points, defect = main_line(size)
    return GameRecord(
        size=size,
        komi=_float(root, "KM", 0.0, None),  # ASCII in practice; range and repairs: gotk.sgf.metadata
        handicap=handicap,
        rules=text("RU"),
        result=parse_result(text("RE")),
        black=text("PB"),
        white=text("PW"),
        black_rank=text("BR"),
        white_rank=text("WR"),
        date=text("DT"),
        place=text("PC"),
        setup_black=tuple(setup_b),
        setup_white=tuple(setup_w),
        setup_empty=tuple(setup_e),
        colors=colors,
        points=points,
        first_player=first_player,
        defect=defect,
        source=source,
        member=member,
        headers={k: text(k) for k in HEADER_KEYS if k in root},
        warnings=("charset_mismatch",) if mismatch else (),  # evaluated last: after every text() above
    )


def _main_line(nodes: list, size: int):
    """Main-line moves of sgfmill property maps: ``(colors int8, points int16, defect)``."""
    colors: list[int] = []
    points: list[int] = []
    defect = None
    for i, node in enumerate(nodes):
        if i > 0 and ("AB" in node or "AW" in node or "AE" in node):
            defect = ("bad_setup", len(points), "setup stones after the root node")
            break
        b = node.get("B")
        w = node.get("W")
        if b is None and w is None:
            continue
        if b is not None and w is not None:
            defect = ("bad_move", len(points), "a node with both B and W")
            break
        color, raw = (BLACK, b) if b is not None else (WHITE, w)
        try:
            points.append(_point(raw[0], size))
        except ValueError as e:
            defect = ("bad_move", len(points), str(e))
            break
        colors.append(color)
    return np.array(colors, dtype=np.int8), np.array(points, dtype=np.int16), defect


def read_sgf(data: bytes, source: str = "", member: str = "", max_bytes: int = MAX_SGF_BYTES) -> list[GameRecord]:
    """Parse SGF bytes (a game or a collection) into records, one per game tree.

    Raises :class:`SGFError` (``empty``, ``too_large``, ``not_sgf`` (no game tree in it at all),
    ``parse_error``, ``bad_size``, ``bad_setup``, ``not_go``) for the whole input; use :func:`iter_sgf` to keep
    the good games of a collection that holds a bad one.
    """
    return [r for r in iter_sgf(data, source, member, max_bytes, strict=True)]


def iter_sgf(data: bytes, source: str = "", member: str = "", max_bytes: int = MAX_SGF_BYTES,
             strict: bool = False, fast: bool | None = None, counts: Counter | None = None):
    """Yield a :class:`GameRecord` per game tree in ``data``, or an :class:`SGFError` in its place
    (when ``strict`` is false) for a tree that cannot be turned into a record.

    The compiled reader (:mod:`gotk.sgf.fast`) reads the input when it can (``fast``: default on,
    ``GOTK_SGF_FAST=0`` turns it off); what it declines goes through sgfmill. ``counts`` (if given)
    gets, per input, ``fast`` or ``fallback`` (+ ``fallback:<why>``) and the games each way."""
    if len(data) > max_bytes:
        raise SGFError("too_large", f"{len(data)} bytes exceeds the {max_bytes}-byte cap")
    if not data.strip():
        raise SGFError("empty", "no data")
    if not _GAME_START.search(data):
        raise SGFError("not_sgf", "no SGF game in it (no game tree starts with '(;')")
    if FAST_DEFAULT if fast is None else fast:
        try:
            items = read_fast(data, source, member)
        except Declined as d:
            if counts is not None:
                counts[f"fallback:{d.reason}"] += 1
        else:
            if counts is not None:
                counts["fast"] += 1
                counts["fast_games"] += len(items)
            for item in items:
                if strict and isinstance(item, SGFError):
                    raise item
                yield item
            return
    if counts is not None:
        counts["fallback"] += 1
    try:
        trees = sgf_grammar.parse_sgf_collection(data)
    except ValueError as e:
        raise SGFError("parse_error", str(e)) from e
    if counts is not None:
        counts["fallback_games"] += len(trees)
    for tree in trees:
        try:
            yield record_from_tree(tree, source, member)
        except SGFError as e:
            if strict:
                raise
            yield e


def read_sgf_file(path, max_bytes: int = MAX_SGF_BYTES) -> list[GameRecord]:
    """Read an ``.sgf`` file from disk (see :func:`read_sgf`)."""
    from pathlib import Path

    p = Path(path)
    size = p.stat().st_size
    if size > max_bytes:
        raise SGFError("too_large", f"{p} is {size} bytes, over the {max_bytes}-byte cap")
    return read_sgf(p.read_bytes(), source=p.name, max_bytes=max_bytes)
