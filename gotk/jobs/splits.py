"""Game selection: rank, handicap and ``--where`` filters (checked before a run by :func:`check_game_filters`),
and deterministic train/val/test splits by game.

Splits are decided per game, never per position: a game's ``game_id`` (see :mod:`gotk.shards.gameid`)
is mapped onto [0, 1) and compared with the cumulative fractions of ``--split`` in the order given,
so the same game always lands in the same split whatever the archive, worker count or run. Whole
archives or paths can be routed to ``test`` with ``--test-from GLOB``.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import PurePath

from gotk.sgf.metadata import BotList
from gotk.sgf.metadata import rank_value as _rank_value
from gotk.shards.gameid import unit_fraction
from gotk.shards.manifest import ENCODE_WHERE_COLUMNS
from gotk.shards.where import compile_where

DEFAULT_SPLIT = "train=0.9,val=0.05,test=0.05"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def parse_split(text: str) -> list[tuple[str, float]]:
    """``"train=0.9,val=0.05,test=0.05"`` → ``[("train", 0.9), ...]``. Fractions must be ≥ 0 and
    sum to 1 (±1e-6); names must be unique identifiers. Raises ValueError with a clear message."""
    out: list[tuple[str, float]] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, eq, value = part.partition("=")
        name = name.strip()
        if not eq or not _NAME.match(name):
            raise ValueError(f"bad split {part!r}: expected NAME=FRACTION, e.g. train=0.9")
        try:
            frac = float(value)
        except ValueError as e:
            raise ValueError(f"bad split fraction in {part!r}") from e
        if not 0.0 <= frac <= 1.0:
            raise ValueError(f"split fraction {frac} of {name!r} outside [0, 1]")
        if any(n == name for n, _ in out):
            raise ValueError(f"split {name!r} given twice")
        out.append((name, frac))
    if not out:
        raise ValueError("no split given")
    total = sum(f for _, f in out)
    if abs(total - 1.0) > 1e-6:
        raise ValueError(f"split fractions sum to {total:g}, not 1")
    return out


def assign_split(gid: str, splits: list[tuple[str, float]]) -> str:
    """The split of a game: the first whose cumulative fraction exceeds ``unit_fraction(gid)``."""
    u = unit_fraction(gid)
    acc = 0.0
    for name, frac in splits:
        acc += frac
        if u < acc:
            return name
    return next(name for name, frac in reversed(splits) if frac > 0)  # rounding: the last non-empty


def matches_test_from(archive_path: str, patterns: list[str]) -> bool:
    """Whether a source (archive or ``.sgf`` file path) is routed to ``test``: a glob matching its
    file name or its full path."""
    if not patterns:
        return False
    name = PurePath(archive_path).name
    return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(archive_path, p) for p in patterns)


# --- ranks -----------------------------------------------------------------------------------

def rank_value(rank: str | None) -> int | None:
    """An orderable rank (the one rank scale, owned by :func:`gotk.sgf.metadata.parse_rank`): ``30k`` → -29 …
    ``1k`` → 0, ``1d`` → 1 … ``9d`` → 9, ``1p`` → 101 (every pro above every amateur dan); a trailing ``?``
    is ignored; an empty, ``?`` or unreadable rank is None (unknown)."""
    return _rank_value(rank)


def parse_min_rank(text: str) -> int:
    """``--min-rank`` value → :func:`rank_value`; ValueError for an unreadable rank."""
    v = rank_value(text)
    if v is None:
        raise ValueError(f"bad rank {text!r}: expected e.g. 6d, 2k, 1p")
    return v


def passes_min_rank(black_rank: str, white_rank: str, min_rank: int | None) -> bool:
    """Keep a game when BOTH players are at least ``min_rank``; an unknown rank fails."""
    if min_rank is None:
        return True
    b, w = rank_value(black_rank), rank_value(white_rank)
    return b is not None and w is not None and b >= min_rank and w >= min_rank


def check_game_filters(min_rank: str | None, where: str | None, bots) -> tuple[str, ...]:
    """Check the game filters a run over sources takes (``--min-rank``, ``--where`` against the columns known at
    scan time, ``--bots`` files) before any work starts; returns the bot-name patterns (default list, $GOTK_BOTS,
    the files), resolved once so every worker uses the same list. Raises :class:`WhereError` or ``ValueError``."""
    if min_rank:
        parse_min_rank(min_rank)
    if where:
        compile_where(where, ENCODE_WHERE_COLUMNS)
    return tuple(BotList.load(files=bots).patterns)
