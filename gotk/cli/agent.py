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
                                 "(19x19, both heads), or the built-in agent kgs-lz."),
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
    from gotk.nets.agent_file import resolve_agent

    if fmt not in FORMATS:
        _fail(f"--format {fmt!r}: choose from {', '.join(FORMATS)}")
    if not resolve_agent(agent).is_file():
        _fail(f"{agent}: no such agent file")
    check_output_file(out, "--out")
    try:
        info = export_agent_weights(agent, out)
    except GotkError as e:
        message = str(e).removeprefix(f"{e.reason}: ")
        _fail(f"{agent}: cannot write {fmt} weights: {message}" if isinstance(e, WeightsExportError) else message)
    typer.echo(f"leela-zero weights (version 1): {info['blocks']} blocks x {info['filters']} filters, "
               f"{info['bytes'] / 1e6:.2f} MB in {info['path']}")


@app.command("convert", cls=HelpCommand)
def convert_cmd(
    agent: Path = typer.Argument(..., help="Agent file (agent.gotk) or a built-in agent (kgs, kgs-lz, "
                                 "kgs-human)."),
    out: Path = typer.Option(..., "--out", "-o", help="Agent file to write; written atomically."),
    fp16: bool = typer.Option(True, "--fp16/--fp32", help="Store the weights as float16 (half the file; what the "
                              "shipped agents use) or float32."),
    search: list[str] = typer.Option([], "--search", metavar="KEY=VALUE",
                                     help="Set a search constant the agent plays with unless told otherwise: batch, "
                                     "c_puct or fpu (KEY=default removes it). Repeatable."),
    board_size: int | None = typer.Option(None, "--board-size", help="A fast rollout policy (kgs-rollout): the same "
                                          "weights for boards of this size (its features are local; "
                                          "docs/rollouts.md)."),
) -> None:
    """Rewrite an agent file with its weights in float16 (or back in float32), optionally with new search
    constants (``--search c_puct=1.6``, which ``gotk gtp``, ``match`` and ``serve`` then use for this agent when
    their own flags are not given); everything else is kept.

    Exit code: 0 on success; 2 for an unreadable agent, weights that overflow float16 or a bad option.
    """
    from gotk.errors import GotkError
    from gotk.nets.agent import convert_agent
    from gotk.nets.agent_file import resolve_agent

    settings = _search_settings(search)
    if not resolve_agent(agent).is_file():
        _fail(f"{agent}: no such agent file")
    check_output_file(out, "--out")
    if _is_rollout(agent) or board_size is not None:
        _convert_rollout(agent, out, fp16, board_size, settings)
        return
    try:
        path = convert_agent(agent, out, fp16=fp16, search=settings)
    except GotkError as e:
        _fail(str(e).removeprefix(f"{e.reason}: "))
    except ValueError as e:
        _fail(f"{agent}: {e}")
    from gotk.nets.agent_file import read_agent_files

    kept = read_agent_files(path)[0].get("search")
    typer.echo(f"{'float16' if fp16 else 'float32'} agent: {path.stat().st_size / 1e6:.2f} MB in {path}"
               + (f"; search {', '.join(f'{k}={v}' for k, v in sorted(kept.items()))}" if kept else ""))


def _is_rollout(agent: Path) -> bool:
    from gotk.errors import GotkError
    from gotk.nets.agent_file import read_agent_files
    from gotk.train.rollout import is_rollout_meta

    try:
        return is_rollout_meta(read_agent_files(agent)[0])
    except GotkError as e:
        _fail(str(e).removeprefix(f"{e.reason}: "))
    return False


def _convert_rollout(agent: Path, out: Path, fp16: bool, board_size: int | None, settings: dict) -> None:
    """``gotk agent convert`` of a fast rollout policy: its weights in float16/32, for another board size."""
    from gotk import coords
    from gotk.errors import GotkError
    from gotk.train.rollout import RolloutPolicy, load_rollout_policy

    if settings:
        _fail("--search sets a network's search constants, not a rollout policy's")
    if board_size is not None and not coords.MIN_SIZE <= board_size <= coords.MAX_SIZE:
        _fail(f"--board-size must be {coords.MIN_SIZE}..{coords.MAX_SIZE}, not {board_size}")
    try:
        pol = load_rollout_policy(agent)
    except GotkError as e:
        _fail(str(e).removeprefix(f"{e.reason}: ") + ("; --board-size converts a rollout policy only"
                                                      if board_size is not None else ""))
    size = board_size or pol.board_size
    meta = pol.meta
    extra = {k: meta[k] for k in ("training", "resized_from") if k in meta}
    if size != pol.board_size:
        extra["resized_from"] = {"board_size": pol.board_size, "agent": str(agent)}
    path = RolloutPolicy(pol.weights, size).save(out, metrics=meta.get("metrics"),
                                                 data_manifest_sha256=meta.get("data_manifest_sha256"), extra=extra,
                                                 fp16=fp16)
    typer.echo(f"{'float16' if fp16 else 'float32'} rollout policy for {size}x{size}: "
               f"{path.stat().st_size / 1e3:.0f} kB in {path}")


def _search_settings(items: list[str]) -> dict:
    """``KEY=VALUE`` items of ``--search`` → {key: int/float, or None for ``default``}; a bad one fails in one line."""
    from gotk.search.config import SEARCH_KEYS

    out: dict = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in SEARCH_KEYS:
            _fail(f"--search {item!r}: expected KEY=VALUE with KEY one of {', '.join(SEARCH_KEYS)}")
        if text.strip() == "default":
            out[key] = None
            continue
        try:
            out[key] = SEARCH_KEYS[key](text.strip())
        except ValueError:
            _fail(f"--search {item!r}: {key} takes {'an integer' if SEARCH_KEYS[key] is int else 'a number'}")
    from gotk.search.config import SearchConfig
    from gotk.search.evaluate import SearchSetupError

    try:
        SearchConfig(**{k: v for k, v in out.items() if v is not None}).validate()
    except SearchSetupError as e:
        _fail(f"--search: {str(e).removeprefix(f'{e.reason}: ').removeprefix('--').replace('c-puct', 'c_puct')}")
    return out
