"""Hot paths of this checkout against a baseline checkout, alternated in rounds (one process per side and round).

On a shared host whose speed drifts from minute to minute, a before/after ratio is only a ratio when both
sides run in turn. Each round runs every measurement in a fresh process of the baseline, then of this
checkout (each imports its own ``gotk``; numba caches are per checkout), best of ``--repeat`` inside:

* ``sgf``: ``read_sgf`` + ``replay`` of the first 700 members of KGS 2017-01 and of 2001 (moves/s);
* ``kernel``: the engine's ``replay_moves`` on the games of 2017-01 + 2017-02 without setup stones, fresh
  arrays per game (moves/s; the final position hashes must agree between the sides);
* ``encoders``: each encoder's ``encode_game`` on 300 games of 2017-03 (positions/s), alphago with and
  without ladders; the SHA-256 of every encoder's planes must agree between the sides;
* ``search``: PUCT playouts/s of the default 6x64 network (untrained, both heads) at batch 1 and 8, one torch
  thread, 200 visits on each of 4 positions of the built-in sample, ``c_puct`` 1.25, ``fpu`` 0.25 and pass a
  candidate at every move on both sides; the root's visit counts must agree between the sides;
* ``play``: the moves a random 9x9 ``zero`` network plays for fixed seeds through the commands: ``gotk gtp``
  (``genmove`` for both colours, searching with PUCT, Gumbel and the LCB choice), ``gotk match`` (a search against
  another over GTP; the policy sampled at temperature 1 against 0.5 for the first 40 moves, before a policy
  player's own pass rule may call the game settled, compared up to each game's first pass) and ``gotk selfplay``
  (Gumbel, PUCT and policy-only games: every SGF's moves and every column of every chunk); no timing;
* ``selfplay``: 8 games of 9x9 self-play with a random 2x16 ``zero`` network, every move a full Gumbel search of 32
  simulations, 70 moves: the moves and policy targets must agree between the sides (the same seeds give the same
  targets); then 16 games with a random 6x64 network, one torch thread, 60 moves, with every move full
  (positions/s) and with each side's defaults (recorded positions/s).

A measurement named in ``--unchecked`` is timed even when its results differ (a rule changed on purpose: games
are scored by the final count, which values a pass differently); the report's ``results_equal`` says which did.

Usage::

    git archive BASE_COMMIT | (mkdir -p BASE_CHECKOUT && tar -x -C BASE_CHECKOUT)
    python bench/ab.py --baseline BASE_CHECKOUT [--rounds 3] [--repeat 5] [--what sgf,kernel,encoders,search,selfplay]
        [--json-out F]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import REPO_ROOT, format_table, kgs_dir, machine_info, write_json  # noqa: E402

_LOAD = """
import json, sys, tarfile, time
sys.path.insert(0, sys.argv[1])
KGS, REPEAT = sys.argv[2], int(sys.argv[3])
def members(name, limit):
    out = []
    with tarfile.open(f"{KGS}/{name}") as tf:
        for m in tf:
            if m.isfile() and m.name.endswith(".sgf"):
                out.append(tf.extractfile(m).read())
                if len(out) == limit:
                    break
    return out
def best(fn):
    fn()
    b = None
    for _ in range(REPEAT):
        t = time.perf_counter(); n = fn(); t = time.perf_counter() - t
        b = t if b is None else min(b, t)
    return n, b
"""

SNIPPETS = {
    "sgf": _LOAD + """
from gotk.game.replay import replay
from gotk.sgf.reader import read_sgf
datas = members("KGS-2017_01-19-733-.tar.gz", 700) + members("KGS-2001-19-2298-.tar.gz", 700)
def run():
    return sum(replay(r, keep_history=False).moves_played for d in datas for r in read_sgf(d) if r.num_moves)
n, t = best(run)
print(json.dumps({"sgf -> replayed (moves/s)": n / t}))
""",
    "kernel": _LOAD + """
import numpy as np
from gotk.game import kernels as K
from gotk.sgf.reader import read_sgf
recs = [r for name, k in (("KGS-2017_01-19-733-.tar.gz", 733), ("KGS-2017_02-19-525-.tar.gz", 525))
        for d in members(name, k) for r in read_sgf(d) if not (r.setup_black or r.setup_white)]
