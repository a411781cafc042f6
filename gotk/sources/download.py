"""Download KGS archives: parallel, resumable, verified, never a half-written final file.

Each archive is written to ``NAME.part`` (kept across runs and resumed with an HTTP ``Range`` request),
checked against the server's length, opened and read in full (zip CRCs / tar stream), hashed, and only
then renamed to ``NAME`` with :func:`os.replace`. ``DEST/index.json`` records URL, size, sha256, games
and fetch time per file and is rewritten atomically after every finished file; a rerun skips files
whose size, sha256 and archive check still agree with it. Timeouts, dropped connections, 5xx, 408 and
429 are retried with exponential backoff; other HTTP errors fail that file only.
"""

from __future__ import annotations

import bz2
import gzip
import json
import os
import random
import sys
import tarfile
import threading
import time
import zipfile
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import requests
import urllib3
from tqdm import tqdm

from gotk import __version__
from gotk.atomic import write_text_atomic
from gotk.errors import GotkError
from gotk.hashing import sha256_file
from gotk.sources.listing import ArchiveLink

INDEX_NAME = "index.json"
CHUNK = 256 * 1024
RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


class DownloadError(GotkError):
    """One file could not be fetched. Reasons: ``http_<code>``, ``network``, ``size_mismatch``,
    ``bad_archive``, ``bad_range``, ``io_error``, ``cancelled``, ``too_large`` (the server says or sends
    more than ``max_bytes``), ``deadline`` (the file took longer than ``deadline`` seconds in all)."""


@dataclass
class DownloadOptions:
    """How to fetch: ``retries`` is how many failed attempts in a row are retried (one that resumed further
    does not count); delays grow ``backoff * 2**n`` up to ``max_backoff`` seconds; ``timeout`` is
    (connect, read) seconds (per request and per read); ``deadline`` bounds one file's whole download, all
    attempts included (its ``.part`` is kept to resume); ``max_bytes`` caps one file's size (a KGS archive is
    tens of MB; a server that sends an endless body fails that file at the cap)."""

    jobs: int = 4
    retries: int = 5
    backoff: float = 1.0
    max_backoff: float = 30.0
    timeout: tuple[float, float] = (10.0, 60.0)
    deadline: float = 3600.0
    max_bytes: int = 2 << 30
    progress: bool = True
    chunk_size: int = CHUNK


@dataclass
class FileResult:
    """The outcome for one archive. ``status``: ``downloaded``, ``skipped`` (already complete),
    ``failed``, ``planned`` / ``present`` (dry run)."""

    name: str
    url: str
    year: int
    month: int | None
    games: int
    status: str
    size: int | None = None
    sha256: str | None = None
    reason: str | None = None
    message: str | None = None
    members: int | None = None
    attempts: int = 0
    resumed_from: int = 0
    bytes_fetched: int = 0

    def as_dict(self) -> dict:
        """The fields that say something: ``size`` always (None when unknown); no other None, no zero counter."""
        counters = ("attempts", "resumed_from", "bytes_fetched")
        return {k: v for k, v in self.__dict__.items()
                if k == "size" or (v is not None and not (k in counters and v == 0))}


@dataclass
class DownloadReport:
    files: list[FileResult] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, status: str) -> int:
        return sum(1 for f in self.files if f.status == status)

    @property
    def failed(self) -> list[FileResult]:
        return [f for f in self.files if f.status == "failed"]

    def as_dict(self) -> dict:
        return {
            "files": [f.as_dict() for f in self.files],
            "summary": {s: self.count(s) for s in ("downloaded", "skipped", "failed", "planned", "present")
                        if self.count(s)},
            "seconds": round(self.seconds, 3),
        }


# --------------------------------------------------------------------------- checks and the index


