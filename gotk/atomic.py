"""Temp names for atomic file writes: a uniquely named temp file beside the target, then ``os.replace``
(see :class:`gotk.storage.LocalStorage` and :class:`gotk.shards.format.ShardWriter`).

The temp name carries the process id and a random tag, so two processes writing the same target at
once (a task Dask runs twice, say) never share a temp file; the last rename wins with the same bytes.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path


def temp_path(path: str | os.PathLike) -> Path:
    """A fresh temp path in the same folder as ``path`` (so the final rename stays atomic)."""
    p = Path(path)
    return p.with_name(f"{p.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")