inputs = [(r.colors.astype(np.int64), r.points.astype(np.int32)) for r in recs]
finals = []
if hasattr(K, "Engine"):  # one engine state with play/undo
    from gotk.game.state import new_engine
    try:  # the replay loops' own module
        from gotk.game.loops import replay_moves
    except ImportError:
        replay_moves = K.replay_moves
    def replay_one(colors, points, hashes):
        e = new_engine(19)
        played, _ = replay_moves(e, colors, points, False, hashes)
        return played, int(e.hashv[0])
else:  # loose arrays
    nbr, _ = K.make_tables(19); zob = K.make_zobrist(19); n = 361
    tmpl = [np.zeros(n, np.int8), np.arange(n, dtype=np.int32), np.arange(n, dtype=np.int32), np.zeros(n, np.int32),
            np.zeros(n, np.int32), -np.ones(n, np.int32), np.zeros(n, np.int32)]
    backup = K.superko_backup(*tmpl[:6], np.zeros(K.META_LEN, np.int64), False) if hasattr(K, "superko_backup") else ()
    def replay_one(colors, points, hashes):
        a = [x.copy() for x in tmpl]
        meta = np.zeros(K.META_LEN, np.int64); meta[K.M_KO] = -1; meta[K.M_LAST] = -1; meta[K.M_TO_PLAY] = 1
        hashv = np.zeros(1, np.uint64)
        played, _ = K.replay_moves(*a, meta, hashv, nbr, zob, colors, points, False, False, hashes, *backup)
        return played, int(hashv[0])
def run():
    finals.clear(); moves = 0
    for colors, points in inputs:
        played, h = replay_one(colors, points, np.zeros(len(points) + 1, np.uint64))
        moves += played; finals.append(h)
    return moves
m, t = best(run)
print(json.dumps({"replay kernel (moves/s)": m / t, "_check": hash(tuple(finals))}))
""",
    "encoders": _LOAD + """
import hashlib
from gotk.encoders.registry import get_encoder
from gotk.sgf.reader import read_sgf
recs = [r for d in members("KGS-2017_03-19-717-.tar.gz", 300) for r in read_sgf(d)]
out = {}
planes = hashlib.sha256()
for name, opts in (("oneplane", {}), ("sevenplane", {}), ("simple", {}), ("alphago", {}),
                   ("alphago", {"ladders": False})):
    enc = get_encoder(name, **opts)
    n, t = best(lambda: sum(len(enc.encode_game(r)) for r in recs))
    out[f"{name}{' (ladders=False)' if opts else ''} (pos/s)"] = n / t
    for r in recs:
        planes.update(enc.encode_game(r).features.tobytes())
out["_check"] = planes.hexdigest()
print(json.dumps(out))
""",
    "search": _LOAD + """
import dataclasses, hashlib, tempfile
from pathlib import Path
import numpy as np
import torch
torch.set_num_threads(1)
from bench.agent import positions
from gotk.encoders import get_encoder
from gotk.nets import build_model, load_agent, save_agent
from gotk.search import NetEvaluator, Search, SearchConfig
enc = get_encoder("sevenplane", 19)
torch.manual_seed(0)
tmp = tempfile.TemporaryDirectory()
path = save_agent(Path(tmp.name) / "a.gotk", build_model("resnet", enc.num_planes, 19, head="both"), "resnet",
                  {"blocks": 6, "filters": 64}, enc.describe())
agent = load_agent(path)
states = positions(4, 23)
# the same constants on both sides (their defaults may differ between checkouts), pass offered at every move
same = {"c_puct": 1.25, "fpu": 0.25}
if "pass_rule" in {f.name for f in dataclasses.fields(SearchConfig)}:
    same["pass_rule"] = "always"
out, check = {}, hashlib.sha256()
for batch in (1, 8):
    def run():
        done = 0
        for state in states:
            search = Search(NetEvaluator(agent, seed=0), SearchConfig(visits=200, batch=batch, **same))
            search.set_position(state)
            done += search.run(visits=200)
            kids = search.tree.children(0)
            check.update(np.asarray(search.tree.N[kids], dtype=np.float64).tobytes())
        return done
    n, t = best(run)
    out[f"search, 6x64 batch {batch} (playouts/s)"] = n / t
out["_check"] = check.hexdigest()
print(json.dumps(out))
""",
    "play": _LOAD + """
