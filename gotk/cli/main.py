"""The ``gotk`` command line (typer). Each command lives in its own module and registers here."""

from __future__ import annotations

import typer

from gotk import __version__

app = typer.Typer(
    name="gotk",
    help="Go dataset toolkit: KGS archives → encoded Parquet shards → trained policy/value agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"gotk {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """gotk: Go (the board game) dataset toolkit."""


# command modules register themselves on ``app`` when imported
from gotk.cli import demo as _demo  # noqa: E402,F401
from gotk.cli import download as _download  # noqa: E402,F401
from gotk.cli import encode as _encode  # noqa: E402,F401
from gotk.cli import encoders as _encoders  # noqa: E402,F401
from gotk.cli import play as _play  # noqa: E402,F401
from gotk.cli import replay as _replay  # noqa: E402,F401
from gotk.cli import train as _train  # noqa: E402,F401


def main() -> None:
    app()
