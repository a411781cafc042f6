"""``gotk inspect DIR`` (dataset summary, --verify) and ``gotk show DIR`` (draw one stored position)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from gotk.cli.common import check_output_file, parse_key_values
from gotk.cli.common import fail as _fail


def inspect_cmd(
    folder: str = typer.Argument(..., help="A folder written by gotk encode (or its fsspec URL, e.g. s3://b/ds)."),
    as_json: bool = typer.Option(False, "--json", help="Print the manifest as JSON."),
    storage_option: list[str] = typer.Option(None, "--storage-option", help="fsspec option KEY=VALUE for a URL "
                                             "(repeatable)."),
    verify: bool = typer.Option(False, "--verify", help="Also read every file the manifest lists and check its "
                                "size, sha256 and row count (exit code 1 if any differs or is missing)."),
) -> None:
    """Summarise an encoded dataset: rows per split, games, skip reasons, bytes per position."""
    from gotk.shards.manifest import load_manifest, summary_lines, verify_dataset
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


def show_cmd(
    folder: str = typer.Argument(..., help="A folder written by gotk encode (a path or an fsspec URL)."),
    split: str = typer.Option("train", "--split", "-s", help="Split name."),
    row: int = typer.Option(0, "--row", "-r", help="Row number within the split (0-based)."),
    point: str = typer.Option(None, "--point", "-p", help="List the active planes at this point (e.g. D4; "
                              "default: the move played)."),
    storage_option: list[str] = typer.Option(None, "--storage-option", help="fsspec option KEY=VALUE for a URL "
                                             "folder; repeatable."),
    svg: Path = typer.Option(None, "--svg", help="Also draw the board as SVG in this file (gotk serve's drawing)."),
    png: Path = typer.Option(None, "--png", help="Also draw the board as PNG in this file (matplotlib)."),
    plane: list[str] = typer.Option(None, "--plane", help="Overlay this plane on the --svg/--png board "
                                    "(repeatable, up to 8, coloured in order)."),
) -> None:
    """Draw one encoded position as a text board, the move played marked ``*`` (``+`` marks --point),
    and list the planes that are set at a point; --svg/--png draw it as a picture with planes overlaid."""
    from gotk.shards.position import read_position
    from gotk.storage import StorageError

    check_output_file(svg, "--svg")
    check_output_file(png, "--png")
    if plane and not (svg or png):
        _fail("--plane overlays the --svg/--png picture: give --svg or --png")
    try:
        pos = read_position(folder, split, row, parse_key_values(storage_option, "--storage-option"))
    except (ValueError, OSError) as e:
        _fail(str(e), 2)
    except StorageError as e:
        _fail(e.message, 2)
    try:
        pt = pos.point(point)
    except ValueError as e:
        _fail(f"--point {point!r}: {e}", 2)
    picture = None
    if svg or png:  # made before anything is printed: a bad --plane is refused first
        from gotk.serve.data import row_board

        try:
            picture = row_board(folder, pos.columns, pos.planes, pos.encoder, list(plane or []))
        except ValueError as e:
            _fail(f"--plane: {e}", 2)
    for line in pos.lines(pt):
        typer.echo(line)
    if picture is not None:
        from gotk.serve.draw import to_png, to_svg

        if svg:
            svg.write_text(to_svg(picture), encoding="utf-8")
            typer.echo(f"wrote {svg}")
        if png:
            to_png(picture, png)
            typer.echo(f"wrote {png}")
