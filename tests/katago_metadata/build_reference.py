"""Build KataGo's own metadata rows for gotk's tests: compile harness.cpp against a KataGo source checkout and write
``tests/data/katago_metadata_rows.json`` (the cases, gotk's inputs for them, and KataGo's answers).

    python tests/katago_metadata/build_reference.py --katago /path/to/KataGo [--kgs DIR] [--out FILE]

``--katago`` is a KataGo checkout (its ``cpp/`` folder) or a bare git mirror of one (the files it needs are taken
from its HEAD with ``git show``). Only what ``cpp/neuralnet/sgfmetadata.cpp`` needs is compiled (core/, game/board);
``parseSGFRank``, ``isLikelyBot`` and the KGS/OGS time-control rules of ``cpp/command/writetrainingdata.cpp`` are
cut out of that file (by name and by the text that opens them) into ``extracted.inc``, because the file as a
whole needs all of KataGo. The test ``tests/test_metadata_inputs.py`` calls :func:`build_harness` and :func:`run`
too (when ``GOTK_KATAGO_SRC`` names a checkout) to compare live.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OUT = ROOT / "tests" / "data" / "katago_metadata_rows.json"
sys.path.insert(0, str(ROOT))

from gotk.encoders import metadata_inputs as MI  # noqa: E402

SOURCES = ["cpp/neuralnet/sgfmetadata.cpp", "cpp/core/global.cpp", "cpp/core/datetime.cpp", "cpp/core/hash.cpp",
           "cpp/core/rand.cpp", "cpp/core/bsearch.cpp", "cpp/core/test.cpp", "cpp/core/md5.cpp", "cpp/core/sha2.cpp",
           "cpp/core/timer.cpp", "cpp/game/board.cpp"]
TRAINING = "cpp/command/writetrainingdata.cpp"
FIELDS = ["black_inverse_rank", "white_inverse_rank", "black_unranked", "white_unranked", "black_rank_unknown",
          "white_rank_unknown", "black_human", "white_human", "unrated", "ratedness_unknown", "time_control",
          "main_time_s", "period_time_s", "periods", "canadian_moves", "date", "source"]


# --- the KataGo sources -----------------------------------------------------------------------------

def checkout(katago: Path, into: Path) -> tuple[Path, str]:
    """``(folder holding cpp/, commit or "")``: ``katago`` itself when it is a checkout, else its HEAD's ``cpp/core``,
    ``cpp/game``, sgfmetadata, nlohmann_json and writetrainingdata written under ``into`` from the bare mirror."""
    if (katago / "cpp" / "neuralnet" / "sgfmetadata.cpp").is_file():
        commit = subprocess.run(["git", "-C", str(katago), "rev-parse", "HEAD"], capture_output=True, text=True)
        return katago, commit.stdout.strip()
    git = ["git", "--git-dir", str(katago)]
    commit = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    names = subprocess.run(git + ["ls-tree", "-r", "--name-only", "HEAD", "cpp/core", "cpp/game",
                                  "cpp/neuralnet/sgfmetadata.cpp", "cpp/neuralnet/sgfmetadata.h",
                                  "cpp/external/nlohmann_json",
                                  TRAINING],
                           capture_output=True, text=True, check=True).stdout.split()
    for name in names:
        dest = into / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(subprocess.run(git + ["show", f"HEAD:{name}"], capture_output=True, check=True).stdout)
    return into, commit


def _block_end(text: str, open_brace: int) -> int:
    """The index after the ``}`` matching the ``{`` at ``open_brace`` (comments, string and char literals skipped)."""
    depth, i = 0, open_brace
    while i < len(text):
        c = text[i]
        if text.startswith("//", i):
            i = text.index("\n", i)
        elif text.startswith("/*", i):
            i = text.index("*/", i) + 1
        elif c in "\"'":
            i += 1
            while text[i] != c:
                i += 2 if text[i] == "\\" else 1
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError("unbalanced braces")


def _function(text: str, opening: str) -> str:
    start = text.index(opening)
    return text[start:_block_end(text, text.index("{", start))]


def _if_chain(text: str, start: int) -> str:
    """The ``if(...) {...} else if(...) {...} else {...}`` chain that starts at ``start``."""
    end = _block_end(text, text.index("{", start))
    while text[end:].lstrip().startswith("else"):
        end = _block_end(text, text.index("{", end))
    return text[start:end]


def extracted(src: Path) -> str:
    """``extracted.inc``: KataGo's ``isLikelyBot``, ``parseSGFRank`` and its KGS/OGS time-control block wrapped in
    ``kgsTimeControl(TM, OT, meta)`` (returns the reason KataGo rejects the game, or "")."""
    text = (src / TRAINING).read_text(encoding="utf-8")
    bot = _function(text, "static bool isLikelyBot(")
    rank = _function(text, "static void parseSGFRank(")
    anchor = text.index('if(whatDataSource == "ogs" || whatDataSource == "kgs") {\n      assumeMultipleStartingBlack')
    chain = _if_chain(text, text.index('if(sgfTM != "" && sgfOT != "")', anchor))
    flags = ["tcIsUnknown", "tcIsNone", "tcIsAbsolute", "tcIsSimple", "tcIsByoYomi", "tcIsCanadian", "tcIsFischer"]
    return "\n".join([
        "// Cut out of KataGo's cpp/command/writetrainingdata.cpp by build_reference.py.", bot, rank,
        "static string kgsTimeControl(const string& sgfTM, const string& sgfOT, SGFMetadata& meta) {",
        "  HarnessLogger logger;", '  const string fileName = "harness";', "  string rejected;",
        "  auto reportSgfDone = [&](bool, const string& why) { rejected = why; };",
        "  " + " ".join(f"bool {f} = false;" for f in flags),
        "  double mainTimeSeconds = 0.0; double periodTimeSeconds = 0.0;",
        "  int byoYomiPeriods = 0; int canadianMoves = 0;",
        "  [&]() {", chain, "  }();",
        "  " + " ".join(f"meta.{f} = {f};" for f in flags),
        "  meta.mainTimeSeconds = mainTimeSeconds; meta.periodTimeSeconds = periodTimeSeconds;",
        "  meta.byoYomiPeriods = byoYomiPeriods; meta.canadianMoves = canadianMoves;",
        "  return rejected;", "}", ""])


def build_harness(katago: Path, work: Path) -> tuple[Path, str]:
    """Compile harness.cpp against ``katago`` (checkout or bare mirror) in ``work``: ``(binary, commit)``."""
    src, commit = checkout(katago, work / "katago")
    (work / "extracted.inc").write_text(extracted(src), encoding="utf-8")
    exe = work / "harness"
    cmd = ["g++", "-O2", "-std=c++17", "-w", f"-I{src / 'cpp'}", f"-I{work}", "-include", "cmath",
           str(HERE / "harness.cpp"), *(str(src / s) for s in SOURCES), "-o", str(exe)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"g++ failed: {done.stderr[-2000:]}")
    return exe, commit


def run(exe: Path, cases: list[list[str]]) -> list[str]:
    """The harness's answer line (without ``ok``, or ``error ...``) of every case."""
    text = "".join("\t".join(c) + "\n" for c in cases)
    out = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True).stdout.splitlines()
    if len(out) != len(cases):
        raise RuntimeError(f"harness answered {len(out)} lines for {len(cases)} cases")
    return [line[3:] if line.startswith("ok ") else line for line in out]


