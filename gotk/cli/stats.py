"""``gotk stats SOURCE...|DATASET``: what is in a game collection, as tables, JSON or PNG charts."""

from __future__ import annotations

import json
from pathlib import Path

import typer


def stats_cmd(
    paths: list[str] = typer.Argument(..., help="A dataset folder (manifest.json) or SGF files, folders and "
                                      "archives."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as one JSON object."),
    plots: Path = typer.Option(None, "--plots", help="Also write PNG charts into this folder."),
    where: str = typer.Option(None, "--where", help="Only games where this expression over the games table is true "
                              "(docs/metadata.md)."),
    bots: list[Path] = typer.Option(None, "--bots", help="Extra bot-name list file (SGF sources; repeatable)."),
    storage_option: list[str] = typer.Option(None, "--storage-option", help="fsspec option KEY=VALUE for a URL "
                                             "dataset; repeatable."),
) -> None:
    """Games by year and source, ranks and the black × white rank matrix, handicap, komi, rules, result kinds,
    lengths, duplicates, skips and the share of games with a program.

    Exit code: 0 with a report; 1 when no game was found; 2 for bad input (missing path, bad --where)."""
    from gotk.cli.common import fail, parse_key_values
    from gotk.sgf.metadata import BotList
    from gotk.shards.manifest import GAMES_SCHEMA
    from gotk.shards.where import WhereError, compile_where
    from gotk.stats import build_report, dataset_games, format_report, source_games
    from gotk.stats.replay import REPLAY_WHERE_COLUMNS
    from gotk.storage import StorageError, is_url
    from gotk.train.evaluate import is_shard_dir

    opts = parse_key_values(storage_option, "--storage-option")
    try:
        if len(paths) == 1 and is_shard_dir(paths[0], opts):
            w = compile_where(where, GAMES_SCHEMA.names) if where else None
            table, counts = dataset_games(paths[0], w, opts)
        else:
            missing = [p for p in paths if not is_url(p) and not Path(p).exists()]
            if missing:
                fail(f"no such file or folder: {', '.join(missing)}")
            w = compile_where(where, REPLAY_WHERE_COLUMNS) if where else None
            table, counts = source_games(paths, BotList.load(files=bots or []), w)
    except (WhereError, ValueError, StorageError) as e:
        fail(str(e))
        return
    report = build_report(table, counts)
    if plots is not None:
        from gotk.stats.plots import write_plots

        report["plots"] = [str(plots / name) for name in write_plots(report, plots)]
    typer.echo(json.dumps(report, indent=2) if as_json else format_report(report))
    if report.get("plots") and not as_json:
        typer.echo(f"plots ({len(report['plots'])}):")
        for path in report["plots"]:
            typer.echo(f"  {path}")
    if report["games"] == 0:
        raise typer.Exit(1)
