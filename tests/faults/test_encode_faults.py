"""``gotk encode`` with hostile inputs beside good ones, killed parents, a full disk: the run completes (or
fails in one clear line), the good games come out byte-identical to a run without the bad input, and the bad
input is counted under its own reason code."""

from __future__ import annotations

import io
import json
import os
import resource
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from tests.conftest import output_files

from .conftest import REPO

pytestmark = pytest.mark.timeout(300)

ENV = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": "/tmp"}


def encode(out: Path, *sources, extra=(), check=True, **kw) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "gotk", "encode", *map(str, sources), "-e", "sevenplane", "-o", str(out),
           "--no-progress", "--workers", "1", "--shard-rows", "500", *extra]
    res = subprocess.run(cmd, capture_output=True, text=True, env=ENV, **kw)
    if check:
        assert res.returncode == 0, res.stderr[-3000:]
    return res


def data_files(out: Path) -> dict[str, bytes]:
    """What the good games produce: shards and games.parquet (the manifest and the dataset card README.md also
    list sources and counts)."""
    return {k: v for k, v in output_files(out).items() if k not in ("manifest.json", "README.md")}


@pytest.fixture(scope="module")
def reference(tmp_path_factory, good_zip) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("ref") / "out"
    encode(out, good_zip)
    return data_files(out)


def variant(game: bytes, drop: int) -> bytes:
    """A new real-looking game (another game_id): ``game`` without its last ``drop`` moves."""
    body = game.rstrip().rstrip(b")")
    for _ in range(drop):
        body = body[:body.rindex(b";")]
    return body + b")\n"


def _hostile_inputs(folder: Path, real_games) -> dict[str, tuple[Path, str, str]]:
    """name -> (path, where the reason is counted, reason): one of each case of bad header, name and charset."""
    g = real_games[0][1]
    out = {}
    for key, prop in {"ha": b"HA[3000000000]", "km": b"KM[1e300]", "neg_ha": b"HA[-99999999999]"}.items():
        p = folder / f"{key}.sgf"
        p.write_bytes(g.replace(b"GM[1]", b"GM[1]" + prop, 1))
        out[key] = (p, "skipped", "bad_property" if key == "ha" else "")
    p = folder / "latin.tar.gz"
    data = variant(g, 1)  # a new game (different id): its name must survive into games.parquet
    with tarfile.open(p, "w:gz") as tf:
        info = tarfile.TarInfo("caf\udce9.sgf")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    out["latin"] = (p, "", "")
    p = folder / "utf16.sgf"
    p.write_bytes(variant(g, 2).replace(b"CA[UTF-8]", b"CA[UTF-16]").replace(b"PB[", b"PB[y", 1))
    out["utf16"] = (p, "warnings", "charset_mismatch")
    return out


def test_bad_headers_names_and_charsets_beside_good_archive(tmp_path, good_zip, real_games, reference):
    """One encode with every bad input beside the good archive completes; the good
    games' shards equal the reference except for the rows the new (kept) games add."""
    inputs = _hostile_inputs(tmp_path, real_games)
    # a negative handicap reads as 0 and a huge komi as null komi + bad_komi (gotk.sgf.metadata), as before:
    # both are then duplicates of a good game
    out = tmp_path / "out-props"
    res = encode(out, good_zip, inputs["ha"][0], inputs["km"][0], inputs["neg_ha"][0])
    m = json.loads((out / "manifest.json").read_text())
    assert m["games"]["skipped"] == {"bad_property": 1, "duplicate": 2}, res.stdout
    assert m["games"]["metadata_warnings"].get("bad_komi") == 1
    assert data_files(out) == reference

    out = tmp_path / "out-names"
    encode(out, good_zip, inputs["latin"][0], inputs["utf16"][0])
    m = json.loads((out / "manifest.json").read_text())
    assert m["games"]["metadata_warnings"].get("charset_mismatch") == 1
    import pyarrow.parquet as pq

    games = pq.read_table(out / "games.parquet").to_pylist()
    members = {g["member"] for g in games}
    assert "caf\\xe9.sgf" in members
    utf16 = [g for g in games if g["black"].startswith("y")]
    assert utf16 and utf16[0]["result"] == "W+R", utf16  # the result survives a lying CA
    assert "charset_mismatch" in utf16[0]["warnings"].split(",")
    assert sum(g["positions"] for g in games) == m["rows"]


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_killing_the_parent_leaves_no_orphan_workers(tmp_path, sample_archive):
    """SIGKILL to the parent of ``encode --workers 2`` only: the pool workers die with it."""
    cmd = [sys.executable, "-m", "gotk", "encode", str(sample_archive), "-e", "alphago", "-o", str(tmp_path / "o"),
           "--no-progress", "--workers", "2", "--unit-size", "8"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    try:
        deadline = time.monotonic() + 300  # the parent compiles the alphago kernels first (cold cache, slow host)
        kids: list[int] = []
        while time.monotonic() < deadline and len(kids) < 2 and proc.poll() is None:
            kids = [k for k in _children(proc.pid) if _alive(k)]
            time.sleep(0.05)
        assert len(kids) >= 2, "the pool workers never started"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(k) for k in kids):
            time.sleep(0.1)
        alive = [k for k in kids if _alive(k)]
    finally:
        if proc.poll() is None:
            proc.kill()
    for k in alive:  # clean up before failing
        os.kill(k, signal.SIGKILL)
    assert not alive, f"orphan workers {alive}"


def _limit_file_size():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of a kill
    resource.setrlimit(resource.RLIMIT_FSIZE, (16 << 10, 16 << 10))


def test_full_disk_is_one_line_and_leaves_no_partial_final_file(tmp_path, good_zip):
    """Writes fail (a file-size limit, as a full disk would): one ``error:`` line, no
    traceback, exit 1, no final file half-written; after the limit is lifted, ``--resume`` finishes."""
    out = tmp_path / "out"
    res = encode(out, good_zip, extra=("--shard-rows", "5000"), check=False, preexec_fn=_limit_file_size)
    assert res.returncode == 1, res.stderr[-2000:]
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: writing"), res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    assert not (out / "manifest.json").exists()
    for p in out.rglob("*.parquet"):  # any final shard present must be a whole one
        import pyarrow.parquet as pq

        pq.read_metadata(p)
    encode(out, good_zip, extra=("--shard-rows", "5000", "--resume"))
    assert (out / "manifest.json").exists()