# --- the cases --------------------------------------------------------------------------------------

def meta_json(m: MI.Metadata) -> dict:
    d = asdict(m)
    d["date"] = m.date.isoformat()
    return d


def meta_from_json(d: dict) -> MI.Metadata:
    return MI.Metadata(**{**d, "date": dt.date.fromisoformat(d["date"])})


def row_case(m: MI.Metadata, player: str, area: int) -> list[str]:
    """A harness ``row`` case of ``m`` (gotk's fields in KataGo's order)."""
    v = [m.black_inverse_rank, m.white_inverse_rank, m.black_unranked, m.white_unranked, m.black_rank_unknown,
         m.white_rank_unknown, m.black_human, m.white_human, m.unrated, m.ratedness_unknown,
         MI.TIME_CONTROLS.index(m.time_control), repr(float(m.main_time_s)), repr(float(m.period_time_s)),
         m.periods, m.canadian_moves, m.date.isoformat(), m.source]
    return ["row", *(str(int(x)) if isinstance(x, bool) else str(x) for x in v), player, str(area)]


def kgs_games(kgs: Path, want: int = 40) -> list[dict]:
    """Up to ``want`` KGS games of many ranks and clocks: their raw headers and gotk's normalised metadata."""
    from gotk.sgf.metadata import normalise_record, record_headers
    from gotk.sgf.reader import iter_sgf
    from gotk.sources.archives import SgfSource, iter_sources

    seen: set = set()
    games = []
    for path in sorted(kgs.glob("*.tar.gz")):
        per_archive = 0
        for item in iter_sources([path]):
            if not isinstance(item, SgfSource) or per_archive >= want // 4:
                continue
            for rec in iter_sgf(item.data, item.archive, item.member):
                if isinstance(rec, Exception):
                    continue
                norm = normalise_record(rec)
                key = (norm["black_rank_raw"], norm["white_rank_raw"] != "", norm["time_system"], rec.size)
                if key in seen:
                    continue
                seen.add(key)
                per_archive += 1
                h = record_headers(rec)
                games.append({"archive": item.archive, "member": item.member, "size": rec.size,
                              "headers": {k: h.get(k) or "" for k in ("BR", "WR", "TM", "OT", "PB", "PW", "DT")},
                              "normalised": {k: v for k, v in norm.items()}})
    return games


