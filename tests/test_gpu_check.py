"""``bench/gpu_check.py --tiny --device cpu``: the GPU check's every step (encode, train recipe (b), evaluate on
the held-out month, throughput, self-play) on a few real games, so that the one GPU command cannot rot."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from bench import gpu_check

GNUGO = Path("/usr/games/gnugo")
SLOW_ENGINE = """#!PYTHON
import sys, time
if "--version" in sys.argv:
    print("slowgo 1")
    sys.exit(0)
for line in sys.stdin:
    if line.startswith("genmove"):
        time.sleep(600)
    print("= slowgo\\n" if line.startswith("name") else "= \\n", flush=True)
"""
NO_GNUGO = [s for s in gpu_check.STEPS if s != "gnugo"]  # the gnugo step has a test of its own


@pytest.fixture(scope="module")
def tiny_kgs(tmp_path_factory, sample_archive) -> Path:
    """A KGS-like folder of real games: 6 in a 2017-01 archive (train/val), 2 in a 2017-03 archive (the default
    ``--test-from``) and 2 in a 2017-02 archive (left out, as recipe (b) leaves it out)."""
    from gotk.sources.archives import SgfSource, iter_sources

    folder = tmp_path_factory.mktemp("gpu-check-kgs")
    items = [s for s in iter_sources([sample_archive]) if isinstance(s, SgfSource)][:10]
    for name, part in (("KGS-2017_01-19-6-.zip", items[:6]), ("KGS-2017_03-19-2-.zip", items[6:8]),
                       ("KGS-2017_02-19-2-.zip", items[8:])):
        with zipfile.ZipFile(folder / name, "w") as zf:
            for s in part:
                zf.writestr(s.member, s.data)
    return folder


def test_gpu_check_tiny(tiny_kgs: Path, tmp_path: Path) -> None:
    from gotk.nets.agent import load_agent

    out = tmp_path / "out"
    rc = gpu_check.main(["--tiny", "--device", "cpu", "--kgs", str(tiny_kgs), "--out", str(out),
                         "--work", str(tmp_path / "work"), "--encode-workers", "1",
                         "--steps", ",".join(NO_GNUGO)])
    report = json.loads((out / "gpu_check.json").read_text())
    assert rc == 0, {k: v.get("error") for k, v in report["steps"].items()}
    steps = report["steps"]
    assert list(steps) == NO_GNUGO and report["ok"] is True
    assert all(s["ok"] and s["seconds"] >= 0 for s in steps.values())

    enc = steps["encode"]
    assert enc["archives"] == ["KGS-2017_01-19-6-.zip", "KGS-2017_03-19-2-.zip"]  # 2017-02 left out
    assert enc["test_from"] == ["*2017_03*"] and enc["encoder"] == "alphago"
    assert enc["splits"]["test"]["games"] == 2 and enc["splits"]["test"]["rows"] > 0
    assert enc["splits"]["train"]["games"] + enc["splits"]["val"]["games"] == 6

    train = steps["train"]
    s = train["settings"]  # recipe (b) reached the run, the tiny overrides on top
    assert (s["model"], s["optimizer"], s["lr"], s["amp"], s["channels_last"]) == ("resnet", "sgd", 0.2, True, True)
    assert train["steps"] == 6 and train["samples_seen"] == 6 * s["batch_size"]

    ev = steps["evaluate"]
    assert ev["split"] == "test" and ev["positions"] == enc["splits"]["test"]["rows"]
    assert 0.0 <= ev["top1"] <= ev["top5"] <= 1.0

    tp = steps["throughput"]
    assert tp["samples_per_s"] > 0 and tp["train_flops_per_sample"] > 0 and tp["windows"] == 3
    assert tp["peak_share"] is None  # a CPU is not in the peak table

    (run,) = steps["selfplay"]["runs"]
    assert run["positions"] == run["games"] * run["max_moves"] > 0  # every move a full search, recorded
    assert run["positions_per_s"] > 0 and run["evaluations_per_s"] > 0 and run["mean_batch"] > 0
    assert 0.0 <= run["outside_network_share"] <= 1.0 and run["simulations"] == 4

    one, two = steps["selfplay_workers"]["runs"]  # gotk selfplay's command line, 1 then 2 processes
    assert (one["workers"], two["workers"], one["device"]) == (1, 2, "cpu")
    assert two["games"] == 2 * one["games"] == 8 and two["positions"] == 2 * one["positions"] == 8 * 3
    assert steps["selfplay_workers"]["speedup"] > 0

    agent = load_agent(out / "agent.gotk")
    assert agent.board_size == 19 and agent.meta["model"]["name"] == "resnet"
    assert (out / "train-metrics.jsonl").is_file()


@pytest.mark.skipif(not GNUGO.exists(), reason="GNU Go is not installed at /usr/games/gnugo")
def test_gpu_check_tiny_value_head_and_gnugo(tiny_kgs: Path, tmp_path: Path) -> None:
    """Both heads on planes with the colour to move: the evaluate step reports the test value MSE beside the
    komi/handicap baseline; the gnugo step plays the trained agent against the real GNU Go, colours alternating,
    and writes a report that ``gotk elo`` reads."""
    from gotk.play.elo import read_match_reports

    out = tmp_path / "out"
    rc = gpu_check.main(["--tiny", "--device", "cpu", "--kgs", str(tiny_kgs), "--out", str(out),
                         "--work", str(tmp_path / "work"), "--encode-workers", "1", "--head", "both",
                         "--value-weight", "2", "--positions-per-game", "4", "--encoder-option", "player_plane=true",
                         "--match-processes", "2", "--match-minutes", "0.3", "--steps", "encode,train,evaluate,gnugo"])
    report = json.loads((out / "gpu_check.json").read_text())
    assert rc == 0, {k: v.get("error") for k, v in report["steps"].items()}
    steps = report["steps"]
    assert steps["encode"]["encoder_options"] == {"player_plane": True}
    assert Path(steps["encode"]["data"]).name == "data-alphago-player_plane=True-tiny"
    s = steps["train"]["settings"]
    assert (s["head"], s["value_weight"], s["positions_per_game"]) == ("both", 2.0, 4)
    assert "val_value_mse" in steps["train"]  # None here: the tiny archives leave no validation games
    ev = steps["evaluate"]
    assert 0 < ev["value_positions"] <= ev["positions"] and 0.0 <= ev["value_mse"] <= 4.0
    assert 0.0 <= ev["komi_handicap_mse"] <= 4.0 and 0.0 <= ev["value_sign_accuracy"] <= 1.0

    g = steps["gnugo"]
    assert g["opponent"].endswith("--mode gtp --level 1 --chinese-rules") and g["processes"] == 2
    assert g["visits"] == 2 and g["search"] == " ".join(gpu_check.MATCH_SEARCH)
    assert g["games"] >= 2 and not g["failed"]
    games = json.loads((out / "gnugo-match.json").read_text())["per_game"]
    assert [x["game"] for x in games] == list(range(1, len(games) + 1))  # no game was cut in a tiny run
    assert [x["agent_colour"] for x in games] == ["B", "W"] * (len(games) // 2) + ["B"] * (len(games) % 2)
    assert all(x["moves"] <= 6 and Path(x["sgf"]).is_file() for x in games)
    assert g["wins"] == sum(x["winner"] == x["agent_colour"] for x in games)
    assert g["by_colour"]["B"]["games"] + g["by_colour"]["W"]["games"] == g["games"]
    pairs = read_match_reports([out / "gnugo-match.json"])  # (black, white, black's score) of each decided game
    assert len(pairs) == sum(x["winner"] is not None for x in games)
    for (black, white, score), x in zip(pairs, [x for x in games if x["winner"] is not None], strict=True):
        assert (black, white) == (("gpu-check-agent", "gnugo-1") if x["agent_colour"] == "B"
                                  else ("gnugo-1", "gpu-check-agent"))
        assert score == (1.0 if x["winner"] == "B" else 0.0)

    slow = tmp_path / "slowgo"  # a GTP engine that never answers genmove and ignores the end of its input
    slow.write_text(SLOW_ENGINE.replace("PYTHON", sys.executable))
    slow.chmod(0o755)
    cut = gpu_check.main(["--tiny", "--device", "cpu", "--kgs", str(tiny_kgs), "--out", str(tmp_path / "cut"),
                          "--work", str(tmp_path / "work"), "--encode-workers", "1", "--match-processes", "2",
                          "--match-minutes", "0.15", "--match-timeout", "300", "--gnugo", str(slow),
                          "--steps", "encode,train,gnugo"])
    g = json.loads((tmp_path / "cut" / "gpu_check.json").read_text())["steps"]["gnugo"]
    # a policy-only agent plays its policy; both games are cut, and the engine stops with them
    assert (g["visits"], g["search"]) == (0, "the policy alone (no value head)")
    assert cut == 0 and (g["games"], g["cut"], g["wins"], g["ci95"]) == (0, 2, 0, [0.0, 1.0])
    left = subprocess.run(["pgrep", "-f", str(slow)], capture_output=True)
    assert left.returncode == 1, left.stdout

    bad = gpu_check.main(["--tiny", "--device", "cpu", "--kgs", str(tiny_kgs), "--out", str(tmp_path / "bad"),
                          "--work", str(tmp_path / "work"), "--encode-workers", "1", "--gnugo",
                          str(tmp_path / "no-gnugo"), "--steps", "encode,train,gnugo"])
    err = json.loads((tmp_path / "bad" / "gpu_check.json").read_text())["steps"]["gnugo"]["error"]
    assert bad == 1 and "GNU Go does not start" in err and "--gnugo PATH" in err


def test_a_failing_step_is_recorded_and_the_next_runs(tmp_path: Path) -> None:
    empty = tmp_path / "kgs"
    empty.mkdir()
    out = tmp_path / "out"
    rc = gpu_check.main(["--tiny", "--device", "cpu", "--kgs", str(empty), "--out", str(out),
                         "--work", str(tmp_path / "work"), "--steps", "encode,train,throughput"])
    assert rc == 1
    report = json.loads((out / "gpu_check.json").read_text())
    steps = report["steps"]
    assert report["ok"] is False and list(steps) == ["encode", "train", "throughput"]
    assert "no archives" in steps["encode"]["error"]
    assert "encode step failed" in steps["train"]["error"] and "train step failed" in steps["throughput"]["error"]
