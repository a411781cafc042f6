"""The metadata inputs: KataGo's 192-float vector of who played a game, and how, for its human-SL networks.

KataGo's human-SL networks take, beside the planes and the global inputs, a vector describing the game
(``SGFMetadata::fillMetadataRow``, ``cpp/neuralnet/sgfmetadata.cpp``; ``metadataInputNC`` in its training data).
This module is gotk's one owner of that vector: :class:`Metadata` (the fields of KataGo's ``SGFMetadata`` in
gotk's terms), built from gotk's normalised metadata (:func:`from_normalised`, a games-table row or the dict of
:func:`gotk.sgf.metadata.normalise_record`) or from a named profile (:func:`profile`, KataGo's
``SGFMetadata::getProfile``), and :func:`fill_row` / :func:`game_rows`, the vector itself, always from the point
of view of the player to move. The rows equal KataGo's float for float (``tests/test_metadata_inputs.py`` compares
them with rows KataGo's own C++ wrote).

The vector (index: meaning): 0/1 the player to move / the opponent is human; 2/3 unranked; 4/5 rank unknown;
6-39 / 40-73 the inverse rank as a thermometer (``min(inverse rank, 34)`` ones); 74 unrated (0.5 when not known);
75-81 the time control, one-hot (unknown, none, absolute, simple, byo-yomi, canadian, fischer); 82-85 main time,
period time, periods and Canadian moves on log scales; 86 the board's area (``0.5 ln(area / 361)``); 87-150 the
date as cosines and sines of 32 periods from 7 days to 7 × 80000 days; 151-166 the source, one-hot; the rest 0.

**From gotk's metadata** (KataGo's rules of ``cpp/command/writetrainingdata.cpp``):

* rank: the inverse rank is 1 for a professional (every ``p`` rank), ``10 - n`` for ``n`` dan, ``9 + n`` for
  ``n`` kyu (on gotk's rank scale ``v``: ``10 - v`` for an amateur); a rank written ``-`` is *unranked*, as is a
  KGS player with no rank (KGS leaves ``BR``/``WR`` out for unranked players); any other missing or unreadable
  rank is *unknown* (inverse rank 0); on GoGoD a dan rank is a professional's and a kyu rank is unknown;
* a player is human unless gotk's bot list says it is a program (``black_is_bot``/``white_is_bot``);
* ratedness: GoGoD games are rated, every other game's ratedness is unknown (gotk keeps no ratedness);
* time control: GoGoD's is unknown; ``byo-yomi`` (main time, period time, periods), ``canadian`` (main time, the
  period's time per move, moves per period), ``fischer`` (main time, increment), ``absolute`` (main time);
  a game with no clock at all is ``none`` on KGS and OGS (their SGF always say the clock) and ``unknown``
  elsewhere; an unreadable clock (``bad_time``) is ``unknown``;
* date: the game's first day, 1970-01-01 when unknown (KataGo's default date);
* source: KataGo's ids (:data:`SOURCE_IDS`: OGS 1, KGS 2, Fox 3, Tygem 4, GoGoD 5, Go4Go 6), 0 for the others.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from gotk.errors import GotkError
from gotk.game import kernels as K
from gotk.sgf.metadata import RANK_PRO_BASE, parse_rank

NUM_CHANNELS = 192
VERSION = 1  # KataGo's meta encoder version 1
#: KataGo's source ids (``SGFMetadata::SOURCE_*``); every other source is 0.
SOURCE_IDS = {"ogs": 1, "kgs": 2, "fox": 3, "tygem": 4, "gogod": 5, "go4go": 6}
#: The time-control kinds, in the order of their one-hot inputs (75-81).
TIME_CONTROLS = ("unknown", "none", "absolute", "simple", "byo-yomi", "canadian", "fischer")
_EPOCH = _dt.date(1970, 1, 1)
_RANK_LEN = 34  # thermometer length per player
_DATE_START, _DATE_LEN = 87, 32
_SOURCE_START, _NUM_SOURCES = 151, 16


def describe() -> dict:
    """JSON-able description recorded in shard metadata (the width and KataGo's meta encoder version)."""
    return {"width": NUM_CHANNELS, "version": VERSION, "convention": "katago-sgfmetadata"}


@dataclass(frozen=True)
class Metadata:
    """One game's metadata as KataGo's human-SL inputs see it (the fields of KataGo's ``SGFMetadata``).

    ``*_inverse_rank``: 1 for a professional or 9 dan, 9 for 1 dan, 10 for 1 kyu, 9 + n for n kyu, 0 when unknown
    or unranked; ``time_control`` one of :data:`TIME_CONTROLS`, with ``main_time_s``, ``period_time_s`` (a
    byo-yomi period, a Canadian period's time per move, a Fischer increment), ``periods`` (byo-yomi) and
    ``canadian_moves``; ``source`` a KataGo source id (:data:`SOURCE_IDS`, 0 for others)."""

    black_inverse_rank: int = 0
    white_inverse_rank: int = 0
    black_unranked: bool = False
    white_unranked: bool = False
    black_rank_unknown: bool = False
    white_rank_unknown: bool = False
    black_human: bool = True
    white_human: bool = True
    unrated: bool = False
    ratedness_unknown: bool = True
    time_control: str = "unknown"
    main_time_s: float = 0.0
    period_time_s: float = 0.0
    periods: int = 0
    canadian_moves: int = 0
    date: _dt.date = _EPOCH
    source: int = 0

    def __post_init__(self) -> None:
        if self.time_control not in TIME_CONTROLS:
            raise GotkError("bad_metadata", f"unknown time control {self.time_control!r}: one of "
                            f"{', '.join(TIME_CONTROLS)}")
        if not 0 <= self.source < _NUM_SOURCES:
            raise GotkError("bad_metadata", f"source id {self.source} out of range 0-{_NUM_SOURCES - 1}")
        if not all(math.isfinite(x) for x in (self.main_time_s, self.period_time_s)):
            raise GotkError("bad_metadata", "main and period times must be finite")

    def for_player(self, color: int) -> tuple[bool, bool, bool, int]:
        """``(human, unranked, rank unknown, inverse rank)`` of ``color`` (1 black, 2 white)."""
        if color == K.WHITE:
            return self.white_human, self.white_unranked, self.white_rank_unknown, self.white_inverse_rank
        return self.black_human, self.black_unranked, self.black_rank_unknown, self.black_inverse_rank


# --- from gotk's normalised metadata --------------------------------------------------------------

def inverse_rank(rank: int | None) -> int:
    """KataGo's inverse rank of a gotk rank-scale value (``9d`` and every ``p`` → 1, ``1d`` → 9, ``1k`` → 10,
    ``30k`` → 39); 0 for None."""
    if rank is None:
        return 0
    return 1 if rank > RANK_PRO_BASE else 10 - int(rank)


def _player_rank(rank, raw, source: str) -> tuple[int, bool, bool]:
    """``(inverse rank, unranked, unknown)`` of one player from the normalised rank and the rank as written."""
    if rank is not None and rank == rank:
        if source == "gogod" and rank <= RANK_PRO_BASE:  # GoGoD writes pro dan as "d"; its kyu are historical
            return (1, False, False) if rank >= 1 else (0, False, True)
        return inverse_rank(int(rank)), False, False
    text = (raw or "").strip()
    if text == "-" or (text == "" and source == "kgs"):
        return 0, True, False
    return 0, False, True


def _time_control(row: Mapping, source: str) -> tuple[str, float, float, int, int]:
    """``(kind, main time, period time, periods, canadian moves)`` by KataGo's rules (module docstring)."""
    if source == "gogod" or "bad_time" in (row.get("warnings") or ""):
        return "unknown", 0.0, 0.0, 0, 0
    system = row.get("time_system")
    main = float(row.get("time_main_s") or 0.0)
    period = float(row.get("time_period_s") or 0.0)
    if system == "byo-yomi":
        return "byo-yomi", main, period, int(row.get("time_periods") or 0), 0
    if system == "canadian":
        stones = int(row.get("time_stones") or 0)
        return ("canadian", main, period / stones, 0, stones) if stones > 0 else ("unknown", 0.0, 0.0, 0, 0)
    if system in ("fischer", "simple"):
        return system, main, period, 0, 0
    if system == "absolute":
        return "absolute", main, 0.0, 0, 0
    if not (row.get("time_raw") or "").strip() or main == 0.0:
        return ("none" if source in ("kgs", "ogs") else "unknown"), 0.0, 0.0, 0, 0
    return "unknown", 0.0, 0.0, 0, 0


def from_normalised(row: Mapping) -> Metadata:
    """The :class:`Metadata` of one game from its normalised metadata: a ``games.parquet`` row (as a dict) or
    :func:`gotk.sgf.metadata.normalise_record`'s dict, by KataGo's rules (module docstring)."""
    source = row.get("source") or "other"
    b_inv, b_unr, b_unk = _player_rank(row.get("black_rank"), row.get("black_rank_raw"), source)
    w_inv, w_unr, w_unk = _player_rank(row.get("white_rank"), row.get("white_rank_raw"), source)
    kind, main, period, periods, moves = _time_control(row, source)
    date = row.get("date")
    return Metadata(
        black_inverse_rank=b_inv, white_inverse_rank=w_inv, black_unranked=b_unr, white_unranked=w_unr,
        black_rank_unknown=b_unk, white_rank_unknown=w_unk,
        black_human=not row.get("black_is_bot"), white_human=not row.get("white_is_bot"),
        unrated=False, ratedness_unknown=source != "gogod",
        time_control=kind, main_time_s=main, period_time_s=period, periods=periods, canadian_moves=moves,
        date=_dt.date.fromisoformat(date) if date else _EPOCH, source=SOURCE_IDS.get(source, 0))


# --- the vector -----------------------------------------------------------------------------------

def _date_features(days: int) -> list[float]:
    """Inputs 87-150: cos and sin of the date over 32 periods, computed in double as KataGo does."""
    out = []
    period = 7.0
    factor = math.pow(80000.0, 1.0 / (_DATE_LEN - 1))
    for _ in range(_DATE_LEN):
        revolutions = days / period
        out += [math.cos(revolutions * math.tau), math.sin(revolutions * math.tau)]
        period *= factor
    return out


def fill_row(meta: Metadata, next_player: int, board_area: int, out: np.ndarray | None = None) -> np.ndarray:
    """The float32 (192,) vector of ``meta`` for a position with ``next_player`` (1 black, 2 white) to move on a
    board of ``board_area`` points: KataGo's ``fillMetadataRow``, float for float (into ``out`` when given)."""
    row = np.zeros(NUM_CHANNELS, np.float32) if out is None else out
    row[:] = 0.0
    pla = meta.for_player(next_player)
    opp = meta.for_player(K.WHITE if next_player != K.WHITE else K.BLACK)
    for k, (a, b) in enumerate(zip(pla[:3], opp[:3], strict=True)):
        row[2 * k], row[2 * k + 1] = float(a), float(b)
    for start, (_, unranked, _, inv) in ((6, pla), (6 + _RANK_LEN, opp)):
        if not unranked:
            row[start:start + max(0, min(inv, _RANK_LEN))] = 1.0
    row[74] = 0.5 if meta.ratedness_unknown else 1.0 if meta.unrated else 0.0
    row[75 + TIME_CONTROLS.index(meta.time_control)] = 1.0
    main = min(max(meta.main_time_s, 0.0), 3.0 * 86400)
    period = min(max(meta.period_time_s, 0.0), 1.0 * 86400)
    row[82] = 0.4 * (math.log(main + 60.0) - 6.5)
    row[83] = 0.3 * (math.log(period + 1.0) - 3.0)
    row[84] = 0.5 * (math.log(min(max(meta.periods, 0), 50) + 2.0) - 1.5)
    row[85] = 0.25 * (math.log(min(max(meta.canadian_moves, 0), 50) + 2.0) - 1.5)
    row[86] = 0.5 * math.log(board_area / 361.0)
    row[_DATE_START:_DATE_START + 2 * _DATE_LEN] = _date_features((meta.date - _EPOCH).days)
    row[_SOURCE_START + meta.source] = 1.0
    return row


def game_rows(meta: Metadata, board_area: int) -> np.ndarray:
    """``(2, 192)`` float32: the vector with black to move (row 0) and with white to move (row 1); every position
    of the game has one of them (:func:`rows_for`)."""
    out = np.empty((2, NUM_CHANNELS), np.float32)
    fill_row(meta, K.BLACK, board_area, out[0])
    fill_row(meta, K.WHITE, board_area, out[1])
    return out


def rows_for(pair: np.ndarray, to_play: np.ndarray, game: np.ndarray | None = None) -> np.ndarray:
    """``(N, 192)`` vectors of many positions: ``pair`` one game's :func:`game_rows` ``(2, 192)``, or many games'
    ``(G, 2, 192)`` with ``game`` (N,) each position's game; ``to_play`` the shards' colours (+1 black,
    -1 white)."""
    white = (np.asarray(to_play) < 0).astype(np.intp)
    return pair[white] if game is None else pair[np.asarray(game, dtype=np.intp), white]


# --- profiles -------------------------------------------------------------------------------------

_PROFILE_RANKS = {f"{n}d": 10 - n for n in range(1, 10)} | {f"{n}k": 9 + n for n in range(1, 21)}
_INT = re.compile(r"^\s*[+-]?\d+\s*$")


def profile(name: str) -> Metadata:
    """KataGo's named human-SL profile (``SGFMetadata::getProfile``): ``rank_<r>`` / ``preaz_<r>`` (``r`` from
    ``20k`` to ``9d``, or ``<black>_<white>`` such as ``rank_3d_1k``: KGS games of those ranks, byo-yomi 20 min +
    5 × 30 s, dated 2020-03-01, or 2016-09-01 for ``preaz_``), ``proyear_<y>`` (professionals, 1800-2023: GoGoD
    to 2020, Go4Go after, dated June 1st). Any other name: a one-line :class:`GotkError`."""
    if name.startswith("proyear_") and _INT.match(name[8:]):
        year = int(name[8:])
        if 1800 <= year <= 2023:
            return Metadata(black_inverse_rank=1, white_inverse_rank=1, ratedness_unknown=False,
                            date=_dt.date(year, 6, 1), source=SOURCE_IDS["gogod" if year <= 2020 else "go4go"])
    for prefix in ("rank_", "preaz_"):
        if name.startswith(prefix):
            ranks = name[len(prefix):]
            pieces = [ranks] if ranks in _PROFILE_RANKS else ranks.split("_")
            if len(pieces) in (1, 2) and all(p in _PROFILE_RANKS for p in pieces):
                return Metadata(
                    black_inverse_rank=_PROFILE_RANKS[pieces[0]], white_inverse_rank=_PROFILE_RANKS[pieces[-1]],
                    time_control="byo-yomi", main_time_s=1200.0, period_time_s=30.0, periods=5,
                    date=_dt.date(2016, 9, 1) if prefix == "preaz_" else _dt.date(2020, 3, 1),
                    source=SOURCE_IDS["kgs"])
    raise GotkError("bad_profile", f"unknown human-SL profile {name!r}: rank_<20k..9d>[_<20k..9d>], "
                    "preaz_<rank>[_<rank>] or proyear_<1800..2023>")


#: the least share of a conditioned agent's training positions that makes a rank (or a source) one it learnt
PROFILE_MIN_SHARE = 0.005


def _inverse_label(inverse: int) -> str:
    return f"{10 - inverse}d" if inverse <= 9 else f"{inverse - 9}k"


def nearest_profile(name: str, trained_on: Mapping | None,
                    min_share: float = PROFILE_MIN_SHARE) -> tuple[str, str | None]:
    """``(profile, warning)``: the human-SL profile ``name`` (:func:`profile`; a one-line :class:`GotkError` when
    it is none) as a conditioned agent that learnt from ``trained_on`` (agent.json ``trained_on``: positions by the
    mover's inverse rank and by source; :func:`gotk.train.setup.metadata_coverage`) can play it. A rank with
    less than ``min_share`` of those positions is replaced by the nearest rank that has more; a ``proyear_``
    profile of an agent that learnt from no professional source (GoGoD, Go4Go) becomes ``rank_`` of its strongest
    rank. ``warning`` says what was replaced, in one line; it is None when ``name`` is played as it is (also when
    the agent records no ``trained_on``)."""
    profile(name)
    if not trained_on:
        return name, None
    total = max(1, int(trained_on.get("positions") or 0))
    ranks = trained_on.get("mover_inverse_rank") or {}
    covered = sorted(int(k) for k, v in ranks.items() if int(k) > 0 and v >= min_share * total)
    sources = {k for k, v in (trained_on.get("sources") or {}).items() if v >= min_share * total}
    if not covered:
        return name, None

    def near(inverse: int) -> int:
        return min(covered, key=lambda c: (abs(c - inverse), c))

    if name.startswith("proyear_"):
        if sources & {"gogod", "go4go"}:
            return name, None
        new = f"rank_{_inverse_label(covered[0])}"
        return new, (f"humanSLProfile {name}: this agent learnt from no professional games "
                     f"({', '.join(sorted(sources)) or 'no source'}); playing as {new}, its strongest rank")
    prefix = "preaz_" if name.startswith("preaz_") else "rank_"
    rest = name[len(prefix):]
    pieces = [rest] if rest in _PROFILE_RANKS else rest.split("_")
    mapped = [_inverse_label(near(_PROFILE_RANKS[p])) for p in pieces]
    new = prefix + "_".join(mapped)
    if new == name:
        return name, None
    learnt = f"{_inverse_label(covered[-1])}-{_inverse_label(covered[0])}"
    return new, (f"humanSLProfile {name}: this agent learnt from games of {learnt} players only; playing as {new}, "
                 "the nearest profile it learnt")


# --- counterfactual ranks -------------------------------------------------------------------------

def rank_label_inverse(label: str) -> int:
    """KataGo's inverse rank of a rank as written (``9d``, ``3k``, ``2p``: any rank :func:`gotk.sgf.metadata.parse_rank`
    reads); a one-line :class:`GotkError` for anything else."""
    value, _ = parse_rank(label)
    if value is None:
        raise GotkError("bad_rank", f"{label!r} is not a rank (such as 30k, 1k, 1d, 9d, 1p)")
    return inverse_rank(value)


def with_mover_rank(rows: np.ndarray, inverse: int) -> np.ndarray:
    """A copy of ``rows`` (``(N, 192)`` or ``(192,)``, from the player to move's view) where the player to move is a
    human ranked player of KataGo inverse rank ``inverse`` (:func:`rank_label_inverse`); the opponent and the rest
    of the game stay as they were."""
    out = np.array(rows, dtype=np.float32, copy=True)
    view = out.reshape(-1, NUM_CHANNELS)
    view[:, 0] = 1.0  # human
    view[:, 2] = 0.0  # ranked
    view[:, 4] = 0.0  # rank known
    view[:, 6:6 + _RANK_LEN] = 0.0
    view[:, 6:6 + max(0, min(int(inverse), _RANK_LEN))] = 1.0
    return out
