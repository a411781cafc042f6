"""``gotk serve``: the local web app over datasets and agents (see docs/serve.md)."""

from __future__ import annotations

import ipaddress
import socket
import sys
from pathlib import Path

import typer


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve_cmd(
    datasets: list[Path] = typer.Argument(None, help="Dataset folders written by gotk encode (local paths)."),
    agent: list[Path] = typer.Option(None, "--agent", help="Agent package (agent.gotk) to show and play against "
                                     "(repeatable; the random player is always there)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind. The app has no authentication: keep "
                             "the loopback default unless the network is trusted."),
    port: int = typer.Option(8000, "--port", help="Port (0: any free port; the URL printed says which)."),
    threads: int = typer.Option(1, "--threads", help="torch CPU threads for agent inference (0: torch's default)."),
    leaf_lambda: float = typer.Option(0.0, "--lambda", help="The agents' searches value their leaves with AlphaGo's "
                                      "mix (1 - lambda) v + lambda z of the value head and rollouts (0: the value "
                                      "head; docs/rollouts.md)."),
    rollout_policy: str | None = typer.Option(None, "--rollout-policy", help="A fast rollout policy (kgs-rollout) "
                                              "plays those rollouts and mcts's, and gives mcts its priors."),
) -> None:
    """Start a local web app: dataset summaries, a games table, a game viewer with encoder planes overlaid,
    agents' policy heat maps and values, and play against an agent. Only the datasets and agents named here
    are reachable. Exit code 2 when one of them cannot be opened or the address cannot be bound."""
    import uvicorn

    from gotk.errors import GotkError
    from gotk.serve.agents import load_slots
    from gotk.serve.app import dataset_ids, make_app
    from gotk.serve.data import DatasetView

    def fail(message: str) -> None:
        typer.echo(f"error: {message}", err=True)
        raise typer.Exit(2)

    if not is_loopback(host):
        typer.echo(f"warning: --host {host} is not a loopback address: gotk serve has NO authentication; anyone "
                   "who can reach it can read the datasets and use the agents", err=True)

    paths = list(datasets or [])
    views = []
    for path in paths:
        if not path.exists():
            fail(f"no such folder: {path}")
        if not path.is_dir():
            fail(f"not a folder: {path} (give a dataset folder written by gotk encode)")
    for path, ident in zip(paths, dataset_ids(paths), strict=True):
        try:
            views.append(DatasetView(path, ident))
        except (ValueError, OSError) as e:
            fail(f"{path}: {e}")
    if threads:
        import torch

        torch.set_num_threads(threads)
    try:
        slots = load_slots([str(a) for a in agent or []], leaf_lambda, rollout_policy)
    except GotkError as e:
        fail(str(e))
    for slot in slots:
        if slot.describe()["warning"]:
            typer.echo(f"warning: {slot.name}: {slot.describe()['warning']}", err=True)
    if not 0 <= port <= 65535:
        fail(f"--port must be 0..65535, got {port}")
    try:
        info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        # the TCP protocol number matters: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on sockets
        # created with it, and with Nagle on, every answer written in two parts waits for the client's
        # delayed ACK, a stall on every request
        sock = socket.socket(info[0], socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(info[4])
        sock.listen(128)  # connections wait in the backlog until uvicorn serves them
    except OSError as e:
        fail(f"cannot listen on {host}:{port}: {e}")
    # agents run in a worker process of their own (see gotk.serve.app.AgentRunner), with these files and threads
    app = make_app(views, slots, worker=([str(a) for a in agent or []], threads,
                                         {"leaf_lambda": leaf_lambda, "rollout_policy": rollout_policy}))
    try:
        app.state.agents.ready(timeout=600)
    except Exception as e:  # noqa: BLE001 - a worker that cannot start is a one-line error, not a traceback
        app.state.agents.close()
        fail(f"the agents' worker process did not start: {type(e).__name__}: {e}")
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    typer.echo(f"gotk serve: {len(views)} dataset(s), {len(slots)} agent(s) at http://{shown}:{bound}/")
    sys.stdout.flush()
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])
