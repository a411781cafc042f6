"""The ``gotk serve`` web app (Starlette): a JSON API over the datasets and agents named at start-up, plus
one static page (``static/``: hand-written HTML, JS and CSS, no CDN) that draws what the API returns.

Boards are drawn on the server by :mod:`gotk.serve.draw` (the SVG ``gotk show --svg`` writes), so the
page and the pictures are the same drawing. Errors are JSON ``{"error": message}`` with a 4xx status;
an unexpected exception gives a 500 with a one-line message, never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from gotk import coords
from gotk.serve import agents as A
from gotk.serve import profiles as P
from gotk.serve.data import DatasetView, ServeError, position_board
from gotk.serve.draw import PALETTE, Board, to_svg

STATIC = Path(__file__).with_name("static")
MAX_BODY = 1 << 20
AGENT_THREADS = 2  # agents' work in process (policies, searches, moves); one runs the network at a time
log = logging.getLogger("gotk.serve")


class Registry:
    """What the app may reach: datasets and agents by id, fixed at start-up."""

    def __init__(self, datasets: list[DatasetView], slots: list[A.AgentSlot]) -> None:
        self.datasets = {d.ident: d for d in datasets}
        self.agents = {s.ident: s for s in slots}

    def dataset(self, ident) -> DatasetView:
        if not isinstance(ident, str) or ident not in self.datasets:
            raise ServeError(404, f"no dataset {str(ident)[:60]!r}; this server has: "
                                  f"{', '.join(self.datasets) or 'none'}")
        return self.datasets[ident]

    def agent(self, ident) -> A.AgentSlot:
        if not isinstance(ident, str) or ident not in self.agents:
            raise ServeError(404, f"no agent {str(ident)[:60]!r}; this server has: {', '.join(self.agents)}")
        return self.agents[ident]


def dataset_ids(paths: list[Path]) -> list[str]:
    """Short unique ids from folder names (``kgs``, ``kgs-2`` ...), safe in URLs."""
    out: list[str] = []
    for p in paths:
        base = "".join(c if c.isalnum() or c in "-_." else "-" for c in p.resolve().name)[:40] or "dataset"
        ident, n = base, 2
        while ident in out:
            ident, n = f"{base}-{n}", n + 1
        out.append(ident)
    return out


# --- request parsing --------------------------------------------------------------------------------


def qint(request: Request, name: str, default: int, lo: int | None = None, hi: int | None = None) -> int:
    """An integer query parameter (``default`` when absent or empty); 400 when it is not an integer or is
    outside ``lo..hi`` (None: unbounded on that side), with the whole range in the message."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        if len(raw) > 100:
            raise ValueError
        value = int(raw)
    except ValueError:
        raise ServeError(400, f"{name} must be an integer, got {raw[:40]!r}") from None
    if lo is not None and value < lo or hi is not None and value > hi:
        bound = f"{lo}..{hi}" if lo is not None and hi is not None else (f">= {lo}" if lo is not None else f"<= {hi}")
        raise ServeError(400, f"{name} must be {bound}, got {value}")
    return value


def qbool(request: Request, name: str) -> bool:
    """A yes/no query parameter: absent, empty, ``0``, ``false`` → False; ``1``, ``true`` → True; else 400."""
    raw = request.query_params.get(name, "").lower()
    if raw in ("", "0", "false"):
        return False
    if raw in ("1", "true"):
        return True
    raise ServeError(400, f"{name} must be 1, 0, true or false, got {raw[:40]!r}")


async def body(request: Request) -> dict:
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise ServeError(413, f"request body over {MAX_BODY} bytes")
    try:
        obj = json.loads(raw or b"{}")
    except (ValueError, UnicodeDecodeError) as e:
        raise ServeError(400, f"the request body is not JSON: {e}") from None
    if not isinstance(obj, dict):
        raise ServeError(400, "the request body must be a JSON object")
    return obj


def field(obj: dict, name: str, kind, default=None):
    value = obj.get(name, default)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ServeError(400, f"{name} must be {kind.__name__}, got {str(value)[:40]!r}")
    return value