def verify_archive(path: str | os.PathLike, name: str | None = None) -> int:
    """Open the archive and read every member in full (CRCs checked); return the number of files in it.

    The format comes from ``name`` (default: the file's own name; pass the final name for a ``.part``).
    Raises :class:`DownloadError` (``bad_archive``) if it cannot be read or holds no file.
    """
    path = Path(path)
    name = (name or path.name).lower()
    try:
        if name.endswith(".zip"):
            with zipfile.ZipFile(path) as zf:
                bad = zf.testzip()
                if bad is not None:
                    raise DownloadError("bad_archive", f"{path.name}: CRC error in member {bad}")
                n = sum(1 for i in zf.infolist() if not i.is_dir())
        else:
            # tarfile's own stream mode can end quietly on a truncated archive; the gzip/bz2 readers raise
            # EOFError instead, and reading them to the end checks the end-of-stream marker and CRC
            opener = gzip.open if name.endswith((".gz", ".tgz")) else bz2.open if name.endswith(("bz2",)) else open
            n = 0
            with opener(path, "rb") as raw:
                with tarfile.open(fileobj=raw, mode="r|") as tf:
                    for info in tf:
                        if info.isfile():
                            n += 1
                            f = tf.extractfile(info)
                            if f is not None:
                                while f.read(1 << 20):
                                    pass
                while raw.read(1 << 20):
                    pass
    except DownloadError:
        raise
    except (tarfile.TarError, zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as e:
        raise DownloadError("bad_archive", f"{path.name}: {type(e).__name__}: {e}") from e
    if n == 0:
        raise DownloadError("bad_archive", f"{path.name}: the archive holds no file")
    return n


def load_index(dest: str | os.PathLike) -> dict:
    """``DEST/index.json`` as ``{"files": {name: record}}``; an empty index if absent or unreadable."""
    path = Path(dest) / INDEX_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"version": 1, "files": {}}
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        return {"version": 1, "files": {}}
    return data


def save_index(dest: str | os.PathLike, index: dict) -> None:
    """Write ``DEST/index.json`` atomically (temp file + rename)."""
    write_text_atomic(Path(dest) / INDEX_NAME, json.dumps(index, indent=2, sort_keys=True) + "\n")


def is_complete(path: Path, record: dict | None) -> bool:
    """The final file exists and matches its index record: size, sha256, and the archive reads in full."""
    if not record or not path.is_file():
        return False
    if path.stat().st_size != record.get("size") or sha256_file(path) != record.get("sha256"):
        return False
    try:
        verify_archive(path)
    except DownloadError:
        return False
    return True


# --------------------------------------------------------------------------- one file


def _user_agent() -> str:
    return f"gotk/{__version__} (KGS archive downloader; python-requests)"


def head_size(session: requests.Session, url: str, timeout: tuple[float, float] = (10.0, 30.0)) -> int | None:
    """The server's Content-Length for ``url`` via HEAD, or None if it does not say (or fails)."""
    try:
        resp = session.head(url, timeout=timeout, allow_redirects=True)
    except requests.RequestException:
        return None
    if resp.status_code != 200:
        return None
    value = resp.headers.get("Content-Length")
    return int(value) if value and value.isdigit() else None


def _content_range_total(value: str | None) -> tuple[int | None, int | None]:
    """``(start, total)`` from ``bytes START-END/TOTAL`` or ``bytes */TOTAL``."""
    if not value or not value.startswith("bytes "):
        return None, None
    span, _, total = value[6:].partition("/")
    start = span.partition("-")[0]
    return (int(start) if start.isdigit() else None), (int(total) if total.isdigit() else None)


class _Retry(Exception):
    """A transient failure: try again after a delay (``delay=False``: at once)."""

    def __init__(self, reason: str, message: str, delay: bool = True) -> None:
        super().__init__(message)
        self.reason, self.delay = reason, delay


