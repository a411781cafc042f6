"""``gotk replay PATH...``: replay every game and report counts and speed."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from gotk.data import sample_archives


def replay_cmd(
    paths: list[Path] = typer.Argument(None, help="SGF files, folders or archives (default: the built-in sample)."),
    min_moves: int = typer.Option(1, help="Games with fewer main-line moves are skipped as too_short."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of a table."),
    strict: bool = typer.Option(False, help="Exit 2 if any game or input was skipped."),
    where: str = typer.Option(None, "--where", help="Replay only games where this expression over the games "
                              "table is true (as in gotk encode --where; docs/metadata.md)."),
    bots: list[Path] = typer.Option(None, "--bots", help="Extra bot-name list file (repeatable)."),
) -> None:
    """Replay SGF games on the rules engine; report games, moves, skips by reason and speed.

    Exit code: 0 when something was replayed (and, with --strict, nothing skipped); 1 when nothing
    could be replayed; 2 when no input is SGF at all, or with --strict when anything was skipped.
    """
    from gotk.cli.common import fail
    from gotk.sgf.metadata import BotList
    from gotk.shards.where import WhereError
    from gotk.stats.replay import replay_paths

    targets = [str(p) for p in paths] if paths else [str(p) for p in sample_archives()]
    try:
        rep = replay_paths(targets, min_moves=min_moves, where=where, bots=BotList.load(files=bots or []))
    except (WhereError, ValueError) as e:
        fail(str(e))
    if rep.games_replayed == 0 and rep.partial == 0 and set(rep.skipped) == {"not_sgf"}:
        where = targets[0] if len(targets) == 1 else rep.examples["not_sgf"].split(": not_sgf:")[0]
        n = rep.skipped["not_sgf"]
        fail(f"{where} is not an SGF file (no game record in it)" if n == 1 else
             f"none of the {n} inputs is an SGF file (no game record in them; the first: {where})")
    d = rep.as_dict()
    if as_json:
        typer.echo(json.dumps(d, indent=2))
    else:
        typer.echo(f"games read      {rep.games_read:>12,}")
        typer.echo(f"games replayed  {rep.games_replayed:>12,}")
        typer.echo(f"games partial   {rep.partial:>12,}")
        typer.echo(f"moves           {rep.moves:>12,}  (passes {rep.passes:,})")
        typer.echo(f"seconds         {rep.seconds:>12.2f}")
        typer.echo(f"moves/s         {rep.moves_per_second:>12,.0f}")
        paths = d["sgf_reader"]
        why = ", ".join(f"{k} {v:,}" for k, v in paths["fallback"]["declined"].items())
        typer.echo(f"SGF inputs read {paths['fast']['inputs']:>12,}  by the compiled reader, "
                   f"{paths['fallback']['inputs']:,} by sgfmill" + (f" (declined: {why})" if why else ""))
        if rep.skipped:
            typer.echo("skipped:")
            for reason, count in sorted(rep.skipped.items()):
                typer.echo(f"  {reason:<18} {count:>8,}   e.g. {rep.examples[reason]}")
        if rep.filtered_where:
            typer.echo("filtered out by --where (first failed term):")
            for term, count in sorted(rep.filtered_where.items()):
                typer.echo(f"  {count:>8,}  {term}")
    if rep.games_replayed == 0 and rep.partial == 0:
        raise typer.Exit(1)
    if strict and any(reason != "filtered_where" for reason in rep.skipped):
        raise typer.Exit(2)
