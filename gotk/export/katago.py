"""KataGo training rows from a human game: the ``.npz`` layout KataGo's trainer reads.

One row per recorded move (the position before it, the player to move = the colour of that move), in
the layout of ``cpp/dataio/trainingwrite.cpp`` (global-target version 2.0) with input features of
version 7 (``NNInputs::fillRowV7``) on a 19x19 data grid (``pos_len`` 19; smaller boards sit in the
top-left corner with feature 0, "on board", marking them). docs/katago-export.md lists every field,
what is filled and what is weighted off, and the KataGo commit it follows.

:func:`katago_game_rows` raises a :class:`gotk.errors.GotkError` (``reason`` set) for a game to skip;
:func:`write_katago_npz` writes rows atomically with ``np.savez_compressed``.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from gotk import coords
from gotk.atomic import atomic_path
from gotk.errors import GotkError, SGFError
from gotk.export import katago_kernels as KK
from gotk.export import katago_ladders as KL
from gotk.game import kernels as K
from gotk.game.replay import first_to_play, initial_state, replay
from gotk.game.scoring import calculate_area
from gotk.game.state import Rules
from gotk.sgf.record import GameRecord

POS_LEN = 19  # KataGo's data grid (nnXLen = nnYLen)
AREA = POS_LEN * POS_LEN
POLICY_SIZE = AREA + 1
NUM_SPATIAL = 22
NUM_GLOBAL = 19
NUM_GLOBAL_TARGETS = 64
EXTRA_SCORE_DISTR_RADIUS = 60
SCORE_DISTR_LEN = AREA * 2 + EXTRA_SCORE_DISTR_RADIUS * 2  # 842
PACKED_LEN = (AREA + 7) // 8  # 46
NUM_VALUE_SPATIAL = 5

NPZ_LAYOUT = {  # key -> (dtype, shape after the row axis)
    "binaryInputNCHWPacked": (np.uint8, (NUM_SPATIAL, PACKED_LEN)),
    "globalInputNC": (np.float32, (NUM_GLOBAL,)),
    "policyTargetsNCMove": (np.int16, (2, POLICY_SIZE)),
    "globalTargetsNC": (np.float32, (NUM_GLOBAL_TARGETS,)),
    "scoreDistrN": (np.int8, (SCORE_DISTR_LEN,)),
    "valueTargetsNCHW": (np.int8, (NUM_VALUE_SPATIAL, POS_LEN, POS_LEN)),
}
#: Keys written when the rows have them: ``metadataInputNC``, the human-SL metadata inputs of each row's game from
#: the player to move's view (``gotk export --metadata``; :mod:`gotk.encoders.metadata_inputs`), which KataGo's
#: trainer reads with ``include_meta``.
OPTIONAL_LAYOUT = {"metadataInputNC": (np.float32, (192,))}


@dataclass(frozen=True)
class KataGoRules:
    """A KataGo ruleset (``cpp/game/rules.cpp``): ko rule, scoring, tax, multi-stone suicide and the
    white handicap bonus (``0``, ``N`` or ``N-1`` points for ``N`` handicap stones)."""

    name: str
    ko: str  # simple | positional | situational
    scoring: str  # area | territory
    tax: str  # none | seki | all
    suicide: bool
    handicap_bonus: str  # 0 | N | N-1


_JAPANESE = KataGoRules("japanese", "simple", "territory", "seki", False, "0")
_CHINESE = KataGoRules("chinese", "simple", "area", "none", False, "N")
_CHINESE_SUPERKO = KataGoRules("chinese-kgs", "positional", "area", "none", False, "N")
_AGA = KataGoRules("aga", "situational", "area", "none", False, "N-1")
_NZ = KataGoRules("new-zealand", "situational", "area", "none", True, "0")
_TROMP_TAYLOR = KataGoRules("tromp-taylor", "positional", "area", "none", True, "0")
_ING = KataGoRules("ing", "positional", "area", "none", True, "0")

#: SGF ``RU`` values (lower case, spaces / ``-`` / ``_`` removed) -> KataGo's named rulesets, as
#: KataGo's ``Rules::parseRules`` defines them. Rulesets with a group tax under area scoring
#: ("stone scoring") are not mapped: their area feature needs KataGo's independent-life area.
RULESETS = {
    "japanese": _JAPANESE, "korean": _JAPANESE, "jp": _JAPANESE,
    "chinese": _CHINESE, "cn": _CHINESE,
    "chineseogs": _CHINESE_SUPERKO, "chinesekgs": _CHINESE_SUPERKO,
    "aga": _AGA, "bga": _AGA, "french": _AGA,
    "nz": _NZ, "newzealand": _NZ,
    "tromptaylor": _TROMP_TAYLOR, "tt": _TROMP_TAYLOR,
    "goe": _ING, "ing": _ING,
}


def katago_rules(ru: str | None, default: str = "japanese") -> KataGoRules:
    """The KataGo ruleset for an SGF ``RU`` value; unknown or missing values give ``default``."""
    key = (ru or "").strip().lower().replace(" ", "").replace("-", "").replace("_", "")
    return RULESETS.get(key) or RULESETS[default]


# --- small helpers ------------------------------------------------------------------------------

_PLAYER_KEY = np.array([0, 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F], dtype=np.uint64)  # situational ko hash


def _game_hash(game_id: str) -> tuple[int, int]:
    d = hashlib.blake2b(game_id.encode("utf-8"), digest_size=16).digest()
    return int.from_bytes(d[:8], "little"), int.from_bytes(d[8:], "little")


def _komi_wave(self_komi: float, board_area: int) -> float:
    """fillRowV7's triangle wave of the komi's parity (global input 18), for area scoring."""
    if board_area % 2 == 0:
        floor = np.floor(self_komi / 2.0) * 2.0
    else:
        floor = np.floor((self_komi - 1.0) / 2.0) * 2.0 + 1.0
    delta = min(max(self_komi - floor, 0.0), 2.0)
    if delta < 0.5:
        return delta
    if delta < 1.5:
        return 1.0 - delta
    return delta - 2.0


def _value_target(record: GameRecord, pla: int) -> tuple[np.ndarray, bool]:
    """(win, loss, noresult) from ``pla``'s view, and whether the result is known (value weight on)."""
    res = record.result
    if res.winner in ("b", "w"):
        won = (res.winner == "b") == (pla == 1)
        return np.array([1.0, 0.0, 0.0] if won else [0.0, 1.0, 0.0], dtype=np.float32), True
    if res.reason == "draw":  # drawEquivalentWinsForWhite = 0.5
        return np.array([0.5, 0.5, 0.0], dtype=np.float32), True
    return np.array([0.0, 0.0, 1.0], dtype=np.float32), False


