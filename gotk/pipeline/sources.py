"""Find SGF bytes in paths: ``.sgf`` files, folders, and archives (zip, tar.gz, tar.bz2).

Archive members are read in memory and never extracted to disk, so member names cannot reach
outside anywhere (no path traversal). Each item is yielded as an :class:`SgfSource`; problems come
as a :class:`Skip` with a reason code instead, so a run counts them and goes on.
"""

from __future__ import annotations

import lzma
import os
import tarfile
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gotk.sgftools.reader import MAX_SGF_BYTES

ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar")


@dataclass(frozen=True)
class SgfSource:
    """SGF bytes and where they came from: ``archive`` (file name) and ``member`` (path inside)."""

    archive: str
    member: str
    data: bytes


@dataclass(frozen=True)
class Skip:
    """Something that was not read, with a reason code and where."""

    reason: str
    where: str
    message: str = ""


def is_archive(path: str | os.PathLike) -> bool:
    return str(path).lower().endswith(ARCHIVE_SUFFIXES)


# what reading a damaged or unsupported archive can raise: zlib/bz2/lzma errors, CRC mismatches,
# truncation, encrypted zip members (RuntimeError), unknown zip compression (NotImplementedError)
_MEMBER_ERRORS = (tarfile.TarError, zipfile.BadZipFile, zlib.error, lzma.LZMAError, OSError, EOFError, RuntimeError,
                  NotImplementedError, ValueError)


def _iter_archive(path: Path, max_bytes: int) -> Iterator[SgfSource | Skip]:
    name = path.name
    low = name.lower()
    try:
        if low.endswith(".zip"):
            with zipfile.ZipFile(path) as zf:
                for info in sorted(zf.infolist(), key=lambda i: i.filename):
                    if info.is_dir():
                        continue
                    if not info.filename.lower().endswith(".sgf"):
                        yield Skip("not_sgf", f"{name}:{info.filename}")
                        continue
                    if info.file_size > max_bytes:
                        yield Skip("member_too_large", f"{name}:{info.filename}", f"{info.file_size} bytes")
                        continue
                    try:
                        data = zf.read(info)
                    except _MEMBER_ERRORS as e:
                        # a zip member is read on its own: a damaged one spoils only itself
                        yield Skip("bad_archive", f"{name}:{info.filename}", f"{type(e).__name__}: {e}")
                        continue
                    yield SgfSource(name, info.filename, data)
        else:
            # stream mode ("r|*") reads members in archive order without seeking
            with tarfile.open(path, mode="r|*") as tf:
                for info in tf:
                    if not info.isfile():
                        continue
                    if not info.name.lower().endswith(".sgf"):
                        yield Skip("not_sgf", f"{name}:{info.name}")
                        continue
                    if info.size > max_bytes:
                        yield Skip("member_too_large", f"{name}:{info.name}", f"{info.size} bytes")
                        continue
                    f = tf.extractfile(info)
                    if f is None:
                        continue
                    data = f.read()
                    if len(data) != info.size:
                        raise EOFError(f"member {info.name} is truncated")
                    yield SgfSource(name, info.name, data)
    except _MEMBER_ERRORS as e:
        yield Skip("bad_archive", name, f"{type(e).__name__}: {e}")


def iter_sources(paths: Iterable[str | os.PathLike], max_bytes: int = MAX_SGF_BYTES) -> Iterator[SgfSource | Skip]:
    """Yield every SGF found under ``paths`` (files, folders recursively, archives), in a
    deterministic order, or a :class:`Skip` for what cannot be read."""
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            yield Skip("missing", str(path), "no such file or directory")
            continue
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file()
                           and (p.suffix.lower() == ".sgf" or is_archive(p)))
            yield from iter_sources(files, max_bytes)
            continue
        if is_archive(path):
            yield from _iter_archive(path, max_bytes)
            continue
        size = path.stat().st_size
        if size > max_bytes:
            yield Skip("too_large", str(path), f"{size} bytes, over the {max_bytes}-byte cap")
            continue
        try:
            yield SgfSource(path.name, "", path.read_bytes())
        except OSError as e:
            yield Skip("unreadable", str(path), str(e))
