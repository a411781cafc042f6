"""Misbehaving HTTP servers for ``gotk download`` (a real server on 127.0.0.1): each is a per-file failure with
its own reason, in bounded time and bytes; the good file beside it is still fetched."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from gotk.sources.download import DownloadOptions, download_all
from gotk.sources.listing import ArchiveLink, parse_archive_name

pytestmark = pytest.mark.timeout(120)

GOOD = "KGS-2017_02-19-525-.tar.bz2"


class Hostile(BaseHTTPRequestHandler):
    """``/slow/NAME``: 2 bytes every 0.5 s; ``/endless/NAME``: 200, no Content-Length, zeros for ever;
    ``/huge/NAME``: claims 100 GB; ``/html/NAME``: a 200 HTML page; ``/good/NAME``: the real archive."""

    good: bytes = b""

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        kind = self.path.split("/")[1]
        try:
            if kind == "good":
                self.send_response(200)
                self.send_header("Content-Length", str(len(self.good)))
                self.end_headers()
                self.wfile.write(self.good)
            elif kind == "slow":
                self.send_response(200)
                self.send_header("Content-Length", "1000000")
                self.end_headers()
                for _ in range(200):
                    self.wfile.write(b"\x1f\x8b")
                    self.wfile.flush()
                    time.sleep(0.5)
            elif kind == "endless":
                self.send_response(200)
                self.end_headers()
                block = b"\0" * 65536
                for _ in range(1 << 16):
                    self.wfile.write(block)
            elif kind == "huge":
                self.send_response(200)
                self.send_header("Content-Length", str(100 << 30))
                self.end_headers()
                self.wfile.write(b"\0" * 65536)
            else:
                body = b"<html><body>Service temporarily unavailable</body></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture
def server(sample_archive):
    from gotk.data import HELDOUT_ARCHIVE

    Hostile.good = Path(HELDOUT_ARCHIVE).read_bytes()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def _link(base: str, kind: str, name: str = GOOD) -> ArchiveLink:
    year, month, board, games, fmt = parse_archive_name(name)
    return ArchiveLink(name, f"{base}/{kind}/{name}", year, month, board, games, fmt)


@pytest.mark.parametrize("kind,reason", [("slow", "deadline"), ("endless", "too_large"), ("huge", "too_large"),
                                         ("html", "bad_archive")])
def test_hostile_server_is_one_failed_file(server, tmp_path, kind, reason):
    """A trickling server ends at the overall deadline, an endless body at the byte cap; the
    good archive in the same run is fetched and verified."""
    opts = DownloadOptions(jobs=2, retries=1, backoff=0.01, max_backoff=0.02, timeout=(2.0, 2.0), deadline=3.0,
                           max_bytes=8 << 20, progress=False)
    other = "KGS-2017_01-19-733-.tar.bz2"
    t = time.monotonic()
    report = download_all([_link(server, "good"), _link(server, kind, other)], tmp_path, opts)
    took = time.monotonic() - t
    by_name = {f.name: f for f in report.files}
    assert by_name[GOOD].status == "downloaded"
    assert by_name[other].status == "failed"
    assert by_name[other].reason == reason, by_name[other].message
    assert took < 30
    assert not (tmp_path / other).exists()
    part = tmp_path / (other + ".part")
    assert not part.exists() or part.stat().st_size <= 8 << 20


@pytest.mark.parametrize("name", ["KGS-2017_01-19-733-.zip\n", "KGS-2017_01-19-733-.zip%0A",
                                  "x/KGS-2017_01-19-733-.zip", "KGS-2017_01-19-733-.zip.html"])
def test_listing_names_match_in_full(name):
    """The listing's name pattern matches the whole name (``$`` alone would also match before a trailing newline)."""
    from urllib.parse import unquote

    assert parse_archive_name(unquote(name)) is None
    assert parse_archive_name("KGS-2017_01-19-733-.zip") is not None


def test_eval_json_is_valid_with_nan():
    import json

    from gotk.cli.train import _json_safe

    text = json.dumps(_json_safe({"a": float("nan"), "b": [1.0, float("inf")], "c": {"d": -float("inf")}}),
                      allow_nan=False)
    assert json.loads(text) == {"a": None, "b": [1.0, None], "c": {"d": None}}
