"""Instructions of one cached alphago ``encode_game`` pass, with and without ladders, counted by callgrind.

On a shared host whose speed drifts from minute to minute, wall times of two checkouts differ by more than
the change being measured; an instruction count does not drift. Run under callgrind with instrumentation off
at start; this script loads the games, warms both encoders (compiling or loading from numba's cache), then
switches instrumentation on (``callgrind_control -i on``) for one pass of each encoder, dumping the counts
after each (``callgrind_control -d lad`` / ``-d nolad``): the ``totals:`` line of each dump is that pass's
instruction count. Under valgrind numba sees another CPU, so the first run compiles into its own cache entries.

Usage (each checkout imports its own ``gotk``)::

    PYTHONPATH=CHECKOUT NUMBA_NUM_THREADS=1 valgrind --tool=callgrind --instr-atstart=no \\
        --callgrind-out-file=OUT.%p python bench/callgrind_encode.py CHECKOUT [--games 20]
    grep -h "desc: Trigger\\|totals" OUT.*
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkout", help="the gotk checkout to import")
    ap.add_argument("--games", type=int, default=20, help="first games of KGS 2017-03")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(args.checkout).resolve()))
    sys.path.insert(1, str(Path(__file__).resolve().parent.parent))
    from bench._common import kgs_dir
    from gotk.encoders.registry import get_encoder
    from gotk.sgf.reader import read_sgf

    datas = []
    with tarfile.open(kgs_dir() / "KGS-2017_03-19-717-.tar.gz") as tf:
        for m in tf:
            if m.isfile() and m.name.endswith(".sgf"):
                datas.append(tf.extractfile(m).read())
                if len(datas) == args.games:
                    break
    recs = [r for d in datas for r in read_sgf(d)]
    encoders = {"lad": get_encoder("alphago"), "nolad": get_encoder("alphago", ladders=False)}
    for enc in encoders.values():
        sum(len(enc.encode_game(r)) for r in recs)  # compile or load, outside the count
    pid = str(os.getpid())

    def control(*words: str) -> None:
        subprocess.run(["callgrind_control", *words, pid], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)

    control("-i", "on")
    for name, enc in encoders.items():
        control("-z")
        positions = sum(len(enc.encode_game(r)) for r in recs)
        control("-d", name)
    control("-i", "off")
    print(f"{positions} positions a pass; counts in the dumps 'lad' and 'nolad'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