def _fetch_once(session: requests.Session, link: ArchiveLink, part: Path, opts: DownloadOptions,
                bar: tqdm, res: FileResult, cancel: threading.Event,
                until: float = float("inf")) -> tuple[int, int | None]:
    """One GET into ``part``, resuming it when it has bytes. Return ``(offset written from, total size or None)``."""
    have = part.stat().st_size if part.exists() else 0
    headers = {"Accept-Encoding": "identity"}
    if have:
        headers["Range"] = f"bytes={have}-"
    try:
        resp = session.get(link.url, headers=headers, stream=True, timeout=opts.timeout)
    except requests.RequestException as e:
        raise _Retry("network", f"{type(e).__name__}: {e}") from e
    with resp:
        code = resp.status_code
        if code == 416 and have:
            _, total = _content_range_total(resp.headers.get("Content-Range"))
            if total is not None and total == have:
                res.resumed_from = have
                return have, total  # the .part is already whole
            part.unlink(missing_ok=True)
            raise _Retry("bad_range", f"HTTP 416 for bytes={have}- (server size {total}); restarting", delay=False)
        if code in RETRY_STATUS:
            raise _Retry(f"http_{code}", f"HTTP {code} {resp.reason}")
        if code not in (200, 206):
            raise DownloadError(f"http_{code}", f"{link.url}: HTTP {code} {resp.reason}")
        length = resp.headers.get("Content-Length")
        length = int(length) if length and length.isdigit() else None
        if code == 206:
            start, total = _content_range_total(resp.headers.get("Content-Range"))
            if start != have:
                part.unlink(missing_ok=True)
                raise _Retry("bad_range", f"asked for bytes={have}-, got Content-Range "
                                          f"{resp.headers.get('Content-Range')!r}; restarting", delay=False)
            mode = "ab"
            res.resumed_from = have
        else:  # 200: whole file (a server that ignores Range restarts us from zero)
            have, total, mode = 0, length, "wb"
        if total is not None and total > opts.max_bytes:
            raise DownloadError("too_large", f"{link.url}: the server says {total} bytes, over the "
                                             f"{opts.max_bytes}-byte cap (--max-bytes)")
        bar.reset(total=total)
        bar.update(have)
        # raw bytes exactly as sent (no Content-Encoding decoding); read1 hands over what has arrived, so a
        # dropped connection loses nothing already received (read(n) would drop a partly filled chunk)
        raw = resp.raw
        read = raw.read1 if hasattr(raw, "read1") else raw.read
        try:
            f = open(part, mode)
        except OSError as e:
            raise DownloadError("io_error", f"{part}: {e}") from e
        with f:
            while True:
                try:
                    chunk = read(opts.chunk_size, decode_content=False)
                except (urllib3.exceptions.HTTPError, requests.RequestException, OSError) as e:
                    raise _Retry("network", f"connection lost after {f.tell()} bytes: {type(e).__name__}: {e}") from e
                if not chunk:
                    break
                if cancel.is_set():
                    raise DownloadError("cancelled", f"stopped after {f.tell()} bytes; {part.name} kept to resume")
                if f.tell() + len(chunk) > opts.max_bytes:
                    f.close()
                    part.unlink(missing_ok=True)
                    raise DownloadError("too_large", f"{link.url}: more than {opts.max_bytes} bytes sent (--max-bytes)")
                if time.monotonic() > until:
                    raise DownloadError("deadline", f"not finished in {opts.deadline:g} s (--deadline) after "
                                                    f"{f.tell()} bytes; {part.name} kept to resume")
                try:
                    f.write(chunk)
                except OSError as e:
                    raise DownloadError("io_error", f"{part}: {e}") from e
                res.bytes_fetched += len(chunk)
                bar.update(len(chunk))
    return have, total


def _adopt(final: Path, session: requests.Session, link: ArchiveLink, opts: DownloadOptions,
           res: FileResult) -> bool:
    """A final file with no index record (index lost, files copied in): keep it if it reads in full and its size
    matches the server's (when the server says)."""
    try:
        members = verify_archive(final)
    except DownloadError:
        return False
    size = final.stat().st_size
    remote = head_size(session, link.url, opts.timeout)
    if remote is not None and remote != size:
        return False
    res.status, res.size, res.sha256, res.members = "skipped", size, sha256_file(final), members
    res.message = "already present, not in index.json: verified and recorded"
    return True


def download_one(link: ArchiveLink, dest: Path, opts: DownloadOptions, record: dict | None = None,
                 position: int = 0, cancel: threading.Event | None = None) -> FileResult:
    """Fetch one archive into ``dest`` (see the module doc). Never raises for network or data problems:
    the result's ``status`` is ``failed`` with a ``reason`` instead. Setting ``cancel`` stops it soon
    (reason ``cancelled``), keeping the ``.part``."""
    cancel = cancel or threading.Event()
    res = FileResult(link.name, link.url, link.year, link.month, link.games, status="failed")
    final = dest / link.name
    part = dest / (link.name + ".part")
    if is_complete(final, record):
        res.status, res.size, res.sha256 = "skipped", record["size"], record["sha256"]
        res.members = record.get("members")
        return res
    session = requests.Session()
    session.headers["User-Agent"] = _user_agent()
    if record is None and final.is_file() and _adopt(final, session, link, opts, res):
        session.close()
        return res
    bar = tqdm(total=None, desc=link.name, unit="B", unit_scale=True, unit_divisor=1024, leave=False,
               position=position, file=sys.stderr, disable=not opts.progress, dynamic_ncols=True)
    fresh_tries = 0
    failures = 0  # consecutive attempts that failed without adding to the .part
    best = part.stat().st_size if part.exists() else 0
    until = time.monotonic() + opts.deadline
    try:
        while True:
            res.attempts += 1
            if cancel.is_set():
                raise DownloadError("cancelled", "stopped before the download finished")
            if time.monotonic() > until:
                raise DownloadError("deadline", f"not finished in {opts.deadline:g} s (--deadline)")
            try:
                start, total = _fetch_once(session, link, part, opts, bar, res, cancel, until)
                size = part.stat().st_size
                if total is not None and size != total:
                    if size > total:
                        part.unlink(missing_ok=True)
                        raise _Retry("size_mismatch", f"got {size} bytes, server said {total}; restarting")
                    raise _Retry("size_mismatch", f"got {size} of {total} bytes; resuming")
                try:
                    members = verify_archive(part, link.name)
                except DownloadError as e:
                    part.unlink(missing_ok=True)
                    fresh_tries += start == 0
                    if start == 0 and fresh_tries > 1:
                        raise  # the same bad bytes twice from zero: the server's file is broken
                    raise _Retry("bad_archive", f"{e}; refetching from zero", delay=False) from e
                res.sha256 = sha256_file(part)
                res.size = size
                os.replace(part, final)
                res.status, res.reason, res.message, res.members = "downloaded", None, None, members
                return res
            except _Retry as r:
                res.reason, res.message = r.reason, str(r)
                have = part.stat().st_size if part.exists() else 0
                if have > best:  # a dropped connection that got further: resuming is progress, not a failure
                    best, failures = have, 0
                else:
                    failures += 1
                if failures > opts.retries:
                    res.message = f"gave up after {res.attempts} attempts: {res.message}"
                    return res
                if r.delay:
                    delay = min(opts.max_backoff, opts.backoff * 2 ** max(0, failures - 1))
                    cancel.wait(min(delay * (1 + 0.1 * random.random()), max(0.0, until - time.monotonic())))
    except DownloadError as e:
        res.reason, res.message = e.reason, str(e)
        return res
    except Exception as e:  # never lose the other files over one
        res.reason, res.message = "error", f"{type(e).__name__}: {e}"
        return res
    finally:
        session.close()
        bar.close()


