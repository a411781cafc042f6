"""Shared fixtures: the package's own KGS archives (as the archive site ships them, and re-packed into its other
formats), the larger shared collection in ``../shared/kgs`` when it is there, and the built-in sample."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# the larger collection beside the checkout (CI has it; a plain clone has not); GOTK_SHARED_KGS points elsewhere
KGS_DIR = Path(os.environ.get("GOTK_SHARED_KGS") or REPO.parent / "shared" / "kgs")
# what the package's months look like on the archive site: name stem, month's name, games
SAMPLE_MONTHS = (("KGS-2017_02-19-525-", "Feb", 525), ("KGS-2017_01-19-733-", "Jan", 733))
SAMPLE_FORMATS = ("zip", "tar.gz", "tar.bz2")  # the site's order in a row


def build_sample_kgs(folder: Path) -> Path:
    """``folder`` shaped like a download of the archive site, from the package's two months alone: each month as
    ``.tar.bz2`` (the shipped file), ``.tar.gz`` and ``.zip`` (the same members, in the same order, as the site's
    other formats hold them), ``SHA256SUMS``, and the listing page twice: ``index.html`` (relative links) and
    ``index-absolute-links.html``."""
    from gotk.data import DATA_DIR

    folder.mkdir(parents=True, exist_ok=True)
    for stem, _, _ in SAMPLE_MONTHS:
        src = DATA_DIR / f"{stem}.tar.bz2"
        (folder / src.name).write_bytes(src.read_bytes())
        with tarfile.open(src) as tin, tarfile.open(folder / f"{stem}.tar.gz", "w:gz") as tout, \
                zipfile.ZipFile(folder / f"{stem}.zip", "w", zipfile.ZIP_DEFLATED) as zout:
            for member in tin:
                data = tin.extractfile(member).read() if member.isfile() else None
                tout.addfile(member, None if data is None else io.BytesIO(data))
                if member.isdir():
                    zout.writestr(member.name.rstrip("/") + "/", b"")
                elif data is not None:
                    zout.writestr(member.name, data)
    sums = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}" for p in sorted(folder.glob("KGS-*"))]
    (folder / "SHA256SUMS").write_text("\n".join(sums) + "\n")
    rows = [("2017", month, games, stem, SAMPLE_FORMATS) for stem, month, games in SAMPLE_MONTHS]
    write_listing_pages(folder, rows)
    return folder


# the archive site's listing as the shared mirror has it: (year, month, games, name stem, formats), newest first
SITE_ROWS = [("2017", "Mar", 717, "KGS-2017_03-19-717-", SAMPLE_FORMATS),
             ("2017", "Feb", 525, "KGS-2017_02-19-525-", SAMPLE_FORMATS),
             ("2017", "Jan", 733, "KGS-2017_01-19-733-", SAMPLE_FORMATS),
             ("2006", "", 10388, "KGS-2006-19-10388-", ("tar.gz",)),
             ("2003", "", 7582, "KGS-2003-19-7582-", ("tar.gz",)),
             ("2002", "", 3646, "KGS-2002-19-3646-", ("tar.gz",)),
             ("2001", "", 2298, "KGS-2001-19-2298-", ("tar.gz",))]


def write_listing_pages(folder: Path, rows: list[tuple]) -> None:
    """The archive site's listing page for ``rows`` (``(year, month, games, stem, formats)``), as ``index.html``
    (links relative to the page) and ``index-absolute-links.html`` (links to the download host)."""
    for page, base in (("index.html", ""), ("index-absolute-links.html", "https://dl.u-go.net/gamerecords/")):
        lines = []
        for year, month, games, stem, formats in rows:
            cells = "".join(f'<td><a href="{base}{stem}.{fmt}">.{fmt}</a></td>' if fmt in formats else "<td></td>"
                            for fmt in SAMPLE_FORMATS)
            lines.append(f"<tr><td>{year}</td><td>{month}</td><td>{games}</td>{cells}</tr>")
        (folder / page).write_text(
            '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>KGS game records (test mirror)</title></head>'
            '<body>\n<h1>Game records in SGF format</h1>\n<table class="table">\n<tr><th>Year</th><th>Month</th>'
            '<th>Games</th><th colspan="3">Download</th></tr>\n' + "\n".join(lines) + "\n</table>\n</body></html>\n",
            encoding="utf-8")


@pytest.fixture(scope="session")
def sample_kgs(tmp_path_factory) -> Path:
    """The package's two months in every format of the archive site, with SHA256SUMS and listing pages
    (:func:`build_sample_kgs`): what the default tests read real games from."""
    return build_sample_kgs(tmp_path_factory.mktemp("sample-kgs"))


@pytest.fixture(scope="session")
def kgs_dir() -> Path:
    """The larger shared collection (more months and years); only tests that add cases on it use it, and they
    skip where it is absent."""
    if not KGS_DIR.is_dir():
        pytest.skip(f"{KGS_DIR} is absent (the shared KGS archives sit beside the checkout in CI)")
    return KGS_DIR


@pytest.fixture(scope="session")
def sample_archive() -> Path:
    """A built-in real KGS archive (2017-02, 525 games) shipped with the package."""
    from gotk.data import HELDOUT_ARCHIVE

    return HELDOUT_ARCHIVE


def archive_slice(archive: Path, folder: Path, count: int) -> Path:
    """The first ``count`` SGF members of a real ``archive``, re-packed as ``folder/slice.zip``."""
    import zipfile

    from gotk.sources.archives import SgfSource, iter_sources

    items = [s for s in iter_sources([archive]) if isinstance(s, SgfSource)][:count]
    with zipfile.ZipFile(folder / "slice.zip", "w") as zf:
        for s in items:
            zf.writestr(s.member, s.data)
    return folder / "slice.zip"


# --- a small real encode, shared by the executor and storage tests -------------------------------------------

ENCODE_OPTS = {"encoder": "sevenplane", "shard_rows": 2000, "split": "train=0.8,val=0.1,test=0.1"}
ENCODE_UNIT = 8


def output_files(folder: Path) -> dict[str, bytes]:
    """Every file of an encode output folder (but the timing report), by relative path."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "run-report.json"}