def hand_metas() -> list[tuple[str, MI.Metadata]]:
    """Hand-made metadata: every rank kind, bots, every time control, dates on both sides of 1970 and after 2020."""
    base = dict(black_inverse_rank=5, white_inverse_rank=12, source=2, date=dt.date(2017, 1, 13))
    out = [
        ("unranked black", MI.Metadata(**{**base, "black_unranked": True, "black_inverse_rank": 0})),
        ("unranked both", MI.Metadata(**{**base, "black_unranked": True, "white_unranked": True,
                                         "black_inverse_rank": 0, "white_inverse_rank": 0})),
        ("unknown white", MI.Metadata(**{**base, "white_rank_unknown": True, "white_inverse_rank": 0})),
        ("pro", MI.Metadata(**{**base, "black_inverse_rank": 1, "white_inverse_rank": 1, "source": 5,
                              "ratedness_unknown": False})),
        ("30k vs 9d", MI.Metadata(**{**base, "black_inverse_rank": 39, "white_inverse_rank": 1})),
        ("bot black", MI.Metadata(**{**base, "black_human": False})),
        ("bots both", MI.Metadata(**{**base, "black_human": False, "white_human": False, "unrated": True,
                                     "ratedness_unknown": False})),
        ("rated", MI.Metadata(**{**base, "ratedness_unknown": False})),
        ("unrated", MI.Metadata(**{**base, "unrated": True, "ratedness_unknown": False})),
        ("tc unknown", MI.Metadata(**base)),
        ("tc none", MI.Metadata(**{**base, "time_control": "none"})),
        ("tc absolute", MI.Metadata(**{**base, "time_control": "absolute", "main_time_s": 1800.0})),
        ("tc simple", MI.Metadata(**{**base, "time_control": "simple", "period_time_s": 30.0})),
        ("tc byo-yomi", MI.Metadata(**{**base, "time_control": "byo-yomi", "main_time_s": 600.0,
                                      "period_time_s": 30.0, "periods": 5})),
        ("tc canadian", MI.Metadata(**{**base, "time_control": "canadian", "main_time_s": 900.0,
                                      "period_time_s": 600.0 / 25, "canadian_moves": 25})),
        ("tc fischer", MI.Metadata(**{**base, "time_control": "fischer", "main_time_s": 300.0,
                                     "period_time_s": 10.0})),
        ("capped times", MI.Metadata(**{**base, "time_control": "byo-yomi", "main_time_s": 1e7,
                                       "period_time_s": 2e5, "periods": 80, "canadian_moves": 70})),
        ("fractional times", MI.Metadata(**{**base, "time_control": "canadian", "main_time_s": 0.1,
                                           "period_time_s": 1.0 / 3, "canadian_moves": 3})),
        ("tygem", MI.Metadata(**{**base, "source": 4})), ("fox", MI.Metadata(**{**base, "source": 3})),
        ("ogs", MI.Metadata(**{**base, "source": 1})), ("go4go", MI.Metadata(**{**base, "source": 6})),
        ("other source", MI.Metadata(**{**base, "source": 0})),
    ]
    for d in (dt.date(1846, 9, 11), dt.date(1969, 12, 31), dt.date(1970, 1, 1), dt.date(1600, 2, 29),
              dt.date(2000, 2, 29), dt.date(2021, 7, 4), dt.date(2024, 12, 31), dt.date(2099, 3, 1)):
        out.append((f"date {d}", MI.Metadata(**{**base, "date": d})))
    return out


