"""Helpers shared by the command modules: ``KEY=VALUE`` options, a one-line error exit, output files checked
before any work, the help format."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import get_args, get_origin

import typer
from typer.core import TyperCommand, TyperGroup


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


class _PlainHelp:
    """What ``--help`` shows, made to read like any command-line tool's: click's value names (``INTEGER``,
    ``TEXT``, ``PATH``...) instead of typer's type annotations (``<bool>``, ``<list[Path]>``), nothing after a
    flag, docstrings' reStructuredText double backticks shown as single ones, and square brackets (the defaults
    that options' help gives as ``[...]``) shown as written."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.help = _plain_text(self.help)
        self.short_help = _plain_text(self.short_help)

    def get_params(self, ctx):
        params = super().get_params(ctx)
        for p in params:
            if not getattr(p, "_gotk_plain", False):
                label = value_name(p)
                p.display_type_rich = lambda ctx, label=label: label
                p.help = _plain_text(getattr(p, "help", None))
                p._gotk_plain = True
        return params


class HelpCommand(_PlainHelp, TyperCommand):
    """Every gotk command (see :class:`_PlainHelp`)."""


class HelpGroup(_PlainHelp, TyperGroup):
    """The ``gotk`` group itself (see :class:`_PlainHelp`)."""


_NAMES = {int: "INTEGER", float: "FLOAT", str: "TEXT", bool: "BOOLEAN"}


def value_name(param) -> str | None:
    """What ``--help`` shows after an option or argument: None for a flag, else the click name of its type
    (``...`` after an argument that takes several values)."""
    if getattr(param, "is_flag", False):
        return None
    desc = getattr(param, "type_descriptor", None)
    if desc is not None:
        ann = desc.annotation
        if get_origin(ann) is list:
            ann = get_args(ann)[0]
        if desc.is_choice:
            name = "[" + "|".join(str(getattr(c, "value", c)) for c in desc.choices or ()) + "]"
        elif desc.is_path:
            name = "PATH"
        else:
            name = _NAMES.get(ann, getattr(ann, "__name__", str(ann)).upper())
    else:  # a typer built on click: its parameters carry click types
        ptype = getattr(param, "type", None)
        name = ptype.name.upper() if ptype is not None else "VALUE"
    several = getattr(param, "param_type_name", "") == "argument" and getattr(param, "nargs", 1) != 1
    return f"{name}..." if several else name


try:  # typer renders help through rich, whose markup would swallow "[cores / workers]" as a style tag
    from rich.markup import escape as _escape_markup
except ImportError:  # typer without rich prints help as it is
    def _escape_markup(text: str) -> str:
        return text


def _plain_text(text: str | None) -> str | None:
    return _escape_markup(text.replace("``", "`")) if text else text