def _check(record: GameRecord, rules: Rules) -> None:
    """Raise the skip error for a game the export cannot use."""
    if not 2 <= record.size <= POS_LEN:
        raise SGFError("bad_size", f"{record.size}x{record.size} does not fit KataGo's {POS_LEN}x{POS_LEN} grid")
    if record.num_moves == 0:
        raise SGFError("too_short", "no moves")
    outcome = replay(record, rules, keep_history=False)  # raises bad_setup; reports defects and illegal moves
    if outcome.error is not None:
        raise outcome.error


# --- the rows ------------------------------------------------------------------------------------

def katago_game_rows(record: GameRecord, *, game_id: str, seed: int = 0, default_rules: str = "japanese",
                     future_board: bool = True) -> dict[str, np.ndarray]:
    """KataGo training rows for every recorded move of ``record`` (see docs/katago-export.md).

    Rows stop after the move that ends KataGo's main phase (two consecutive passes, or a repeated
    position ending it under KataGo's rules); moves after it belong to KataGo's encore, which human
    records do not play out. ``seed`` and ``game_id`` fix the history-dropout mask (targets 36-40)
    and the game hash (41-46), so rows are deterministic. ``future_board=False`` weights off the
    future-position targets (``valueTargetsNCHW`` channels 2-3).
    """
    kr = katago_rules(record.rules, default_rules)
    engine_rules = Rules(suicide=kr.suicide, superko=False)
    _check(record, engine_rules)

    size = record.size
    n = size * size
    state = initial_state(record, engine_rules)
    nbr = state.nbr
    colors = record.colors.astype(np.int64)
    points = record.points.astype(np.int64)
    m = len(points)
    grid_index = coords.to_grid(size, POS_LEN)  # KataGo's pos (y * 19 + x), pass 361
    pos19 = grid_index[:n]

    scr = KL.make_scratch(n)
    laddered = np.zeros(n, dtype=np.uint8)
    working = np.zeros((3, n), dtype=np.uint8)
    area = np.zeros(n, dtype=np.int8)
    banned = np.zeros(n, dtype=np.uint8)
    territory = kr.scoring == "territory"

    # game-level quantities
    setup_white = len(record.setup_white) > 0
    setup_black = len(record.setup_black)
    first = first_to_play(record)
    hash0, hash1 = _game_hash(game_id)
    rng = np.random.default_rng([seed, hash0, hash1])

    rows = _GameRows([], [], [state.board.copy()], [], [])
    rows_bin, rows_global, boards, next_moves, turn_colors = rows
    ladder_hist: list[np.ndarray] = []  # laddered stones at each position (features 14-16)
    white_bonus = 0.0
    hcap_bonus = 0
    white_moved = False
    black_leading = 0
    trailing_passes = 0
    pass_hashes = {1: set(), 2: set()}  # position hashes before each player's passes (spight-like ending)
    cycle_counts: dict[int, int] = {}  # simple ko: situation hashes since the last pass (no-result cycles)
    sit0 = int(state.hashv[0] ^ _PLAYER_KEY[first])
    cycle_counts[sit0] = 1
    if kr.ko == "situational":
        ko_history = [int(state.hashv[0] ^ _PLAYER_KEY[first])]
    else:
        ko_history = [int(state.hashv[0])]

    for t in range(m):
        pla = int(colors[t])
        opp = 3 - pla
        point = int(points[t])
        board, head, libs = state.board, state.head, state.libs

        KL.load(scr, state.engine_arrays)
        KL.iter_ladders(scr, nbr, laddered, working)
        ladder_hist.append(laddered.copy())

        b = np.empty((NUM_SPATIAL, AREA), dtype=np.uint8)
        g = np.zeros(NUM_GLOBAL, dtype=np.float32)
        # features 9-13 and globals 0-4: the last five moves, while colours alternate back from pla
        included = 0
        for k in range(5):
            j = t - 1 - k
            if j < 0 or colors[j] != (opp if k % 2 == 0 else pla):
                break
            included = k + 1
        prev = ladder_hist[t - 1] if included >= 1 else laddered
        prevprev = ladder_hist[t - 2] if included >= 2 else prev
        use_area = kr.scoring == "area" and kr.tax == "none"
        if use_area:
            calculate_area(board, head, state.nxt, nbr, kr.suicide, True, True, True, area)
        KK.fill_board_planes(board, head, libs, state.meta, pla, pos19, laddered, prev, prevprev, working[opp], area,
                             use_area, b)
        for k in range(included):
            j = t - 1 - k
            if points[j] == n:
                g[k] = 1.0
            else:
                b[9 + k, pos19[points[j]]] = 1
        if kr.ko != "simple":
            KK.superko_banned(state.engine_arrays, pla, kr.suicide, kr.ko == "situational", _PLAYER_KEY,
                              np.sort(np.array(ko_history, dtype=np.uint64)), banned)
            b[6, pos19[banned == 1]] = 1

        # globals: komi from pla's view (with territory scoring's one point per stone played, and the
        # handicap bonus of area rulesets), rules, pass-ends-phase, komi parity
        if not white_moved:
            bonus_n = 0 if setup_white else setup_black + black_leading
            bonus_n = bonus_n if bonus_n > 1 else 0
            hcap_bonus = {"0": 0, "N": bonus_n, "N-1": max(bonus_n - 1, 0)}[kr.handicap_bonus]
        white_komi = record.komi + white_bonus + hcap_bonus
        self_komi = white_komi if pla == 2 else -white_komi
        limit = n + 20.0
        g[5] = min(max(self_komi, -limit), limit) / 20.0
        if kr.ko in ("positional", "situational"):
            g[6] = 1.0
            g[7] = 0.5 if kr.ko == "positional" else -0.5
        g[8] = 1.0 if kr.suicide else 0.0
        g[9] = 1.0 if territory else 0.0
        g[10] = 1.0 if kr.tax in ("seki", "all") else 0.0
        g[11] = 1.0 if kr.tax == "all" else 0.0
        spight = kr.ko == "simple" and int(state.hashv[0]) in pass_hashes[pla]
        g[14] = 1.0 if (trailing_passes >= 1 or spight) else 0.0
        if kr.scoring == "area":
            g[18] = _komi_wave(min(max(self_komi, -limit), limit), n)
        rows_bin.append(b)
        rows_global.append(np.concatenate([g, [self_komi, white_bonus]]).astype(np.float32))
        next_moves.append(point)
        turn_colors.append(pla)

        # play the move and follow KataGo's phase bookkeeping
        before = int(state.hashv[0])
        st = state.play_status(point, pla, kr.suicide)
        if st != K.OK:  # cannot happen after _check; kept so a disagreement never writes bad rows
            raise SGFError("illegal_move", f"move {t + 1} refused by the engine")
        boards.append(state.board.copy())
        if pla == 2:
            white_moved = True
        elif point != n and not white_moved:
            black_leading += 1
        if territory and point != n:
            white_bonus += 1.0 if pla == 1 else -1.0
        after_key = int(state.hashv[0] ^ _PLAYER_KEY[opp]) if kr.ko == "situational" else int(state.hashv[0])
        ko_history.append(after_key)
        ended = False
        if point == n:
            trailing_passes += 1
            ended = trailing_passes >= 2 or (kr.ko == "simple" and before in pass_hashes[pla])
            pass_hashes[pla].add(before)
            cycle_counts = {}
            cycle_counts[int(state.hashv[0] ^ _PLAYER_KEY[opp])] = 1
        else:
            trailing_passes = 0
            if kr.ko == "simple":
                key = int(state.hashv[0] ^ _PLAYER_KEY[opp])
                cycle_counts[key] = cycle_counts.get(key, 0) + 1
                ended = cycle_counts[key] >= 3  # KataGo ends long cycles as no result
        if ended:
            break

    return _assemble(record, rows, pos19, n, kr,
                     white_bonus, (hash0, hash1), rng, future_board, setup_black if not setup_white else 0)