# --------------------------------------------------------------------------- many files


def _utc_iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _utc_now() -> str:
    return _utc_iso(time.time())


def plan_downloads(links: Sequence[ArchiveLink], dest: str | os.PathLike, jobs: int = 4,
                   with_size: bool = True) -> list[FileResult]:
    """What a run would do, without downloading: ``present`` (complete in ``dest``) or ``planned``, with the
    server's size from HEAD when it gives one."""
    dest = Path(dest)
    files = load_index(dest)["files"]

    def one(link: ArchiveLink) -> FileResult:
        rec = files.get(link.name)
        if is_complete(dest / link.name, rec):
            return FileResult(link.name, link.url, link.year, link.month, link.games, "present",
                              size=rec["size"], sha256=rec["sha256"])
        size = None
        if with_size:
            with requests.Session() as s:
                s.headers["User-Agent"] = _user_agent()
                size = head_size(s, link.url)
        return FileResult(link.name, link.url, link.year, link.month, link.games, "planned", size=size)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, links))


def download_all(links: Sequence[ArchiveLink], dest: str | os.PathLike, opts: DownloadOptions | None = None,
                 index_url: str | None = None,
                 on_done: Callable[[FileResult], None] | None = None) -> DownloadReport:
    """Fetch ``links`` into ``dest`` with ``opts.jobs`` threads; update ``DEST/index.json`` as files finish.

    Files already complete are skipped; a failed file does not stop the others. Results keep ``links`` order.
    """
    opts = opts or DownloadOptions()
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    index = load_index(dest)
    index.setdefault("version", 1)
    if index_url:
        index["index_url"] = index_url
    records: dict = index["files"]
    lock = threading.Lock()
    jobs = max(1, min(opts.jobs, len(links) or 1))
    slots = list(range(jobs, 0, -1))  # tqdm line positions for per-file bars (0 is the overall bar)
    t0 = time.perf_counter()
    overall = tqdm(total=len(links), desc="archives", unit="file", position=0, file=sys.stderr,
                   disable=not opts.progress, dynamic_ncols=True)

    def work(link: ArchiveLink) -> FileResult:
        with lock:
            slot = slots.pop() if slots else jobs
            rec = records.get(link.name)
        try:
            return download_one(link, dest, opts, rec, position=slot, cancel=cancel)
        finally:
            with lock:
                slots.append(slot)

    results: dict[str, FileResult] = {}
    cancel = threading.Event()
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="gotk-dl")
    try:
        futures = [pool.submit(work, link) for link in links]
        for fut in as_completed(futures):
            res = fut.result()
            results[res.name] = res
            if res.status == "downloaded" or (res.status == "skipped" and res.name not in records):
                fetched = _utc_now() if res.status == "downloaded" else _utc_iso((dest / res.name).stat().st_mtime)
                with lock:
                    records[res.name] = {
                        "url": res.url, "size": res.size, "sha256": res.sha256, "games": res.games,
                        "year": res.year, "month": res.month, "members": res.members, "fetched_at": fetched,
                    }
                    save_index(dest, index)
            overall.update(1)
            if on_done is not None:
                on_done(res)
    except BaseException:  # Ctrl-C: stop the workers soon; their .part files stay for the next run
        cancel.set()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        overall.close()
    return DownloadReport([results[link.name] for link in links], time.perf_counter() - t0)
