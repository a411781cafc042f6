"""The ``gotk`` command line (typer). Each command is a plain function in its own module, registered here."""

from __future__ import annotations

import typer

from gotk import __version__
from gotk.cli import dataset, demo, download, encode, encoders, play, replay, serve, train
from gotk.cli.common import HelpCommand, HelpGroup

app = typer.Typer(
    name="gotk",
    help="Go dataset toolkit: KGS archives → encoded Parquet shards → trained policy/value agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=HelpGroup,
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


COMMANDS = [
    ("download", download.download_cmd),
    ("replay", replay.replay_cmd),
    ("encoders", encoders.encoders_cmd),
    ("features", encoders.features_cmd),
    ("encode", encode.encode_cmd),
    ("inspect", dataset.inspect_cmd),
    ("show", dataset.show_cmd),
    ("train", train.train_cmd),
    ("eval", train.eval_cmd),
    ("gtp", play.gtp_cmd),
    ("match", play.match_cmd),
    ("elo", play.elo_cmd),
    ("demo", demo.demo_cmd),
    ("serve", serve.serve_cmd),
]
for _name, _fn in COMMANDS:
    app.command(_name, cls=HelpCommand)(_fn)

from gotk.cli import stats as _stats  # noqa: E402

app.command("stats", cls=HelpCommand)(_stats.stats_cmd)

from gotk.cli import export as _export  # noqa: E402

app.command("export", cls=HelpCommand)(_export.export_cmd)

from gotk.cli import selfplay as _selfplay  # noqa: E402

app.command("selfplay", cls=HelpCommand)(_selfplay.selfplay_cmd)
app.command("zero", cls=HelpCommand)(_selfplay.zero_cmd)
app.command("zero-eval", cls=HelpCommand)(_selfplay.zero_eval_cmd)
app.command("rl", cls=HelpCommand)(_selfplay.rl_cmd)
app.command("zero-compare", cls=HelpCommand)(_selfplay.zero_compare_cmd)

from gotk.cli import agent as _agent  # noqa: E402
from gotk.cli import analysis as _analysis  # noqa: E402

app.command("analysis", cls=HelpCommand)(_analysis.analysis_cmd)

app.add_typer(_agent.app, name="agent")


def main() -> None:
    app()
