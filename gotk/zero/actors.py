"""The actors of ``gotk zero``: self-play processes that play chunks of games with the newest published network.

An actor task (:func:`play_games`) is a plain top-level work unit: it gets the network as bytes (so a Dask worker on
another machine needs no shared file system), plays ``count`` games together (:class:`gotk.selfplay.games.
SelfPlayBatch`, one torch thread by default) and returns the finished games with its timings and CPU time. It
writes nothing: the driver (:class:`ActorPool`) owns every file of the run, so a killed actor, or a killed
driver, leaves no half-written chunk behind.

:class:`ActorPool` keeps ``actors`` tasks in flight on an executor (``local``: one process per actor; ``dask``: a
cluster's workers), hands each new task the newest network the learner published (:meth:`ActorPool.publish`), and
writes each finished chunk as the self-play run does (``selfplay/chunks/chunk-NNNNN.parquet`` with the training
rows, ``selfplay/sgf/``, then the done-record ``chunk-NNNNN.json`` last: its presence is the chunk's commit). Chunk
``c`` holds games ``c * chunk_games ..``; game ``i`` draws its random numbers from ``(seed, i)``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import asdict, dataclass
from pathlib import Path

from gotk import __version__
from gotk.selfplay.config import SelfPlayConfig
from gotk.selfplay.run import chunk_batch, chunk_name

GENERATOR = "gotk zero"


@dataclass(frozen=True)
class Network:
    """A published network: its version (``net-NNN``), the agent file's bytes and their sha256."""

    version: int
    data: bytes
    sha256: str

    @classmethod
    def read(cls, version: int, path: str | os.PathLike) -> Network:
        data = Path(path).read_bytes()
        return cls(version, data, hashlib.sha256(data).hexdigest())


_AGENT: dict[str, object] = {}


def _agent(net: Network, device: str):
    """The actor process's agent for ``net`` (loaded once per network and device; bf16 autocast on CUDA)."""
    from gotk.nets.agent import agent_from_parts
    from gotk.nets.agent_file import read_agent_files

    key = f"{net.sha256}@{device}"
    if key not in _AGENT:
        while len(_AGENT) >= 3:  # the newest network and a few opponents of the pool stay loaded
            _AGENT.pop(next(iter(_AGENT)))
        with tempfile.TemporaryDirectory(prefix="gotk-actor-") as tmp:
            path = Path(tmp) / "agent.gotk"
            path.write_bytes(net.data)
            meta, tensors = read_agent_files(path)
            agent = agent_from_parts(meta, tensors, device, path)
        agent.amp = agent.device.type == "cuda"
        _AGENT[key] = agent
    return _AGENT[key]


def play_games(net: Network, config: dict, chunk: int, first: int, count: int, seed: int, threads: int | None,
               device: str = "cpu", opponent: Network | None = None) -> dict:
    """Play games ``first .. first+count-1`` with ``net`` (and ``opponent`` playing one colour of each: policy games
    of the learners from experience); returns ``{"chunk", "first", "count", "network", "opponent", "games":
    [FinishedGame], "seconds", "net_seconds", "evaluations", "calls", "cpu_s", "host"}``. ``cpu_s`` is this
    process's CPU time over the chunk (the actors' share of the host in the run's report)."""
    import torch

    if threads:
        torch.set_num_threads(threads)
    cpu0 = time.process_time()
    agent = _agent(net, device)
    other = _agent(opponent, device) if opponent is not None else None
    batch = chunk_batch(agent, SelfPlayConfig.from_record(config), chunk, first, count, seed, other)
    games = batch.run()
    return {"chunk": chunk, "first": first, "count": count, "network": net.version,
            "opponent": opponent.version if opponent is not None else None, "games": games,
            "seconds": round(batch.seconds, 4), "net_seconds": round(batch.net_seconds, 4),
            "evaluations": batch.evaluations, "calls": batch.calls,
            "cpu_s": round(time.process_time() - cpu0, 4), "host": os.uname().nodename,
            "peak_rss_mb": peak_rss_mb()}


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (the report's memory check of actors and learner)."""
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1 << 20) if sys.platform == "darwin" else peak / 1024, 1)  # bytes on macOS, else KiB


