"""``gotk download`` against a real loopback HTTP server over the package's months laid out as the archive site
serves them (``conftest.build_sample_kgs``), with injected faults.

Each fault is a :class:`RangeRequestHandler` subclass; after each run the destination holds only complete
archives byte-identical to the originals (sha256 from SHA256SUMS), ``index.json`` and, for a file that
failed mid-way, at most its resumable ``.part``: never a half-written final file.
"""

from __future__ import annotations

import io
import json
import shutil
import socket
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gotk.cli.main import app
from gotk.demo.mirror import LocalMirror, RangeRequestHandler, parse_range
from gotk.hashing import sha256_file
from gotk.sources.download import (
    DownloadOptions,
    download_all,
    download_one,
    load_index,
    plan_downloads,
    verify_archive,
)
from gotk.sources.listing import ArchiveLink, parse_archive_name

pytestmark = pytest.mark.timeout(60)

# the package's two months, as the archive site serves them (conftest.build_sample_kgs)
FEB = "KGS-2017_02-19-525-.tar.gz"  # gzip: quicker to verify than bz2
JAN = "KGS-2017_01-19-733-.tar.gz"
FEB_BZ2 = "KGS-2017_02-19-525-.tar.bz2"
JAN_BZ2 = "KGS-2017_01-19-733-.tar.bz2"
FEB_ZIP = "KGS-2017_02-19-525-.zip"
FAST = DownloadOptions(jobs=2, retries=3, backoff=0.01, max_backoff=0.05, timeout=(2.0, 2.0), progress=False,
                       chunk_size=16 * 1024)


@pytest.fixture(scope="module")
def sums(sample_kgs) -> dict[str, str]:
    pairs = (line.split() for line in (sample_kgs / "SHA256SUMS").read_text().splitlines() if line.strip())
    return {name: digest for digest, name in pairs}


def link_for(base: str, name: str) -> ArchiveLink:
    year, month, board, games, fmt = parse_archive_name(name)
    return ArchiveLink(name, base + name, year, month, board, games, fmt)


def gets(mirror: LocalMirror, name: str) -> list[dict]:
    return [r for r in mirror.log if r["method"] == "GET" and r["path"] == "/" + name]


def assert_clean(dest: Path, sums: dict[str, str], finals: set[str], parts: frozenset[str] = frozenset()) -> None:
    """Only ``finals`` (byte-identical to the originals, recorded in index.json), index.json and ``parts``."""
    expected = set(finals) | {n + ".part" for n in parts} | ({"index.json"} if finals else set())
    present = {p.name for p in dest.iterdir()} - ({"index.json"} if not finals else set())
    assert present == expected
    records = load_index(dest)["files"]
    for name in finals:
        assert sha256_file(dest / name) == sums[name], name
        assert records[name]["sha256"] == sums[name]
        assert records[name]["size"] == (dest / name).stat().st_size


class FaultHandler(RangeRequestHandler):
    """Base for fault handlers: ``hits`` counts GETs per path (a fresh subclass per test keeps counts apart)."""

    hits: dict[str, int]

    def __init_subclass__(cls, **kw) -> None:
        super().__init_subclass__(**kw)
        cls.hits = {}

    def nth(self) -> int:
        """1 for this path's first GET, 2 for its second ..."""
        n = self.hits.get(self.path, 0) + 1
        self.hits[self.path] = n
        return n

    def send_partial(self, data: bytes, length: int, cut_at: int) -> None:
        """A 200 claiming ``length`` bytes that sends ``data[:cut_at]`` and hangs up."""
        self.record()
        self.send_response(200)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        self.wfile.write(data[:cut_at])
        self.wfile.flush()
        self._rec["sent"] = cut_at
        self.close_connection = True


# --------------------------------------------------------------------------- the mirror itself


def test_parse_range():
    assert parse_range("bytes=0-9", 100) == (0, 9)
    assert parse_range("bytes=90-", 100) == (90, 99)
    assert parse_range("bytes=90-500", 100) == (90, 99)
    assert parse_range("bytes=-10", 100) == (90, 99)
    assert parse_range("bytes=100-", 100) == "unsatisfiable"
    assert parse_range("bytes=5-1", 100) is None
    assert parse_range("items=0-1", 100) is None
    assert parse_range("bytes=0-1,5-6", 100) is None


