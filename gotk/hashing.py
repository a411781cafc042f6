"""SHA-256 digests of files and streams, read in fixed-size blocks (never a whole file in memory)."""

from __future__ import annotations

import hashlib
import os
from typing import BinaryIO

BLOCK = 1 << 20


def sha256_stream(f: BinaryIO) -> tuple[str, int]:
    """``(hex digest, bytes read)`` of everything left in the binary stream ``f``."""
    h = hashlib.sha256()
    n = 0
    while block := f.read(BLOCK):
        h.update(block)
        n += len(block)
    return h.hexdigest(), n


def sha256_file(path: str | os.PathLike) -> str:
    """Hex SHA-256 of the file at ``path``."""
    with open(path, "rb") as f:
        return sha256_stream(f)[0]


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()
