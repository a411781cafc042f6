"""Find SGF bytes in paths: ``.sgf`` files, folders, and archives (zip, tar.gz, tar.bz2).

Archive members are read in memory and never extracted to disk, so member names cannot reach
outside anywhere (no path traversal). Each item is yielded as an :class:`SgfSource`; problems come
as a :class:`Skip` with a reason code instead, so a run counts them and goes on.

Members are read as streams with a hard byte cap (``max_bytes``): the size a header declares is
never trusted, so a zip member that lies about its size, or a compression bomb, costs at most the
cap in memory and one ``member_too_large`` skip. Decompression of a whole ``.tar.*`` archive runs in
bounded chunks too.

Names from the wild are bytes (old latin-1/GBK archives): :func:`escape_name` turns them into
valid UTF-8 text losslessly (documented there), so every name in a report or ``games.parquet`` is
writable and tells the original bytes.
"""

from __future__ import annotations

import bz2
import lzma
import os
import re
import tarfile
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

MAX_SGF_BYTES = 8 * 1024 * 1024  # a KGS game is a few KiB; anything this big is not a game record

# the archive formats read, in order of preference when one archive is published in several (same stem)
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".zip", ".tar")


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


_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogate(m: re.Match) -> str:
    code = ord(m.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def escape_name(name: str) -> str:
    """A file or member name as valid UTF-8 text, losslessly. Names are decoded from bytes with
    ``surrogateescape`` (as tarfile and ``os`` do on POSIX); a name that is valid UTF-8 and has no
    backslash is returned as is. Otherwise a backslash becomes ``\\\\`` and each byte that is not
    UTF-8 becomes ``\\xNN`` (two lowercase hex digits), so ``b"caf\\xe9.sgf"`` reads
    ``caf\\xe9.sgf``: every backslash in the result starts an escape, which makes it reversible
    (:func:`unescape_name`)."""
    if "\\" not in name and not _SURROGATE.search(name):
        return name
    return _SURROGATE.sub(_escape_surrogate, name.replace("\\", "\\\\"))


_ESCAPE = re.compile(r"\\(\\|x[0-9a-f]{2}|u[0-9a-f]{4})")


def unescape_name(text: str) -> bytes:
    """The original bytes of a name written by :func:`escape_name`."""
    out = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(text):
        out += text[pos:m.start()].encode("utf-8")
        code = m.group(1)
        out += (b"\\" if code == "\\" else bytes([int(code[1:], 16)]) if code[0] == "x"
                else chr(int(code[1:], 16)).encode("utf-8", "surrogatepass"))
        pos = m.end()
    return bytes(out + text[pos:].encode("utf-8"))


def is_archive(path: str | os.PathLike) -> bool:
    """Whether the name ends in one of :data:`ARCHIVE_SUFFIXES` (any case)."""
    return str(path).lower().endswith(ARCHIVE_SUFFIXES)


def archive_stem(name: str) -> tuple[str, int] | None:
    """``(name without its archive suffix, rank of the suffix in ARCHIVE_SUFFIXES)``, None for a non-archive."""
    low = name.lower()
    for rank, suffix in enumerate(ARCHIVE_SUFFIXES):
        if low.endswith(suffix):
            return name[: -len(suffix)], rank
    return None


# what reading a damaged or unsupported archive can raise: zlib/bz2/lzma errors, CRC mismatches,
# truncation, encrypted zip members (RuntimeError), unknown zip compression (NotImplementedError)
_MEMBER_ERRORS = (tarfile.TarError, zipfile.BadZipFile, zlib.error, lzma.LZMAError, OSError, EOFError, RuntimeError,
                  NotImplementedError, ValueError)


def _member_skip(archive: str, member: str, size: int, max_bytes: int) -> Skip | None:
    """Why an archive member is not read (an archive inside, not an ``.sgf``, over the size cap by
    its header), or None."""
    if is_archive(member):
        return Skip("nested_archive", f"{archive}:{member}", "archives inside archives are not opened")
    if not member.lower().endswith(".sgf"):
        return Skip("not_sgf", f"{archive}:{member}")
    if size > max_bytes:
        return Skip("member_too_large", f"{archive}:{member}", f"{size} bytes")
    return None


_MEMBER_READ = 1 << 16


def read_capped(f, max_bytes: int) -> bytes | None:
    """Read the file object ``f`` to its end in chunks, or None as soon as it gives more than
    ``max_bytes`` (whatever its header said): memory stays within the cap plus a chunk."""
    parts: list[bytes] = []
    total = 0
    while chunk := f.read(_MEMBER_READ):
        total += len(chunk)
        if total > max_bytes:
            return None
        parts.append(chunk)
    return b"".join(parts)


def _iter_archive(path: Path, max_bytes: int) -> Iterator[SgfSource | Skip]:
    name = escape_name(path.name)
    low = name.lower()
    try:
        if low.endswith(".zip"):
            with zipfile.ZipFile(path) as zf:
                for info in sorted(zf.infolist(), key=lambda i: i.filename):
                    if info.is_dir():
                        continue
                    member = escape_name(info.filename)
                    skip = _member_skip(name, member, info.file_size, max_bytes)
                    if skip is not None:
                        yield skip
                        continue
                    try:
                        with zf.open(info) as f:
                            data = read_capped(f, max_bytes)
                    except _MEMBER_ERRORS as e:
                        # a zip member is read on its own: a damaged one spoils only itself
                        yield Skip("bad_archive", f"{name}:{member}", f"{type(e).__name__}: {e}")
                        continue
                    if data is None:  # the header lied about the size: a bomb
                        yield Skip("member_too_large", f"{name}:{member}",
                                   f"inflates past the {max_bytes}-byte cap (header said {info.file_size})")
                        continue
                    yield SgfSource(name, member, data)
        else:
            yield from _iter_tar(path, max_bytes)
    except _MEMBER_ERRORS as e:
        yield Skip("bad_archive", name, f"{type(e).__name__}: {e}")


# --- tar -----------------------------------------------------------------------------------------
#
# KGS archives are plain ustar files of small regular members, and Python's tarfile spends most of
# an encode's archive-reading time building TarInfo objects. :func:`_fast_tar` reads exactly that
# common case from the decompressed stream (header checksum checked); at the first header it does
# not handle (GNU long names, pax headers, links, sparse files, a bad checksum, ...) it stops, and
# :func:`_iter_tar` reads the archive again with tarfile, skipping the members already yielded. Both
# readers give the same members, names and order (tested against tarfile on every real archive).

_TAR_CHUNK = 1 << 20  # drop consumed bytes once this many are read
_READ_CHUNK = 1 << 16  # compressed bytes per read: at most ~70 MB come out of one (zlib's worst ratio)


class _NotPlainTar(Exception):
    """A tar header :func:`_fast_tar` leaves to tarfile."""


def _decompressed(path: Path) -> Iterator[bytes]:
    """The tar bytes of ``path`` in chunks: gunzip / bunzip2 / unxz (found by the magic bytes, as
    tarfile does; concatenated streams too) or as is. Raises ``EOFError`` when a compressed stream
    ends early."""
    with open(path, "rb") as f:
        head = f.read(6)
        f.seek(0)
        if head.startswith(b"\x1f\x8b"):
            make = lambda: zlib.decompressobj(wbits=31)  # noqa: E731 - gzip framing
        elif head.startswith(b"BZh"):
            make = bz2.BZ2Decompressor
        elif head.startswith(b"\xfd7zXZ"):
            make = lzma.LZMADecompressor
        else:
            while chunk := f.read(_TAR_CHUNK):
                yield chunk
            return
        d = make()
        started = False
        while chunk := f.read(_READ_CHUNK):
            while chunk:
                yield from _drain(d, chunk)
                started = True
                if not d.eof:
                    break
                chunk = d.unused_data  # another concatenated stream follows (or trailing bytes)
                d = make()
                started = False
                if not chunk.strip(b"\0"):
                    break
        if started and not d.eof:
            raise EOFError("compressed stream ended early (truncated archive)")


def _drain(d, chunk: bytes) -> Iterator[bytes]:
    """Decompress ``chunk`` with ``d`` (zlib, bz2 or lzma) in pieces of at most :data:`_TAR_CHUNK`
    bytes: a bomb never comes out in one piece."""
    if hasattr(d, "unconsumed_tail"):  # zlib: input beyond the output limit waits in unconsumed_tail
        data = chunk
        while True:
            out = d.decompress(data, _TAR_CHUNK)
            if out:
                yield out
            data = d.unconsumed_tail
            if d.eof or (not data and len(out) < _TAR_CHUNK):
                return
    data = chunk
    while True:
        out = d.decompress(data, _TAR_CHUNK)
        if out:
            yield out
        data = b""
        if d.eof or d.needs_input:
            return


def _octal(field: bytes) -> int:
    text = field.rstrip(b"\0 ").lstrip(b" ")
    return int(text, 8) if text else 0


_ZERO_BLOCK = bytes(512)


def _byte_sum(block: bytes) -> int:
    """``sum(block)`` of a 512-byte tar header, computed in C rather than by a Python loop over the bytes: Adler-32's
    first half is 1 + the byte sum mod 65521, exact for 256 bytes (at most 65,280), so two halves give the sum."""
    return (zlib.adler32(block[:256]) & 0xFFFF) + (zlib.adler32(block[256:]) & 0xFFFF) - 2


def _fast_tar(path: Path, max_bytes: int) -> Iterator[SgfSource | Skip]:
    name = escape_name(path.name)
    chunks = _decompressed(path)
    buf = bytearray()
    pos = 0

    def fill(n: int) -> bool:
        """Make ``n`` unread bytes available in ``buf[pos:]``; False at the end of the data."""
        nonlocal buf, pos
        if pos >= _TAR_CHUNK:  # drop what was read: memory stays about a chunk plus one member
            del buf[:pos]
            pos = 0
        while len(buf) - pos < n:
            chunk = next(chunks, None)
            if chunk is None:
                return False
            buf += chunk
        return True

    def skip(n: int) -> bool:
        """Pass over ``n`` bytes without keeping them; False at the end of the data."""
        nonlocal buf, pos
        while n > 0:
            if pos == len(buf):
                chunk = next(chunks, None)
                if chunk is None:
                    return False
                buf, pos = bytearray(chunk), 0
            k = min(len(buf) - pos, n)
            pos += k
            n -= k
        return True

    headers = 0
    while fill(512):
        h = bytes(buf[pos:pos + 512])
        if h == _ZERO_BLOCK:
            return  # end-of-archive block
        magic, typ = h[257:265], h[156:157]
        try:
            stored, size = _octal(h[148:156]), _octal(h[124:136])
        except ValueError:
            stored = size = -1
        unsigned = _byte_sum(h) - sum(h[148:156]) + 8 * 32
        if stored != unsigned:
            signed = unsigned - 256 * sum(1 for b in h[:148] + h[156:] if b > 127)
            if stored == signed:  # some old tar writers sum signed chars: tarfile takes those
                raise _NotPlainTar
            if headers == 0 and not magic.startswith(b"ustar"):
                raise tarfile.ReadError("not a tar archive")
            # a damaged header (tarfile would silently stop here and drop the rest): say so
            raise tarfile.ReadError(f"bad header checksum after {headers} members")
        if magic not in (b"ustar\x0000", b"ustar  \0") or typ not in (b"0", b"\0", b"5") or h[124] & 0x80:
            raise _NotPlainTar
        raw_name = h[0:100].split(b"\0", 1)[0]
        prefix = h[345:500].split(b"\0", 1)[0]
        if prefix:
            if magic != b"ustar\x0000":
                raise _NotPlainTar  # GNU headers keep other fields there
            raw_name = prefix + b"/" + raw_name
        member = escape_name(raw_name.decode("utf-8", "surrogateescape"))  # as tarfile decodes names on POSIX
        headers += 1
        pos += 512
        padding = -size % 512
        if typ == b"0" or (typ == b"\0" and not member.endswith("/")):
            item: SgfSource | Skip | None = _member_skip(name, member, size, max_bytes)
            if item is None:
                if not fill(size):
                    raise EOFError(f"member {member} is truncated")
                item = SgfSource(name, member, bytes(buf[pos:pos + size]))
                pos += size
                size = 0
            if not skip(size):
                raise EOFError(f"member {member} is truncated")
            skip(padding)  # a missing last padding only ends the data
            yield item
        elif not skip(size + padding):
            raise EOFError(f"member {member} is truncated")
    if headers == 0:
        raise tarfile.ReadError("empty archive: no tar header")


class _ChunkReader:
    """A read-only file object over an iterator of byte chunks (tarfile reads the bounded
    decompressed stream of :func:`_decompressed` through it, never decompressing on its own)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buf = b""

    def read(self, n: int = -1) -> bytes:
        parts = [self._buf]
        have = len(self._buf)
        while n < 0 or have < n:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            parts.append(chunk)
            have += len(chunk)
        data = b"".join(parts)
        if n < 0:
            self._buf = b""
            return data
        self._buf = data[n:]
        return data[:n]


def _tarfile_members(path: Path, max_bytes: int) -> Iterator[SgfSource | Skip]:
    name = escape_name(path.name)
    # stream mode ("r|") reads members in archive order without seeking, from the bounded stream
    with tarfile.open(fileobj=_ChunkReader(_decompressed(path)), mode="r|") as tf:
        for info in tf:
            if info.isdir():
                continue
            member = escape_name(info.name)
            if not info.isfile():  # a link, device or fifo: never followed, never read
                yield Skip("not_regular", f"{name}:{member}", f"tar member type {info.type!r}")
                continue
            skip = _member_skip(name, member, info.size, max_bytes)
            if skip is not None:
                yield skip
                continue
            f = tf.extractfile(info)
            if f is None:
                continue
            data = read_capped(f, max_bytes)
            if data is None or len(data) != info.size:
                raise EOFError(f"member {member} is truncated")
            yield SgfSource(name, member, data)


def _iter_tar(path: Path, max_bytes: int) -> Iterator[SgfSource | Skip]:
    """The members of a tar archive: :func:`_fast_tar`, then tarfile from where it stopped."""
    done = 0
    try:
        for item in _fast_tar(path, max_bytes):
            yield item
            done += 1
        return
    except _NotPlainTar:
        pass
    for i, item in enumerate(_tarfile_members(path, max_bytes)):
        if i >= done:
            yield item


def iter_sources(paths: Iterable[str | os.PathLike], max_bytes: int = MAX_SGF_BYTES) -> Iterator[SgfSource | Skip]:
    """Yield every SGF found under ``paths`` (files, folders recursively, archives), in a
    deterministic order, or a :class:`Skip` for what cannot be read."""
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            yield Skip("missing", escape_name(str(path)), "no such file or directory")
            continue
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file()
                           and (p.suffix.lower() == ".sgf" or is_archive(p)))
            yield from iter_sources(files, max_bytes)
            continue
        if is_archive(path):
            yield from _iter_archive(path, max_bytes)
            continue
        where = escape_name(str(path))
        if not path.is_file():  # a fifo or device given by name: never read (it could block or never end)
            yield Skip("not_regular", where, "not a regular file")
            continue
        size = path.stat().st_size
        if size > max_bytes:
            yield Skip("too_large", where, f"{size} bytes, over the {max_bytes}-byte cap")
            continue
        try:
            with open(path, "rb") as f:
                data = read_capped(f, max_bytes)
        except OSError as e:
            yield Skip("unreadable", where, str(e))
            continue
        if data is None:
            yield Skip("too_large", where, f"grew past the {max_bytes}-byte cap while read")
            continue
        yield SgfSource(escape_name(path.name), "", data)
