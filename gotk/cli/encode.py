"""``gotk encode`` (SGF sources → Parquet shards), ``gotk inspect DIR``, ``gotk show DIR``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import typer

from gotk.cli.main import app
from gotk.data import sample_archives


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


def _fail(message: str, code: int) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


@app.command("encode")
def encode_cmd(
    sources: list[Path] = typer.Argument(None, help="Archives (zip, tar.gz, tar.bz2), folders, .sgf files or a "
                                         "download folder (default: the built-in sample)."),
    encoder: str = typer.Option(..., "--encoder", "-e", help="Encoder name (oneplane, sevenplane, simple, alphago)."),
    out: str = typer.Option(..., "--out", "-o", help="Output folder (must be empty unless --resume): a path or an "
                            "fsspec URL, e.g. s3://bucket/prefix (pip install 'gotk[s3]'; see docs/dask.md)."),
    workers: int = typer.Option(0, "--workers", "-j", help="Worker processes (0: all cores)."),
    split: str = typer.Option("train=0.9,val=0.05,test=0.05", help="Split fractions by game, e.g. train=0.9,val=0.1 "
                              "or test=1."),
    test_from: list[str] = typer.Option(None, "--test-from", help="Glob on archive file name or path: those sources "
                                        "go wholly to the test split (repeatable)."),
    min_rank: str = typer.Option(None, "--min-rank", help="Keep games where BOTH players are at least this rank "
                                 "(e.g. 6d; pros rank above every dan; unknown ranks are dropped)."),
    no_handicap: bool = typer.Option(False, "--no-handicap", help="Drop games with handicap ≥ 2 or setup stones."),
    include_passes: bool = typer.Option(False, "--include-passes", help="Also emit rows for passes (label size²)."),
    skip_first: int = typer.Option(0, "--skip-first", help="Drop the first N moves of each game."),
    board_size: int = typer.Option(19, "--board-size", help="Board size; other sizes are skipped as bad_size."),
    shard_rows: int = typer.Option(65536, "--shard-rows", help="Rows per shard file (the last of a split is shorter)."),
    drop_partial: bool = typer.Option(False, "--drop-partial", help="Drop games that stop at an illegal or "
                                      "unreadable move (default: keep the positions before it)."),
    encoder_option: list[str] = typer.Option(None, "--encoder-option", help="Encoder option KEY=VALUE, e.g. "
                                             "ladders=false (repeatable)."),
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

    Exit code: 0 on success; 1 when no game was kept; 2 for bad options (including --executor dask
    without dask installed) or an output folder that is not empty (without --resume) or holds a
    different run, or a URL --out that cannot be used (package, bucket or credentials missing).
    """
    from gotk.pipeline.encode import EncodeError, EncodeOptions, encode_dataset
    from gotk.pipeline.manifest import summary_lines

    opts = EncodeOptions(
        encoder=encoder, encoder_options=parse_key_values(encoder_option), board_size=board_size, split=split,
        test_from=list(test_from or []), min_rank=min_rank, no_handicap=no_handicap, include_passes=include_passes,
        skip_first=skip_first, drop_partial=drop_partial, shard_rows=shard_rows,
    )
    targets = [str(p) for p in sources] if sources else [str(p) for p in sample_archives()]
    try:
        m = encode_dataset(targets, out, opts, workers=workers or None, resume=resume, progress=progress,
                           unit_size=max(1, unit_size), executor=executor, scheduler=scheduler,
                           storage_options=parse_key_values(storage_option, "--storage-option"))
    except EncodeError as e:
        _fail(str(e), e.exit_code)
    run = m.get("run", {})
    if as_json:
        typer.echo(json.dumps(m, indent=2))
    else:
        for line in summary_lines(m):
            typer.echo(line)
        if run.get("already_complete"):
            typer.echo(f"\n{out}: already complete (same sources and options); nothing to do")
        elif run:
            typer.echo(f"\n{run['wall_s']:.1f} s, {run['positions_per_s']:,.0f} positions/s, {run['workers']} workers"
                       + (f" ({run['executor']})" if run.get("executor", "local") != "local" else "")
                       + (f", reused {run['units_reused']} scan units and {run['shards_reused']} shards"
                          if run["units_reused"] or run["shards_reused"] else ""))
    if m["games"]["kept"] == 0:
        typer.echo("error: no game was kept", err=True)
        raise typer.Exit(1)


