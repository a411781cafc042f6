"""Leela Zero check: a ``leelaz`` agent exported with ``gotk agent export --format leela-zero``, evaluated by the real
``leelaz`` (GTP ``heatmap 0``: identity symmetry) and by gotk's forward pass on the same positions of real games.

Positions: the games of a KGS archive (default: the package's held-out month, ``gotk.data.HELDOUT_ARCHIVE``), 19x19
without setup stones, every ``--every``-th move from move 0, played into ``leelaz`` with ``play`` and into a gotk
``GameState``, until ``--positions``. Reported (:class:`gotk.export.leelaz_check.CheckReport`):

* top-move agreement: gotk's most probable move (empty point or pass) has ``leelaz``'s largest printed value;
* per point (empty points and pass): the max ``|p_gotk - printed / 1000|`` and how many points fall outside the
  print's 1/1000 bracket (``leelaz`` truncates ``1000 p`` to an integer);
* the winrate difference in percentage points (``leelaz`` prints ``(1 + tanh v) / 2`` with 6 decimals);
* how distinctive the network is (its mean and max top-move probability; uniform would be 1/362).

Targets: top move same in >= 99% of >= 200 positions, no point outside the print resolution, winrate within 0.5.

Usage::

    python bench/leelaz_check.py --agent runs/lz/agent.gotk [--positions 200] [--every 5] [--json-out FILE]
    python bench/leelaz_check.py --random 6x64      # a random leelaz network with large weights instead
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine_info, write_json  # noqa: E402


def random_agent(path: Path, spec: str, records, seed: int = 0) -> Path:
    """A ``leelaz`` agent (``BLOCKSxFILTERS``) with random weights that still gives distinctive outputs: PyTorch's
    initialisation, random batch-norm scales and shifts, running statistics measured on positions of ``records``
    (so that activations stay in range through the tower), and large random output layers (policies far from
    uniform, values far from 0)."""
    import numpy as np
    import torch

    from gotk.encoders import get_encoder
    from gotk.nets.agent_file import save_agent
    from gotk.nets.networks import build_model

    blocks, filters = (int(v) for v in spec.lower().split("x"))
    torch.manual_seed(seed)
    enc = get_encoder("leelazero")
    model = build_model("leelaz", 18, 19, blocks=blocks, filters=filters)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.weight.normal_(1.0, 0.3)
                m.bias.normal_(0.0, 0.3)
                m.momentum = None  # running statistics: the plain average over the calibration batches
                m.reset_running_stats()
        x = torch.as_tensor(np.concatenate([enc.encode_game(r).features[::3] for r in records[:8]])).float()
        model.train()
        for k in range(0, len(x), 256):
            model(x[k:k + 256])
        model.eval()
        model.policy_head[-1].weight.normal_(0.0, 0.25)  # the model starts them at zero
        model.value_head[-1].weight.normal_(0.0, 0.15)
    return save_agent(path, model, "leelaz", {"blocks": blocks, "filters": filters}, enc.describe())


def load_records(archive: Path, count: int):
    from gotk.sgf.reader import read_sgf
    from gotk.sources.archives import iter_sources

    out = []
    for src in iter_sources([archive]):
        if hasattr(src, "data"):
            out += [r for r in read_sgf(src.data) if r.size == 19 and not r.setup_black and r.num_moves >= 20]
        if len(out) >= count:
            break
    return out


def main(argv=None) -> int:
    from gotk.data import HELDOUT_ARCHIVE
    from gotk.export.leelaz_check import check_agent, find_leelaz
    from gotk.export.leelaz_weights import export_agent_weights

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agent", type=Path, help="a leelaz agent file (agent.gotk)")
    ap.add_argument("--random", help="instead of --agent: a random leelaz network BLOCKSxFILTERS, e.g. 6x64")
    ap.add_argument("--seed", type=int, default=0, help="seed of --random")
    ap.add_argument("--archive", type=Path, default=Path(HELDOUT_ARCHIVE), help="games (default: the held-out month)")
    ap.add_argument("--positions", type=int, default=200)
    ap.add_argument("--every", type=int, default=5, help="a position every N moves of each game")
    ap.add_argument("--leelaz", help="leelaz executable (default: on PATH or /usr/games/leelaz)")
    ap.add_argument("--json-out", help="also write the JSON report here")
    args = ap.parse_args(argv)
    if (args.agent is None) == (args.random is None):
        ap.error("give exactly one of --agent or --random")
    exe = args.leelaz or find_leelaz()
    if exe is None:
        sys.exit("error: leelaz not found (Debian: apt-get install leela-zero)")

    with tempfile.TemporaryDirectory() as tmp:
        records = load_records(args.archive, max(10, args.positions // 20))
        agent = args.agent or random_agent(Path(tmp) / "random.gotk", args.random, records[::-1], args.seed)
        weights = Path(tmp) / "weights.txt.gz"
        t = time.perf_counter()
        info = export_agent_weights(agent, weights)
        export_s = time.perf_counter() - t
        t = time.perf_counter()
        report = check_agent(agent, weights, records, args.positions, args.every, exe)
        check_s = time.perf_counter() - t
    r = report.as_dict()
    out = {"machine": machine_info(), "agent": str(args.agent) if args.agent else f"random {args.random}",
           "network": f"{info['blocks']}x{info['filters']}", "weights_bytes": info["bytes"],
           "export_s": round(export_s, 2), "check_s": round(check_s, 2), "leelaz": exe,
           "archive": str(args.archive), **r}
    print(write_json(out, args.json_out))
    met = {"top move": r["top_agreement"] >= 0.99 and r["positions"] >= min(200, args.positions),
           "print resolution": r["points_outside"] == 0, "winrate": r["max_winrate_diff"] < 0.5}
    print(f"\n{out['agent']} ({out['network']}), {r['positions']} positions of {r['games']} games:")
    print(f"  top move same: {r['top_agree']}/{r['positions']} ({r['top_agreement']:.1%}; leelaz ties at its top: "
          f"{r['top_ties']})")
    print(f"  points compared: {r['points']:,}; outside the 1/1000 print bracket: {r['points_outside']}; "
          f"max |p_gotk - printed/1000| = {r['max_abs_diff']:.6f} (resolution 0.001; "
          f"max excess beyond the bracket {r['max_bracket_excess']:.2g} per mille)")
    print(f"  winrate: max diff {r['max_winrate_diff']:.5f} points, mean {r['mean_winrate_diff']:.5f}")
    print(f"  network's top-move probability: mean {r['mean_top_prob']:.3f}, max {r['max_top_prob']:.3f} "
          f"(uniform: {1 / 362:.4f})")
    print("  targets: " + ", ".join(f"{k} {'met' if v else 'NOT met'}" for k, v in met.items()))
    return 0 if all(met.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