def search_visits(req: dict) -> int:
    """A request's ``visits``: 0 (no search, the default) or 2..:data:`gotk.serve.agents.MAX_VISITS`."""
    visits = field(req, "visits", int, 0)
    if visits != 0 and not 2 <= visits <= A.MAX_VISITS:
        raise ServeError(400, f"visits must be 0 (no search) or 2..{A.MAX_VISITS}, got {visits}")
    return visits


# --- positions -----------------------------------------------------------------------------------------


def dataset_position(ds: DatasetView, game_id: str, k: int | None):
    """``(meta, positions, k)`` with ``k`` checked against the game's length: a position the game does not have
    (negative or past its end) is 404 with the range, whichever way it is asked for."""
    meta, gp = ds.positions(game_id)
    n = len(gp.label)
    if k is None:
        k = 0
    if not 0 <= k < n:
        raise ServeError(404, f"move {k} is outside this game's positions 0..{n - 1}")
    return meta, gp, k


def stones_of_moves(state) -> tuple[np.ndarray, dict[int, int]]:
    """The board and the move number of each stone of a replayed game."""
    numbers: dict[int, int] = {}
    for i, (_colour, p) in enumerate(state.history):
        if p < state.size * state.size:
            numbers[p] = i + 1
    board = state.board.copy()
    return board, {p: n for p, n in numbers.items() if board[p] != 0}


def replayed_moves(state) -> list[tuple[int, int]]:
    return list(state.history)


# --- agents' requests: off the event loop, and (in gotk serve) out of this process -----------------------

AGENT_REQUESTS = {"analyse": "analyse_request", "play": "play_request"}
WORKER_NICENESS = 10  # the worker's CPU priority below the server's: on a busy machine the pages come first
_WORKER_REG: Registry | None = None  # in the worker process: its own datasets and agents


def _worker_start(datasets: list[tuple[str, str]], agent_files: list[str], threads: int,
                  search: dict | None = None) -> None:
    """The worker process's start: the same datasets (by path and id) and agents (``search``: their
    :func:`~gotk.serve.agents.load_slots` settings) as the server."""
    global _WORKER_REG
    import os
    import threading
    import time

    parent = os.getppid()

    def orphaned() -> None:  # the server was killed without its shutdown: the worker goes too
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=orphaned, daemon=True, name="gotk-agents-parent").start()
    with contextlib.suppress(OSError):  # searches yield the CPU to the pages (a table query is milliseconds)
        os.nice(WORKER_NICENESS)
    if threads:
        import torch

        torch.set_num_threads(threads)
    _WORKER_REG = Registry([DatasetView(Path(p), i) for p, i in datasets], A.load_slots(agent_files, **(search or {})))


def _worker_call(name: str, req: dict) -> tuple[int, dict]:
    """One agent request in the worker process → ``(HTTP status, JSON body)``: a :class:`ServeError` becomes
    its status and message (exceptions are answered, not pickled across)."""
    if _WORKER_REG is None:
        return 500, {"error": "the agents' worker process did not start; see the server's log"}
    try:
        return 200, globals()[AGENT_REQUESTS[name]](_WORKER_REG, req)
    except ServeError as e:
        return e.status, {"error": e.message}
    except Exception as e:  # noqa: BLE001 - answered with a one-line 500, logged in the worker
        log.error("unexpected error in %s: %s: %s", name, type(e).__name__, e)
        return 500, {"error": f"internal error ({type(e).__name__}); see the server's log"}


