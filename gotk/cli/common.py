"""Helpers shared by the command modules: ``KEY=VALUE`` options and a one-line error exit."""

from __future__ import annotations

import json

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
