"""``gotk export``: SGF sources, a dataset's sources or a self-play folder → Leela Zero chunks or KataGo ``.npz``
files."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import typer

from gotk.cli.common import fail as _fail
from gotk.cli.options import option, with_options
from gotk.data import sample_archives


@dataclass(frozen=True)
class ExportCliOptions:
    """What ``gotk export`` writes and which games (:class:`gotk.export.run.ExportOptions`)."""

    fmt: str = option(..., "--format", "-f", help="leela-zero (v1 text chunks) or katago (.npz).")
    seed: int = option(0, "--seed", help="Shuffle seed: the same seed and inputs give the same bytes.")
    games_per_chunk: int = option(32, "--games-per-chunk", help="leela-zero: games per chunk file (leelaz: 32).")
    compress_level: int = option(6, "--compress-level", help="leela-zero: gzip level 0-9 (leelaz writes 9: "
                                       "somewhat smaller files, much slower to write).")
    keep_time_wins: bool = option(False, "--keep-time-wins", help="leela-zero: also export games won on "
                                        "time (leelaz's dump_supervised leaves them out).")
    metadata: bool = option(False, "--metadata", help="katago: also write metadataInputNC, each row's 192 "
                                  "human-SL metadata inputs (ranks, clock, date, source, from the player to move's "
                                  "view), which KataGo's trainer reads with include_meta (docs/katago-export.md).")
    rows_per_file: int = option(10000, "--rows-per-file", help="katago: rows per .npz file (the last is "
                                      "shorter).")
    split: str = option(None, "--split", help="Dataset input: export only the games of this split.")
    min_rank: str = option(None, "--min-rank", help="Keep games where BOTH players are at least this rank.")
    no_handicap: bool = option(False, "--no-handicap", help="Drop games with handicap ≥ 2 or setup stones.")
    where: str = option(None, "--where", help="Keep only games where this expression over the games table is "
                              "true, as gotk encode --where, e.g. \"min(black_rank, white_rank) >= 5d and handicap = "
                              "0\" (docs/metadata.md).")
    bots: list[Path] = option(None, "--bots", help="Extra bot-name list file (one regular expression per "
                                    "line; repeatable; see docs/metadata.md).")
    board_size: int = option(19, "--board-size", help="Board size; other sizes are skipped as bad_size "
                                   "(leela-zero: 19 only).")

    def export_options(self):
        """The :class:`gotk.export.run.ExportOptions` of these options."""
        from gotk.export.run import ExportOptions

        return ExportOptions(format=self.fmt, seed=self.seed, games_per_chunk=self.games_per_chunk,
                             compress_level=self.compress_level, keep_time_wins=self.keep_time_wins,
                             rows_per_file=self.rows_per_file, board_size=self.board_size, min_rank=self.min_rank,
                             no_handicap=self.no_handicap, where=self.where, bots=[str(b) for b in self.bots or []],
                             split=self.split, metadata=self.metadata)


@with_options(opts=ExportCliOptions)
def export_cmd(
    opts: ExportCliOptions,
    sources: list[Path] = typer.Argument(None, help="Archives (zip, tar.gz, tar.bz2), folders, .sgf files, or ONE "
                                         "dataset folder made by gotk encode (its source archives are re-read) or "
                                         "by gotk selfplay (leela-zero: the search policies of its shard rows; "
                                         "default: the built-in sample)."),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (must be empty unless --resume)."),
    workers: int = typer.Option(0, "--workers", "-j", help="Worker processes (0: all cores)."),
    unit_size: int = typer.Option(128, "--unit-size", help="SGF members per scan work unit (does not change the "
                                  "output)."),
    executor: str = typer.Option("local", "--executor", help="Where work units run: local (process pool) or dask "
                                 "(dask.distributed; pip install 'gotk[dask]'). Does not change the output."),
    scheduler: str = typer.Option(None, "--scheduler", help="With --executor dask: a running scheduler "
                                  "(tcp://HOST:PORT); --out must then be a path every worker shares."),
    resume: bool = typer.Option(False, "--resume", help="Finish an interrupted export into the same --out."),
    as_json: bool = typer.Option(False, "--json", help="Print the export manifest (plus the run report) as JSON."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="tqdm progress on stderr."),
) -> None:
    """Write games as Leela Zero or KataGo training data: shuffled by --seed, atomic files, resumable.

    Exit code: 0 on success; 1 when no game was exported; 2 for bad options, inputs or an output
    folder that is not empty (without --resume) or holds a different export.
    """
    from gotk.export.run import ExportError, export

    targets = [str(p) for p in sources] if sources else [str(p) for p in sample_archives()]
    try:
        m = export(targets, out, opts.export_options(), workers=workers or None, resume=resume, progress=progress,
                   unit_size=max(1, unit_size), executor=executor, scheduler=scheduler)
    except ExportError as e:
        _fail(str(e), e.exit_code)
    run = m.get("run", {})
    if as_json:
        typer.echo(json.dumps(m, indent=2))
    else:
        g = m["games"]
        typer.echo(f"{m['export_format']}: {len(m['files'])} files, {g['kept']:,} games, {m['positions']:,} positions, "
                   f"{m['bytes'] / 1e6:.1f} MB in {out}")
        typer.echo(f"games read {g['read']:,}; skipped: "
                   + (", ".join(f"{k} {v:,}" for k, v in g["skipped"].items()) or "none"))
        if run.get("already_complete"):
            typer.echo(f"{out}: already complete (same sources and options); nothing to do")
        elif run:
            typer.echo(f"{run['wall_s']:.1f} s, {run['positions_per_s']:,.0f} positions/s, {run['workers']} workers"
                       + (f", reused {run['units_reused']} scan units and {run['files_reused']} files"
                          if run["units_reused"] or run["files_reused"] else ""))
    if m["games"]["kept"] == 0:
        typer.echo("error: no game was exported", err=True)
        raise typer.Exit(1)
