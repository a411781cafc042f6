"""``gotk zero --loop actors`` (the default): self-play actors and a learner at once, evaluation off the clock.

The run folder::

    RUN/zero.json                    options (a rerun must match), learning time, the published networks' records,
                                     each session's host calibration, the CPU time of actors and learner
    RUN/networks/net-NNN.gotk        the published networks (net-000: random or --init-agent), each with the search
                                     it was trained with
    RUN/selfplay/chunks/, sgf/       the actors' games (:mod:`gotk.zero.actors`); manifest.json over every chunk at
                                     the end of a session (``gotk inspect RUN/selfplay``)
    RUN/learner/                     the optimizer state after the newest network and a record per round
                                     (:mod:`gotk.zero.learner`)
    RUN/eval/net-NNN/vs-*.json       match reports against the anchors, played after the learning
    RUN/report.json, report.png      the Elo curve (random = 0), losses (training and fresh), speeds, CPU shares

**Actors** (``--workers``, default one per core, one torch thread each) play chunks of ``--chunk-games`` games
continuously, each chunk with the newest network published when it started, on local processes or a Dask cluster
(``--executor dask [--scheduler tcp://...]``, the networks shipped as bytes). **The learner** runs in this
process (on CUDA when there is one, ``--device``) and trains ``--train-steps`` steps a round on the newest
``--window-rows`` rows whenever the actors' rows allow it at ``--reuse`` samples per new position, then publishes
the network; actors load it between chunks. Nothing waits for a generation barrier.

``--hours`` counts the learning only (actors and learner at work). **Evaluation** is off the clock: after the
learning, every ``--eval-every``-th network and the last play ``--eval-games`` games against each anchor, and the
report says what that cost (``gotk zero-eval RUN`` plays them on its own, e.g. under ``nice`` while a run goes on).

**Resumable**: kill -9 anywhere and rerun the same command. A chunk counts once its done-record is written (after
its rows and SGF files), so no finished game is lost and no row is counted twice; chunks in flight are played again
(their numbers, so their seeds, are reused); a learner round in flight is done again from its network.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from dataclasses import replace
from pathlib import Path

from gotk.zero.loop import ZeroRun
from gotk.zero.options import ZeroError, ZeroOptions, net_name


class ActorLearnerRun(ZeroRun):
    """A ``--loop actors`` run folder and its state (see the module docstring)."""

    def __init__(self, opts: ZeroOptions) -> None:
        super().__init__(opts)
        self.selfplay_root = self.root / "selfplay"

    # --- state ------------------------------------------------------------------------------------

    def _load_state(self) -> None:
        super()._load_state()
        self.state.setdefault("networks", [])
        self.state.setdefault("sessions", [])
        self.state.setdefault("eval_s", 0.0)
        self.state.setdefault("cpu", {"actors_s": 0.0, "learner_s": 0.0, "learning_wall_s": 0.0})

    def agent_path(self, g: int) -> Path:
        return self.root / "networks" / f"{net_name(g)}.gotk"

    def learning_s(self) -> float:
        """The run's learning time so far, this session's included."""
        return self.state["elapsed_s"] + time.time() - self.t_session

    def _out_of_budget(self) -> bool:
        o = self.opts
        if o.generations is not None and len(self.state["networks"]) >= o.generations:
            return True
        return o.hours is not None and self.learning_s() >= o.hours * 3600

    @property
    def actors(self) -> int:
        return self.opts.workers or os.cpu_count() or 1

    # --- the run ------------------------------------------------------------------------------------

    def run(self, log=print) -> dict:
        from gotk.executors import ExecutorError, make_executor
        from gotk.nets.agent_file import read_agent_files
        from gotk.zero.actors import ActorPool, Network, done_chunks, peak_rss_mb
        from gotk.zero.learner import Learner, LearnerSettings, optimizer_name

        o = self.opts
        self._load_state()
        self._first_agent()
        session = {"started": time.strftime("%Y-%m-%dT%H:%M:%S"), "actors": self.actors, "executor": o.executor}
        if o.calibrate_s > 0:
            from gotk.zero.calibrate import calibrate

            session["calibration"] = calibrate(self.agent_path(0), o.selfplay, o.calibrate_s)
            c = session["calibration"]
            log(f"host: {c['cpu_model']} ({', '.join(c['flags']) or 'no avx2'}), load {c['load_average'][0]}; "
                f"{c['evals_per_s_batch32']} evaluations/s at batch 32, {c['tree_walks_per_s']} tree walks/s "
                f"(one thread)")
        if o.heldout and "heldout_start" not in self.state:  # the start's score, and a data check before any work
            from gotk.zero.learner import heldout_score

            self.state["heldout_start"] = heldout_score(self.agent_path(0), o.heldout, o.heldout_positions)
            log(f"{net_name(0)} on {o.heldout}: {self.state['heldout_start']}")
        self.state["sessions"].append(session)
        self._save()
        import torch

        torch.set_num_threads(o.threads or 1)  # the cores are the actors': more threads only wait on each other
        encoder = read_agent_files(self.agent_path(0))[0]["encoder"]
        version = len(self.state["networks"])
        done = done_chunks(self.selfplay_root)
        s = replace(LearnerSettings.of(o), threads=o.threads or 1)
        learner = Learner(self.root, s, o.selfplay.agent_search(), encoder, log)
        actor_device = "cpu" if o.device == "auto" else o.device
        try:
            executor = make_executor(o.executor, self.actors, o.scheduler,
                                     "spawn" if actor_device.startswith("cuda") else None, inline=False)
            executor.start()
        except ExecutorError as e:
            raise ZeroError(e.message) from None
        pool = ActorPool(executor, self.actors, self.selfplay_root, o.selfplay, o.chunk_games, o.seed,
                         o.threads or 1, actor_device, encoder, done, self.learning_s, o.opponents,
                         lambda v: Network.read(v, self.agent_path(v)))
        pool.publish(Network.read(version, self.agent_path(version)))
        from gotk.devices import resolve_device

        log(f"{self.actors} actors ({o.executor}), the learner on {resolve_device(o.device)}; {len(done)} chunks "
            f"done, {net_name(version)} published")
        self.t_session = time.time()  # the calibration and the start of the actors are not learning time
        cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.time()
        pool.start()
        try:
            while not self._out_of_budget():
                if pool.error is not None:
                    raise ZeroError(f"an actor failed: {type(pool.error).__name__}: {pool.error}")
                records = pool.snapshot()
                rows = sum(r["rows"] for r in records)
                steps_done = o.train_steps * version
                if not s.ready(rows, steps_done, sum(r["count"] for r in records)):
                    time.sleep(0.25)
                    continue
                last_seq = self.state["networks"][-1]["last_seq"] if self.state["networks"] else 0
                new = [r for r in records if r["seq"] > last_seq]
                t_round = time.time()
                progress = o.progress(self.learning_s() / 3600, version)
                nets = self.state["networks"]
                kl_weight = (nets[-1].get("next_kl_weight", s.kl_weight) if nets else s.kl_weight) \
                    if s.kl_target is not None else 0.0
                rec = learner.round(version, records, new, steps_done, progress, o.grown_size(progress), kl_weight)
                version += 1
                pool.publish(Network.read(version, self.agent_path(version)))
                rec.update(hours=round(self.learning_s() / 3600, 4), games=sum(r["count"] for r in records),
                           rows=rows, last_seq=max(r["seq"] for r in records), learner_peak_rss_mb=peak_rss_mb(),
                           actors_peak_rss_mb=max((r.get("peak_rss_mb") or 0.0 for r in new), default=None),
                           samples_per_position=round(sum(n["train"].get("steps", 0) * n.get("batches_per_step", 1)
                                                          for n in [*self.state["networks"], rec]) * o.batch_size
                                                      / rows, 3),
                           round_s=round(time.time() - t_round, 2))
                self.state["networks"].append(rec)
                self._tick()
                # the state records the new network: the optimizer state a redone round would have needed goes
                (self.root / "learner" / optimizer_name(version - 1)).unlink(missing_ok=True)
                self.write_report()
                f, t = rec["fresh"], rec["train"]
                log(f"{rec['network']}: {rec['games']} games, {rows} rows, {rec['steps_done']} steps "
                    f"({rec['samples_per_position']} samples per position); loss {t.get('loss')}, fresh policy "
                    f"{f.get('policy_soft_ce', f.get('policy_loss'))} value {f.get('value_mse')}; KL to the start "
                    f"{rec['drift'].get('kl_start')}"
                    + (f", held-out top-1 {rec['drift']['heldout'].get('top1')}" if "heldout" in rec["drift"] else "")
                    + f"; {rec['hours']:.3f} h")
        finally:
            pool.stop(drain=True)
            executor.shutdown(wait=True, cancel_futures=True)
            cpu1 = resource.getrusage(resource.RUSAGE_SELF)
            cpu = self.state["cpu"]
            cpu["actors_s"] = round(cpu["actors_s"] + sum(r.get("cpu_s", 0.0) for c, r in pool.records.items()
                                                           if c not in done), 3)
            cpu["learner_s"] = round(cpu["learner_s"] + cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime
                                     - cpu0.ru_stime, 3)
            cpu["learning_wall_s"] = round(cpu["learning_wall_s"] + time.time() - t0, 3)
            self._tick()
        self._assemble_selfplay(pool.snapshot(), encoder)
        if o.eval_games:
            self.evaluate(log)
        return self.write_report()

    def _assemble_selfplay(self, records: list[dict], encoder: dict) -> None:
        """``RUN/selfplay`` as a gotk dataset over every committed chunk (``gotk inspect``, ``gotk train``)."""
        from gotk.selfplay.run import chunks_dataset

        if not any(r["rows"] for r in records):
            return
        chunks_dataset(self.selfplay_root, self.selfplay_root / "chunks", sorted(records, key=lambda r: r["chunk"]),
                       encoder, options={"zero": str(self.root)}, generator={"name": "gotk zero"})

    # --- evaluation ----------------------------------------------------------------------------------

    def to_evaluate(self) -> list[int]:
        """The versions played against the anchors: every ``--eval-every``-th network and the last one (and, for a
        learner from experience, the start: its anchors' games say where it began)."""
        n = len(self.state["networks"])
        every = self.opts.eval_every
        start = {0} if self.opts.recipe.against_start else set()
        return sorted({v for v in range(1, n + 1) if v % every == 0} | ({n} if n else set()) | start)

    def evaluate(self, log=print) -> dict:
        """Play the anchors with the networks of :meth:`to_evaluate` (reports already there are kept); the time it
        took is added to the run's ``eval_s``, not to its learning time."""
        from gotk.zero.evaluation import play_anchors

        o = self.opts
        t0 = time.time()
        results = self.state.setdefault("evaluations", {})
        for v in self.to_evaluate():
            name = net_name(v)
            results[name] = play_anchors(self.agent_path(v), name, self.root / "eval" / name, o.eval_games,
                                         o.gnugo_levels, o.gnugo, o.size, o.selfplay.komi, self.eval_visits, v, log,
                                         o.gnugo_anchors)
            if v and o.recipe.against_start:  # against the network it started from, as the book judges its agents
                results[name]["vs_start"] = self.play_start(v, log)["win_rate"]
            self.state["eval_s"] = round(self.state["eval_s"] + time.time() - t0, 3)
            t0 = time.time()
            self._save()
            self.write_report()
        return results

    def play_start(self, v: int, log) -> dict:
        """Network ``v`` against the run's first network, ``--eval-games`` games, both sampling their policy at
        temperature 1 (AlphaGo's measure of its RL policy against the SL policy: deterministic policies would play
        the same two games over and over), or both searching with ``--eval-visits``."""
        from gotk.zero.evaluation import play_match

        o = self.opts
        name = net_name(v)
        argv = [sys.executable, "-m", "gotk", "gtp", "--agent", str(self.agent_path(0)), "--seed", str(v)]
        argv += ["--visits", str(self.eval_visits)] if self.eval_visits >= 2 else ["--temperature", "1"]
        return play_match(self.agent_path(v), name, argv, net_name(0), o.eval_games,
                          self.root / "eval" / name / f"vs-{net_name(0)}.json", o.size, o.selfplay.komi,
                          self.eval_visits, v, log, temperature=1.0)

    # --- the report ---------------------------------------------------------------------------------

    def match_reports(self) -> list[Path]:
        return sorted(self.root.glob("eval/*/*.json"))

    def write_report(self) -> dict:
        from gotk.zero.report import network_rows, write_report

        cpu = dict(self.state.get("cpu") or {})
        total = cpu.get("actors_s", 0.0) + cpu.get("learner_s", 0.0)
        cpu["selfplay_share"] = round(cpu["actors_s"] / total, 4) if total else None
        wall = cpu.get("learning_wall_s") or 0.0
        cores = os.cpu_count() or 1
        cpu["host_share_selfplay"] = round(cpu["actors_s"] / (wall * cores), 4) if wall else None
        extra = {"loop": "actors", "cpu": cpu, "eval_hours": round(self.state.get("eval_s", 0.0) / 3600, 4),
                 "sessions": self.state.get("sessions", []),
                 **({"heldout_start": self.state["heldout_start"]} if "heldout_start" in self.state else {})}
        return write_report(self.root, self.state, self.ratings(), network_rows(self.state, self.ratings()), extra)


def evaluate_run(out: str | os.PathLike, games: int | None = None, log=print) -> dict:
    """``gotk zero-eval``: play the anchors with a ``--loop actors`` run's networks, as the run itself does after its
    learning, with the settings it was started with (``games``: games per anchor instead of its ``--eval-games``);
    returns the report."""
    root = Path(out)
    state_path = root / "zero.json"
    if not state_path.is_file():
        raise ZeroError(f"{root}: not a gotk zero run (no zero.json)")
    try:
        state = json.loads(state_path.read_text())
        stored = dict(state.get("options") or {})
    except (OSError, ValueError, TypeError, AttributeError) as e:
        raise ZeroError(f"{state_path}: not a gotk zero state ({e})") from None
    if stored.get("loop") != "actors":
        raise ZeroError(f"{root}: a --loop generations run evaluates its networks itself")
    from dataclasses import fields

    from gotk.selfplay.config import SelfPlayConfig

    names = {f.name for f in fields(ZeroOptions)}
    # the budget of a run's record is the networks it made (its hours are not part of it)
    opts = ZeroOptions(**{k: v for k, v in stored.items() if k in names and k not in ("selfplay", "generations")},
                       selfplay=SelfPlayConfig.from_record(stored["selfplay"]),
                       generations=max(1, len(state.get("networks", []))))
    opts.gnugo_levels = tuple(opts.gnugo_levels)
    opts.gnugo_anchors = tuple(opts.gnugo_anchors)
    opts.grow = tuple(opts.grow)
    if games is not None:
        if games < 1:
            raise ZeroError(f"--games must be >= 1, not {games}")
        opts.eval_games = games
    run = ActorLearnerRun(opts)
    run.root, run.state_path, run.selfplay_root = root, state_path, root / "selfplay"  # the folder may have moved
    run.state = state
    run.state.setdefault("eval_s", 0.0)
    run.evaluate(log)
    return run.write_report()


__all__ = ["ActorLearnerRun", "evaluate_run"]