class ActorPool:
    """Keeps ``actors`` chunks in flight on ``executor`` and writes each one that finishes (see the module
    docstring). ``done`` maps chunk numbers to the done-records found on disk (a resumed run): those chunks are not
    played again, and the numbers between them that have none (the chunks in flight when the run was killed) are
    played first. ``clock()`` stamps each record with the run's learning time at its commit.

    ``opponents="pool"`` (policy games recorded as experience): each chunk's games are played against one of the
    networks published so far, drawn uniformly from ``(seed, chunk)`` (AlphaGo's pool of the RL policy's earlier
    versions); ``networks(version)`` gives a published network by version."""

    def __init__(self, executor, actors: int, root: Path, config: SelfPlayConfig, chunk_games: int, seed: int,
                 threads: int | None, device: str, encoder: dict, done: dict[int, dict], clock,
                 opponents: str = "self", networks=None) -> None:
        self.executor = executor
        self.actors = actors
        self.root = root
        self.config = config
        self.chunk_games = chunk_games
        self.seed = seed
        self.threads = threads
        self.device = device
        self.encoder = encoder
        self.clock = clock
        self.opponents = opponents
        self.networks = networks
        self.records: dict[int, dict] = dict(done)
        top = max(done, default=-1)
        self._todo = [c for c in range(top + 1) if c not in done]  # the gaps first
        self._next = top + 1
        self._lock = threading.Lock()
        self._net: Network | None = None
        self._stop = threading.Event()
        self._drain = True
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None
        (root / "chunks").mkdir(parents=True, exist_ok=True)

    # --- what the learner sees ---------------------------------------------------------------------

    def publish(self, net: Network) -> None:
        """The network every task submitted from now on plays with."""
        with self._lock:
            self._net = net

    def snapshot(self) -> list[dict]:
        """The done-records so far, in the order they were committed."""
        with self._lock:
            return sorted(self.records.values(), key=lambda r: (r.get("seq", 0), r["chunk"]))

    # --- the driver thread ---------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._drive, name="gotk-actors", daemon=True)
        self._thread.start()

    def stop(self, drain: bool = True) -> None:
        """Submit nothing more; with ``drain``, wait for the chunks in flight and commit them (nothing played is
        lost), else drop them (their games are unfinished)."""
        self._drain = drain
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _take_chunk(self) -> int:
        if self._todo:
            return self._todo.pop(0)
        c = self._next
        self._next += 1
        return c

    def _submit(self) -> Future:
        c = self._take_chunk()
        with self._lock:
            net = self._net
        assert net is not None, "publish a network before starting the actors"
        first = c * self.chunk_games
        opponent = None
        if self.opponents == "pool":
            import numpy as np

            opponent = self.networks(int(np.random.default_rng([self.seed, c, 11]).integers(0, net.version + 1)))
        return self.executor.submit(play_games, net, asdict(self.config), c, first, self.chunk_games, self.seed,
                                    self.threads, self.device, opponent)

    def _drive(self) -> None:
        flight: set[Future] = set()
        try:
            while not self._stop.is_set():
                while len(flight) < self.actors:
                    flight.add(self._submit())
                done, flight = wait(flight, timeout=0.5, return_when=FIRST_COMPLETED)
                for f in done:
                    self._commit(f.result())
            if self._drain:
                for f in flight:
                    self._commit(f.result())
                flight = set()
        except BaseException as e:  # noqa: BLE001 - handed to the learner's thread, which stops the run
            self.error = e
        finally:
            for f in flight:
                f.cancel()

    def _commit(self, result: dict) -> None:
        """Write a finished chunk: SGF files and the rows, then the done-record (the commit)."""
        from gotk.runfolder import write_done_record
        from gotk.selfplay.run import game_row, write_chunk, write_sgfs

        games = result.pop("games")
        c = result["chunk"]
        generator = {"generator": GENERATOR, "gotk_version": __version__, "network": result["network"],
                     "seed": self.seed}
        write_sgfs(self.root / "sgf", games, generator, self.config)
        opponent = "self" if result.get("opponent") is None else f"net-{result['opponent']:03d}"
        rows = write_chunk(self.root / "chunks" / f"{chunk_name(c)}.parquet", games, self.encoder,
                           *self.config.chunk_columns(), opponent=opponent)
        with self._lock:
            seq = 1 + max((r.get("seq", 0) for r in self.records.values()), default=0)
        record = {**result, "rows": rows, "games": [game_row(g) for g in games], "seq": seq,
                  "learning_s": round(self.clock(), 3)}
        write_done_record(self.root / "chunks" / f"{chunk_name(c)}.json", record)
        with self._lock:
            self.records[c] = record


def done_chunks(root: Path) -> dict[int, dict]:
    """The committed chunks of ``root/chunks`` (a rows file and its done-record), by number."""
    from gotk.runfolder import read_done_record

    out: dict[int, dict] = {}
    folder = root / "chunks"
    for rec_path in sorted(folder.glob("chunk-*.json")) if folder.is_dir() else ():
        rec = read_done_record(rec_path)
        if rec is None or not (folder / f"{rec_path.stem}.parquet").is_file():
            continue
        out[int(rec["chunk"])] = rec
    return out


__all__ = ["ActorPool", "Network", "done_chunks", "peak_rss_mb", "play_games"]