@app.command("inspect")
def inspect_cmd(
    folder: str = typer.Argument(..., help="A folder written by gotk encode (or its fsspec URL, e.g. s3://b/ds)."),
    as_json: bool = typer.Option(False, "--json", help="Print the manifest as JSON."),
    storage_option: list[str] = typer.Option(None, "--storage-option", help="fsspec option KEY=VALUE for a URL "
                                             "(repeatable)."),
    verify: bool = typer.Option(False, "--verify", help="Also read every file the manifest lists and check its "
                                "size, sha256 and row count (exit code 1 if any differs or is missing)."),
) -> None:
    """Summarise an encoded dataset: rows per split, games, skip reasons, bytes per position."""
    from gotk.pipeline.manifest import load_manifest, summary_lines, verify_dataset
    from gotk.storage import StorageError

    opts = parse_key_values(storage_option, "--storage-option")
    try:
        m = load_manifest(folder, opts)
        check = verify_dataset(folder, opts, m) if verify else None
    except (ValueError, OSError) as e:
        _fail(str(e), 2)
    except StorageError as e:
        _fail(e.message, 2)
    if as_json:
        typer.echo(json.dumps(m if check is None else {**m, "verify": check}, indent=2))
    else:
        for line in summary_lines(m):
            typer.echo(line)
        if check is not None:
            typer.echo("")
            if check["problems"]:
                typer.echo(f"verify: {len(check['problems'])} of {check['files']} files differ from the manifest:")
                for p in check["problems"]:
                    typer.echo(f"  {p['file']}: {p['problem']}")
            else:
                typer.echo(f"verify: all {check['files']} files match the manifest "
                           f"({check['bytes']:,} bytes, sha256 and row counts)")
    if check is not None and check["problems"]:
        raise typer.Exit(1)


_STONE_PLANES = (
    ("own", re.compile(r"^(own_(liberties|stones?)|stone_player$|player_stones?$)")),
    ("opp", re.compile(r"^(opponent_(liberties|stones?)|stone_opponent$|opponent_stones?$)")),
    ("black", re.compile(r"^black_(liberties|stones?)")),
    ("white", re.compile(r"^white_(liberties|stones?)")),
)


def stones_from_planes(planes: np.ndarray, names: list[str], to_play: int) -> np.ndarray | None:
    """A flat board (0 empty, 1 black, 2 white) recovered from planes by their names: stone or
    liberty planes of ``own``/``opponent`` (``stone_player``/``stone_opponent``; relative to
    ``to_play``, +1 black) or ``black``/``white``, or a signed ``own_minus_opponent`` int8 plane.
    None when no plane names stones."""
    c, h, w = planes.shape
    sets = {k: np.zeros(h * w, dtype=bool) for k in ("own", "opp", "black", "white")}
    found = False
    for i, name in enumerate(names):
        plane = planes[i].reshape(-1)
        if planes.dtype == np.int8 and name.startswith("own_minus_opponent"):
            sets["own"] |= plane > 0
            sets["opp"] |= plane < 0
            found = True
            continue
        for key, pattern in _STONE_PLANES:
            if pattern.match(name):
                sets[key] |= plane != 0
                found = True
                break
    if not found:
        return None
    me, them = (1, 2) if to_play > 0 else (2, 1)
    board = np.zeros(h * w, dtype=np.int8)
    board[sets["black"]] = 1
    board[sets["white"]] = 2
    board[sets["own"]] = me
    board[sets["opp"]] = them
    return board


