"""Atomic file writes: a uniquely named temp file beside the target, then ``os.replace``.

The one rule for writing a local file that others may read while it is written (see also
:class:`gotk.storage.Storage`, which applies it to fsspec URLs too). The temp name carries the process id
and a random tag, so two processes writing the same target at once (a task Dask runs twice, say) never
share a temp file; the last rename wins with the same bytes. A fixed ``.tmp`` name would let them clash.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def temp_path(path: str | os.PathLike) -> Path:
    """A fresh temp path in the same folder as ``path`` (so the final rename stays atomic)."""
    p = Path(path)
    return p.with_name(f"{p.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """``with atomic_path(target) as tmp:`` write ``tmp`` (by any means); on success it becomes ``target``
    in one rename, on an exception it is removed and ``target`` is left as it was."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(target)
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (flushed to disk before the rename)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    write_bytes_atomic(path, text.encode("utf-8"))