def test_mirror_serves_ranges_and_head(sample_kgs):
    data = (sample_kgs / FEB).read_bytes()
    mirror = LocalMirror(sample_kgs)
    with mirror as url:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/")
        with urllib.request.urlopen(urllib.request.Request(url + FEB, method="HEAD")) as r:
            assert r.status == 200 and int(r.headers["Content-Length"]) == len(data)
            assert r.headers["Accept-Ranges"] == "bytes"
        with urllib.request.urlopen(urllib.request.Request(url + FEB, headers={"Range": "bytes=1000-"})) as r:
            assert r.status == 206
            assert r.headers["Content-Range"] == f"bytes 1000-{len(data) - 1}/{len(data)}"
            assert int(r.headers["Content-Length"]) == len(data) - 1000
            assert r.read() == data[1000:]
        with urllib.request.urlopen(urllib.request.Request(url + FEB, headers={"Range": "bytes=-7"})) as r:
            assert r.read() == data[-7:]
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(urllib.request.Request(url + FEB, headers={"Range": f"bytes={len(data)}-"}))
        assert e.value.code == 416 and e.value.headers["Content-Range"] == f"bytes */{len(data)}"
        with urllib.request.urlopen(url) as r:  # the folder serves its index.html
            assert FEB.encode() in r.read()
        with urllib.request.urlopen(url + FEB) as r:
            assert r.read() == data
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(url + "nope.zip")
        assert e.value.code == 404
    assert [(r["method"], r["range"], r["status"]) for r in mirror.log[:3]] == [
        ("HEAD", None, 200), ("GET", "bytes=1000-", 206), ("GET", "bytes=-7", 206)]
    assert mirror.log[1]["sent"] == len(data) - 1000
    with pytest.raises(OSError):  # the port is closed after the with-block
        urllib.request.urlopen(url, timeout=2)


# --------------------------------------------------------------------------- faults, one file