PROFILES = (["rank_9d", "rank_1d", "rank_1k", "rank_20k", "rank_3d_1k", "rank_20k_9d", "preaz_5d", "preaz_12k_2d",
             "proyear_1800", "proyear_1950", "proyear_2020", "proyear_2021", "proyear_2023", " proyear_2000",
             "proyear_ 2000", "proyear_+1990", "proyear_1799", "proyear_2024", "proyear_abc", "rank_21k", "rank_10d",
             "rank_1p", "rank_3d_", "rank_3d_1k_2k", "preaz_", "bogus", "Rank_3d"])
RANKS = ["", "?", "-", "1k", "30k", "5 kyu", "5 k", "5kyu", "1d", "9d", "12d", "5 dan", "5dan", "5 d", "1p", "9p",
         "5 pro", "3pro", "3a", "4d ama", "2k ama", "insei", "Ama", "meijin", "3段", "4级", "5k?", "0k", "45k", "NR"]
TIMES = [("", ""), ("600", ""), ("0", ""), ("600", "5x30 byo-yomi"), ("0", "3x10 byo-yomi"),
         ("900", "25/600 Canadian"), ("300", "10 fischer"), ("0", "30 simple"), ("1800", "1/30 canadian"),
         ("", "5x30 byo-yomi"), ("600", "whenever"), ("1.5", "5x2.5 byo-yomi"), ("3600", "25/300 Canadian")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--katago", type=Path, required=True, help="KataGo checkout or bare git mirror")
    kgs = os.environ.get("GOTK_SHARED_KGS") or ROOT.parent / "shared" / "kgs"
    ap.add_argument("--kgs", type=Path, default=Path(kgs),
                    help="KGS archives folder (default: as tests/conftest.py's KGS_DIR)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gotk-katago-meta-") as tmp:
        exe, commit = build_harness(args.katago, Path(tmp))
        games = kgs_games(args.kgs)
        rows: list[dict] = []
        for i, g in enumerate(games):
            m = MI.from_normalised(g["normalised"])
            rows += [{"case": f"kgs game {i}", "game": i, "meta": meta_json(m), "player": p,
                      "area": g["size"] * g["size"]} for p in "BW"]
        for name, m in hand_metas():
            rows += [{"case": name, "meta": meta_json(m), "player": p, "area": a}
                     for p, a in (("B", 361), ("W", 361), ("B", 81), ("W", 19 * 13), ("B", 25))]
        answers = run(exe, [row_case(meta_from_json(r["meta"]), r["player"], r["area"]) for r in rows])
        for r, a in zip(rows, answers, strict=True):
            r["katago"] = a
        profiles = [{"name": n, "katago": a}
                    for n, a in zip(PROFILES, run(exe, [["profile", n] for n in PROFILES]), strict=True)]
        rank_cases = [(s, r) for s in ("kgs", "ogs", "gogod") for r in RANKS]
        ranks = [{"source": s, "text": r, "katago": a}
                 for (s, r), a in zip(rank_cases, run(exe, [["rank", s, r] for s, r in rank_cases]), strict=True)]
        times = [{"tm": tm, "ot": ot, "katago": a}
                 for (tm, ot), a in zip(TIMES, run(exe, [["time", *t] for t in TIMES]), strict=True)]
    errors = [r["case"] for r in rows if r["katago"].startswith("error")]
    if errors:
        raise SystemExit(f"KataGo refused rows: {errors[:5]}")
    doc = {"katago_commit": commit, "fields": FIELDS, "games": games, "rows": rows, "profiles": profiles,
           "ranks": ranks, "times": times}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{args.out}: {len(games)} games, {len(rows)} rows, {len(profiles)} profiles, {len(ranks)} ranks, "
          f"{len(times)} clocks (KataGo {commit[:10]})")


if __name__ == "__main__":
    main()
