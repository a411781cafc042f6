"""Command-line options defined once, as the fields of a dataclass: :func:`option` gives a field its flag and help,
:func:`with_options` adds a dataclass's fields to a command as options and hands the command their values as one
object, and :func:`default_of` reads a library config's default, so that a default is written in one place (the
library's) and the command cannot drift from it."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import field, fields

import typer


def option(default, *flags: str, help: str, **checks):  # noqa: A002 - typer's own keyword
    """A field whose default is ``default`` and whose command-line option is ``typer.Option(default, *flags,
    help=help, **checks)`` (``checks``: typer's own, such as ``min`` and ``max``)."""
    return field(default=default, metadata={"option": typer.Option(default, *flags, help=help, **checks)})


def default_of(cls: type, name: str):
    """The default of the dataclass ``cls``'s field ``name`` (its factory's value for a mutable one)."""
    f = {f.name: f for f in fields(cls)}[name]
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    raise KeyError(f"{cls.__name__}.{name} has no default")


def with_options(**groups: type) -> Callable[[Callable], Callable]:
    """A decorator: the command (which takes one parameter per name in ``groups``) as a typer command whose options
    are its own parameters, then every field of each ``groups`` dataclass (made by :func:`option`); the command gets
    each group's values as one instance of its dataclass."""
    def wrap(command: Callable) -> Callable:
        own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name not in groups]
        names: dict[str, list[str]] = {}
        added = []
        for param, cls in groups.items():
            hints = typing.get_type_hints(cls)
            names[param] = [f.name for f in fields(cls)]
            added += [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.metadata["option"],
                                        annotation=hints[f.name]) for f in fields(cls)]
        seen = [p.name for p in own] + [p.name for p in added]
        if len(seen) != len(set(seen)):
            raise TypeError(f"{command.__name__}: an option is defined twice")

        @functools.wraps(command)
        def run(**kwargs):
            built = {param: cls(**{n: kwargs.pop(n) for n in names[param]}) for param, cls in groups.items()}
            return command(**kwargs, **built)

        params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own] + added
        run.__signature__ = inspect.Signature(params)
        run.__annotations__ = {p.name: p.annotation for p in params}
        return run

    return wrap


__all__ = ["default_of", "option", "with_options"]