class _GameRows(NamedTuple):
    """A game's rows as they are made, one entry per row (``boards``: the position before each move, then the
    end)."""

    rows_bin: list[np.ndarray]
    rows_global: list[np.ndarray]
    boards: list[np.ndarray]
    next_moves: list[int]
    turn_colors: list[int]


def _assemble(record, game_rows: _GameRows, pos19, n, kr, final_white_bonus, game_hash, rng, future_board,
              handicap_stones) -> dict[str, np.ndarray]:
    """Stack the rows and fill the targets."""
    rows_bin, rows_global, boards, next_moves, turn_colors = game_rows
    rows = len(rows_bin)
    binary = np.stack(rows_bin)  # [N, 22, 361] of 0/1
    packed = np.packbits(binary, axis=2)  # big-endian bits, each plane zero-padded to 46 bytes
    extra = np.stack(rows_global)
    global_in = extra[:, :NUM_GLOBAL].copy()

    policy = np.zeros((rows, 2, POLICY_SIZE), dtype=np.int16)
    targets = np.zeros((rows, NUM_GLOBAL_TARGETS), dtype=np.float32)
    value_spatial = np.zeros((rows, NUM_VALUE_SPATIAL, POS_LEN, POS_LEN), dtype=np.int8)
    score = np.zeros((rows, SCORE_DISTR_LEN), dtype=np.int8)
    mid = AREA + EXTRA_SCORE_DISTR_RADIUS
    score[:, mid - 1] = 50  # KataGo's dummy distribution when the score target is weighted off
    score[:, mid] = 50

    def pos(p: int) -> int:
        return AREA if p == n else int(pos19[p])  # the pass is 361 on KataGo's grid

    history_mask = np.cumprod(rng.random((rows, 5)) < 0.98, axis=1).astype(np.float32)
    h0, h1 = game_hash
    hash_parts = [h0 & 0x3FFFFF, (h0 >> 22) & 0x3FFFFF, (h0 >> 44) & 0xFFFFF,
                  h1 & 0x3FFFFF, (h1 >> 22) & 0x3FFFFF, (h1 >> 44) & 0xFFFFF]
    finished = record.result.winner is not None or record.result.reason == "draw"
    end = len(boards) - 1
    for t in range(rows):
        pla = turn_colors[t]
        policy[t, 0, pos(next_moves[t])] = 1
        if t + 1 < rows:
            policy[t, 1, pos(next_moves[t + 1])] = 1
            targets[t, 28] = 1.0
        else:
            policy[t, 1, :] = 1  # KataGo's uniform dummy when there is no next move
        value, known = _value_target(record, pla)
        for base in (0, 4, 8, 12, 16):  # game outcome; the TD slots (4-19) are weighted off by target 24
            targets[t, base:base + 3] = value
        targets[t, 24] = 1.0  # 1 - tdValueTargetWeight: no search values in a human game
        targets[t, 25] = 1.0  # row weight
        targets[t, 26] = 1.0  # policy weight: the recorded move
        targets[t, 27] = 0.0  # ownership / score / score distribution: a human game gives no final ownership
        targets[t, 33] = 1.0 if future_board else 0.0
        targets[t, 34] = 0.0  # final scoring map
        targets[t, 35] = 0.0 if known else 1.0  # 1 - valueTargetWeight
        targets[t, 36:41] = history_mask[t]
        targets[t, 41:47] = hash_parts
        targets[t, 47] = extra[t, NUM_GLOBAL]  # self komi
        targets[t, 48] = 1.0 if kr.scoring == "area" else 0.0
        targets[t, 51] = t
        targets[t, 54] = handicap_stones if handicap_stones > 1 else 0
        white_bonus_now = extra[t, NUM_GLOBAL + 1]
        onward = final_white_bonus - white_bonus_now
        targets[t, 61] = (onward if pla == 2 else -onward) or 0.0
        targets[t, 62] = 1.0 if finished else 0.0
        targets[t, 63] = 2.0
        if future_board:
            for ch, ahead in ((2, 8), (3, 32)):
                fb = boards[min(t + ahead, end)]
                plane = np.zeros(AREA, dtype=np.int8)
                plane[pos19[fb == pla]] = 1
                plane[pos19[fb == 3 - pla]] = -1
                value_spatial[t, ch] = plane.reshape(POS_LEN, POS_LEN)
    return {
        "binaryInputNCHWPacked": packed,
        "globalInputNC": global_in,
        "policyTargetsNCMove": policy,
        "globalTargetsNC": targets,
        "scoreDistrN": score,
        "valueTargetsNCHW": value_spatial,
    }


def write_katago_npz(rows: dict[str, np.ndarray], path: str | os.PathLike) -> None:
    """Write ``rows`` (the six keys of :data:`NPZ_LAYOUT`, and those of :data:`OPTIONAL_LAYOUT` it has, same row
    count) to ``path`` with ``np.savez_compressed``, atomically: a temp file beside it, then ``os.replace``."""
    count = None
    layout = NPZ_LAYOUT | {k: v for k, v in OPTIONAL_LAYOUT.items() if k in rows}
    for key, (dtype, shape) in layout.items():
        a = rows[key]
        if a.dtype != dtype or a.shape[1:] != shape:
            raise GotkError("bad_rows", f"{key}: {a.dtype} {a.shape[1:]}, expected {np.dtype(dtype)} {shape}")
        if count is not None and a.shape[0] != count:
            raise GotkError("bad_rows", f"{key} has {a.shape[0]} rows, expected {count}")
        count = a.shape[0]
    with atomic_path(path) as tmp, open(tmp, "wb") as f:  # a file object: savez would append ".npz" to a name
        np.savez_compressed(f, **{k: rows[k] for k in layout})
        f.flush()
        os.fsync(f.fileno())
