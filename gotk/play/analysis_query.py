"""The queries of KataGo's JSON analysis protocol (KataGo's docs/Analysis_Engine.md), read and checked: one JSON
object a line, turned into a :class:`Query` whose positions :mod:`gotk.play.analysis_engine` searches, or into an
action (``query_version``, ``clear_cache``, ``terminate``, ``terminate_all``). Everything wrong with a query is a
:class:`QueryError` naming the field, answered as KataGo answers it (``{"error", "field", "id"}``); what gotk reads
differently from KataGo is a :class:`Query` warning (``{"warning", "field", "id"}``), and the query still runs.

Fields read (KataGo's names): ``id``, ``moves``, ``initialStones``, ``initialPlayer``, ``rules``, ``komi``,
``boardXSize``, ``boardYSize``, ``analyzeTurns``, ``maxVisits``, ``rootPolicyTemperature``, ``includeOwnership``,
``includeMovesOwnership``, ``includePolicy``, ``includePVVisits``, ``avoidMoves``, ``allowMoves``,
``overrideSettings``, ``reportDuringSearchEvery``, ``priority``, ``priorities``. Other top-level fields are
answered with a warning. ``overrideSettings`` keys read: ``reportAnalysisWinratesAs`` (``BLACK``, ``WHITE``,
``SIDETOMOVE``), ``maxVisits``, ``maxTime`` (seconds), ``humanSLProfile`` (``rank_3d`` ... for ``humanPolicy``),
``wideRootNoise`` (the root's priors flattened to ``p^(1/(1 + 4w))``, KataGo's form), ``rootPolicyTemperature``,
``cpuctExploration`` (the search's ``c_puct``); any other key is answered with a warning, never an error.

Rules: gotk plays one rule set, area scoring (stones and the empty points one colour surrounds, komi included) with
the simple ko rule in its search; suicide is legal under Tromp-Taylor and New Zealand rules. KataGo's rule names
and rule objects are mapped to that, with a warning where they ask for something else (territory scoring: Japanese
and Korean rules; a button, a tax on territory, a handicap bonus).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from gotk import coords
from gotk.encoders import metadata_inputs as MI
from gotk.errors import GotkError, IllegalMoveError
from gotk.game.state import BLACK, WHITE, GameState, Rules
from gotk.search.config import MAX_VISITS

#: the most root visits one position may ask for (``maxVisits``; the search's own limit, which is also what KaTrain
#: asks for when it ponders: such a search runs until it is terminated, its tree held within its node budget); a
#: larger number is an error
MAX_QUERY_VISITS = MAX_VISITS
#: the most seconds one position may ask for (``maxTime``)
MAX_QUERY_SECONDS = 3600.0
#: the longest game a query may hold (moves plus initial stones)
MAX_QUERY_MOVES = 2000
#: the most distinct ``avoidMoves`` / ``allowMoves`` entries
MAX_AVOID = 1000

_COLORS = {"B": BLACK, "W": WHITE, "BLACK": BLACK, "WHITE": WHITE}
_XY = re.compile(r"^\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_PERSPECTIVES = ("BLACK", "WHITE", "SIDETOMOVE")
#: KataGo's rule names → (suicide legal, what gotk does differently, or None)
_TERRITORY = "territory scoring: gotk counts by area (stones plus surrounded points), so its win rates and scores " \
             "are area-scored"
RULE_NAMES: dict[str, tuple[bool, str | None]] = {
    "tromp-taylor": (True, None), "chinese": (False, None), "chinese-ogs": (False, None),
    "chinese-kgs": (False, None), "aga": (False, None), "bga": (False, None), "new-zealand": (True, None),
    "nz": (True, None), "japanese": (False, _TERRITORY), "korean": (False, _TERRITORY),
    "stone-scoring": (False, "stone scoring (a tax on territory): gotk counts by area"),
    "aga-button": (False, "the button: gotk plays without it"),
}
#: overrideSettings keys gotk reads; every other key is answered with a warning
OVERRIDE_KEYS = ("reportAnalysisWinratesAs", "maxVisits", "maxTime", "humanSLProfile", "wideRootNoise",
                 "rootPolicyTemperature", "cpuctExploration")
#: top-level query fields gotk reads (others: a warning)
QUERY_FIELDS = frozenset({
    "id", "moves", "initialStones", "initialPlayer", "rules", "komi", "boardXSize", "boardYSize", "analyzeTurns",
    "maxVisits", "rootPolicyTemperature", "rootFpuReductionMax", "includeOwnership", "includeMovesOwnership",
    "includePolicy", "includePVVisits", "avoidMoves", "allowMoves", "overrideSettings", "reportDuringSearchEvery",
    "priority", "priorities", "whiteHandicapBonus", "action",
})


class QueryError(GotkError):
    """A query the engine cannot run: ``message`` and the query ``field`` at fault (KataGo's error line)."""

    def __init__(self, message: str, field_name: str | None = None) -> None:
        super().__init__("bad_query", message)
        self.message = message
        self.field = field_name


@dataclass
class Settings:
    """How a query's positions are searched and answered (the query's fields over the engine's defaults)."""

    visits: int
    seconds: float | None = None
    report_as: str = "BLACK"
    report_every: float | None = None
    ownership: bool = False
    moves_ownership: bool = False
    policy: bool = False
    pv_visits: bool = False
    human_profile: str | None = None
    root_temperature: float = 1.0
    c_puct: float | None = None
    # (colour, points, until depth, allow): KataGo's avoidMoves / allowMoves
    avoid: list[tuple[int, np.ndarray, int, bool]] = field(default_factory=list)


@dataclass
class Query:
    """One analysis query: its game (checked: every move legal), the turns to analyse with their priorities, the
    settings and the warnings to answer before its results."""

    id: str
    size: int
    komi: float
    rules: Rules
    initial_black: tuple[int, ...]
    initial_white: tuple[int, ...]
    initial_player: int | None
    moves: np.ndarray  # (n, 2) int16: colour, flat point (compact: a client may queue thousands of queries)
    turns: list[int]
    priorities: list[int]
    settings: Settings
    warnings: list[tuple[str, str]]  # (field, message)

    def state(self, turn: int) -> GameState:
        """The position before ``moves[turn]`` (turn 0: the initial stones, with ``initialPlayer`` to play)."""
        st = GameState(self.size, self.rules, self.komi)
        if self.initial_black or self.initial_white:
            st.setup(self.initial_black, self.initial_white)
        moves = self.moves.tolist()
        st.to_play = self.initial_player or (moves[0][0] if moves else BLACK)
        for color, point in moves[:turn]:
            st.play(point, color)
        if turn < len(moves):
            st.to_play = moves[turn][0]
        elif moves:
            st.to_play = 3 - moves[-1][0]
        return st


# --- small readers: each raises QueryError naming its field ---------------------------------------------------

def _message(e: GotkError) -> str:
    """A gotk error's message without its reason code."""
    text = str(e)
    return text.split(": ", 1)[1] if text.startswith(f"{e.reason}: ") else text


def _bool(obj: dict, key: str) -> bool:
    v = obj.get(key, False)
    if not isinstance(v, bool):
        raise QueryError(f"{key} must be true or false", key)
    return v


def _int(v, key: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not v.is_integer()):
        raise QueryError(f"{key} must be an integer", key)
    n = int(v)
    if not lo <= n <= hi:
        raise QueryError(f"{key} must be from {lo} to {hi}, not {n}", key)
    return n


def _float(v, key: str, lo: float, hi: float) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise QueryError(f"{key} must be a finite number", key)
    if not lo <= v <= hi:
        raise QueryError(f"{key} must be from {lo:g} to {hi:g}, not {v:g}", key)
    return float(v)


def _color(v, key: str) -> int:
    c = _COLORS.get(v.upper()) if isinstance(v, str) else None
    if c is None:
        raise QueryError(f"player must be \"B\" or \"W\", not {v!r}", key)
    return c


def parse_location(text, size: int, key: str) -> int:
    """A location as KataGo reads it: a GTP vertex (``"D4"``, ``"pass"``) or ``"(x,y)"`` (x from the left, y from
    the top) → flat index."""
    if not isinstance(text, str):
        raise QueryError(f"a location must be a string such as \"D4\", not {text!r}", key)
    m = _XY.match(text.strip())
    if m:
        x, y = int(m.group(1)), int(m.group(2))
        if x >= size or y >= size:
            raise QueryError(f"location {text!r} is off the {size}x{size} board", key)
        return coords.from_rc(y, x, size)
    try:
        return coords.from_gtp(text, size)
    except ValueError:
        raise QueryError(f"could not read location {text!r} on a {size}x{size} board", key) from None


def _pairs(obj: dict, key: str, size: int, required: bool) -> list[tuple[int, int]]:
    v = obj.get(key)
    if v is None:
        if required:
            raise QueryError(f"{key} is required (a list of [player, location] pairs; [] for none)", key)
        return []
    if not isinstance(v, list):
        raise QueryError(f"{key} must be a list of [player, location] pairs", key)
    if len(v) > MAX_QUERY_MOVES:
        raise QueryError(f"{key}: more than {MAX_QUERY_MOVES} entries", key)
    out = []
    for item in v:
        if not isinstance(item, list) or len(item) != 2:
            raise QueryError(f"{key}: each entry must be [player, location], not {item!r}", key)
        out.append((_color(item[0], key), parse_location(item[1], size, key)))
    return out


def _rules(obj: dict) -> tuple[Rules, list[tuple[str, str]]]:
    v = obj.get("rules")
    if v is None:
        raise QueryError("rules is required (a name such as \"chinese\" or \"tromp-taylor\", or a rules object)",
                         "rules")
    warnings = []
    if isinstance(v, str):
        name = v.strip().lower().replace("_", "-").replace(" ", "-")
        if name not in RULE_NAMES:
            raise QueryError(f"unknown rules {v!r} (known: {', '.join(RULE_NAMES)})", "rules")
        suicide, differs = RULE_NAMES[name]
        if differs:
            warnings.append(("rules", f"rules {v}: {differs}"))
        return Rules(suicide=suicide), warnings
    if not isinstance(v, dict):
        raise QueryError("rules must be a name or a JSON object", "rules")
    suicide = v.get("suicide", v.get("multiStoneSuicideLegal", False))
    if not isinstance(suicide, bool):
        raise QueryError("rules.suicide must be true or false", "rules")
    scoring = str(v.get("scoring", v.get("scoringRule", "AREA"))).upper()
    if scoring not in ("AREA", "TERRITORY"):
        raise QueryError(f"rules.scoring must be AREA or TERRITORY, not {scoring!r}", "rules")
    if scoring == "TERRITORY":
        warnings.append(("rules", f"rules: {_TERRITORY}"))
    if str(v.get("tax", v.get("taxRule", "NONE"))).upper() not in ("NONE",):
        warnings.append(("rules", "rules: a tax on territory: gotk counts by area without one"))
    if v.get("hasButton") is True:
        warnings.append(("rules", "rules: the button: gotk plays without it"))
    if str(v.get("ko", v.get("koRule", "SIMPLE"))).upper() not in ("SIMPLE", "POSITIONAL", "SITUATIONAL"):
        raise QueryError("rules.ko must be SIMPLE, POSITIONAL or SITUATIONAL", "rules")
    unknown = sorted(set(v) - {"ko", "koRule", "scoring", "scoringRule", "tax", "taxRule", "suicide",
                               "multiStoneSuicideLegal", "hasButton", "whiteHandicapBonus", "friendlyPassOk"})
    if unknown:
        warnings.append(("rules", f"rules: unknown keys ignored: {', '.join(unknown)}"))
    return Rules(suicide=suicide), warnings


def _avoid(obj: dict, key: str, size: int) -> list[tuple[int, np.ndarray, int, bool]]:
    v = obj.get(key)
    if v is None:
        return []
    if not isinstance(v, list) or not all(isinstance(d, dict) for d in v):
        raise QueryError(f"{key} must be a list of objects with player, moves and untilDepth", key)
    if key == "allowMoves" and len(v) > 1:
        raise QueryError("allowMoves takes one object", key)
    out = []
    for d in v:
        color = _color(d.get("player"), key)
        moves = d.get("moves")
        if not isinstance(moves, list) or len(moves) > MAX_AVOID:
            raise QueryError(f"{key}.moves must be a list of locations (at most {MAX_AVOID})", key)
        points = np.array(sorted({parse_location(m, size, key) for m in moves}), dtype=np.int64)
        until = _int(d.get("untilDepth"), f"{key}.untilDepth", 1, 1_000_000)
        out.append((color, points, until, key == "allowMoves"))
    return out


def parse_query(obj: dict, board_size: int, default_visits: int, default_report_as: str = "BLACK",
                has_human: bool = False, trained_on: dict | None = None) -> Query:
    """Check an analysis query (a JSON object with ``id`` and no ``action``) for an engine whose network plays
    ``board_size`` → :class:`Query`, or raise :class:`QueryError`. The game is replayed here, so an illegal move is
    found before any search. ``has_human``: the engine has a human-SL agent for ``humanSLProfile``, which learnt
    from ``trained_on`` (agent.json ``trained_on``; a profile it never saw is replaced by the nearest one, with a
    warning)."""
    qid = obj.get("id")
    warnings: list[tuple[str, str]] = []
    for key in ("boardXSize", "boardYSize"):
        if key not in obj:
            raise QueryError(f"{key} is required", key)
        n = _int(obj[key], key, 2, 25)
        if n != board_size:
            raise QueryError(f"{key} is {n}: this engine plays {board_size}x{board_size} only", key)
    size = board_size
    rules, rule_warnings = _rules(obj)
    warnings += rule_warnings
    if obj.get("whiteHandicapBonus", "0") not in ("0", 0):
        warnings.append(("whiteHandicapBonus", "whiteHandicapBonus: gotk adds nothing for handicap stones; give the "
                         "compensation in komi"))
    komi = 7.5
    if "komi" in obj:
        komi = _float(obj["komi"], "komi", -150, 150)
        if not (2 * komi).is_integer():
            raise QueryError(f"komi must be an integer or half-integer, not {komi:g}", "komi")
    stones = _pairs(obj, "initialStones", size, required=False)
    moves = _pairs(obj, "moves", size, required=True)
    if len(stones) + len(moves) > MAX_QUERY_MOVES:
        raise QueryError(f"more than {MAX_QUERY_MOVES} initial stones and moves", "moves")
    black = tuple(sorted({p for c, p in stones if c == BLACK and p != size * size}))
    white = tuple(sorted({p for c, p in stones if c == WHITE and p != size * size}))
    if set(black) & set(white):
        raise QueryError("initialStones puts both colours on one point", "initialStones")
    initial_player = _color(obj["initialPlayer"], "initialPlayer") if "initialPlayer" in obj else None
    # the whole game, once: every move legal
    st = GameState(size, rules, komi)
    try:
        if black or white:
            st.setup(black, white)
    except IllegalMoveError as e:
        raise QueryError(f"initialStones: {_message(e)}", "initialStones") from None
    for i, (color, point) in enumerate(moves):
        try:
            st.play(point, color)
        except IllegalMoveError as e:
            where = coords.to_gtp(point, size)
            raise QueryError(f"illegal move {i + 1}: {'BW'[color - 1]} {where} ({e.reason})", "moves") from None
    turns = [len(moves)]
    if "analyzeTurns" in obj:
        v = obj["analyzeTurns"]
        if not isinstance(v, list) or not v:
            raise QueryError("analyzeTurns must be a list of one or more turn numbers", "analyzeTurns")
        turns = [_int(t, "analyzeTurns", 0, len(moves)) for t in v]
        if len(set(turns)) != len(turns):
            raise QueryError("analyzeTurns lists a turn twice", "analyzeTurns")
    priority = _int(obj.get("priority", 0), "priority", -(2**31), 2**31 - 1)
    priorities = [priority] * len(turns)
    if "priorities" in obj:
        v = obj["priorities"]
        if not isinstance(v, list) or len(v) != len(turns):
            raise QueryError("priorities must be a list as long as analyzeTurns", "priorities")
        priorities = [_int(p, "priorities", -(2**31), 2**31 - 1) for p in v]
    settings = Settings(visits=default_visits, report_as=default_report_as)
    if "maxVisits" in obj:
        settings.visits = _int(obj["maxVisits"], "maxVisits", 1, MAX_QUERY_VISITS)
    settings.ownership = _bool(obj, "includeOwnership")
    settings.moves_ownership = _bool(obj, "includeMovesOwnership")
    settings.policy = _bool(obj, "includePolicy")
    settings.pv_visits = _bool(obj, "includePVVisits")
    if "reportDuringSearchEvery" in obj:
        settings.report_every = _float(obj["reportDuringSearchEvery"], "reportDuringSearchEvery", 0.001, 3600)
    if "rootPolicyTemperature" in obj:
        settings.root_temperature = _float(obj["rootPolicyTemperature"], "rootPolicyTemperature", 0.01, 100)
    if "rootFpuReductionMax" in obj:
        warnings.append(("rootFpuReductionMax", "rootFpuReductionMax: gotk's search keeps its own fpu"))
    settings.avoid = _avoid(obj, "avoidMoves", size) + _avoid(obj, "allowMoves", size)
    _overrides(obj, settings, warnings, has_human, trained_on)
    for key in sorted(set(obj) - QUERY_FIELDS):
        warnings.append((key, f"unknown field {key!r} ignored"))
    return Query(id=qid, size=size, komi=komi, rules=rules, initial_black=black, initial_white=white,
                 initial_player=initial_player, moves=np.array(moves, dtype=np.int16).reshape(-1, 2), turns=turns,
                 priorities=priorities, settings=settings, warnings=warnings)


def _overrides(obj: dict, settings: Settings, warnings: list[tuple[str, str]], has_human: bool,
               trained_on: dict | None) -> None:
    v = obj.get("overrideSettings")
    if v is None:
        return
    key = "overrideSettings"
    if not isinstance(v, dict):
        raise QueryError("overrideSettings must be a JSON object", key)
    for name, value in v.items():
        if name == "reportAnalysisWinratesAs":
            if not isinstance(value, str) or value.upper() not in _PERSPECTIVES:
                raise QueryError("reportAnalysisWinratesAs must be BLACK, WHITE or SIDETOMOVE", key)
            settings.report_as = value.upper()
        elif name == "maxVisits":
            settings.visits = _int(value, key, 1, MAX_QUERY_VISITS)
        elif name == "maxTime":
            settings.seconds = _float(value, key, 0.001, MAX_QUERY_SECONDS)
        elif name == "wideRootNoise":
            w = _float(value, key, 0.0, 100.0)
            settings.root_temperature *= 1.0 + 4.0 * w
        elif name == "rootPolicyTemperature":
            settings.root_temperature *= _float(value, key, 0.01, 100)
        elif name == "cpuctExploration":
            settings.c_puct = _float(value, key, 0.0, 100.0)
        elif name == "ignorePreRootHistory":
            if value is not False:
                warnings.append((key, "ignorePreRootHistory: gotk's networks always see the moves before the root"))
        elif name == "humanSLProfile":
            if value in (None, ""):
                continue
            if not isinstance(value, str):
                raise QueryError("humanSLProfile must be a profile name such as rank_3d", key)
            if not has_human:
                # an error, not a warning: a client asking for a human policy must not take the answer for one
                raise QueryError("humanSLProfile: this engine has no human-SL agent (start it with --human-agent, "
                                 "such as kgs-human)", key)
            try:
                profile, why = MI.nearest_profile(value, trained_on)
            except GotkError as e:
                raise QueryError(f"humanSLProfile: {_message(e)}", key) from None
            if why:
                warnings.append((key, why))
            settings.human_profile = profile
        else:
            warnings.append((key, f"overrideSettings: {name!r} is not used by gotk (it reads "
                             f"{', '.join(OVERRIDE_KEYS)})"))


__all__ = ["MAX_QUERY_MOVES", "MAX_QUERY_SECONDS", "MAX_QUERY_VISITS", "OVERRIDE_KEYS", "Query", "QueryError",
           "Settings", "parse_location", "parse_query"]
