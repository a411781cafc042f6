"""``gotk encode``: SGF sources → Parquet shards with a manifest."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import typer

from gotk.cli.common import fail as _fail
from gotk.cli.common import parse_key_values
from gotk.cli.options import option, with_options
from gotk.data import sample_archives


@dataclass(frozen=True)
class EncodeCliOptions:
    """What ``gotk encode`` keeps and how it encodes it (:class:`gotk.jobs.encode.EncodeOptions`)."""

    encoder: str = option(..., "--encoder", "-e", help="Encoder name (oneplane, sevenplane, simple, alphago, "
                                "leelazero).")
    split: str = option("train=0.9,val=0.05,test=0.05", help="Split fractions by game, e.g. train=0.9,val=0.1 "
                              "or test=1.")
    test_from: list[str] = option(None, "--test-from", help="Glob on archive file name or path: those sources "
                                        "go wholly to the test split (repeatable).")
    min_rank: str = option(None, "--min-rank", help="Keep games where BOTH players are at least this rank "
                                 "(e.g. 6d; pros rank above every dan; unknown ranks are dropped).")
    no_handicap: bool = option(False, "--no-handicap", help="Drop games with handicap ≥ 2 or setup stones.")
    include_passes: bool = option(False, "--include-passes", help="Also emit rows for passes (label size²).")
    skip_first: int = option(0, "--skip-first", help="Drop the first N moves of each game.")
    board_size: int = option(19, "--board-size", help="Board size; other sizes are skipped as bad_size.")
    shard_rows: int = option(65536, "--shard-rows", help="Rows per shard file (the last of a split is shorter).")
    max_moves: int = option(10_000, "--max-moves", min=0, help="Skip games with more main-line moves than "
                                  "this (counted as too_long); 0: no cap. Long games are encoded in bounded pieces "
                                  "either way.")
    drop_partial: bool = option(False, "--drop-partial", help="Drop games that stop at an illegal or "
                                      "unreadable move (default: keep the positions before it).")
    where: str = option(None, "--where", help="Keep only games where this expression over the games table is "
                              "true, e.g. \"min(black_rank, white_rank) >= 5d and handicap = 0 and not "
                              "(black_is_bot or white_is_bot) and year >= 2015\" (docs/metadata.md).")
    bots: list[Path] = option(None, "--bots", help="Extra bot-name list file (one regular expression per "
                                    "line; repeatable; see docs/metadata.md).")
    globals_: bool = option(True, "--globals/--no-globals", help="Write each row's global inputs (komi "
                                  "from the player to move's view, side to move) as the shards' globals column "
                                  "(docs/shards.md).")
    metadata: bool = option(False, "--metadata/--no-metadata", help="Write each row's metadata inputs "
                                  "(KataGo's 192 human-SL inputs: ranks, clock, date, source, from the player to "
                                  "move's view) as the shards' metadata column; 768 bytes a row before compression "
                                  "(docs/shards.md).")
    encoder_option: list[str] = option(None, "--encoder-option", help="Encoder option KEY=VALUE, e.g. "
                                             "ladders=false (repeatable).")

    def encode_options(self):
        """The :class:`gotk.jobs.encode.EncodeOptions` of these options."""
        from gotk.jobs.encode import EncodeOptions

        return EncodeOptions(
            encoder=self.encoder, encoder_options=parse_key_values(self.encoder_option), board_size=self.board_size,
            split=self.split, test_from=list(self.test_from or []), min_rank=self.min_rank,
            no_handicap=self.no_handicap, include_passes=self.include_passes, skip_first=self.skip_first,
            drop_partial=self.drop_partial, shard_rows=self.shard_rows, where=self.where,
            bots=[str(b) for b in self.bots or []], max_moves=self.max_moves, globals=self.globals_,
            metadata=self.metadata,
        )


@with_options(opts=EncodeCliOptions)
def encode_cmd(
    opts: EncodeCliOptions,
    sources: list[Path] = typer.Argument(None, help="Archives (zip, tar.gz, tar.bz2), folders, .sgf files or a "
                                         "download folder (default: the built-in sample)."),
    out: str = typer.Option(..., "--out", "-o", help="Output folder (must be empty unless --resume): a path or an "
                            "fsspec URL, e.g. s3://bucket/prefix (pip install 'gotk[s3]'; see docs/dask.md)."),
    workers: int = typer.Option(0, "--workers", "-j", help="Worker processes (0: all cores)."),
    unit_size: int = typer.Option(128, "--unit-size", help="SGF members per scan work unit (does not change the "
                                  "output)."),
    resume: bool = typer.Option(False, "--resume", help="Finish an interrupted run into the same --out."),
    executor: str = typer.Option("local", "--executor", help="Where work units run: local (process pool) or dask "
                                 "(dask.distributed; pip install 'gotk[dask]'). Does not change the output."),
    scheduler: str = typer.Option(None, "--scheduler", help="With --executor dask: a running scheduler "
                                  "(tcp://HOST:PORT) instead of a LocalCluster of --workers processes; --out must be "
                                  "a shared path, the same on every worker, or a URL they all reach."),
    storage_option: list[str] = typer.Option(None, "--storage-option", help="fsspec option KEY=VALUE for a URL "
                                             "--out, e.g. endpoint_url=http://127.0.0.1:9000 (repeatable; values "
                                             "parsed as JSON when they can be)."),
    as_json: bool = typer.Option(False, "--json", help="Print the manifest (plus the run report) as JSON."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="tqdm progress on stderr."),
) -> None:
    """Replay and encode SGF games into Parquet shards: split by game, deduplicated, deterministic.

    Exit code: 0 on success; 1 when no game was kept or the output could not be written (a full disk:
    one line, finished parts kept for --resume); 2 for bad options (including --executor dask
    without dask installed) or an output folder that is not empty (without --resume) or holds a
    different run, or a URL --out that cannot be used (package, bucket or credentials missing).
    """
    from gotk.jobs.encode import EncodeError, encode_dataset
    from gotk.shards.manifest import summary_lines

    targets = [str(p) for p in sources] if sources else [str(p) for p in sample_archives()]
    try:
        m = encode_dataset(targets, out, opts.encode_options(), workers=workers or None, resume=resume,
                           progress=progress, unit_size=max(1, unit_size), executor=executor, scheduler=scheduler,
                           storage_options=parse_key_values(storage_option, "--storage-option"))
    except EncodeError as e:
        _fail(str(e), e.exit_code)
    except OSError as e:  # a full disk, a file-size limit, a lost mount: the work done so far stays resumable
        _fail(f"writing {out}: {e.strerror or e}; finished parts are kept, rerun with --resume once fixed", 1)
    run = m.get("run", {})
    if as_json:
        typer.echo(json.dumps(m, indent=2))
    else:
        for line in summary_lines(m):
            typer.echo(line)
        for d in run.get("damaged_redone", []):
            typer.echo(f"--resume: {d['file']} was damaged ({d['problem']}): the dataset was written again", err=True)
        if run.get("already_complete"):
            typer.echo(f"\n{out}: already complete (same sources and options); nothing to do")
        elif run:
            typer.echo(f"\n{run['wall_s']:.1f} s, {run['positions_per_s']:,.0f} positions/s, {run['workers']} workers"
                       + (f" ({run['executor']})" if run.get("executor", "local") != "local" else "")
                       + (f", reused {run['units_reused']} scan units and {run['shards_reused']} shards"
                          if run["units_reused"] or run["shards_reused"] else ""))
            if run.get("sgf_reader"):
                fast, slow = run["sgf_reader"]["fast"], run["sgf_reader"]["fallback"]
                why = ", ".join(f"{k} {v:,}" for k, v in slow["declined"].items())
                typer.echo(f"SGF inputs: {fast['inputs']:,} read by the compiled reader, {slow['inputs']:,} by sgfmill"
                           + (f" (declined: {why})" if why else ""))
    if m["games"]["kept"] == 0:
        typer.echo("error: no game was kept", err=True)
        raise typer.Exit(1)
