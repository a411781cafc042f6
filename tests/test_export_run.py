"""``gotk export`` end to end: the CLI, a dataset folder as input, refusals, and SIGKILL then --resume."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import archive_slice, run_and_kill
from typer.testing import CliRunner

from gotk.cli.main import app
from gotk.export.run import ExportOptions, export
from gotk.sgf.record import parse_result

runner = CliRunner()


def _chunks(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("train.*"))}


@pytest.fixture(scope="module")
def source(tmp_path_factory, sample_archive) -> Path:
    return archive_slice(sample_archive, tmp_path_factory.mktemp("export-src"), 60)


def test_cli_export_leela_zero(tmp_path, source):
    out = tmp_path / "lz"
    res = runner.invoke(app, ["export", str(source), "--format", "leela-zero", "--out", str(out), "--no-progress",
                              "--workers", "1", "--games-per-chunk", "16", "--seed", "3", "--json"])
    assert res.exit_code == 0, res.output
    m = json.loads(res.output)
    assert m["export_format"] == "leela-zero" and m["games"]["read"] == 60
    assert len(m["files"]) == -(-m["games"]["kept"] // 16)
    assert [f["games"] for f in m["files"][:-1]] == [16] * (len(m["files"]) - 1)
    assert sorted(f["file"] for f in m["files"]) == sorted(_chunks(out))
    assert json.loads((out / "export.json").read_text())["positions"] == m["positions"] > 0
    # the same folder again: refused without --resume, a no-op with it
    again = runner.invoke(app, ["export", str(source), "--format", "leela-zero", "--out", str(out), "--no-progress"])
    assert again.exit_code == 2 and "--resume" in again.output
    done = runner.invoke(app, ["export", str(source), "--format", "leela-zero", "--out", str(out), "--no-progress",
                               "--games-per-chunk", "16", "--seed", "3", "--resume"])
    assert done.exit_code == 0 and "already complete" in done.output
    other = runner.invoke(app, ["export", str(source), "--format", "leela-zero", "--out", str(out), "--no-progress",
                                "--games-per-chunk", "16", "--seed", "4", "--resume"])
    assert other.exit_code == 2 and "options.seed is 3 in the run, 4 now" in other.output


def test_cli_refusals(tmp_path, source):
    bad = runner.invoke(app, ["export", str(source), "--format", "gnugo", "--out", str(tmp_path / "a")])
    assert bad.exit_code == 2 and "leela-zero" in bad.output
    size = runner.invoke(app, ["export", str(source), "--format", "leela-zero", "--board-size", "9",
                               "--out", str(tmp_path / "b")])
    assert size.exit_code == 2 and "19x19 only" in size.output
    missing = runner.invoke(app, ["export", str(tmp_path / "nope.zip"), "--format", "leela-zero",
                                  "--out", str(tmp_path / "d")])
    assert missing.exit_code == 2 and "no such file" in missing.output


def test_where_filters_as_encode_does(tmp_path, source):
    """--where (gotk.shards.where, applied by the shared scan): the games exported are the games a gotk encode
    with the same expression keeps (less those Leela Zero data cannot use), the filtered counts the same."""
    from gotk.jobs.encode import EncodeOptions, encode_dataset

    where = "min(black_rank, white_rank) >= 6d and handicap = 0"
    ds = tmp_path / "ds"
    em = encode_dataset([source], ds, EncodeOptions(encoder="oneplane", split="train=1", where=where), workers=1,
                        progress=False)
    m = export([source], tmp_path / "w", ExportOptions(format="leela-zero", where=where, keep_time_wins=True),
               workers=1, progress=False)
    assert m["games"]["skipped"]["filtered_where"] == em["games"]["skipped"]["filtered_where"] > 0
    assert m["games"]["filtered_where"] == em["games"]["filtered_where"]
    games = pq.read_table(ds / "games.parquet").to_pydict()
    usable = sum(1 for w, p in zip(games["winner"], games["partial"], strict=True) if w and not p)
    assert m["games"]["kept"] == usable
    bad = runner.invoke(app, ["export", str(source), "--format", "leela-zero", "--where", "nonsense >",
                              "--out", str(tmp_path / "bad")])
    assert bad.exit_code == 2 and "where" in bad.output


def test_dask_executor_same_bytes(tmp_path, source):
    from gotk.executors import dask_available

    if not dask_available():
        pytest.skip("dask.distributed is not installed (test extra)")
    ref = tmp_path / "ref"
    export([source], ref, ExportOptions(format="leela-zero", games_per_chunk=7), workers=1, progress=False)
    out = tmp_path / "dask"
    m = export([source], out, ExportOptions(format="leela-zero", games_per_chunk=7), workers=2, progress=False,
               unit_size=9, executor="dask")
    assert m["run"]["executor"] == "dask"
    assert _chunks(out) == _chunks(ref) and (out / "export.json").read_bytes() == (ref / "export.json").read_bytes()


def test_dataset_folder_as_input(tmp_path, source):
    """A gotk encode dataset is exported from the archives its manifest lists, its games only."""
    from gotk.jobs.encode import EncodeOptions, encode_dataset

    ds = tmp_path / "ds"
    encode_dataset([source], ds, EncodeOptions(encoder="oneplane", split="train=0.7,test=0.3"), workers=1,
                   progress=False)
    direct = tmp_path / "direct"
    export([source], direct, ExportOptions(format="leela-zero", games_per_chunk=8), workers=1, progress=False)
    via = tmp_path / "via"
    m = export([ds], via, ExportOptions(format="leela-zero", games_per_chunk=8), workers=1, progress=False)
    assert m["dataset"] == str(ds)
    games = pq.read_table(ds / "games.parquet").to_pydict()
    # every dataset game with a winner, not on time, and no stop mid-game is exported: the same chunks' bytes
    ok = [bool(w) and not p and parse_result(r).reason != "time"
          for w, p, r in zip(games["winner"], games["partial"], games["result"], strict=True)]
    assert m["games"]["kept"] == sum(ok) > 0
    assert _chunks(via) == _chunks(direct)
    train = tmp_path / "train"
    mt = export([ds], train, ExportOptions(format="leela-zero", split="train"), workers=1, progress=False)
    n_train = sum(1 for k, s in zip(ok, games["split"], strict=True) if k and s == "train")
    assert mt["games"]["kept"] == n_train and mt["games"]["not_in_dataset"] > 0
    with pytest.raises(Exception, match="split"):
        export([ds], tmp_path / "x", ExportOptions(format="leela-zero", split="val"), workers=1, progress=False)


def test_dataset_of_loose_files_is_refused_clearly(tmp_path):
    from gotk.export.run import ExportError
    from gotk.jobs.encode import EncodeOptions, encode_dataset

    src = tmp_path / "sgf"
    src.mkdir()
    (src / "a.sgf").write_text("(;GM[1]SZ[19]RE[B+R];B[pd];W[dp];B[dd])")
    ds = tmp_path / "ds"
    encode_dataset([src], ds, EncodeOptions(encoder="oneplane", split="train=1"), workers=1, progress=False)
    with pytest.raises(ExportError, match="loose .sgf"):
        export([ds], tmp_path / "out", ExportOptions(format="leela-zero"), workers=1, progress=False)
    res = runner.invoke(app, ["export", str(ds), "--format", "leela-zero", "--out", str(tmp_path / "o2")])
    assert res.exit_code == 2 and "export those files" in res.output


def _cmd(src: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "gotk", "export", str(src), "--format", "leela-zero", "--out", str(out),
            "--no-progress", "--workers", "2", "--unit-size", "8", "--games-per-chunk", "3", "--compress-level", "9",
            "--seed", "11", *extra]


def test_sigkill_then_resume_is_byte_identical(tmp_path, sample_archive):
    source = archive_slice(sample_archive, tmp_path, 160)
    ref = tmp_path / "ref"
    export([source], ref, ExportOptions(format="leela-zero", games_per_chunk=3, compress_level=9, seed=11),
           workers=1, progress=False)
    out = tmp_path / "killed"
    run_and_kill(_cmd(source, out), lambda: len(list((out / ".work" / "files").glob("*.json"))) >= 3)
    assert not (out / "export.json").exists() and (out / ".work" / "run.json").exists()
    other = subprocess.run(_cmd(source, out, "--resume", "--seed", "12"), capture_output=True, text=True, timeout=300)
    assert other.returncode == 2 and "differ" in other.stderr
    res = subprocess.run(_cmd(source, out, "--resume", "--json"), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    run = json.loads(res.stdout)["run"]
    assert run["files_reused"] >= 3
    assert _chunks(out) == _chunks(ref)
    assert (out / "export.json").read_bytes() == (ref / "export.json").read_bytes()
    assert not list(out.rglob("*.tmp")) and not (out / ".work").exists()


def test_cli_export_katago(tmp_path, sample_archive):
    """--format katago end to end: files of --rows-per-file rows, every row of every kept game exactly once
    (shuffled), the same bytes with 1 or 2 workers."""
    from collections import Counter

    import numpy as np

    from gotk.export.run import katago_available

    if not katago_available():
        pytest.skip("gotk.export.katago is not in this build")
    from gotk.export import katago as KG
    from gotk.sgf.reader import read_sgf
    from gotk.shards.gameid import game_id
    from gotk.sources.archives import SgfSource, iter_sources

    src = archive_slice(sample_archive, tmp_path, 8)
    out = tmp_path / "kg"
    res = runner.invoke(app, ["export", str(src), "--format", "katago", "--out", str(out), "--no-progress",
                              "--workers", "1", "--rows-per-file", "500", "--seed", "5", "--json"])
    assert res.exit_code == 0, res.output
    m = json.loads(res.output)
    files = sorted(out.glob("train.*.npz"))
    assert [f.name for f in files] == [e["file"] for e in m["files"]]

    def key(arrays: dict, i: int) -> bytes:
        return b"".join(np.ascontiguousarray(arrays[k][i]).tobytes() for k in KG.NPZ_LAYOUT)

    got: Counter = Counter()
    for f, entry in zip(files, m["files"], strict=True):
        with np.load(f) as z:
            arrays = {k: z[k] for k in z.files}
        assert set(arrays) == set(KG.NPZ_LAYOUT)
        n = len(arrays["globalInputNC"])
        assert n == entry["positions"] <= 500
        for k, (dtype, shape) in KG.NPZ_LAYOUT.items():
            assert arrays[k].dtype == dtype and arrays[k].shape == (n, *shape)
        got.update(key(arrays, i) for i in range(n))
    expected: Counter = Counter()
    kept = 0
    for s in iter_sources([src]):
        if not isinstance(s, SgfSource):
            continue
        for rec in read_sgf(s.data):
            if rec.result.winner is None or rec.defect is not None:
                continue
            try:
                rows = KG.katago_game_rows(rec, game_id=game_id(rec))
            except Exception:  # noqa: BLE001 - a refused game is a counted skip of the run
                continue
            kept += 1
            expected.update(key(rows, i) for i in range(len(rows["globalInputNC"])))
    assert got == expected and m["games"]["kept"] == kept and m["positions"] == sum(expected.values())
    again = tmp_path / "kg2"
    res = runner.invoke(app, ["export", str(src), "--format", "katago", "--out", str(again), "--no-progress",
                              "--workers", "2", "--rows-per-file", "500", "--seed", "5"])
    assert res.exit_code == 0, res.output
    assert _chunks(again) == _chunks(out)


def test_cli_export_katago_metadata(tmp_path, sample_archive):
    """--format katago --metadata: each npz also holds metadataInputNC, [N, 192] float32 as KataGo's
    data_processing_pytorch.py reads it with include_meta (``npz["metadataInputNC"]``, one row per row of the
    other arrays); each row is its game's metadata row (gotk.encoders.metadata_inputs, checked against KataGo's C++
    in tests/test_metadata_inputs.py) for the colour of the row's move; the other arrays are those of a plain export."""
    from collections import Counter

    import numpy as np

    from gotk.export.run import katago_available

    if not katago_available():
        pytest.skip("gotk.export.katago is not in this build")
    from gotk.encoders.metadata_inputs import fill_row, from_normalised
    from gotk.export import katago as KG
    from gotk.sgf.metadata import normalise_record
    from gotk.sgf.reader import read_sgf
    from gotk.shards.gameid import game_id
    from gotk.sources.archives import SgfSource, iter_sources

    src = archive_slice(sample_archive, tmp_path, 6)
    outs = {}
    for name, extra in (("plain", []), ("meta", ["--metadata"])):
        outs[name] = tmp_path / name
        res = runner.invoke(app, ["export", str(src), "--format", "katago", "--out", str(outs[name]), "--no-progress",
                                  "--workers", "1", "--rows-per-file", "300", "--seed", "2", *extra])
        assert res.exit_code == 0, res.output
    got: Counter = Counter()
    for plain, meta in zip(sorted(outs["plain"].glob("*.npz")), sorted(outs["meta"].glob("*.npz")), strict=True):
        with np.load(plain) as a, np.load(meta) as b:
            assert set(b.files) == set(a.files) | {"metadataInputNC"}
            for k in a.files:
                assert np.array_equal(a[k], b[k]), k
            rows = b["metadataInputNC"]
            assert rows.dtype == np.float32 and rows.shape == (len(b["globalInputNC"]), 192)
            got.update(r.tobytes() for r in rows)
    expected: Counter = Counter()
    for s in iter_sources([src]):
        if isinstance(s, SgfSource):
            for rec in read_sgf(s.data, s.archive, s.member):
                if rec.result.winner is None or rec.defect is not None:
                    continue
                try:
                    n = len(KG.katago_game_rows(rec, game_id=game_id(rec))["globalInputNC"])
                except Exception:  # noqa: BLE001 - a refused game is a counted skip of the run
                    continue
                meta = from_normalised(normalise_record(rec))
                expected.update(fill_row(meta, int(c), rec.size ** 2).tobytes() for c in rec.colors[:n])
    assert got == expected and len(expected) > 6
    res = runner.invoke(app, ["export", str(src), "--format", "leela-zero", "--metadata", "--out",
                              str(tmp_path / "lz"), "--no-progress"])
    assert res.exit_code == 2 and "--metadata is for --format katago" in res.output
