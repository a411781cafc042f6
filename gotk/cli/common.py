"""Helpers shared by the command modules: ``KEY=VALUE`` options, a one-line error exit, output files checked
before any work."""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer


def parse_key_values(items: list[str] | None, flag: str = "--encoder-option") -> dict:
    """Repeated ``KEY=VALUE`` options → dict (values parsed as JSON when they are, else strings)."""
    out: dict = {}
    for item in items or []:
        key, eq, raw = item.partition("=")
        if not eq or not key.strip():
            raise typer.BadParameter(f"{flag} {item!r}: expected KEY=VALUE", param_hint=flag)
        try:
            value = json.loads(raw.lower() if raw.lower() in ("true", "false") else raw)
        except ValueError:
            value = raw
        out[key.strip()] = value
    return out


def fail(message: str, code: int = 2) -> None:
    """Print ``error: message`` on stderr and exit with ``code`` (2: bad input, 1: nothing done)."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def check_output_file(path: Path | None, flag: str) -> None:
    """Fail (exit 2, one line) unless ``path`` (given by option ``flag``; None: not given) can be written as a
    file: its folder exists and is writable, and it is not a folder itself. Commands check this before any
    work, so a mistyped path costs nothing and leaves no half-done output."""
    if path is None:
        return
    folder = path.parent
    if path.is_dir():
        fail(f"{flag} {path}: is a folder, not a file")
    if not folder.is_dir():
        fail(f"{flag} {path}: no folder {folder}")
    if not os.access(folder, os.W_OK):
        fail(f"{flag} {path}: folder {folder} is not writable")
