"""``gotk encoders`` (list encoders and their planes) and ``gotk features`` (planes of one game)."""

from __future__ import annotations

import json
from pathlib import Path

import typer


def _plane_marks(plane) -> dict[int, str]:
    """Characters for the non-zero points of one ``(H, W)`` plane: the digit, ``-`` for -1, ``+`` above 9."""
    flat = plane.ravel()
    marks = {}
    for p in flat.nonzero()[0].tolist():
        v = int(flat[p])
        marks[p] = "-" if v == -1 else (str(v) if 0 < v < 10 else "+")
    return marks


def encoders_cmd(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of text."),
) -> None:
    """List the available encoders with their planes (names, count, dtype)."""
    from gotk.encoders import get_encoder, list_encoders

    described = [get_encoder(name).describe() for name in list_encoders()]
    if as_json:
        typer.echo(json.dumps(described, indent=2))
        return
    for d in described:
        typer.echo(f"{d['name']}  {d['num_planes']} planes  dtype {d['dtype']}  version {d['version']}")
        for k, plane in enumerate(d["plane_names"]):
            typer.echo(f"  {k:3d}  {plane}")


def features_cmd(
    path: Path = typer.Argument(..., help="An SGF file (its first game is used)."),
    encoder: str = typer.Option("sevenplane", "--encoder", "-e", help="Encoder name (see `gotk encoders`)."),
    move: int = typer.Option(0, "--move", "-m", help="Show the position before this main-line move (0-based)."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Write every position of the game to this .npz."),
    include_passes: bool = typer.Option(False, "--include-passes", help="With --out, keep positions before passes."),
) -> None:
    """Print the planes of one position as text boards, or write every position of a game to an .npz
    (arrays ``features`` (N, C, H, W), ``labels``, ``move_numbers``, ``to_play`` (+1 black, -1 white))."""
    import numpy as np

    from gotk import coords
    from gotk.encoders import get_encoder
    from gotk.errors import GotkError
    from gotk.game.render import render_board
    from gotk.game.replay import initial_state
    from gotk.sgf.reader import read_sgf_file

    try:
        records = read_sgf_file(path)
        if not records:
            raise typer.BadParameter(f"{path} holds no game", param_hint="PATH")
        rec = records[0]
        enc = get_encoder(encoder, board_size=rec.size)
    except (GotkError, OSError, ValueError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from e

    if out is not None:
        try:
            game = enc.encode_game(rec, include_passes=include_passes)
        except GotkError as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(1) from e
        np.savez_compressed(out, features=game.features, labels=game.labels, move_numbers=game.move_numbers,
                            to_play=game.to_play, plane_names=np.array(enc.plane_names))
        typer.echo(f"{out}: {len(game)} positions, features {tuple(game.features.shape)} {game.features.dtype}, "
                   f"encoder {enc.name}")
        if game.error is not None:
            typer.echo(f"warning: stopped after {game.moves_replayed} moves: {game.error}", err=True)
        return

    if not 0 <= move <= rec.num_moves:
        typer.echo(f"error: --move {move} outside 0..{rec.num_moves}", err=True)
        raise typer.Exit(2)
    try:
        state = initial_state(rec)
        for color, point in rec.moves[:move]:
            state.play(point, color)
    except GotkError as e:
        typer.echo(f"error: the game cannot be replayed to move {move}: {e}", err=True)
        raise typer.Exit(1) from e
    if move < rec.num_moves:
        state.to_play = int(rec.colors[move])
        nxt = f", next {'BW'[state.to_play - 1]} {coords.to_gtp(int(rec.points[move]), rec.size)}"
    else:
        nxt = ", end of the game"
    planes = enc.encode(state)
    typer.echo(f"{enc.name}: position before move {move} ({'BW'[state.to_play - 1]} to play{nxt})")
    typer.echo(render_board(state.board, rec.size))
    blank = np.zeros(rec.size * rec.size, dtype=np.int8)
    for k, name in enumerate(enc.plane_names):
        typer.echo(f"\n[{k}] {name}  ({int(np.count_nonzero(planes[k]))} set)")
        typer.echo(render_board(blank, rec.size, _plane_marks(planes[k])))