def encode_cmd(src: Path, out, *extra: str) -> list[str]:
    """The ``gotk encode`` command line for ``ENCODE_OPTS`` (``out`` a folder or a URL)."""
    import sys

    return [sys.executable, "-m", "gotk", "encode", str(src), "-e", ENCODE_OPTS["encoder"], "-o", str(out),
            "--no-progress", "--unit-size", str(ENCODE_UNIT), "--shard-rows", str(ENCODE_OPTS["shard_rows"]),
            "--split", ENCODE_OPTS["split"], *extra]


@pytest.fixture(scope="session")
def encode_source(tmp_path_factory, sample_archive) -> Path:
    """The first 200 real games of the built-in held-out archive, as a zip."""
    return archive_slice(sample_archive, tmp_path_factory.mktemp("encode-src"), 200)


@pytest.fixture(scope="session")
def encode_expected(tmp_path_factory, encode_source) -> dict[str, bytes]:
    """Every output file of a local-folder encode of ``encode_source`` (2 worker processes)."""
    from gotk.jobs.encode import EncodeOptions, encode_dataset

    out = tmp_path_factory.mktemp("encode-ref") / "ref"
    encode_dataset([encode_source], out, EncodeOptions(**ENCODE_OPTS), workers=2, progress=False,
                   unit_size=ENCODE_UNIT)
    files = output_files(out)
    assert {"manifest.json", "games.parquet", "train/part-00001.parquet", "val/part-00000.parquet"} <= set(files)
    return files


def run_and_kill(cmd: list[str], ready, timeout: float = 120, env: dict | None = None) -> None:
    """Start ``cmd`` in its own process group, SIGKILL the whole group (parent and workers) as soon as
    ``ready()`` is true, and check it really died mid-run (fails when it finished first)."""
    import os
    import signal
    import subprocess
    import time

    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            env=env)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if ready():
                break
            time.sleep(0.005)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    if proc.returncode == 0:
        pytest.fail("the run finished before it could be killed; make the slice larger")
    assert proc.returncode == -signal.SIGKILL


def local_run_progressed(out: Path) -> bool:
    """Some scan units (3) and at least one shard of a local encode run are finished."""
    work = out / ".work"
    return len(list(work.glob("unit-*.arrow"))) >= 3 and bool(list(work.glob("shard-*.json")))
