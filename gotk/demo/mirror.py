"""A small loopback HTTP server over a folder, with HTTP Range support.

``SimpleHTTPRequestHandler`` ignores ``Range``; :class:`RangeRequestHandler` answers it (206 with
``Content-Range``, 416 when unsatisfiable) and sends ``Content-Length`` for GET and HEAD. Every request
is recorded in ``LocalMirror.log`` (method, path, Range header, status, body bytes sent), so tests can
see what a client asked for. Subclass the handler to inject faults::

    with LocalMirror(folder) as url:
        ...  # url is "http://127.0.0.1:PORT/"
"""

from __future__ import annotations

import email.utils
import os
import re
import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import BinaryIO

_RANGE_RE = re.compile(r"^bytes=(\d*)-(\d*)$")


def parse_range(header: str, size: int) -> tuple[int, int] | str | None:
    """A single ``bytes=`` range as inclusive ``(start, end)``; ``"unsatisfiable"``; or None if not
    understood (the caller then ignores it and sends the whole file, as RFC 9110 allows)."""
    m = _RANGE_RE.match(header.strip())
    if m is None or (not m[1] and not m[2]):
        return None
    if not m[1]:  # suffix range: the last N bytes
        n = int(m[2])
        if n == 0 or size == 0:
            return "unsatisfiable"
        return max(0, size - n), size - 1
    start = int(m[1])
    end = int(m[2]) if m[2] else None
    if end is not None and end < start:
        return None
    if start >= size:
        return "unsatisfiable"
    return start, size - 1 if end is None else min(end, size - 1)


class _Slice:
    """Read at most ``n`` bytes from ``f`` (already positioned)."""

    def __init__(self, f: BinaryIO, n: int) -> None:
        self.f, self.left = f, n

    def read(self, n: int = -1) -> bytes:
        if self.left <= 0:
            return b""
        n = self.left if n < 0 else min(n, self.left)
        data = self.f.read(n)
        self.left -= len(data)
        return data

    def close(self) -> None:
        self.f.close()


class RangeRequestHandler(SimpleHTTPRequestHandler):
    """Serve files with ``Accept-Ranges: bytes``; quiet; records requests in ``server.log``."""

    supports_range = True
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - signature of the base class
        pass

    def record(self) -> dict:
        """Append and return this request's log entry (fault handlers call it when they bypass ``do_GET``)."""
        rec = {"method": self.command, "path": self.path, "range": self.headers.get("Range"), "status": None,
               "sent": 0}
        self._rec = rec
        log = getattr(self.server, "log", None)
        if log is not None:
            log.append(rec)
        return rec

    def do_GET(self) -> None:
        self.record()
        super().do_GET()

    def do_HEAD(self) -> None:
        self.record()
        super().do_HEAD()

    def send_response(self, code: int, message: str | None = None) -> None:
        rec = getattr(self, "_rec", None)
        if rec is not None:
            rec["status"] = code
        super().send_response(code, message)

    def open_file(self, path: str) -> tuple[BinaryIO, int, float]:
        """Open a file to serve: ``(file, size, mtime)``. Override to serve other bytes."""
        f = open(path, "rb")  # noqa: SIM115 - closed by the caller
        st = os.fstat(f.fileno())
        return f, st.st_size, st.st_mtime

    def send_head(self):
        path = self.translate_path(self.path)
        if os.path.isdir(path) or self.path.endswith("/"):
            return super().send_head()
        try:
            f, size, mtime = self.open_file(path)
        except OSError:
            self.send_error(404, "File not found")
            return None
        start, end, status = 0, size - 1, 200
        header = self.headers.get("Range")
        if header is not None and self.supports_range:
            rng = parse_range(header, size)
            if rng == "unsatisfiable":
                f.close()
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            if rng is not None:
                start, end = rng
                status = 206
        self.send_response(status)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Last-Modified", email.utils.formatdate(mtime, usegmt=True))
        if self.supports_range:
            self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.end_headers()
        f.seek(start)
        return _Slice(f, end - start + 1)

    def copyfile(self, source, outputfile) -> None:
        rec = getattr(self, "_rec", None)
        try:
            while chunk := source.read(64 * 1024):
                outputfile.write(chunk)
                if rec is not None:
                    rec["sent"] += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.log: list[dict] = []

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)  # a client that hung up is not worth a traceback


class LocalMirror:
    """Serve ``folder`` on ``127.0.0.1`` (a free port) in a background thread.

    A context manager whose ``__enter__`` returns the base URL (ending in ``/``); ``log`` lists requests.
    """

    def __init__(self, folder: str | os.PathLike, handler: type[RangeRequestHandler] = RangeRequestHandler,
                 host: str = "127.0.0.1") -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise FileNotFoundError(f"{self.folder}: not a folder")
        self._server = _Server((host, 0), partial(handler, directory=str(self.folder)))
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/"

    @property
    def log(self) -> list[dict]:
        return self._server.log

    def start(self) -> str:
        if self._thread is None:
            self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                            name="gotk-mirror", daemon=True)
            self._thread.start()
        return self.url

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