import hashlib, re, subprocess, tempfile
from pathlib import Path
import pyarrow.parquet as pq
from gotk.selfplay.run import new_agent
tmp = Path(tempfile.mkdtemp())
agent = str(new_agent(tmp / "z.gotk", 9, "zero", "relative", 3, blocks=2, filters=16))
py = [sys.executable, "-m", "gotk"]
def gotk(*args, stdin=None):
    p = subprocess.run(py + list(args), input=stdin, capture_output=True, text=True, cwd=tmp)
    if p.returncode:
        raise SystemExit(f"gotk {' '.join(args)}: {p.stderr[-1500:]}")
    return p.stdout
def moves(folder):
    return [re.findall(r";([BW])\\[([a-z]{0,2})\\]", f.read_text()) for f in sorted(Path(folder).glob("*.sgf"))]
def to_first_pass(game):  # a policy player's passes are its own rule: its moves up to a game's first pass
    cut = [i for i, (_, xy) in enumerate(game) if xy in ("", "tt")]
    return game[: cut[0]] if cut else game
check = hashlib.sha256()
# GTP: genmove for both colours, searching (PUCT, Gumbel, the LCB choice)
script = "boardsize 9\\nclear_board\\nkomi 7.5\\n" + "genmove b\\ngenmove w\\n" * 15 + "quit\\n"
for extra in (["--visits", "24"], ["--visits", "24", "--search", "gumbel"], ["--visits", "24", "--lcb", "0.1"]):
    check.update(gotk("gtp", "--agent", agent, "--seed", "3", "--threads", "1", *extra, stdin=script).encode())
# matches: a search against another over GTP; the policy sampled at T = 1 against T = 0.5
opp = " ".join(py + ["gtp", "--agent", agent, "--visits", "24", "--search", "gumbel", "--seed", "4", "--threads", "1"])
gotk("match", "--agent", agent, "--visits", "24", "--seed", "3", "--threads", "1", "--games", "4", "--size", "9",
     "--opponent", opp, "--sgf-out", str(tmp / "m1"))
check.update(repr(moves(tmp / "m1")).encode())
opp = " ".join(py + ["gtp", "--agent", agent, "--visits", "0", "--temperature", "0.5", "--seed", "4", "--threads", "1"])
gotk("match", "--agent", agent, "--visits", "0", "--temperature", "1", "--seed", "3", "--threads", "1", "--games", "4",
     "--size", "9", "--max-moves", "40", "--opponent", opp, "--sgf-out", str(tmp / "m2"))
check.update(repr([to_first_pass(g) for g in moves(tmp / "m2")]).encode())
# gotk selfplay: Gumbel, PUCT and policy-only games, every column of every chunk
for i, extra in enumerate(([], ["--search", "puct"], ["--policy-only"])):
    out_dir = tmp / f"sp{i}"
    gotk("selfplay", "--init", "random", "--size", "9", "--games", "8", "--chunk-games", "8", "--visits", "16",
         "--fast-visits", "4", "--threads", "1", "--seed", "5", "--encoder", "relative", "--out", str(out_dir), *extra)
    check.update(repr(moves(out_dir / "sgf")).encode())
    for f in sorted((out_dir / "chunks").glob("*.parquet")):
        t = pq.read_table(f)
        for name in sorted(t.column_names):
            check.update(name.encode() + repr(t.column(name).to_pylist()).encode())
print(json.dumps({"_check": check.hexdigest()}))
""",
    "selfplay": _LOAD + """
import dataclasses, hashlib, tempfile
from pathlib import Path
import numpy as np
import torch
torch.set_num_threads(1)
from gotk.nets import load_agent
from gotk.selfplay.games import SelfPlayBatch
from gotk.selfplay.run import new_agent
try:  # the settings' own module, SelfPlayConfig holding the search's settings
    from gotk.selfplay.config import SelfPlayConfig
    config = SelfPlayConfig.make
except ImportError:  # a checkout with flat settings in gotk.selfplay.games
    from gotk.selfplay.games import SelfPlayConfig
    config = SelfPlayConfig
