"""GTP input fuzz: random bytes, NUL, invalid UTF-8, 1 MB and longer lines — every command line is answered
exactly once, the engine never dies, and memory stays bounded (through ``gotk gtp``, the analysing engine)."""

from __future__ import annotations

import random
import subprocess
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gotk.play.gtp import GtpEngine, preprocess
from gotk.play.players import RandomPlayer

from .test_encode_faults import ENV

COMMANDS = ["play", "genmove", "boardsize", "komi", "undo", "fixed_handicap", "place_free_handicap",
            "set_free_handicap", "final_score", "time_settings", "time_left", "gotk-policy", "known_command",
            "showboard", "clear_board"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(
    st.binary(max_size=60).map(lambda b: b.decode("utf-8", "replace")),
    st.tuples(st.sampled_from(COMMANDS), st.lists(st.text(max_size=12), max_size=4)).map(
        lambda t: " ".join([t[0], *t[1]])),
), min_size=1, max_size=12))
def test_engine_answers_every_line(lines):
    e = GtpEngine(RandomPlayer(seed=0), size=9)
    for raw in lines:
        raw = raw.replace("\n", " ")
        answer = e.handle(raw)
        if not preprocess(raw):
            assert answer is None
            continue
        assert answer is not None and answer[0] in "=?" and answer.endswith("\n\n")
        assert "\n\n" not in answer[:-2]


def test_stdio_fuzz_every_line_answered():
    rng = random.Random(18)
    lines = [b"boardsize 9", b"play b \xff\xfe", b"genmove \x00w", b"\x00\x00\x00", b"komi 1e309",
             b"play w " + b"A" * (1 << 20),  # a 1 MB line: kept, answered
             b"x" * (3 << 20),  # over the 1 MiB cap: cut to 1 MiB (the rest read through), answered once
             b"\xc3\x28 \xa0\xa1", b"fixed_handicap 99999999999999999999", b"genmove b"]
    lines += [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))).replace(b"\n", b" ")
              for _ in range(300)]
    lines.append(b"quit")
    data = b"\n".join(lines) + b"\n"
    # peak_rss_mib: this process's own high-water mark (ru_maxrss would include pytest's, kept across exec)
    code = ("import sys\nfrom gotk.jobs.workers import peak_rss_mib\nfrom gotk.cli.main import main\n"
            "sys.argv = ['gotk', 'gtp', '--random', '--size', '9']\ntry:\n    main()\nfinally:\n"
            "    sys.stderr.write('@@%d' % peak_rss_mib())\n")
    res = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, env=ENV, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    answers = [a for a in res.stdout.decode("utf-8", "replace").split("\n\n") if a]
    expected = sum(1 for raw in lines if preprocess(raw.decode("utf-8", "replace")))
    assert len(answers) == expected
    assert all(a[0] in "=?" for a in answers)
    assert int(res.stderr.decode().rsplit("@@", 1)[1]) < 1024  # MiB: under 1 GiB
