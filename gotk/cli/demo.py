"""``gotk demo``: the whole pipeline end to end on the built-in sample, with no network.

It serves the built-in KGS archives from a loopback HTTP mirror shaped like the archive site, then
runs the real commands one after another, each as its own ``gotk`` process, printing each command
line so it can be rerun by hand: ``download`` → ``encode`` → ``train`` → ``eval`` → ``match`` (against the
random engine), and last a short match of the shipped agent ``kgs``, searching, against the agent just trained.
"""

from __future__ import annotations

import html
import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import typer

from gotk.data import HELDOUT_ARCHIVE, sample_archives

MARKER = ".gotk-demo"


def write_listing(folder: Path, archives: list[Path]) -> Path:
    """Copy ``archives`` into ``folder`` with an ``index.html`` shaped like the KGS game-records page."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for a in archives:
        shutil.copyfile(a, folder / a.name)
        games = a.name.split("-")[3] if a.name.count("-") >= 4 else "?"
        rows.append(f'<tr><td>{html.escape(a.name[4:11])}</td><td>{games}</td>'
                    f'<td><a href="{html.escape(a.name)}">{html.escape(a.name)}</a></td></tr>')
    page = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>KGS game records (gotk demo mirror)"
            "</title></head><body><h1>Game records in SGF format</h1><table>\n"
            + "\n".join(rows) + "\n</table></body></html>\n")
    (folder / "index.html").write_text(page, encoding="utf-8")
    return folder / "index.html"


def _run(args: list[str], log: list[dict]) -> None:
    """Run ``gotk ARGS`` as a child process, streaming its output; stop the demo if it fails."""
    shown = "gotk " + " ".join(shlex.quote(a) for a in args)
    typer.secho(f"\n$ {shown}", bold=True)
    t0 = time.perf_counter()
    rc = subprocess.call([sys.executable, "-m", "gotk", *args])
    seconds = round(time.perf_counter() - t0, 1)
    log.append({"command": shown, "exit_code": rc, "seconds": seconds})
    if rc != 0:
        typer.secho(f"demo stopped: `{shown}` exited with {rc}", fg="red", err=True)
        raise typer.Exit(rc)


def demo_cmd(
    out: Path = typer.Option(Path("gotk-demo"), "--out", "-o", help="Folder for everything the demo makes."),
    encoder: str = typer.Option("sevenplane", "--encoder", "-e", help="Encoder for the dataset."),
    minutes: float = typer.Option(3.0, help="Training budget in minutes (wall clock, whatever the host's speed)."),
    eval_positions: int = typer.Option(20000, help="Held-out positions to evaluate (0: all)."),
    games: int = typer.Option(2, help="Games of each closing match: the demo's agent against the random engine, "
                              "then the shipped agent kgs with search against the demo's agent."),
    visits: int = typer.Option(16, help="Search visits a move of the shipped agent in the last match."),
    threads: int = typer.Option(0, help="torch CPU threads for training (0: torch's default)."),
) -> None:
    """Run the whole pipeline on the built-in sample: mirror → download → encode → train → eval → match.

    Everything lands in --out (rerunning replaces a previous demo's output there). Needs no network.
    """
    from gotk.demo.mirror import LocalMirror

    out = out.resolve()
    if out.exists() and any(out.iterdir()):
        if not (out / MARKER).exists():
            typer.secho(f"{out} is not empty and is not a previous demo's folder; choose another --out",
                        fg="red", err=True)
            raise typer.Exit(2)
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("made by gotk demo\n")
    data, dataset, run, games_dir = out / "data" / "kgs", out / "dataset", out / "run", out / "games"
    kgs_games_dir = out / "games-kgs"
    held_out = HELDOUT_ARCHIVE.name.split("-19-")[0] + "*"  # KGS-2017_02*
    log: list[dict] = []
    python = shlex.quote(sys.executable)

    write_listing(out / "mirror", sample_archives())
    with LocalMirror(out / "mirror") as url:
        typer.secho(f"serving the built-in sample archives at {url} (loopback mirror of the KGS page)", fg="green")
        _run(["download", "--index-url", f"{url}index.html", "--dest", str(data), "--jobs", "2"], log)
    _run(["encode", str(data), "--encoder", encoder, "--out", str(dataset), "--split", "train=0.95,val=0.05",
          "--test-from", held_out, "--no-progress"], log)
    _run(["inspect", str(dataset)], log)
    train_args = ["train", "--data", str(dataset), "--model", "resnet", "--blocks", "4", "--filters", "48",
                  "--out", str(run), "--max-minutes", str(minutes), "--batch-size", "128", "--optimizer", "adam",
                  "--lr", "0.002", "--schedule", "cosine", "--seed", "1", "--no-progress"]
    if threads:
        train_args += ["--threads", str(threads)]
    _run(train_args, log)
    agent = run / "agent.gotk"
    eval_args = ["eval", "--agent", str(agent), "--data", str(dataset), "--split", "test"]
    if eval_positions:
        eval_args += ["--max-positions", str(eval_positions)]
    _run(eval_args, log)
    if games > 0:
        _run(["match", "--agent", str(agent), "--opponent", f"{python} -m gotk gtp --random --seed 7",
              "--games", str(games), "--sgf-out", str(games_dir)], log)
        # the agent gotk ships (trained on the full KGS archives), searching, against the one just trained
        _run(["match", "--agent", "kgs", "--visits", str(visits), "--seed", "1", "--opponent",
              f"{python} -m gotk gtp --agent {shlex.quote(str(agent))} --threads 1", "--games", str(games),
              "--threads", "1", "--sgf-out", str(kgs_games_dir)], log)

    (out / "demo-report.json").write_text(json.dumps({"steps": log}, indent=2) + "\n")
    typer.secho("\nDemo finished. Where everything went:", bold=True)
    for label, path in (("downloaded archives", data), ("encoded shards", dataset), ("training run", run),
                        ("agent", agent), ("match games (SGF)", games_dir),
                        ("kgs vs agent (SGF)", kgs_games_dir),
                        ("commands and timings", out / "demo-report.json")):
        typer.echo(f"  {label:<22} {path}")
    typer.echo("\nNext:")
    typer.echo(f"  gotk gtp --agent {agent}        # play it in Sabaki / GoGui / Lizzie (GTP engine)")
    typer.echo("  gotk gtp --agent kgs --visits 400   # the shipped agent with search (README: analysis in Lizzie)")
    typer.echo(f"  gotk match --agent {agent} --opponent \"/usr/games/gnugo --mode gtp --level 10\" --games 20")
    typer.echo("  gotk download --dest data/kgs   # the full KGS high-dan collection from the archive site")
    typer.echo("  gotk encode data/kgs -e alphago -o data/alphago && gotk train --data data/alphago ...")
