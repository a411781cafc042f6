"""Encoder benchmark: gotk's encoders against dlgo's, positions/s on one core.

Both sides are timed from a parsed game record to every encoded position of the game (replay +
encode; SGF parsing excluded), positions before passes left out on both sides:

* gotk: ``encoder.encode_game(record)`` (one compiled loop per game); numba compile / cache-load time
  is measured apart (warm-up on one game);
* dlgo 0.2: replay on ``dlgo.goboard_fast.GameState`` (``apply_move``) and ``encoder.encode(state)``
  before every move, with dlgo's own ``oneplane`` / ``sevenplane`` / ``simple`` / ``alphago`` encoders (``leelazero``
  has no dlgo peer: gotk's speed alone).
  dlgo's points are ``Point(row, col)``, 1-based with row 1 at the *bottom* (sgfmill's ``(row, col)`` + 1);
  its tensors put that bottom row first, so they are flipped vertically before comparing with gotk's.

The ladder cost (target: alphago with ladders at ≥ 60% of the speed without) is also measured on its
own, the two variants' passes over the large sample interleaved (with, without, without, with, ...;
best pass of each kept): the rows above time each variant's passes back to back, minutes apart on a
host whose speed drifts, which moved the ratio by ±3 points between runs.

dlgo is slow, so it gets a small sample (``--dlgo-games``, ``--dlgo-alphago-games``); gotk runs on
the same sample (the speed-up is like for like) and on a larger one (``--games``). As a sanity check the
bench also reports how many positions dlgo and gotk encode identically (dlgo's ko planes use its own
superko test and its alphago encoder differs in places, so equality is not expected everywhere).

Usage::

    python bench/encoders.py [ARCHIVE] [--games N] [--dlgo-games K] [--dlgo-alphago-games K]
                             [--repeat R] [--json-out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import types
from pathlib import Path

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one core

if __package__ in (None, ""):  # run as a script: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from bench._common import (  # noqa: E402
    Timer,
    best_of,
    format_table,
    install_keras_stub,
    kgs_dir,
    machine_info,
    rate,
    write_json,
)

DEFAULT_ARCHIVE = "KGS-2017_03-19-717-.tar.gz"
TARGET_RATIO = 100  # oneplane / sevenplane / simple: at least 100x dlgo
TARGET_ALPHAGO = 10_000  # positions/s
DLGO_NAMES = {"oneplane": "oneplane", "sevenplane": "sevenplane", "simple": "simple", "alphago": "alphago"}


def load_records(path: Path, count: int):
    from gotk.sgf.reader import read_sgf
    from gotk.sources.archives import iter_sources

    out = []
    for src in iter_sources([path]):
        if not hasattr(src, "data"):
            continue
        out.extend(r for r in read_sgf(src.data) if r.size == 19 and r.num_moves > 0)
        if len(out) >= count:
            break
    return out[:count]


# --- gotk ------------------------------------------------------------------------------------------


def gotk_run(enc, records):
    total = 0
    for rec in records:
        total += len(enc.encode_game(rec))
    return total


def interleaved_ratio(a, b, records, rounds: int) -> dict:
    """Best pass of encoder ``a`` and of ``b`` over ``records``, their passes alternated (``a b b a a b ...``,
    after one warm pass each): ``{"ratio": b_time / a_time, "a_pos_per_s", "b_pos_per_s", "rounds"}``."""
    gotk_run(a, records)
    gotk_run(b, records)
    ta, tb = [], []
    positions = 0
    for i in range(rounds):
        for enc, times in ((a, ta), (b, tb)) if i % 2 == 0 else ((b, tb), (a, ta)):
            with Timer() as t:
                positions = gotk_run(enc, records)
            times.append(t.timing)
    wa, wb = best_of(ta).wall, best_of(tb).wall
    return {"ratio": wb / wa, "a_pos_per_s": positions / wa, "b_pos_per_s": positions / wb, "rounds": rounds}


def gotk_time(enc, records, repeat: int):
    with Timer() as warm:
        enc.encode_game(records[0])
    timings = []
    positions = 0
    for _ in range(repeat):
        with Timer() as t:
            positions = gotk_run(enc, records)
        timings.append(t.timing)
    return positions, best_of(timings), warm.wall


# --- dlgo ------------------------------------------------------------------------------------------


def import_dlgo_encoders():
    """dlgo's board and encoders; keras (and h5py, which dlgo.agent imports) stubbed when absent."""
    install_keras_stub()
    try:
        import h5py  # noqa: F401
    except ImportError:
        sys.modules["h5py"] = types.ModuleType("h5py")
    import importlib

    from dlgo import goboard_fast, gotypes, utils

    # dlgo 0.2's alphago encoder indexes planes with MoveAge.get's float (numpy raises IndexError): the
    # smallest fix that lets it run is returning an int, which it meant
    utils.MoveAge.get = lambda self, row, col: int(self.move_ages[row, col])
    encoders = {}
    for name, module in DLGO_NAMES.items():
        mod = importlib.import_module(f"dlgo.encoders.{module}")
        encoders[name] = mod.create((19, 19)) if name != "alphago" else mod.AlphaGoEncoder((19, 19), False)
    return goboard_fast, gotypes, encoders


