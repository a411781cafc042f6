"""``gotk agent``: commands on an agent file (``agent.gotk``). ``gotk agent export AGENT --format leela-zero -o FILE``
writes its network as a Leela Zero weights file."""

from __future__ import annotations

from pathlib import Path

import typer

from gotk.cli.common import HelpCommand, HelpGroup, check_output_file
from gotk.cli.common import fail as _fail

FORMATS = ("leela-zero",)

app = typer.Typer(name="agent", help="Commands on an agent file (agent.gotk).", no_args_is_help=True,
                  add_completion=False, pretty_exceptions_enable=False, cls=HelpGroup)


@app.command("export", cls=HelpCommand)
def export_cmd(
    agent: Path = typer.Argument(..., help="Agent file (agent.gotk) of a leelaz model over the leelazero encoder "
                                 "(19x19, both heads)."),
    fmt: str = typer.Option(..., "--format", "-f", help="leela-zero: Leela Zero's weights format version 1 "
                            "(gzip text; leelaz -w FILE reads it)."),
    out: Path = typer.Option(..., "--out", "-o", help="Weights file to write (e.g. weights.txt.gz); written "
                             "atomically."),
) -> None:
    """Write an agent's network in another engine's format (docs/leelazero.md).

    Exit code: 0 on success; 2 for an agent that cannot be written in that format (another model or encoder, a
    board other than 19x19, a missing head), an unreadable agent file or a bad option.
    """
    from gotk.errors import GotkError
    from gotk.export.leelaz_weights import WeightsExportError, export_agent_weights

    if fmt not in FORMATS:
        _fail(f"--format {fmt!r}: choose from {', '.join(FORMATS)}")
    if not agent.is_file():
        _fail(f"{agent}: no such agent file")
    check_output_file(out, "--out")
    try:
        info = export_agent_weights(agent, out)
    except GotkError as e:
        message = str(e).removeprefix(f"{e.reason}: ")
        _fail(f"{agent}: cannot write {fmt} weights: {message}" if isinstance(e, WeightsExportError) else message)
    typer.echo(f"leela-zero weights (version 1): {info['blocks']} blocks x {info['filters']} filters, "
               f"{info['bytes'] / 1e6:.2f} MB in {info['path']}")