class AgentRunner:
    """Runs agents' requests away from the requests that must stay fast.

    A search of 800 visits takes seconds of mostly Python work (the tree walks, replaying paths, the network
    calls). In a thread of the server's process it holds the GIL most of that time, and every table or position
    request then waits for it at each of its own Python steps: 50 clients saw table queries of a second. So
    ``gotk serve`` runs agents in one **worker process** (spawned, with the same datasets and agent files; its
    requests are queued there, one network at a time, as before): the server's process keeps its GIL for the
    pages. Without a worker (the in-process tests) a pool of :data:`AGENT_THREADS` threads of its own keeps
    agents off the event loop and out of the thread pool the other handlers use."""

    def __init__(self, reg: Registry, datasets: list[DatasetView], worker: tuple[list[str], int] | None) -> None:
        self.reg = reg
        self.worker = worker
        self.specs = [(str(d.path), d.ident) for d in datasets]
        self.threads = ThreadPoolExecutor(max_workers=AGENT_THREADS, thread_name_prefix="gotk-agents")
        self.process = None

    def start(self) -> None:
        """Start the worker process (when there is one) and load it at once, so the first request is quick."""
        if self.worker is None or self.process is not None:
            return
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        files, threads, *search = self.worker
        self.process = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                           initializer=_worker_start,
                                           initargs=(self.specs, files, threads, search[0] if search else None))
        self._ready = self.process.submit(int)  # starts it and runs the initializer now

    def ready(self, timeout: float) -> None:
        """Start the worker and wait until it has loaded the agents (``gotk serve`` prints its URL after this,
        so that the first request is not held by the worker's start-up). Raises when the worker cannot start."""
        self.start()
        if self.process is not None:
            self._ready.result(timeout=timeout)

    async def run(self, name: str, req: dict) -> dict:
        loop = asyncio.get_running_loop()
        if self.worker is None:
            fn = globals()[AGENT_REQUESTS[name]]
            return await loop.run_in_executor(self.threads, fn, self.reg, req)
        if self.process is None:
            self.start()
        status, out = await loop.run_in_executor(self.process, _worker_call, name, req)
        if status != 200:
            raise ServeError(status, out["error"])
        return out

    def close(self) -> None:
        """Stop at once: a search under way is abandoned (its client is gone with the server) and the worker
        process ends with the server (it would otherwise hold the server's stderr open, or outlive it)."""
        self.threads.shutdown(wait=False, cancel_futures=True)
        if self.process is not None:
            procs = list((getattr(self.process, "_processes", None) or {}).values())
            self.process.shutdown(wait=False, cancel_futures=True)
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.join(timeout=10)
            self.process = None


# --- handlers -------------------------------------------------------------------------------------------


