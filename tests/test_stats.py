"""``gotk stats`` on real KGS data: counts checked against an independent reading of the raw SGF bytes,
duplicates across two formats of one archive, a dataset folder, --where, --plots."""

from __future__ import annotations

import json
import re
import tarfile
from collections import Counter
from pathlib import Path

import pytest
from helpers import invoke, sample_dataset

MONTH = "KGS-2017_01-19-733-"


def _raw_counts(archive: Path) -> dict[str, Counter]:
    """Counts read straight from the SGF bytes with regular expressions (not through gotk's reader)."""
    out: dict[str, Counter] = {k: Counter() for k in ("end", "handicap", "year", "rules")}
    with tarfile.open(archive) as tf:
        for m in tf:
            if not m.name.endswith(".sgf"):
                continue
            data = tf.extractfile(m).read()
            re_ = re.search(rb"RE\[([^\]]*)\]", data)
            res = re_.group(1).decode() if re_ else ""
            kind = ("resign" if re.fullmatch(r"[BW]\+R(esign)?", res) else "time" if re.fullmatch(r"[BW]\+T(ime)?", res)
                    else "forfeit" if re.fullmatch(r"[BW]\+F(orfeit)?", res)
                    else "score" if re.fullmatch(r"[BW]\+[\d.]+", res) else "unknown")
            out["end"][kind] += 1
            ha = re.search(rb"HA\[(\d+)\]", data)
            out["handicap"][ha.group(1).decode() if ha else "0"] += 1
            out["year"][re.search(rb"DT\[(\d{4})", data).group(1).decode()] += 1
            out["rules"][re.search(rb"RU\[([^\]]*)\]", data).group(1).decode().lower()] += 1
    return out


def _stats(*args: str) -> dict:
    res = invoke(["stats", *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_stats_on_kgs_archive_matches_raw_bytes(sample_kgs, tmp_path):
    archive = sample_kgs / f"{MONTH}.tar.gz"
    r = _stats(str(archive), str(sample_kgs / f"{MONTH}.zip"), "--plots", str(tmp_path / "plots"))
    raw = _raw_counts(archive)
    assert r["games"] == 733 and r["games_read"] == 2 * 733
    assert r["duplicates"] == 733  # the .zip holds the same games
    assert r["by_source"] == {"kgs": 733} and r["by_year"] == dict(raw["year"])
    assert {k: v for k, v in r["results"].items()} == {k: raw["end"][k] for k in r["results"]}
    assert sum(r["results"].values()) == 733
    assert r["handicap"] == {k: raw["handicap"][k] for k in sorted(raw["handicap"], key=int)}
    assert r["rules"] == {k: v for k, v in sorted(raw["rules"].items())}
    assert sum(r["ranks"].values()) == 2 * 733 == sum(r["rank_bands"].values())
    assert sum(map(sum, r["rank_matrix"]["counts"])) == 733
    assert sum(r["length"]["counts"]) == 733 and 150 < r["length"]["mean"] < 300
    assert 0 < r["bots"]["games_with_bot"] < 733 and r["bots"]["share"] == round(r["bots"]["games_with_bot"] / 733, 4)
    # the plots: real PNG files, one per chart
    names = sorted(Path(p).name for p in r["plots"])
    assert names == ["handicap_komi.png", "length.png", "rank_matrix.png", "ranks.png", "results.png", "years.png"]
    import matplotlib.image as mpimg

    for p in r["plots"]:
        assert Path(p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        h, w = mpimg.imread(p).shape[:2]
        assert h >= 300 and w >= 400


def test_stats_terminal_and_where(sample_kgs):
    archive = str(sample_kgs / f"{MONTH}.tar.gz")
    res = invoke(["stats", archive])
    assert res.exit_code == 0, res.output
    for title in ("games by year and source", "black rank (rows) x white rank (columns)", "handicap", "komi",
                  "result kinds", "game length", "bots:"):
        assert title in res.output, title
    r = _stats(archive, "--where", "handicap = 0 and not (black_is_bot or white_is_bot)")
    assert r["handicap"] == {"0": r["games"]} and r["bots"]["games_with_bot"] == 0
    assert r["skipped"]["filtered_where"] == sum(r["filtered_where"].values()) == 733 - r["games"]
    res = invoke(["stats", archive, "--where", "strength > 3"])
    assert res.exit_code == 2 and "unknown column 'strength'" in res.output and "black_rank" in res.output
    res = invoke(["stats", "/no/such/archive.tar.gz"])
    assert res.exit_code == 2 and "no such file" in res.output


def test_stats_on_dataset(tmp_path_factory):
    ds = sample_dataset(tmp_path_factory)
    m = json.loads((ds / "manifest.json").read_text())
    r = _stats(str(ds))
    assert r["games"] == m["games"]["kept"] and r["positions"] == m["rows"]
    assert r["games_read"] == m["games"]["read"] and r["duplicates"] == m["games"]["skipped"].get("duplicate", 0)
    assert sum(r["results"].values()) == r["games"]
    low = _stats(str(ds), "--where", "white_rank >= 8")
    assert 0 < low["games"] < r["games"] and set(low["rank_bands"]) >= {"8d"}
    bands = low["rank_matrix"]["bands"]
    assert all(row[j] == 0 for row in low["rank_matrix"]["counts"] for j, b in enumerate(bands)
               if b not in ("8d", "9d", "1p-9p"))  # no white player below 8d (nor unknown)


def test_old_dataset_gets_a_clear_reencode_error(tmp_path_factory, tmp_path):
    """A schema-1 dataset (games.parquet without normalised metadata) is refused with the re-encode message
    by every reader of the games table: stats, the loader's where=, eval --by rank."""
    import shutil

    from gotk.datasets import iter_numpy_batches

    ds = sample_dataset(tmp_path_factory)
    old = tmp_path / "old"
    shutil.copytree(ds, old)
    m = json.loads((old / "manifest.json").read_text())
    m["schema_version"] = 1
    (old / "manifest.json").write_text(json.dumps(m))
    res = invoke(["stats", str(old)])
    assert res.exit_code == 2 and "schema_version 1; this gotk reads version 2 (re-encode" in res.output
    with pytest.raises(ValueError, match="re-encode the dataset"):
        next(iter_numpy_batches(old, "val", where="white_rank >= 7"))
