"""``gotk analysis`` input fuzz: hostile JSON (wrong types, missing and unknown fields, bad moves, huge numbers),
random bytes, over-long lines and a flood of queued positions. Every line is answered (an error line naming its
field, or warnings and one final answer per turn), the engine never dies, and the queue stays within its limit."""

from __future__ import annotations

import json
import subprocess
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serve_helpers import make_agent

from gotk.play.factory import build_analysis_engine
from gotk.search.config import SearchConfig

from .test_encode_faults import ENV

_AGENT: dict = {}


def engine():
    if "engine" not in _AGENT:
        import tempfile
        from pathlib import Path

        path = make_agent(Path(tempfile.mkdtemp()) / "a9.gotk", size=9)
        lines: list[dict] = []
        _AGENT["lines"] = lines
        _AGENT["engine"] = build_analysis_engine(str(path), SearchConfig(visits=3, seed=0, resign_threshold=None),
                                        write=lambda line: lines.append(json.loads(line)), log=lambda line: None,
                                        max_queued=40)
    return _AGENT["engine"], _AGENT["lines"]


scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 12), st.sampled_from([10**7 + 1, 2**63, -2**40]),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6))
locations = st.one_of(st.sampled_from(["C3", "E5", "G7", "pass", "(1,1)", "(9,9)", "Z1", "", "a1", "J9", "I5"]),
                      scalars)
pairs = st.lists(st.one_of(st.tuples(st.sampled_from(["B", "W", "b", "X", 1]), locations).map(list), scalars),
                 max_size=6)
fields = {
    "id": st.one_of(st.just("q"), scalars),
    "moves": st.one_of(pairs, scalars), "initialStones": st.one_of(pairs, scalars),
    "initialPlayer": st.one_of(st.sampled_from(["B", "W"]), scalars),
    "rules": st.one_of(st.sampled_from(["chinese", "japanese", "tromp-taylor", "new zealand"]), scalars,
                       st.dictionaries(st.sampled_from(["ko", "scoring", "suicide", "tax", "x"]), scalars)),
    "komi": scalars, "boardXSize": st.one_of(st.just(9), scalars), "boardYSize": st.one_of(st.just(9), scalars),
    "analyzeTurns": st.one_of(st.lists(st.integers(-1, 4), max_size=4), scalars),
    "maxVisits": st.one_of(st.integers(-1, 6), st.just(10**9)),
    "includeOwnership": scalars, "includeMovesOwnership": scalars, "includePolicy": scalars,
    "includePVVisits": scalars, "priority": scalars, "priorities": st.one_of(st.lists(scalars, max_size=3), scalars),
    "reportDuringSearchEvery": scalars,
    "avoidMoves": st.one_of(st.lists(st.fixed_dictionaries(
        {"player": st.sampled_from(["B", "W", "Q"]), "moves": st.lists(locations, max_size=3),
         "untilDepth": scalars}), max_size=2), scalars),
    "overrideSettings": st.one_of(st.dictionaries(st.sampled_from(
        ["reportAnalysisWinratesAs", "maxVisits", "maxTime", "humanSLProfile", "wideRootNoise", "antiMirror", "z"]),
        st.one_of(st.sampled_from(["BLACK", "SIDETOMOVE", "rank_3d"]), st.integers(-1, 5), scalars)), scalars),
    "action": st.one_of(st.sampled_from(["query_version", "terminate", "terminate_all", "clear_cache", "x"]),
                        scalars),
    "terminateId": scalars, "turnNumbers": st.one_of(st.lists(scalars, max_size=2), scalars),
    "unknownField": scalars,
}
BASE = {"id": "q", "moves": [["B", "E5"], ["W", "C3"]], "rules": "chinese", "komi": 7, "boardXSize": 9,
        "boardYSize": 9, "maxVisits": 2}
#: a valid query with one or two fields replaced by hostile values, or (one in five) nothing but hostile fields
_mutated = st.lists(st.sampled_from(sorted(fields)), min_size=1, max_size=2, unique=True).flatmap(
    lambda keys: st.fixed_dictionaries({k: fields[k] for k in keys}).map(lambda extra: {**BASE, **extra}))
queries = st.one_of(_mutated, _mutated, _mutated, _mutated, st.fixed_dictionaries({}, optional=fields))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(queries, min_size=1, max_size=4))
def test_every_query_is_answered(objs):
    eng, lines = engine()
    for obj in objs:
        lines.clear()
        text = json.dumps(obj)  # NaN and Infinity as JSON's extensions, as Python writes them
        eng.handle_line(text)
        while eng.busy:
            eng.step()
        assert lines, obj
        errors = [a for a in lines if "error" in a]
        warnings = [a for a in lines if "warning" in a]
        answers = [a for a in lines if "turnNumber" in a]
        if errors:
            assert len(errors) == 1 and not answers and not warnings
            assert set(errors[0]) <= {"error", "field", "id"}
        elif "action" in obj:
            assert lines[0]["id"] == obj["id"]  # echoed
        else:
            finals = [a for a in answers if not a["isDuringSearch"]]
            assert finals and all(a["id"] == obj["id"] for a in answers)
            assert len({a["turnNumber"] for a in finals}) == len(finals)  # one final answer per turn
            assert all(set(w) == {"warning", "field", "id"} for w in warnings)


def test_stdio_bytes_long_lines_and_a_flood(tmp_path):
    """Random bytes, a 3 MiB line, then 200 queries of 10 positions against a queue of 50: each is answered (the
    ones past the limit with one error each), the engine ends cleanly at the end of input, memory bounded."""
    import random

    agent = make_agent(tmp_path / "a9.gotk", size=9)
    rng = random.Random(7)
    lines = [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))).replace(b"\n", b" ") for _ in range(100)]
    lines.append(b"{" + b'"x":' * (3 << 18))  # 3 MiB, cut to 1 MiB and unparseable
    lines.append(b"[" * 100_000)  # nested past the JSON parser's recursion limit
    q = {"moves": [["B", "E5"]], "rules": "chinese", "komi": 7, "boardXSize": 9, "boardYSize": 9, "maxVisits": 2,
         "analyzeTurns": [0, 1]}
    flood = [json.dumps({**q, "id": f"f{i}", "analyzeTurns": [0, 1]}).encode() for i in range(200)]
    data = b"\n".join(lines + flood) + b"\n"
    code = ("import sys\nfrom gotk.jobs.workers import peak_rss_mib\nfrom gotk.cli.main import main\n"
            f"sys.argv = ['gotk', 'analysis', '--agent', {str(agent)!r}, '--max-queued', '50', '--threads', '1']\n"
            "try:\n    main()\nfinally:\n    sys.stderr.write('@@%d' % peak_rss_mib())\n")
    res = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, env=ENV, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    out = [json.loads(line) for line in res.stdout.decode().splitlines()]
    by_id: dict = {}
    for a in out:
        by_id.setdefault(a.get("id"), []).append(a)
    assert all("error" in a for a in by_id.pop(None))
    for i in range(200):
        got = by_id[f"f{i}"]
        assert (len(got) == 1 and "--max-queued" in got[0]["error"]) or \
            sorted(a["turnNumber"] for a in got if "turnNumber" in a) == [0, 1]
    served = sum(1 for i in range(200) if "error" not in by_id[f"f{i}"][0])
    assert served >= 25  # the first ones fill the queue; later ones are served as it empties
    assert int(res.stderr.decode().rsplit("@@", 1)[1]) < 2048