def dlgo_inputs(records, gotypes):
    """gotk records → dlgo moves: flat point → sgfmill ``(row, col)`` (row 0 bottom) → ``Point(row+1, col+1)``."""
    from gotk import coords

    Player, Point = gotypes.Player, gotypes.Point
    player = {1: Player.black, 2: Player.white}
    out = []
    for rec in records:
        n = rec.size * rec.size

        def point(p, size=rec.size):
            r, c = coords.to_sgfmill(p, size)
            return Point(r + 1, c + 1)

        moves = [(player[c], None if p == n else point(p)) for c, p in rec.moves]
        out.append(([point(p) for p in rec.setup_black], [point(p) for p in rec.setup_white], moves))
    return out


def dlgo_encode_game(goboard, gotypes, encoder, setup_b, setup_w, moves, keep):
    """Replay one game on dlgo's GameState, encoding before every non-pass move."""
    Move = goboard.Move
    board = goboard.Board(19, 19)
    for p in setup_b:
        board.place_stone(gotypes.Player.black, p)
    for p in setup_w:
        board.place_stone(gotypes.Player.white, p)
    state = goboard.GameState(board, moves[0][0], None, None)
    count = 0
    for player, point in moves:
        if state.next_player != player:
            state.next_player = player
        if point is not None:
            if state.board.get(point) is not None:
                break  # occupied: dlgo would assert
            planes = encoder.encode(state)
            count += 1
            if keep is not None:
                keep.append(planes)
            state = state.apply_move(Move.play(point))
        else:
            state = state.apply_move(Move.pass_turn())
    return count


def dlgo_time(goboard, gotypes, encoder, inputs, keep=None):
    sink = io.StringIO()
    with Timer() as t, contextlib.redirect_stdout(sink):  # dlgo's alphago encoder prints move ages
        total = sum(dlgo_encode_game(goboard, gotypes, encoder, b, w, m, keep) for b, w, m in inputs)
    return total, t.timing


def agreement(gotk_features: np.ndarray, dlgo_planes: list) -> float:
    """Fraction of positions where dlgo's tensor (rows flipped to gotk's top-first order) equals gotk's."""
    if not dlgo_planes:
        return float("nan")
    dl = np.flip(np.stack(dlgo_planes), axis=-2)
    m = min(len(dl), len(gotk_features))
    dl = dl[:m, : gotk_features.shape[1]]
    same = (dl == gotk_features[:m].astype(np.float64)).reshape(m, -1).all(axis=1)
    return float(same.mean())