tmp = tempfile.TemporaryDirectory()
small = load_agent(new_agent(Path(tmp.name) / "s.gotk", 9, "zero", "simple", 0, blocks=2, filters=16))
agent = load_agent(new_agent(Path(tmp.name) / "z.gotk", 9, "zero", "simple", 0, blocks=6, filters=64))
fields = {f.name for f in dataclasses.fields(SelfPlayConfig)}
out = {}
# the targets: every move a full (fresh, recorded) Gumbel search, no pass floor: the same rules on both sides
same = {"pass_prior": 0.0} if "pass_prior" in fields or "tree" in fields else {}
targets = hashlib.sha256()
games = SelfPlayBatch(small, config(size=9, visits=32, full_fraction=1.0, max_moves=70, **same),
                      [(i, 0) for i in range(8)], seed=0).run()
for g in games:
    targets.update(np.asarray(g.moves, dtype=np.int64).tobytes() + g.policy.tobytes())
out["_check"] = targets.hexdigest()
def full():
    games = SelfPlayBatch(agent, config(size=9, visits=32, full_fraction=1.0, max_moves=60, **same),
                          [(i, 0) for i in range(16)], seed=0).run()
    return sum(len(g.move_number) for g in games)
n, t = best(full)
out["self-play, Gumbel 32 sims, every move full (positions/s)"] = n / t
# the defaults of each side (a quarter of the moves full, the rest fast; the fast ones reuse the tree where the
# checkout does): recorded positions a second
def defaults():
    games = SelfPlayBatch(agent, config(size=9, max_moves=60), [(i, 0) for i in range(16)], seed=0).run()
    return sum(len(g.move_number) for g in games)
n, t = best(defaults)
out["self-play, the defaults (recorded positions/s)"] = n / t
print(json.dumps(out))
""",
}


def run_side(checkout: Path, what: str, repeat: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout), "NUMBA_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", SNIPPETS[what], str(checkout), str(kgs_dir()), str(repeat)],
                          cwd=checkout, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{checkout} ({what}) exited {proc.returncode}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", required=True, help="the other gotk checkout")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per side, round and measurement (best kept)")
    ap.add_argument("--what", default="sgf,kernel,encoders,search")
    ap.add_argument("--json-out", default=None)
    ap.add_argument("--unchecked", default="", help="measurements whose results may differ between the sides "
                    "(a rule changed on purpose): timed anyway, the difference reported")
    args = ap.parse_args(argv)
    baseline = Path(args.baseline).resolve()
    whats = [w for w in args.what.split(",") if w]
    unknown = set(whats) - set(SNIPPETS)
    if unknown:
        ap.error(f"unknown measurement(s): {', '.join(sorted(unknown))} (known: {', '.join(SNIPPETS)})")
    command = " ".join(["python bench/ab.py", *(argv if argv is not None else sys.argv[1:])])
    report: dict = {"benchmark": "ab", "command": command, "machine": machine_info(), "baseline": str(baseline),
                    "rounds": []}
    for i in range(args.rounds):
        for what in whats:
            base = run_side(baseline, what, args.repeat)
            this = run_side(REPO_ROOT, what, args.repeat)
            same = base.pop("_check", None) == this.pop("_check", None)
            if not same and what not in args.unchecked.split(","):
                sys.exit(f"error: {what}: the two checkouts' results differ")
            report.setdefault("results_equal", {})[what] = same
            if not same:
                print(f"round {i + 1} {what}: the results differ (--unchecked)", file=sys.stderr, flush=True)
            for key in this:
                report["rounds"].append({"round": i + 1, "measure": key, "baseline": round(base[key], 1),
                                         "this": round(this[key], 1), "ratio": round(this[key] / base[key], 3)})
                print(f"round {i + 1} {key}: {base[key]:,.0f} -> {this[key]:,.0f}", file=sys.stderr, flush=True)
    summary = []
    for key in dict.fromkeys(r["measure"] for r in report["rounds"]):
        rows = [r for r in report["rounds"] if r["measure"] == key]
        b, t = max(r["baseline"] for r in rows), max(r["this"] for r in rows)
        summary.append({"measure": key, "baseline_best": b, "this_best": t, "best_over_best": round(t / b, 3),
                        "per_round": ", ".join(f"{r['ratio']:.2f}" for r in rows)})
    report["summary"] = summary
    report["machine"]["loadavg_at_end"] = os.getloadavg()
    print(write_json(report, args.json_out))
    print(format_table(summary, [("measure", "measure"), ("baseline_best", "baseline (best)"),
                                 ("this_best", "this (best)"), ("best_over_best", "×"),
                                 ("per_round", "× per round")]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