def make_app(datasets: list[DatasetView], slots: list[A.AgentSlot],
             worker: tuple[list[str], int] | None = None) -> Starlette:
    """The app. Agents' requests (``/api/analyse``, ``/api/play``: network calls and searches of up to
    :data:`gotk.serve.agents.MAX_VISITS` visits, seconds each) never run on the event loop nor in the thread
    pool that answers the table, position and stats requests (see :class:`AgentRunner`). ``worker``:
    ``(agent files, torch threads[, load_slots settings])`` to run them in a worker process of their own, as
    ``gotk serve`` does
    (``slots`` must then be those files' :func:`~gotk.serve.agents.load_slots`); None: in a thread of this
    process (tests)."""
    reg = Registry(datasets, slots)
    agents = AgentRunner(reg, datasets, worker)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        agents.start()
        yield
        agents.close()

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    async def favicon(request: Request) -> Response:
        return FileResponse(STATIC / "favicon.ico", media_type="image/x-icon",
                            headers={"Cache-Control": "max-age=86400"})

    async def info(request: Request) -> Response:
        return JSONResponse({
            "datasets": [{"id": d.ident, "name": d.path.name, "encoder": d.encoder["name"], "board_size": d.size,
                          "games": d.manifest["games"]["kept"], "rows": d.manifest["rows"]}
                         for d in reg.datasets.values()],
            "agents": [s.describe() for s in reg.agents.values()],
        })

    def summary(request: Request) -> Response:  # sync: Starlette runs it in its thread pool
        return JSONResponse(reg.dataset(request.path_params["ds"]).summary())

    def stats(request: Request) -> Response:  # sync: Starlette runs it in its thread pool
        from gotk.stats import format_report
        from gotk.stats.plots import CHARTS

        ds = reg.dataset(request.path_params["ds"])
        report = ds.stats()
        return JSONResponse({"report": report, "text": format_report(report),
                             "charts": [f"/api/datasets/{ds.ident}/stats/{name}.png" for name in CHARTS]})

    def chart(request: Request) -> Response:  # sync: Starlette runs it in its thread pool
        ds = reg.dataset(request.path_params["ds"])
        return Response(ds.chart(request.path_params["chart"]), media_type="image/png",
                        headers={"Cache-Control": "max-age=3600"})

    def games(request: Request) -> Response:  # sync: Starlette runs it in its thread pool
        ds = reg.dataset(request.path_params["ds"])
        q = request.query_params
        text = {k: q.get(k, "")[:100] for k in ("player", "rank", "date_from", "date_to", "result", "split")}
        out = ds.query_games(**text, sort=q.get("sort", "date"), desc=qbool(request, "desc"),
                             offset=qint(request, "offset", 0, 0), limit=qint(request, "limit", 50, 1, 500))
        return JSONResponse(out)

    def position(request: Request) -> Response:  # sync: Starlette runs it in its thread pool
        ds = reg.dataset(request.path_params["ds"])
        meta, gp, k = dataset_position(ds, request.path_params["game"], qint(request, "move", 0))
        names = ds.encoder["plane_names"]
        wanted = [p for p in request.query_params.get("planes", "").split(",") if p]
        try:
            board = position_board(gp, k, ds.encoder, wanted)
        except ValueError as e:
            raise ServeError(400, str(e)) from None
        size = ds.size
        label = int(gp.label[k])
        counts = {n: int(np.count_nonzero(gp.planes[k][i])) for i, n in enumerate(names)}
        return JSONResponse({
            "game": meta, "move": k, "count": len(gp.label), "move_number": int(gp.move_number[k]),
            "to_play": "B" if gp.to_play[k] > 0 else "W", "next": coords.to_gtp(label, size),
            "value": int(gp.value[k]), "planes": names, "plane_counts": counts,
            "legend": [{"plane": n, "colour": PALETTE[i]} for i, n in enumerate(wanted)],
            "stones_known": board.stones is not None, "svg": to_svg(board),
        })

    async def analyse(request: Request) -> Response:
        return JSONResponse(await agents.run("analyse", await body(request)))

    async def play(request: Request) -> Response:
        return JSONResponse(await agents.run("play", await body(request)))

    async def sgf(request: Request) -> Response:
        return await run_in_threadpool(_sgf, await body(request))

    def _sgf(req: dict) -> Response:
        from gotk.sgf.writer import game_sgf

        size = field(req, "size", int, 19)
        handicap = field(req, "handicap", int, 0)
        state = A.build_state(size, field(req, "komi", float, 7.5), handicap, field(req, "moves", list, []))
        result = field(req, "result", str, "")[:20]
        names = [field(req, k, str, "?")[:60] for k in ("black", "white")]
        text = game_sgf(size, state.komi, names[0], names[1], result or "?", replayed_moves(state),
                        comment="played in gotk serve")
        if handicap:
            from gotk.game.handicap import fixed_handicap_points

            stones = "".join(f"[{coords.to_sgf(p, size)}]" for p in fixed_handicap_points(size, handicap))
            text = text.replace("RE[", f"HA[{handicap}]AB{stones}RE[", 1)
        return Response(text, media_type="application/x-go-sgf",
                        headers={"Content-Disposition": 'attachment; filename="gotk-game.sgf"'})

    async def on_serve_error(request: Request, exc: ServeError) -> Response:
        return JSONResponse({"error": exc.message}, status_code=exc.status)

    async def on_http(request: Request, exc: HTTPException) -> Response:
        return JSONResponse({"error": exc.detail or "error"}, status_code=exc.status_code)

    async def on_other(request: Request, exc: Exception) -> Response:
        log.error("unexpected error on %s: %s: %s", request.url.path, type(exc).__name__, exc)
        return JSONResponse({"error": f"internal error ({type(exc).__name__}); see the server's log"},
                            status_code=500)

    routes = [
        Route("/", index),
        Route("/favicon.ico", favicon),
        Route("/api/info", info),
        Route("/api/datasets/{ds}", summary),
        Route("/api/datasets/{ds}/stats", stats),
        Route("/api/datasets/{ds}/stats/{chart}.png", chart),
        Route("/api/datasets/{ds}/games", games),
        Route("/api/datasets/{ds}/games/{game}/position", position),
        Route("/api/analyse", analyse, methods=["POST"]),
        Route("/api/play", play, methods=["POST"]),
        Route("/api/sgf", sgf, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={ServeError: on_serve_error, HTTPException: on_http, Exception: on_other})
    app.state.agents = agents
    return app


def source_state(reg: Registry, src: dict):
    """``(state, features or None, encoder description or None, metadata row or None)`` from a request's
    ``source``; the row is a dataset position's recorded metadata (when its shards have the column)."""
    if "dataset" in src:
        ds = reg.dataset(src["dataset"])
        meta, gp, k = dataset_position(ds, field(src, "game", str), field(src, "move", int, 0))
        komi = meta.get("komi")
        state, _history = A.state_from_rows(gp, k, ds.encoder, float(komi if komi is not None else 7.5))
        return state, gp.planes[k], ds.encoder, None if gp.metadata is None else gp.metadata[k]
    state = A.build_state(field(src, "size", int, 19), field(src, "komi", float, 7.5),
                          field(src, "handicap", int, 0), field(src, "moves", list, []))
    return state, None, None, None


def analyse_request(reg: Registry, req: dict) -> dict:
    """``POST /api/analyse``: every requested agent's policy, value and (with ``visits``) search on the position;
    a conditioned agent's as the request's ``profile`` (and ``compare``: :mod:`gotk.serve.profiles`). Every input is
    checked before any agent runs. Without ``agents``: every agent but ``mcts`` (which has no policy to show and
    spends its playouts on every request; it is asked by name)."""
    src = field(req, "source", dict, {})
    slots = [reg.agent(ident) for ident in field(req, "agents", list, [a for a in reg.agents if a != "mcts"])]
    top = field(req, "top", int, 10)
    if not 1 <= top <= 50:
        raise ServeError(400, f"top must be 1..50, got {top}")
    visits = search_visits(req)
    seed = field(req, "seed", int, 0)
    profile, compare = P.request_profiles(req)
    state, features, enc, recorded = source_state(reg, src)
    results = [agent_result(slot, state, top, visits, seed, features, enc, recorded, profile, compare)
               for slot in slots]
    board, numbers = stones_of_moves(state)
    recorded_move = None  # a dataset position: its recorded next move is ringed, as in the viewer
    if "dataset" in src:
        _m, gp, k = dataset_position(reg.dataset(src["dataset"]), src["game"], src.get("move", 0))
        recorded_move = int(gp.label[k]) if gp.label[k] < state.size * state.size else None
    return {"size": state.size, "to_play": "B" if state.to_play == 1 else "W",
            "svg": to_svg(Board(state.size, stones=board, numbers=numbers, next_move=recorded_move,
                                last_move=state_last(state), clickable="dataset" not in src)),
            "results": results}


def agent_result(slot: A.AgentSlot, state, top: int, visits: int, seed: int, features, enc, recorded,
                 profile: str | None, compare: str | None) -> dict:
    """One agent's part of an analyse answer (an ``error`` when it cannot look at this position)."""
    if slot.size is not None and slot.size != state.size:
        return {"agent": slot.ident, "name": slot.name,
                "error": f"plays {slot.size}x{slot.size}, the position is {state.size}x{state.size}"}
    if slot.conditioned:
        res = P.conditioned_result(slot, state, top, features, enc, recorded, profile, compare, state_last(state))
        if visits and "error" not in res:
            res["search"] = {"error": P.NO_SEARCH}
        return res
    res = A.analyse(slot, state, top, features, enc)
    probs = res.pop("policy")
    if profile is not None:
        res["profile_note"] = P.IGNORED
    if slot.agent is None:  # random, mcts: uniform over the sensible moves, no policy worth a heat map or a top 10
        n = int(np.count_nonzero(probs))
        res["pass"] = round(float(probs[-1]), 6)
        who = "mcts's priors are uniform" if slot.mcts else "the random player picks uniformly"
        res.update(uniform=True, top=[], svg=None,
                   note=f"no policy: {who} among the {n} sensible moves ({100 / max(n, 1):.2g}% each)")
    else:
        res.update(P.policy_view(state, probs, top, state_last(state)), uniform=False)
    if visits:
        if slot.has_value:
            res["search"], shares, _move = A.search(slot, state, visits, top, seed)
            ranking = [A.parse_point(m["move"], state.size) for m in res["search"]["moves"]]
            res["search"]["svg"] = to_svg(Board(state.size, stones=state.board.copy(), heat=shares,
                                                top=min(top, 5), ranking=ranking, last_move=state_last(state)))
        else:
            res["search"] = {"error": "no search: search needs a network with a value head"
                             + (" (this is the random player)" if slot.agent is None else "")}
    return res


def game_reply(state, agent_move=None) -> dict:
    board, numbers = stones_of_moves(state)
    over = state.passes >= 2
    score = state.score_final() if over else None
    return {"moves": [coords.to_gtp(p, state.size) for _c, p in replayed_moves(state)],
            "to_play": "B" if state.to_play == 1 else "W", "agent_move": agent_move,
            "captures": list(state.captures), "over": over,
            "result": None if score is None else ("0" if score == 0 else
                                                  f"{'B' if score > 0 else 'W'}+{abs(score):g}"),
            "svg": to_svg(Board(state.size, stones=board, numbers=numbers, last_move=state_last(state),
                                clickable=not over))}

def play_request(reg: Registry, req: dict) -> dict:
    """``POST /api/play``: the human's move, then the agent's (stateless: the request carries the game); a
    conditioned agent plays as the request's ``profile`` (:func:`gotk.serve.profiles.play_profile`)."""
    slot = reg.agent(field(req, "agent", str, "random"))
    human = field(req, "human", str, "B")
    if human not in ("B", "W"):
        raise ServeError(400, f"human must be B or W, got {human[:10]!r}")
    size = field(req, "size", int, slot.size or 19)
    A.check_size(slot, size)
    visits = search_visits(req)
    if visits and slot.conditioned:
        raise ServeError(400, f"{slot.name!r} cannot search: {P.NO_SEARCH.removeprefix('no search: ')}")
    if visits and not slot.has_value:
        raise ServeError(400, f"{slot.name!r} cannot search: search needs a network with a value head")
    chosen, noted = P.play_profile(slot, req)
    state = A.build_state(size, field(req, "komi", float, 7.5), field(req, "handicap", int, 0),
                          field(req, "moves", list, []))
    human_colour = 1 if human == "B" else 2
    if "move" in req and req["move"] is not None:
        if state.passes >= 2:
            raise ServeError(409, "the game is over (two passes)")
        if state.to_play != human_colour:
            raise ServeError(409, "it is the agent's turn, not yours")
        p = A.parse_point(req["move"], size)
        try:
            state.play(p)
        except Exception as e:  # IllegalMoveError: occupied, suicide, ko
            raise ServeError(400, f"illegal move {coords.to_gtp(p, size)}: {e}") from None
    agent_move, searched = None, None
    if state.to_play != human_colour and state.passes < 2:
        if visits:  # the final choice of a fresh search (requests are stateless: no tree is kept)
            searched, _shares, p = A.search(slot, state, visits, top=5)
        else:
            p = A.choose(slot, state, None if chosen is None else chosen.player(slot, state))
        state.play(p)
        agent_move = coords.to_gtp(p, size)
    reply = {**game_reply(state, agent_move), **noted}
    if searched is not None:
        reply["search"] = searched
    return reply


def state_last(state) -> int | None:
    moves = replayed_moves(state)
    return moves[-1][1] if moves else None


__all__ = ["Registry", "dataset_ids", "make_app"]