# --- main ------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("archive", nargs="?", help=f"archive of games (default ../shared/kgs/{DEFAULT_ARCHIVE})")
    ap.add_argument("--games", type=int, default=300, help="games for gotk's large sample")
    ap.add_argument("--dlgo-games", type=int, default=20, help="games for dlgo (oneplane, sevenplane, simple)")
    ap.add_argument("--dlgo-alphago-games", type=int, default=3, help="games for dlgo's alphago encoder")
    ap.add_argument("--repeat", type=int, default=3, help="gotk repeats (best wall time kept)")
    ap.add_argument("--encoders", default="oneplane,sevenplane,simple,relative,alphago,leelazero")
    ap.add_argument("--json-out", help="also write the JSON report here")
    args = ap.parse_args(argv)

    path = Path(args.archive) if args.archive else kgs_dir() / DEFAULT_ARCHIVE
    if not path.exists():
        sys.exit(f"error: {path} is missing (the KGS archives sit in ../shared/kgs beside the checkout)")
    from gotk.encoders import get_encoder, list_encoders

    names = [n for n in args.encoders.split(",") if n in list_encoders()]
    records = load_records(path, max(args.games, args.dlgo_games, args.dlgo_alphago_games))
    # dlgo is imported only for a peer sample: --dlgo-games 0 --dlgo-alphago-games 0 runs without it
    need_dlgo = args.dlgo_games > 0 or (args.dlgo_alphago_games > 0 and "alphago" in names)
    goboard, gotypes, dl_encoders = import_dlgo_encoders() if need_dlgo else (None, None, None)
    rows = []
    report = {"machine": machine_info(), "archive": str(path), "results": rows}

    variants = [(n, {}) for n in names]
    if "alphago" in names:
        variants.append(("alphago", {"ladders": False}))
        variants.append(("alphago", {"cache_ladders": False}))  # every ladder read afresh (no ladder cache)
    for name, options in variants:
        enc = get_encoder(name, **options)
        label = name + ("" if not options else " (" + ", ".join(f"{k}={v}" for k, v in options.items()) + ")")
        k_dl = args.dlgo_alphago_games if name == "alphago" else args.dlgo_games
        small = records[:k_dl]
        pos_big, t_big, warm = gotk_time(enc, records[: args.games], args.repeat)
        row = {"encoder": label, "planes": enc.num_planes, "gotk_games": len(records[: args.games]),
               "gotk_positions": pos_big, "gotk_pos_per_s": rate(pos_big, t_big.wall),
               "gotk_pos_per_s_cpu": rate(pos_big, t_big.cpu),
               "warmup_s": warm, "dlgo_games": len(small), "gotk_pos_per_s_dlgo_sample": None}
        if small:  # --dlgo-games 0 (or --dlgo-alphago-games 0): no peer sample, gotk's large sample only
            pos_small, t_small, _ = gotk_time(enc, small, max(args.repeat, 5))
            row["gotk_pos_per_s_dlgo_sample"] = rate(pos_small, t_small.wall)
        if small and not options and name in dl_encoders:
            keep: list = []
            inputs = dlgo_inputs(small, gotypes)
            pos_dl, t_dl = dlgo_time(goboard, gotypes, dl_encoders[name], inputs, keep)
            row["dlgo_positions"] = pos_dl
            row["dlgo_pos_per_s"] = rate(pos_dl, t_dl.wall)
            row["speedup"] = row["gotk_pos_per_s_dlgo_sample"] / row["dlgo_pos_per_s"]
            feats = np.concatenate([enc.encode_game(r).features for r in small])
            row["same_as_dlgo"] = agreement(feats, keep)
        if name == "alphago":
            row["target"] = f">= {TARGET_ALPHAGO:,} pos/s" if not options else ""
            row["met"] = row["gotk_pos_per_s"] >= TARGET_ALPHAGO if not options else None
        elif name not in dl_encoders:  # leelazero: dlgo has no such encoder (gotk's speed only)
            row["target"] = ""
            row["met"] = None
        else:
            row["target"] = f">= {TARGET_RATIO}x dlgo"
            row["met"] = row.get("speedup", 0) >= TARGET_RATIO
        rows.append(row)
        print(f"{label}: {row['gotk_pos_per_s']:,.0f} pos/s", file=sys.stderr)

    by = {r["encoder"]: r for r in rows}
    if "alphago" in by and "alphago (ladders=False)" in by:
        a, b = by["alphago"]["gotk_pos_per_s"], by["alphago (ladders=False)"]["gotk_pos_per_s"]
        report["alphago_ladder_cost_us_per_position"] = (1 / a - 1 / b) * 1e6
        ca, cb = by["alphago"]["gotk_pos_per_s_cpu"], by["alphago (ladders=False)"]["gotk_pos_per_s_cpu"]
        # target: alphago with ladders at >= 60% of the speed without (wall; CPU time is steadier on a busy host)
        report["alphago_ladder_speed_ratio"] = {"wall": a / b, "cpu": ca / cb}
        u = by.get("alphago (cache_ladders=False)")
        if u:
            report["alphago_ladder_speed_ratio"].update(uncached_wall=u["gotk_pos_per_s"] / b,
                                                        uncached_cpu=u["gotk_pos_per_s_cpu"] / cb)
        report["alphago_ladder_speed_ratio"]["interleaved"] = interleaved_ratio(
            get_encoder("alphago"), get_encoder("alphago", ladders=False), records[: args.games],
            max(2 * args.repeat, 6))
    print(write_json(report, args.json_out))
    print()
    print(format_table(rows, [("encoder", "encoder"), ("planes", "planes"), ("gotk_pos_per_s", "gotk pos/s"),
                              ("gotk_pos_per_s_dlgo_sample", "gotk pos/s (dlgo games)"),
                              ("dlgo_pos_per_s", "dlgo pos/s"), ("speedup", "speed-up"),
                              ("same_as_dlgo", "same as dlgo"), ("target", "target"), ("met", "met")]))
    if "alphago_ladder_speed_ratio" in report:
        r = report["alphago_ladder_speed_ratio"]
        print(f"\nalphago with ladders / without: {r['wall']:.1%} (wall), {r['cpu']:.1%} (CPU time)")
        if "uncached_wall" in r:
            print(f"uncached ladders (cache_ladders=False) / without: {r['uncached_wall']:.1%} (wall), "
                  f"{r['uncached_cpu']:.1%} (CPU time)")
        il = r["interleaved"]
        print(f"alphago with ladders / without, passes interleaved (target >= 60%): {il['ratio']:.1%} "
              f"({il['a_pos_per_s']:,.0f} / {il['b_pos_per_s']:,.0f} pos/s, best of {il['rounds']} passes each)")
    print(f"\ngotk: {rows[0]['gotk_games'] if rows else 0} games from {path.name}; dlgo: first "
          f"{args.dlgo_games} games ({args.dlgo_alphago_games} for alphago); one core, best of {args.repeat}")
    return 0 if all(r["met"] in (True, None) for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