def test_connection_cut_mid_file_resumes_with_range(sample_kgs, tmp_path, sums):
    class Cut(FaultHandler):
        def do_GET(self):
            if self.path.endswith(FEB) and self.nth() == 1:
                data = (sample_kgs / FEB).read_bytes()
                return self.send_partial(data, len(data), len(data) // 2)
            super().do_GET()

    size = (sample_kgs / FEB).stat().st_size
    mirror = LocalMirror(sample_kgs, Cut)
    with mirror as url:
        res = download_one(link_for(url, FEB), tmp_path, FAST)
    assert res.status == "downloaded" and res.reason is None, res
    assert res.attempts == 2 and res.resumed_from == size // 2  # every byte received before the cut was kept
    first, second = gets(mirror, FEB)
    assert first["range"] is None and first["sent"] == size // 2
    assert second["range"] == f"bytes={res.resumed_from}-" and second["status"] == 206
    assert second["sent"] == size - res.resumed_from < size
    assert sha256_file(tmp_path / FEB) == sums[FEB]
    assert {p.name for p in tmp_path.iterdir()} == {FEB}


def test_connection_dropping_every_time_still_finishes(sample_kgs, tmp_path, sums):
    """Each response is cut after 64 KiB; every attempt resumes further, so it is progress, not a failure."""

    class Stingy(RangeRequestHandler):
        def copyfile(self, source, outputfile):
            chunk = source.read(64 * 1024)
            outputfile.write(chunk)
            self._rec["sent"] += len(chunk)
            self.close_connection = True

    size = (sample_kgs / JAN).stat().st_size
    opts = DownloadOptions(retries=1, backoff=0.01, timeout=(2.0, 2.0), progress=False)
    mirror = LocalMirror(sample_kgs, Stingy)
    with mirror as url:
        res = download_one(link_for(url, JAN), tmp_path, opts)
    assert res.status == "downloaded", res
    ranges = [r["range"] for r in gets(mirror, JAN)]
    assert len(ranges) == res.attempts == -(-size // (64 * 1024)) + (size % (64 * 1024) == 0)
    assert ranges[0] is None and all(r.startswith("bytes=") for r in ranges[1:])
    assert sum(r["sent"] for r in gets(mirror, JAN)) == size  # never a byte fetched twice
    assert sha256_file(tmp_path / JAN) == sums[JAN]


def test_part_file_is_resumed_across_runs(sample_kgs, tmp_path, sums):
    """A .part left by an interrupted run is continued with Range, not fetched again."""
    data = (sample_kgs / JAN).read_bytes()
    (tmp_path / (JAN + ".part")).write_bytes(data[:70_000])
    mirror = LocalMirror(sample_kgs)
    with mirror as url:
        report = download_all([link_for(url, JAN)], tmp_path, FAST)
    (res,) = report.files
    assert res.status == "downloaded" and res.resumed_from == 70_000 and res.bytes_fetched == len(data) - 70_000
    (only,) = gets(mirror, JAN)
    assert only["range"] == "bytes=70000-" and only["status"] == 206 and only["sent"] == len(data) - 70_000
    assert_clean(tmp_path, sums, {JAN})


def test_whole_part_file_gets_416_and_is_kept(sample_kgs, tmp_path, sums):
    """A .part already whole (a run stopped before the rename): the Range request gets 416 with the full size,
    so the .part is verified and renamed without fetching it again."""
    data = (sample_kgs / FEB).read_bytes()
    (tmp_path / (FEB + ".part")).write_bytes(data)
    mirror = LocalMirror(sample_kgs)
    with mirror as url:
        res = download_one(link_for(url, FEB), tmp_path, FAST)
    assert res.status == "downloaded" and res.bytes_fetched == 0
    assert [(r["range"], r["status"], r["sent"]) for r in gets(mirror, FEB)] == [(f"bytes={len(data)}-", 416, 0)]
    assert sha256_file(tmp_path / FEB) == sums[FEB]
    assert {p.name for p in tmp_path.iterdir()} == {FEB}

    # a .part longer than the file (another version of it): 416 with another size, restarted from zero
    (tmp_path / FEB).unlink()
    (tmp_path / (FEB + ".part")).write_bytes(data + b"junk")
    mirror = LocalMirror(sample_kgs)
    with mirror as url:
        res = download_one(link_for(url, FEB), tmp_path, FAST)
    assert res.status == "downloaded"
    assert [(r["range"], r["status"]) for r in gets(mirror, FEB)] == [(f"bytes={len(data) + 4}-", 416), (None, 200)]
    assert sha256_file(tmp_path / FEB) == sums[FEB]


def test_5xx_then_success(sample_kgs, tmp_path, sums):
    class Flaky(FaultHandler):
        def do_GET(self):
            if self.nth() <= 2:
                self.record()
                return self.send_error(503 if self.hits[self.path] == 1 else 500, "try later")
            super().do_GET()

    mirror = LocalMirror(sample_kgs, Flaky)
    with mirror as url:
        res = download_one(link_for(url, FEB), tmp_path, FAST)
    assert res.status == "downloaded" and res.attempts == 3
    assert [r["status"] for r in gets(mirror, FEB)] == [503, 500, 200]
    assert sha256_file(tmp_path / FEB) == sums[FEB]

    # persistent 5xx: the file fails with the last reason after retries, nothing final is left
    class Down(FaultHandler):
        def do_GET(self):
            self.record()
            self.send_error(502, "bad gateway")

    other = tmp_path / "other"
    other.mkdir()
    with LocalMirror(sample_kgs, Down) as url:
        t0 = time.perf_counter()
        res = download_one(link_for(url, FEB), other, FAST)
    assert res.status == "failed" and res.reason == "http_502" and res.attempts == FAST.retries + 1
    assert "gave up after 4 attempts" in res.message
    assert time.perf_counter() - t0 < 2  # tiny backoff delays in tests
    assert list(other.iterdir()) == []


def test_wrong_content_length(sample_kgs, tmp_path, sums):
    data = (sample_kgs / FEB).read_bytes()

    class TooLong(FaultHandler):
        """Claims more bytes than it has, sends the whole file and hangs up."""

        def do_GET(self):
            if self.nth() == 1:
                return self.send_partial(data, len(data) + 5000, len(data))
            super().do_GET()

    mirror = LocalMirror(sample_kgs, TooLong)
    with mirror as url:
        res = download_one(link_for(url, FEB), tmp_path, FAST)
    assert res.status == "downloaded", res
    # it got every byte, then the broken read; the resume asks for the rest, gets 416 with the real size: whole
    assert res.resumed_from == len(data) and res.bytes_fetched == len(data)
    assert [(r["range"], r["status"]) for r in gets(mirror, FEB)] == [(None, 200), (f"bytes={len(data)}-", 416)]
    assert sha256_file(tmp_path / FEB) == sums[FEB]

    class TooShort(FaultHandler):
        """Claims fewer bytes than the file: the client stops early, the archive check fails, it refetches."""

        def do_GET(self):
            if self.nth() == 1:
                return self.send_partial(data, len(data) - 5000, len(data))
            super().do_GET()

    dest = tmp_path / "short"
    dest.mkdir()
    mirror = LocalMirror(sample_kgs, TooShort)
    with mirror as url:
        res = download_one(link_for(url, FEB), dest, FAST)
    assert res.status == "downloaded", res
    assert [r["range"] for r in gets(mirror, FEB)] == [None, None]  # bad .part dropped, fetched from zero
    assert sha256_file(dest / FEB) == sums[FEB]
    assert {p.name for p in dest.iterdir()} == {FEB}


def test_server_without_range_support_restarts_from_zero(sample_kgs, tmp_path, sums):
    class NoRange(FaultHandler):
        supports_range = False

        def do_GET(self):
            if self.nth() == 1:
                data = (sample_kgs / FEB).read_bytes()
                return self.send_partial(data, len(data), 40_000)
            super().do_GET()

    size = (sample_kgs / FEB).stat().st_size
    mirror = LocalMirror(sample_kgs, NoRange)
    with mirror as url:
        res = download_one(link_for(url, FEB), tmp_path, FAST)
    assert res.status == "downloaded" and res.resumed_from == 0, res
    first, second = gets(mirror, FEB)
    assert second["range"] is not None and second["status"] == 200 and second["sent"] == size
    assert sha256_file(tmp_path / FEB) == sums[FEB]
    assert {p.name for p in tmp_path.iterdir()} == {FEB}


def test_timeout_is_retried(sample_kgs, tmp_path, sums):
    class Stall(FaultHandler):
        def do_GET(self):
            if self.nth() == 1:
                self.record()
                time.sleep(0.6)  # longer than the client's read timeout
                self.close_connection = True
                return
            super().do_GET()

    opts = DownloadOptions(retries=4, backoff=0.01, timeout=(2.0, 0.3), progress=False)
    mirror = LocalMirror(sample_kgs, Stall)
    with mirror as url:
        res = download_one(link_for(url, FEB), tmp_path, opts)
    assert res.status == "downloaded" and res.attempts >= 2, res
    assert gets(mirror, FEB)[0]["sent"] == 0
    assert sha256_file(tmp_path / FEB) == sums[FEB]


def test_cancel_keeps_the_part_for_the_next_run(sample_kgs, tmp_path, sums):
    cancel = threading.Event()

    class Slow(RangeRequestHandler):
        """Sends 3 chunks, lets the client write them, then asks it to stop (as Ctrl-C would) and dawdles on."""

        def copyfile(self, source, outputfile):
            n = 0
            while chunk := source.read(16 * 1024):
                outputfile.write(chunk)
                outputfile.flush()
                self._rec["sent"] += len(chunk)
                n += 1
                if n == 3 and not cancel.is_set():
                    time.sleep(0.3)
                    cancel.set()
                time.sleep(0.02)

    mirror = LocalMirror(sample_kgs, Slow)
    with mirror as url:
        res = download_one(link_for(url, FEB), tmp_path, FAST, cancel=cancel)
        assert res.status == "failed" and res.reason == "cancelled"
        size = (tmp_path / (FEB + ".part")).stat().st_size
        assert 0 < size < (sample_kgs / FEB).stat().st_size
        assert not (tmp_path / FEB).exists()
        res = download_one(link_for(url, FEB), tmp_path, FAST)
    assert res.status == "downloaded" and res.resumed_from == size
    assert gets(mirror, FEB)[-1]["range"] == f"bytes={size}-"
    assert sha256_file(tmp_path / FEB) == sums[FEB]
    assert {p.name for p in tmp_path.iterdir()} == {FEB}


# --------------------------------------------------------------------------- many files, failures isolated


def test_corrupt_archive_and_404_fail_alone(sample_kgs, tmp_path, sums):
    class Corrupt(FaultHandler):
        """Serves JAN with bytes altered in the middle (same length)."""

        def open_file(self, path):
            if path.endswith(JAN):
                data = bytearray(Path(path).read_bytes())
                data[len(data) // 2: len(data) // 2 + 64] = bytes(64)
                return io.BytesIO(bytes(data)), len(data), 0.0
            return super().open_file(path)

    mirror = LocalMirror(sample_kgs, Corrupt)
    missing = "KGS-2017_04-19-1-.tar.bz2"
    with mirror as url:
        report = download_all([link_for(url, n) for n in (JAN, missing, FEB, FEB_ZIP)], tmp_path, FAST)
    by_name = {r.name: r for r in report.files}
    assert [r.name for r in report.files] == [JAN, missing, FEB, FEB_ZIP]  # listing order kept
    assert by_name[JAN].status == "failed" and by_name[JAN].reason == "bad_archive"
    assert len(gets(mirror, JAN)) == 2  # refetched once from zero, then given up
    assert by_name[missing].status == "failed" and by_name[missing].reason == "http_404"
    assert by_name[missing].attempts == 1  # a 404 is not retried
    assert by_name[FEB].status == by_name[FEB_ZIP].status == "downloaded"
    assert by_name[FEB_ZIP].members == 525
    assert report.count("failed") == 2 and report.count("downloaded") == 2
    assert_clean(tmp_path, sums, {FEB, FEB_ZIP})  # no final and no .part for the corrupt or missing file
    assert set(load_index(tmp_path)["files"]) == {FEB, FEB_ZIP}


def test_rerun_skips_complete_files_and_refetches_damaged_ones(sample_kgs, tmp_path, sums):
    mirror = LocalMirror(sample_kgs)
    with mirror as url:
        links = [link_for(url, JAN), link_for(url, FEB)]
        assert [r.status for r in download_all(links, tmp_path, FAST).files] == ["downloaded"] * 2
        index1 = load_index(tmp_path)
        n = len(mirror.log)
        assert [r.status for r in download_all(links, tmp_path, FAST).files] == ["skipped"] * 2
        assert len(mirror.log) == n  # no request at all
        assert load_index(tmp_path) == index1
        assert [r.status for r in plan_downloads(links, tmp_path, jobs=2)] == ["present"] * 2

        # a damaged final file (same size, other bytes) no longer matches its sha256: fetched again
        data = bytearray((tmp_path / FEB).read_bytes())
        data[100] ^= 0xFF
        (tmp_path / FEB).write_bytes(bytes(data))
        assert [r.status for r in download_all(links, tmp_path, FAST).files] == ["skipped", "downloaded"]
        assert_clean(tmp_path, sums, {JAN, FEB})

        # index.json lost: present archives are verified (HEAD for the size, no GET) and recorded again
        (tmp_path / "index.json").unlink()
        n_get = len([r for r in mirror.log if r["method"] == "GET"])
        res = download_all(links, tmp_path, FAST).files
        assert [r.status for r in res] == ["skipped"] * 2 and "not in index.json" in res[0].message
        assert len([r for r in mirror.log if r["method"] == "GET"]) == n_get
        assert_clean(tmp_path, sums, {JAN, FEB})


def test_verify_archive(sample_kgs, tmp_path):
    assert verify_archive(sample_kgs / FEB) == 525
    assert verify_archive(sample_kgs / FEB_ZIP) == 525
    assert verify_archive(sample_kgs / "KGS-2017_02-19-525-.tar.gz") == 525
    for name in (FEB, FEB_ZIP, "KGS-2017_02-19-525-.tar.gz"):
        bad = tmp_path / name
        data = (sample_kgs / name).read_bytes()
        bad.write_bytes(data[: len(data) * 2 // 3])
        with pytest.raises(Exception, match="bad_archive"):
            verify_archive(bad)


# --------------------------------------------------------------------------- the command


runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, ["download", *args], catch_exceptions=False)


def test_cli_dry_run_table_and_json(sample_kgs, tmp_path):
    dest = tmp_path / "kgs"
    mirror = LocalMirror(sample_kgs)
    with mirror as url:
        r = invoke("--index-url", url, "--dest", str(dest), "--dry-run", "--format", "zip")
        assert r.exit_code == 0, r.output
        lines = r.stdout.splitlines()
        assert lines[0].split() == ["name", "year", "month", "games", "size", "status"]
        for line, (name, month, games) in zip(lines[1:3], (("KGS-2017_02-19-525-.zip", "02", "525"),
                                                           ("KGS-2017_01-19-733-.zip", "01", "733")), strict=True):
            size = f"{(sample_kgs / name).stat().st_size:,}"
            assert line.split() == [name, "2017", month, games, size, "planned"]
        assert "2 archives, 1,258 games" in lines[-1]

        r = invoke("--index-url", url, "--dest", str(dest), "--dry-run", "--json", "--since", "2017-01",
                   "--format", "tar.bz2")
        assert r.exit_code == 0, r.output
        doc = json.loads(r.stdout)
        assert doc["dry_run"] is True
        assert doc["files"] == [
            {"name": FEB_BZ2, "url": url + FEB_BZ2, "year": 2017, "month": 2, "games": 525,
             "size": (sample_kgs / FEB_BZ2).stat().st_size, "status": "planned"},
            {"name": JAN_BZ2, "url": url + JAN_BZ2, "year": 2017, "month": 1, "games": 733,
             "size": (sample_kgs / JAN_BZ2).stat().st_size, "status": "planned"},
        ]
    assert not dest.exists()  # a dry run writes nothing
    assert all(rec["method"] in ("GET", "HEAD") for rec in mirror.log)
    assert not [rec for rec in mirror.log if rec["method"] == "GET" and rec["path"].endswith(".zip")]


def test_cli_dry_run_unknown_size(sample_kgs):
    class NoLength(RangeRequestHandler):
        def do_HEAD(self):
            self.record()
            self.send_response(200)
            self.end_headers()

    with LocalMirror(sample_kgs, NoLength) as url:
        r = invoke("--index-url", url, "--dry-run", "--include", FEB_BZ2)
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[1].split()[-2:] == ["?", "planned"]
    assert "(some sizes unknown)" in r.stdout


def test_cli_download_rerun_and_index(sample_kgs, tmp_path, sums):
    dest = tmp_path / "kgs"
    args = ["--since", "2017-01", "--format", "tar.bz2", "--jobs", "2", "--dest", str(dest), "--backoff", "0.01"]
    mirror = LocalMirror(sample_kgs)
    with mirror as url:
        t0 = datetime.now().astimezone()
        r = invoke("--index-url", url, *args)
        assert r.exit_code == 0, r.output
        assert "2 downloaded" in r.stdout
        assert_clean(dest, sums, {JAN_BZ2, FEB_BZ2})
        index = json.loads((dest / "index.json").read_text())
        assert index["index_url"] == url
        for name, games in ((JAN_BZ2, 733), (FEB_BZ2, 525)):
            rec = index["files"][name]
            assert rec["url"] == url + name and rec["games"] == games and rec["members"] == games
            assert rec["size"] == (sample_kgs / name).stat().st_size and rec["sha256"] == sums[name]
            fetched = datetime.fromisoformat(rec["fetched_at"].replace("Z", "+00:00"))
            assert fetched.utcoffset().total_seconds() == 0
            assert abs((fetched - t0).total_seconds()) < 60

        n_get = len([x for x in mirror.log if x["method"] == "GET"])
        r = invoke("--index-url", url, *args, "--json")
        assert r.exit_code == 0, r.output
        doc = json.loads(r.stdout)
        assert [(f["name"], f["status"]) for f in doc["files"]] == [(FEB_BZ2, "skipped"), (JAN_BZ2, "skipped")]
        assert doc["summary"] == {"skipped": 2}
        assert len([x for x in mirror.log if x["method"] == "GET"]) == n_get + 1  # only the listing page
        assert json.loads((dest / "index.json").read_text()) == index


def test_cli_failed_file_gives_nonzero_exit(sample_kgs, tmp_path, sums):
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(sample_kgs / FEB, site / FEB)
    missing = "KGS-2017_04-19-1-.tar.bz2"
    (site / "index.html").write_text(f'<a href="{FEB}">feb</a> <a href="{missing}">apr</a>')
    dest = tmp_path / "kgs"
    with LocalMirror(site) as url:
        r = invoke("--index-url", url, "--dest", str(dest), "--json", "--quiet")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    status = {f["name"]: (f["status"], f.get("reason")) for f in doc["files"]}
    assert status == {FEB: ("downloaded", None), missing: ("failed", "http_404")}
    assert_clean(dest, sums, {FEB})


def test_cli_index_errors(sample_kgs):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = invoke("--index-url", f"http://127.0.0.1:{port}/", "--dry-run", "--timeout", "2")
    assert r.exit_code == 2 and "index_unreachable" in r.stderr
    with LocalMirror(sample_kgs) as url:
        r = invoke("--index-url", url + "SHA256SUMS", "--dry-run", "--json")
        assert r.exit_code == 2 and json.loads(r.stdout)["error"]["reason"] == "no_archives"
        r = invoke("--index-url", url, "--dry-run", "--since", "2030")
        assert r.exit_code == 1 and "matches the filters" in r.stderr
    r = invoke("--index-url", "http://127.0.0.1:9/", "--format", "rar")  # checked before any network use
    assert r.exit_code == 2 and "bad_format" in r.stderr
