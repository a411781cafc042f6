"""alphago's ``encode_game`` of two gotk checkouts in one process, game by game (issue 17, ladders).

On a host whose speed drifts from minute to minute (BENCHMARKS.md), even alternating processes
(``bench/ab.py``) leaves ratios that move by ±30% between rounds. Here both checkouts are imported
into one process (each under its own module objects and numba cache) and every game is encoded by
each side in turn — alphago with cached ladders and with ``ladders=False`` — summing each side's
time per encoder; the order alternates between rounds. Reported: µs per position for each of the
four, each side's ladders ÷ ``ladders=False`` ratio, and this checkout's speed-up on cached alphago.
The two sides' ladder planes must agree (checked on every game).

Usage::

    git archive b42dfcf | (mkdir -p /tmp/prev && tar -x -C /tmp/prev)
    python bench/duo.py --baseline /tmp/prev [--games 300] [--rounds 2] [--cpu] [--json-out F]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

REPO = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):
    sys.path.insert(0, str(REPO))

from bench._common import format_table, kgs_dir, machine_info, write_json  # noqa: E402

ARCHIVE = "KGS-2017_03-19-717-.tar.gz"


def _load(checkout: Path):
    """``(alphago, alphago ladders=False, read_sgf)`` of the gotk in ``checkout``, as fresh modules."""
    for name in [k for k in sys.modules if k == "gotk" or k.startswith("gotk.")]:
        del sys.modules[name]
    sys.path.insert(0, str(checkout))
    try:
        from gotk.encoders.alphago import AlphaGoEncoder
        from gotk.sgf.reader import read_sgf
    finally:
        sys.path.remove(str(checkout))
    return AlphaGoEncoder(19), AlphaGoEncoder(19, ladders=False), read_sgf


def main(argv: list[str] | None = None) -> int:
    import tarfile

    import numpy as np

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", required=True, help="the other gotk checkout")
    ap.add_argument("--games", type=int, default=300, help=f"first games of {ARCHIVE}")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cpu", action="store_true", help="time with the process CPU clock instead of the wall clock")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)
    path = kgs_dir() / ARCHIVE
    if not path.is_file():
        sys.exit(f"error: {path} is missing (../shared/kgs beside the checkout, or set GOTK_KGS)")
    base_enc, base_plain, read_sgf = _load(Path(args.baseline).resolve())
    this_enc, this_plain, _ = _load(REPO)
    datas = []
    with tarfile.open(path) as tf:
        for m in tf:
            if m.isfile() and m.name.endswith(".sgf"):
                datas.append(tf.extractfile(m).read())
                if len(datas) == args.games:
                    break
    records = [r for d in datas for r in read_sgf(d) if r.num_moves]
    sides = {"baseline": base_enc, "baseline ladders=False": base_plain, "this": this_enc,
             "this ladders=False": this_plain}
    for enc in sides.values():
        enc.encode_game(records[0])  # compile or load from the cache outside the timing
    clock = time.process_time if args.cpu else time.perf_counter
    spent = dict.fromkeys(sides, 0.0)
    positions = 0
    for rnd in range(args.rounds):
        order = list(sides.items()) if rnd % 2 == 0 else list(reversed(sides.items()))
        for rec in records:
            ladder_planes = {}
            for name, enc in order:
                t = clock()
                encoded = enc.encode_game(rec)
                spent[name] += clock() - t
                if "=" not in name:  # the ladder planes, kept small: every plane would crowd the caches
                    ladder_planes[name] = np.packbits(encoded.features[:, 46:48])
                rows = len(encoded)
                del encoded
            if not np.array_equal(ladder_planes["baseline"], ladder_planes["this"]):
                sys.exit(f"error: the two checkouts' ladder planes differ on {rec.member or 'a game'}")
            positions += rows
    us = {k: 1e6 * v / positions for k, v in spent.items()}
    report = {
        "benchmark": "duo", "command": " ".join(["python bench/duo.py", *(argv if argv is not None else sys.argv[1:])]),
        "machine": machine_info(), "games": len(records), "positions_per_side": positions, "clock": clock.__name__,
        "us_per_position": {k: round(v, 3) for k, v in us.items()},
        "ladder_ratio": {"baseline": round(us["baseline ladders=False"] / us["baseline"], 4),
                         "this": round(us["this ladders=False"] / us["this"], 4)},
        "speedup_cached_alphago": round(us["baseline"] / us["this"], 3),
    }
    write_json(report, args.json_out)
    rows = [{"side": k, "us": round(v, 2)} for k, v in us.items()]
    print(format_table(rows, [("side", "alphago (checkout)"), ("us", "µs per position")]))
    print(f"ladders ÷ ladders=False: baseline {100 * report['ladder_ratio']['baseline']:.1f}%, "
          f"this {100 * report['ladder_ratio']['this']:.1f}%; cached alphago this ÷ baseline speed "
          f"{report['speedup_cached_alphago']:.3f}x ({len(records)} games, {args.rounds} rounds, {clock.__name__})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