def read_row(folder: Path | str, split: str, row: int, storage_options: dict | None = None):
    """``(table_of_one_row, manifest)`` for row ``row`` (0-based over the split's shards in order);
    ``folder`` may be an fsspec URL."""
    import pyarrow.parquet as pq

    from gotk.pipeline.manifest import load_manifest
    from gotk.storage import Storage, join

    m = load_manifest(folder, storage_options)
    st = Storage.for_url(folder, storage_options)
    if split not in m["splits"]:
        raise ValueError(f"no split {split!r}; the dataset has {', '.join(m['splits'])}")
    s = m["splits"][split]
    if not 0 <= row < s["rows"]:
        raise ValueError(f"row {row} outside 0..{s['rows'] - 1} of split {split!r}")
    for shard in s["shards"]:
        if row < shard["rows"]:
            pf = pq.ParquetFile(st.open_input(join(folder, shard["file"])))
            for g in range(pf.metadata.num_row_groups):
                n = pf.metadata.row_group(g).num_rows
                if row < n:
                    return pf.read_row_group(g).slice(row, 1), m
                row -= n
        row -= shard["rows"]
    raise ValueError(f"row {row} not found: the manifest and the shard files disagree")


@app.command("show")
def show_cmd(
    folder: str = typer.Argument(..., help="A folder written by gotk encode (a path or an fsspec URL)."),
    split: str = typer.Option("train", "--split", "-s", help="Split name."),
    row: int = typer.Option(0, "--row", "-r", help="Row number within the split (0-based)."),
    point: str = typer.Option(None, "--point", "-p", help="List the active planes at this point (e.g. D4; "
                              "default: the move played)."),
    storage_option: list[str] = typer.Option(None, "--storage-option", help="fsspec option KEY=VALUE for a URL "
                                             "folder; repeatable."),
) -> None:
    """Draw one encoded position as a text board, the move played marked ``*`` (``+`` marks --point),
    and list the planes that are set at a point."""
    from gotk.datasets import decode_features
    from gotk.game.render import render_board
    from gotk.sgftools import coords
    from gotk.storage import StorageError

    try:
        table, m = read_row(folder, split, row, parse_key_values(storage_option, "--storage-option"))
    except (ValueError, OSError) as e:
        _fail(str(e), 2)
    except StorageError as e:
        _fail(e.message, 2)
    enc = m["encoder"]
    size = int(enc["board_size"])
    planes = decode_features(table)[0]
    r = table.to_pylist()[0]
    to_play = int(r["to_play"])
    label = int(r["label"])
    board = stones_from_planes(planes, enc["plane_names"], to_play)
    marks: dict[int, str] = {}
    if label < size * size:
        marks[label] = "*"
    pt = None
    if point:
        try:
            pt = coords.from_gtp(point, size)
        except ValueError as e:
            _fail(f"--point {point!r}: {e}", 2)
        if pt < size * size and pt != label:
            marks[pt] = "+"
    elif label < size * size:
        pt = label
    move = "pass" if label == size * size else coords.to_gtp(label, size)
    typer.echo(f"{split} row {row}: game {r['game_id']}  move {r['move_number']}  "
               f"{'Black' if to_play > 0 else 'White'} to play  label {move} ({label})  value {r['value']:+d}")
    typer.echo(render_board(board if board is not None else np.zeros(size * size, dtype=np.int8), size, marks))
    if board is None:
        typer.echo(f"(encoder {enc['name']} has no stone planes: the board shows only the marks)")
    if pt is not None and pt < size * size:
        rr, cc = divmod(pt, size)
        vals = planes[:, rr, cc]
        active = [f"{n}={int(v)}" if planes.dtype == np.int8 else n
                  for n, v in zip(enc["plane_names"], vals, strict=True) if v != 0]
        typer.echo(f"planes set at {coords.to_gtp(pt, size)}: {', '.join(active) if active else '(none)'}")
