"""Replay benchmark: how fast gotk turns KGS records into replayed games.

Measures, on one core, in one process:

(a) engine replay alone, moves/s: records already parsed into memory; only the replay is timed, both
    through the compiled kernel ``replay_moves`` (fresh arrays per game) and through the public
    ``gotk.game.replay.replay``. Numba compile / cache-load time is measured apart (warm-up).
(b) SGF bytes → replayed game, moves/s: archive members already in memory, through
    ``gotk.sgf.read_sgf`` + ``replay``; and SGF bytes → records alone, through the compiled
    reader (``gotk.sgf.fast``) and through the sgfmill path (``iter_sgf(fast=False)``).
(c) peers on a sample of the same games (``--peer-games``): sgfmill (``Sgf_game.from_bytes`` +
    ``boards.Board``), dlgo (``dlgo.goboard_fast.GameState``), and sgfmill's parse + ``get_move`` alone
    (nodes/s, the floor for any sgfmill-based reader); gotk on the same sample for a like-for-like rate.

(d) the target SGF bytes → replayed ≥ 8× sgfmill's parse floor, measured interleaved: ``--goal-rounds``
    rounds on the peer sample, each timing gotk's SGF → replayed and then sgfmill's floor back to back, so a
    host that changes speed during the run (a shared machine) slows both sides of a round alike. Reported:
    the median of the per-round ratios, and the best gotk time over the best floor time.

Correctness check: on the peer sample, gotk's final board must equal sgfmill's (and dlgo's) board
after the same number of moves; mismatches are counted and printed (expected: 0).

Default input: every archive in ``../shared/kgs`` (one format per archive: the 2017 months' ``.zip`` and
``.tar.bz2`` copies are skipped). Usage::

    python bench/replay.py [PATHS...] [--limit-games N] [--repeat R] [--peer-games K] [--goal-rounds G]
                           [--json-out FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one core: no thread pools behind our back

if __package__ in (None, ""):  # run as a script: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from bench._common import (  # noqa: E402
    Timer,
    best_of,
    format_table,
    import_dlgo,
    machine_info,
    pin_to_cpu,
    rate,
    require_kgs,
    write_json,
)

TARGET_ENGINE = 1_000_000  # moves/s, engine replay alone, one core
TARGET_SGF = 80_000  # moves/s, SGF bytes -> replayed game, one core
GOAL_FLOOR_RATIO = 8.0  # target: SGF bytes -> replayed >= 8x sgfmill's parse + get_move floor
SGFMILL_FLOOR_REF = 100_000  # nodes/s, the reference rate of sgfmill parse + get_move the targets were set against


# --- inputs -------------------------------------------------------------------------------------


def load_sources(paths, limit: int | None):
    """Read every SGF member into memory: ``(sources, skipped Counter, Timing)``."""
    from gotk.sources.archives import SgfSource, iter_sources

    sources: list[SgfSource] = []
    skipped: Counter = Counter()
    with Timer() as t:
        for item in iter_sources(paths):
            if isinstance(item, SgfSource):
                sources.append(item)
                if limit is not None and len(sources) >= limit:
                    break
            else:
                skipped[item.reason] += 1
    return sources, skipped, t.timing


# --- gotk ---------------------------------------------------------------------------------------


def gotk_sgf_to_replayed(sources):
    """(b): ``read_sgf`` + ``replay`` over byte strings. Returns ``(records, stats)``; the records are
    kept for (a)."""
    from gotk.errors import GotkError
    from gotk.game.replay import replay
    from gotk.sgf.reader import read_sgf

    records = []
    moves = games = partial = 0
    errors: Counter = Counter()
    for src in sources:
        try:
            recs = read_sgf(src.data, src.archive, src.member)
        except GotkError as e:
            errors[e.reason] += 1
            continue
        for rec in recs:
            try:
                out = replay(rec, keep_history=False)
            except GotkError as e:
                errors[e.reason] += 1
                continue
            games += 1
            moves += out.moves_played
            if out.error is not None:
                partial += 1
            records.append(rec)
    return records, {"games": games, "moves": moves, "partial": partial, "errors": dict(errors)}


def gotk_parse_only(sources, fast: bool):
    """SGF bytes -> records alone (``iter_sgf``), through the compiled reader (``fast``, with its
    sgfmill fallback) or through sgfmill only: ``(moves, reader path counts)``."""
    from gotk.errors import GotkError
    from gotk.sgf.reader import iter_sgf

    counts: Counter = Counter()
    moves = 0
    for src in sources:
        try:
            for rec in iter_sgf(src.data, src.archive, src.member, fast=fast, counts=counts):
                if not isinstance(rec, GotkError):
                    moves += rec.num_moves
        except GotkError:
            continue
    return moves, dict(counts)


def prepare_kernel_inputs(records):
    """Per game, what the kernel needs, converted once (outside the timing): ``(record, points int32,
    colors int64, suicide)``."""
    from gotk.game.state import Rules

    out = []
    for rec in records:
        rules = Rules.from_sgf(rec.rules)
        out.append((rec, np.ascontiguousarray(rec.points, dtype=np.int32),
                    np.ascontiguousarray(rec.colors, dtype=np.int64), bool(rules.suicide)))
    return out


def gotk_kernel_replay(prepared):
    """(a), kernel: ``replay_moves`` on a fresh engine per game (copied from an empty-board template; games with
    setup stones go through ``initial_state``). Returns total moves played."""
    from gotk.game.loops import replay_moves
    from gotk.game.replay import initial_state
    from gotk.game.state import new_engine

    total = 0
    for rec, points, colors, suicide in prepared:
        if rec.setup_black or rec.setup_white or rec.setup_empty:
            e = initial_state(rec).e
        else:
            e = new_engine(rec.size)
        hashes = np.empty(points.shape[0] + 1, dtype=np.uint64)
        played, _status = replay_moves(e, colors, points, suicide, hashes)
        total += played
    return total


def gotk_api_replay(records):
    """(a), public API: ``gotk.game.replay.replay(record, keep_history=False)``."""
    from gotk.game.replay import replay

    total = 0
    for rec in records:
        total += replay(rec, keep_history=False).moves_played
    return total


def warm_up(sources):
    """Import the engine and run the first replay (numba compile or on-disk cache load), timed."""
    info: dict = {}
    t0 = time.perf_counter()
    from gotk.game import loops as KL
    from gotk.game.replay import replay
    from gotk.sgf.reader import read_sgf

    info["import_s"] = time.perf_counter() - t0
    first = first_bytes = None
    for src in sources:
        try:
            recs = read_sgf(src.data)
        except Exception:  # noqa: BLE001 - any bad member: try the next one
            continue
        if recs and recs[0].num_moves:
            first, first_bytes = recs[0], src.data
            break
    if first is None:
        raise SystemExit("error: no readable game to warm up on")
    t1 = time.perf_counter()
    replay(first, keep_history=False)
    info["first_replay_s"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    replay(first, keep_history=False)
    info["second_replay_s"] = time.perf_counter() - t2
    stats = getattr(KL.replay_moves, "stats", None)
    if stats is not None:
        info["numba_cache_hits"] = sum(stats.cache_hits.values())
        info["numba_cache_misses"] = sum(stats.cache_misses.values())
    info["warmup_total_s"] = time.perf_counter() - t0
    info.update(cold_compile(first_bytes))
    return info


_COLD_SNIPPET = """
import json, sys, time
t0 = time.perf_counter()
from gotk.game.replay import replay
from gotk.sgf.reader import read_sgf
t1 = time.perf_counter()
rec = read_sgf(open(sys.argv[1], "rb").read())[0]
t2 = time.perf_counter()
replay(rec, keep_history=False)
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "first_replay_s": t3 - t2}))
"""


def cold_compile(data: bytes) -> dict:
    """Numba compile time with no on-disk cache: a fresh interpreter with an empty ``NUMBA_CACHE_DIR``
    imports the engine and replays one game. Returns ``cold_*`` entries (empty if it failed)."""
    import json
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="gotk-bench-numba-") as tmp:
        sgf_path = Path(tmp) / "game.sgf"
        sgf_path.write_bytes(data)
        env = {**os.environ, "NUMBA_CACHE_DIR": str(Path(tmp) / "cache")}
        try:
            proc = subprocess.run([sys.executable, "-c", _COLD_SNIPPET, str(sgf_path)], env=env,
                                  capture_output=True, text=True, timeout=600, check=True)
            out = json.loads(proc.stdout.strip().splitlines()[-1])
        except (subprocess.SubprocessError, ValueError, IndexError) as e:
            return {"cold_error": str(e)[:300]}
    return {"cold_import_s": out["import_s"], "cold_first_replay_s": out["first_replay_s"]}


# --- peers --------------------------------------------------------------------------------------


def peer_sample(sources, k: int):
    """``k`` sources evenly spread over all of them (every archive represented), in order."""
    n = len(sources)
    if k >= n:
        return list(sources)
    idx = sorted(set(np.linspace(0, n - 1, k).round().astype(int).tolist()))
    return [sources[i] for i in idx]


def sgfmill_floor(sample):
    """sgfmill parse + ``get_main_sequence`` + ``get_move`` on every node: ``(nodes, moves)``."""
    from sgfmill import sgf

    nodes = moves = 0
    for src in sample:
        try:
            game = sgf.Sgf_game.from_bytes(src.data)
            for node in game.get_main_sequence():
                nodes += 1
                colour, _ = node.get_move()
                if colour is not None:
                    moves += 1
        except ValueError:
            continue
    return nodes, moves


def sgfmill_extract(src):
    """Parse with sgfmill: ``(size, (black, white, empty) setup, [(colour, (row, col) | None)])``."""
    from sgfmill import sgf

    game = sgf.Sgf_game.from_bytes(src.data)
    root = game.get_root()
    setup = root.get_setup_stones()
    moves = []
    for node in game.get_main_sequence():
        colour, move = node.get_move()
        if colour is not None:
            moves.append((colour, move))
    return game.get_size(), setup, moves


def sgfmill_play(size, setup, moves, limit: int | None = None):
    """Replay on ``sgfmill.boards.Board``: ``(board, moves processed)``; stops at an occupied point."""
    from sgfmill import boards

    board = boards.Board(size)
    black, white, empty = setup
    if black or white or empty:
        board.apply_setup(black, white, empty)
    n = 0
    for colour, move in moves if limit is None else moves[:limit]:
        if move is not None:
            try:
                board.play(move[0], move[1], colour)
            except ValueError:
                break
        n += 1
    return board, n


def sgfmill_full(sample):
    """sgfmill end to end (bytes → parse → board): ``(moves, boards by index, errors)``."""
    total = 0
    finals: dict[int, tuple] = {}
    errors = 0
    for i, src in enumerate(sample):
        try:
            size, setup, moves = sgfmill_extract(src)
        except ValueError:
            errors += 1
            continue
        board, n = sgfmill_play(size, setup, moves)
        total += n
        finals[i] = (board, n)
    return total, finals, errors


def sgfmill_board_only(extracted):
    total = 0
    for _i, (size, setup, moves) in extracted:
        _, n = sgfmill_play(size, setup, moves)
        total += n
    return total


def dlgo_inputs(extracted, gotypes):
    """sgfmill's ``(row, col)`` (row 0 at the bottom) → dlgo ``Point(row, col)`` (1-based, row 1 at
    the bottom, as in the book): ``Point(row + 1, col + 1)``."""
    Player, Point = gotypes.Player, gotypes.Point
    colour_of = {"b": Player.black, "w": Player.white}
    out = []
    for i, (size, (black, white, empty), moves) in extracted:
        pts = [(colour_of[c], None if m is None else Point(m[0] + 1, m[1] + 1)) for c, m in moves]
        setup_b = [Point(r + 1, c + 1) for r, c in sorted(black)]
        setup_w = [Point(r + 1, c + 1) for r, c in sorted(white)]
        out.append((i, size, setup_b, setup_w, bool(empty), pts))
    return out


def dlgo_play(goboard, gotypes, size, setup_b, setup_w, moves, first_player):
    """Replay on ``dlgo.goboard_fast.GameState``: ``(state, moves processed)``. Setup stones are placed
    on the board object (``Board.place_stone``); passes are ``Move.pass_turn()``; a record where the same
    colour moves twice gets ``next_player`` set to the mover first."""
    Move = goboard.Move
    board = goboard.Board(size, size)
    for p in setup_b:
        board.place_stone(gotypes.Player.black, p)
    for p in setup_w:
        board.place_stone(gotypes.Player.white, p)
    state = goboard.GameState(board, first_player, None, None)
    n = 0
    for player, point in moves:
        if state.next_player != player:
            state.next_player = player
        if point is None:
            state = state.apply_move(Move.pass_turn())
        else:
            if state.board.get(point) is not None:
                break  # occupied: dlgo would assert
            state = state.apply_move(Move.play(point))
        n += 1
    return state, n


def dlgo_replay(dl_inputs, goboard, gotypes):
    total = 0
    finals = {}
    for i, size, setup_b, setup_w, _has_empty, moves in dl_inputs:
        first = moves[0][0] if moves else gotypes.Player.black
        state, n = dlgo_play(goboard, gotypes, size, setup_b, setup_w, moves, first)
        total += n
        finals[i] = (state.board, n)  # the board only: a GameState holds every earlier state of its game
    return total, finals


# --- correctness ----------------------------------------------------------------------------------


def sgfmill_board_flat(board, size):
    """sgfmill board → gotk flat array (1 black, 2 white); conversion via gotk.coords."""
    from gotk import coords

    flat = np.zeros(size * size, dtype=np.int8)
    for row in range(size):
        for col in range(size):
            v = board.board[row][col]
            if v is not None:
                flat[coords.from_sgfmill((row, col), size)] = 1 if v == "b" else 2
    return flat


def dlgo_board_flat(board, size, gotypes):
    from gotk import coords

    flat = np.zeros(size * size, dtype=np.int8)
    for p in range(size * size):
        r, c = coords.to_sgfmill(p, size)
        v = board.get(gotypes.Point(r + 1, c + 1))
        if v is not None:
            flat[p] = 1 if v == gotypes.Player.black else 2
    return flat


def check_boards(sample, extracted_by_index, sgf_finals, dl_finals, gotypes):
    """Compare gotk's final board with sgfmill's (and dlgo's) after the same number of moves."""
    from gotk import coords
    from gotk.errors import GotkError
    from gotk.game.replay import replay
    from gotk.sgf.reader import read_sgf

    result = {"games_compared": 0, "sgfmill_mismatches": 0, "dlgo_compared": 0, "dlgo_mismatches": 0,
              "not_compared": Counter(), "gotk_partial_in_sample": 0, "examples": []}
    for i, src in enumerate(sample):
        where = f"{src.archive}:{src.member}"
        try:
            recs = read_sgf(src.data, src.archive, src.member)
        except GotkError as e:
            result["not_compared"][f"gotk_{e.reason}"] += 1
            continue
        if len(recs) != 1:
            result["not_compared"]["not_one_game"] += 1
            continue
        if i not in extracted_by_index:
            result["not_compared"]["sgfmill_parse_error"] += 1
            continue
        try:
            out = replay(recs[0], keep_history=False)
        except GotkError as e:
            result["not_compared"][f"gotk_{e.reason}"] += 1
            continue
        size = recs[0].size
        played = out.moves_played
        if out.error is not None:
            result["gotk_partial_in_sample"] += 1
        mine = out.state.board
        # sgfmill after the same number of moves (its timed run played them all)
        board, n = sgf_finals[i]
        if n != played:
            s_size, setup, moves = extracted_by_index[i]
            board, n = sgfmill_play(s_size, setup, moves, limit=played)
        if n != played:
            result["not_compared"]["sgfmill_stopped_early"] += 1
            continue
        theirs = sgfmill_board_flat(board, size)
        result["games_compared"] += 1
        diff = np.flatnonzero(mine != theirs)
        if diff.size:
            result["sgfmill_mismatches"] += 1
            first = coords.to_gtp(int(diff[0]), size)
            result["examples"].append(f"sgfmill {where}: {diff.size} points differ after {played} moves "
                                      f"(first {first}: gotk {mine[diff[0]]}, sgfmill {theirs[diff[0]]})")
        if i in dl_finals:
            dl_board, dn = dl_finals[i]
            if dn == played:
                result["dlgo_compared"] += 1
                dl = dlgo_board_flat(dl_board, size, gotypes)
                ddiff = np.flatnonzero(mine != dl)
                if ddiff.size:
                    result["dlgo_mismatches"] += 1
                    result["examples"].append(f"dlgo {where}: {ddiff.size} points differ after {played} moves")
    result["not_compared"] = dict(result["not_compared"])
    return result


# --- driver -------------------------------------------------------------------------------------


def timed(fn, repeat: int, *args):
    """Run ``fn(*args)`` ``repeat`` times; ``(last result, best Timing, all wall seconds)``."""
    timings = []
    result = None
    for _ in range(repeat):
        with Timer() as t:
            result = fn(*args)
        timings.append(t.timing)
    return result, best_of(timings), [round(t.wall, 4) for t in timings]


def goal_rounds(sample, rounds: int) -> dict:
    """(d): ``rounds`` rounds of gotk SGF -> replayed, then sgfmill's floor, on ``sample``; per-round ratios
    of moves/s to nodes/s, their median, and best gotk over best floor."""
    import statistics

    per_round = []
    best_g = best_f = None
    for _ in range(rounds):
        with Timer() as tg:
            _, st = gotk_sgf_to_replayed(sample)
        with Timer() as tf:
            nodes, _ = sgfmill_floor(sample)
        g, f = rate(st["moves"], tg.timing.wall), rate(nodes, tf.timing.wall)
        per_round.append({"gotk_moves_s": round(g, 1), "floor_nodes_s": round(f, 1), "ratio": round(g / f, 2)})
        best_g = g if best_g is None else max(best_g, g)
        best_f = f if best_f is None else max(best_f, f)
    median = statistics.median(r["ratio"] for r in per_round)
    return {"rounds": per_round, "median_ratio": round(median, 2), "best_over_best": round(best_g / best_f, 2),
            "goal": GOAL_FLOOR_RATIO, "met": bool(median >= GOAL_FLOOR_RATIO)}


def row(name, scope, games, count, unit, timing, walls, target=None, note=""):
    r = {
        "benchmark": name,
        "scope": scope,
        "games": games,
        "count": count,
        "unit": unit,
        "seconds": round(timing.wall, 4),
        "cpu_seconds": round(timing.cpu, 4),
        "rate": round(rate(count, timing.wall), 1),
        "rate_cpu": round(rate(count, timing.cpu), 1),
        "target": target,
        "status": "" if target is None else ("PASS" if rate(count, timing.wall) >= target else "FAIL"),
        "status_cpu": "" if target is None else ("PASS" if rate(count, timing.cpu) >= target else "FAIL"),
        "all_wall_seconds": walls,
    }
    if note:
        r["note"] = note
    return r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", help="archives, folders or .sgf files (default: ../shared/kgs)")
    ap.add_argument("--limit-games", type=int, default=None, help="use only the first N SGF members")
    ap.add_argument("--repeat", type=int, default=1, help="time each measurement R times, report the best")
    ap.add_argument("--peer-games", type=int, default=300, help="games in the sgfmill / dlgo sample (0: none)")
    ap.add_argument("--goal-rounds", type=int, default=5,
                    help="interleaved rounds of gotk and sgfmill's floor for the 8x goal (0: none)")
    ap.add_argument("--json-out", default=None, help="also write the JSON report to FILE")
    ap.add_argument("--pin-cpu", type=int, default=None, help="restrict the process to this one CPU")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")

    if args.pin_cpu is not None:
        pin_to_cpu(args.pin_cpu)
    paths = require_kgs(args.paths)
    command = " ".join(["python bench/replay.py", *(argv if argv is not None else sys.argv[1:])])
    report: dict = {"benchmark": "replay", "command": command,
                    "machine": machine_info(), "inputs": {}, "warmup": {}, "results": [], "correctness": {}}

    def log(*a):
        print(*a, file=sys.stderr, flush=True)

    log(f"reading {len(paths)} input(s) into memory ...")
    sources, skipped, t_load = load_sources(paths, args.limit_games)
    nbytes = sum(len(s.data) for s in sources)
    report["inputs"] = {"paths": [str(p) for p in paths], "members": len(sources), "bytes": nbytes,
                        "skipped": dict(skipped), "read_seconds": round(t_load.wall, 3),
                        "limit_games": args.limit_games}
    if not sources:
        sys.exit("error: no SGF found in the inputs")

    log("warm-up (numba compile or cache load) ...")
    report["warmup"] = {k: round(v, 4) if isinstance(v, float) else v for k, v in warm_up(sources).items()}

    results = report["results"]
    log(f"(b) SGF bytes -> replayed game, {len(sources)} members ...")
    (records, bstats), tb, wb = timed(gotk_sgf_to_replayed, args.repeat, sources)
    report["inputs"]["gotk"] = bstats
    results.append(row("gotk SGF bytes -> replayed (read_sgf + replay)", "all", bstats["games"], bstats["moves"],
                       "moves/s", tb, wb, TARGET_SGF))

    (pm, pcounts), tpm, wpm = timed(gotk_parse_only, args.repeat, sources, True)
    report["inputs"]["gotk_sgf_reader"] = pcounts
    results.append(row("gotk SGF bytes -> records alone (compiled reader)", "all", pcounts.get("fast_games", 0)
                       + pcounts.get("fallback_games", 0), pm, "moves/s", tpm, wpm))
    (sm_, _), tsp, wsp = timed(gotk_parse_only, args.repeat, sources, False)
    results.append(row("gotk SGF bytes -> records alone (sgfmill path)", "all", pcounts.get("fast_games", 0)
                       + pcounts.get("fallback_games", 0), sm_, "moves/s", tsp, wsp))

    log("(a) engine replay alone ...")
    prepared = prepare_kernel_inputs(records)
    ka, ta, wa = timed(gotk_kernel_replay, args.repeat, prepared)
    results.append(row("gotk engine replay (kernel replay_moves, fresh arrays)", "all", len(records), ka,
                       "moves/s", ta, wa, TARGET_ENGINE))
    kp, tp, wp = timed(gotk_api_replay, args.repeat, records)
    results.append(row("gotk engine replay (gotk.game.replay.replay)", "all", len(records), kp,
                       "moves/s", tp, wp, TARGET_ENGINE))
    if not ka == kp == bstats["moves"]:
        log(f"WARNING: move counts differ: kernel {ka}, replay() {kp}, read+replay {bstats['moves']}")
        report["warnings"] = [f"move counts differ: kernel {ka}, replay() {kp}, read+replay {bstats['moves']}"]

    if args.peer_games > 0:
        sample = peer_sample(sources, args.peer_games)
        log(f"(c) peers on a sample of {len(sample)} games ...")
        sample_label = f"sample of {len(sample)}"
        (srecs, sstats), ts, ws = timed(gotk_sgf_to_replayed, args.repeat, sample)
        results.append(row("gotk SGF bytes -> replayed (read_sgf + replay)", sample_label, sstats["games"],
                           sstats["moves"], "moves/s", ts, ws))
        sk, tsk, wsk = timed(gotk_kernel_replay, args.repeat, prepare_kernel_inputs(srecs))
        results.append(row("gotk engine replay (kernel replay_moves, fresh arrays)", sample_label, len(srecs), sk,
                           "moves/s", tsk, wsk))

        (nodes, _fmoves), tf, wf = timed(sgfmill_floor, args.repeat, sample)
        results.append(row("sgfmill parse + get_move only (floor)", sample_label, len(sample), nodes, "nodes/s",
                           tf, wf, note=f"reference ~{SGFMILL_FLOOR_REF:,} nodes/s"))
        (sm_moves, sm_finals, sm_err), tsm, wsm = timed(sgfmill_full, args.repeat, sample)
        results.append(row("sgfmill SGF bytes -> replayed (Sgf_game + boards.Board)", sample_label,
                           len(sm_finals), sm_moves, "moves/s", tsm, wsm))

        extracted = []
        for i, src in enumerate(sample):
            try:
                extracted.append((i, sgfmill_extract(src)))
            except ValueError:
                continue
        smb, tsmb, wsmb = timed(sgfmill_board_only, args.repeat, extracted)
        results.append(row("sgfmill boards.Board replay alone", sample_label, len(extracted), smb, "moves/s",
                           tsmb, wsmb))

        dl_finals: dict = {}
        gotypes = None
        try:
            goboard, gotypes = import_dlgo()
        except ImportError as e:
            log(f"dlgo not importable ({e}); skipping it")
            report["warnings"] = [*report.get("warnings", []), f"dlgo not importable: {e}"]
        if gotypes is not None:
            dl_in = dlgo_inputs(extracted, gotypes)
            (dlm, dl_finals), tdl, wdl = timed(dlgo_replay, args.repeat, dl_in, goboard, gotypes)
            n_empty = sum(1 for x in dl_in if x[4])
            results.append(row("dlgo goboard_fast.GameState replay alone", sample_label, len(dl_in), dlm, "moves/s",
                               tdl, wdl, note=f"{n_empty} games with AE setup ignored" if n_empty else ""))

        if args.goal_rounds > 0:
            log(f"(d) goal: {args.goal_rounds} interleaved rounds of gotk and sgfmill's floor ...")
            report["goal_floor_ratio"] = goal_rounds(sample, args.goal_rounds)

        log("correctness check (gotk vs sgfmill / dlgo final boards) ...")
        report["correctness"] = check_boards(sample, dict(extracted), sm_finals, dl_finals, gotypes)

        by = {(r["benchmark"], r["scope"]): r for r in results}
        pairs = {
            "sgfmill_sgf_to_replayed": ("gotk SGF bytes -> replayed (read_sgf + replay)",
                                        "sgfmill SGF bytes -> replayed (Sgf_game + boards.Board)"),
            "sgfmill_board_replay": ("gotk engine replay (kernel replay_moves, fresh arrays)",
                                     "sgfmill boards.Board replay alone"),
            "dlgo_replay": ("gotk engine replay (kernel replay_moves, fresh arrays)",
                            "dlgo goboard_fast.GameState replay alone"),
            # the target: SGF bytes -> replayed game >= 8x sgfmill's parse + get_move floor
            "sgfmill_parse_floor": ("gotk SGF bytes -> replayed (read_sgf + replay)",
                                    "sgfmill parse + get_move only (floor)"),
        }
        speed = {}
        for name, (mine, theirs) in pairs.items():
            a, b = by.get((mine, sample_label)), by.get((theirs, sample_label))
            if a and b:
                speed[name] = {"wall": round(a["rate"] / b["rate"], 1), "cpu": round(a["rate_cpu"] / b["rate_cpu"], 1)}
        report["speedups_same_sample"] = speed

    report["machine"]["loadavg_at_end"] = os.getloadavg()
    print(write_json(report, args.json_out))
    print()
    print(render_text(report))
    c = report["correctness"]
    if c and (c["sgfmill_mismatches"] or c["dlgo_mismatches"]):
        return 1
    return 0


def render_text(report: dict) -> str:
    m = report["machine"]
    inp = report["inputs"]
    w = report["warmup"]
    lines = [
        f"machine: {m['cpu_model']}, nproc {m['nproc']}, Python {m['python']}, numba {m.get('numba', '?')}; "
        f"load average at start {tuple(round(x, 2) for x in m['loadavg_at_start'] or ())}, "
        f"at end {tuple(round(x, 2) for x in m['loadavg_at_end'])}",
        f"inputs: {len(inp['paths'])} archive(s), {inp['members']:,} SGF members, {inp['bytes']:,} bytes "
        f"(read + decompressed in {inp['read_seconds']:.2f} s, not counted below); SGF reader paths "
        f"{inp.get('gotk_sgf_reader', {})}",
        f"warm-up (excluded from every figure below): first replay in this process {w['first_replay_s']:.3f} s "
        f"(numba cache hits {w.get('numba_cache_hits', '?')}, misses {w.get('numba_cache_misses', '?')}), "
        f"second replay {w['second_replay_s'] * 1e3:.3f} ms; cold start without numba cache (fresh process): "
        + (f"import {w['cold_import_s']:.3f} s, first replay (compile) {w['cold_first_replay_s']:.2f} s"
           if "cold_first_replay_s" in w else f"failed: {w.get('cold_error')}"),
        "",
    ]
    rows = []
    for r in report["results"]:
        rows.append({**r, "target": f">= {r['target']:,}" if r["target"] else "",
                     "rate": r["rate"], "rate_cpu": r["rate_cpu"]})
    lines.append(format_table(rows, [("benchmark", "benchmark"), ("scope", "games used"), ("games", "games"),
                                     ("count", "moves (nodes)"), ("seconds", "wall s"), ("rate", "rate (wall)"),
                                     ("rate_cpu", "rate (CPU)"), ("unit", "unit"), ("target", "target"),
                                     ("status", "status (wall)"), ("status_cpu", "status (CPU)")]))
    if report.get("speedups_same_sample"):
        lines.append("")
        lines.append("gotk speed-up on the same sample (by wall time / by CPU time): " + ", ".join(
            f"vs {k} x{v['wall']} / x{v['cpu']}" for k, v in report["speedups_same_sample"].items()))
    goal = report.get("goal_floor_ratio")
    if goal:
        lines.append("")
        lines.append(f"goal (SGF bytes -> replayed >= {goal['goal']:g}x sgfmill's parse floor), "
                     f"{len(goal['rounds'])} interleaved rounds: per-round ratios "
                     f"{', '.join(str(r['ratio']) for r in goal['rounds'])}; median x{goal['median_ratio']}, "
                     f"best over best x{goal['best_over_best']}: {'MET' if goal['met'] else 'NOT MET'}")
    c = report["correctness"]
    if c:
        lines.append("")
        lines.append(f"correctness: {c['games_compared']} final boards compared with sgfmill, "
                     f"{c['sgfmill_mismatches']} mismatches; {c['dlgo_compared']} with dlgo, "
                     f"{c['dlgo_mismatches']} mismatches; gotk stopped early (illegal move) in "
                     f"{c['gotk_partial_in_sample']}; not compared: {c['not_compared'] or 'none'}")
        for e in c["examples"]:
            lines.append(f"  MISMATCH {e}")
    for wmsg in report.get("warnings", []):
        lines.append(f"WARNING: {wmsg}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
