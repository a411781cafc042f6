"""``gotk zero --loop generations``: the AlphaGo Zero loop in generations, resumable after a kill at any point.

A generation ``g`` (folder ``RUN/gen-NNN/``):

1. **self-play**: ``games`` games by ``agent.gotk`` (generation 0: a random network, or ``--init-agent``) into
   ``selfplay/`` (:mod:`gotk.selfplay.run`; a killed run redoes only its unfinished chunks);
2. **train**: the next network, starting from this one's weights, on a *window* of the latest ``window``
   generations' self-play: ``window/`` is a dataset whose manifest lists their shard files (nothing is copied),
   every chunk of them in its ``train`` split (none held out: the newest games are the most useful ones, and a
   held-out loss would decide nothing), trained by :func:`gotk.train.trainer.train` into ``train/`` (soft policy
   target, value, ownership, score; the agent is the network after the last step). The optimizer goes on
   from the one that trained network ``g`` (``gen-(g-1)/optimizer.pt``: Adam's moments and step count, as
   KataGo trains one continuous optimizer); a generation whose optimizer starts fresh (the first, or after a
   network that gating kept out) raises its learning rate linearly over ``warmup_steps`` steps instead of
   taking full-size steps on a zero second-moment estimate;
3. **evaluate** the new network: matches (``gotk match`` reports in ``eval/``) against the anchors (the random
   player; GNU Go at each ``--gnugo-levels`` level when ``gnugo`` is installed) and, with ``--gating``, against
   the current best, which it replaces only with ≥ ``gate`` of the games; without gating it always does
   (AlphaZero's continuous update);
4. ``RUN/zero.json`` records the generation. Every step writes its outputs atomically and is skipped on a
   rerun when they are there, so a kill loses only the step in flight.

Every network is rated on one Elo scale from all the run's match reports (:func:`gotk.play.elo.fit`, the
random player held at 0). ``RUN/report.json`` and ``RUN/report.png`` chart Elo against hours, the losses,
games per hour and positions per second; TensorBoard scalars go to ``RUN/tensorboard`` when it is installed.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

from gotk.atomic import atomic_path
from gotk.shards.manifest import MANIFEST_NAME
from gotk.zero.evaluation import RANDOM_NAME
from gotk.zero.learner import LearnerSettings, round_config
from gotk.zero.options import (
    STATE_NAME,
    ZeroError,
    ZeroOptions,
    defaults,
    last_step_record,
    net_name,
    recorded_selfplay,
)

OPTIMIZER_NAME = "optimizer.pt"  # gen-g/optimizer.pt: the optimizer state after training network g + 1


def _gen(g: int) -> str:
    return f"gen-{g:03d}"


class ZeroRun:
    """A run folder and its state (see the module docstring)."""

    def __init__(self, opts: ZeroOptions) -> None:
        self.opts = opts.validate()
        self.root = Path(opts.out)
        self.state_path = self.root / STATE_NAME
        self.state: dict = {}
        self.t_session = time.time()

    # --- state ------------------------------------------------------------------------------------

    def _load_state(self) -> None:
        rec = json.loads(json.dumps(self.opts.record()))
        if self.state_path.is_file():
            self.state = json.loads(self.state_path.read_text())
            stored = self.state.get("options")
            if isinstance(stored, dict):  # a run recorded before an option existed ran with its default
                old = {"loop": "generations", "workers": 1} if "loop" not in stored else {}
                if "lr_schedule" not in stored:  # recorded before the schedule: a constant rate
                    old["lr_schedule"] = "constant"
                stored = {**{k: v for k, v in defaults().items() if k in rec and k not in stored}, **old, **stored}
                stored["selfplay"] = recorded_selfplay(stored.get("selfplay"))
            if stored != rec:
                from gotk.runfolder import record_differences

                diff = "; ".join(record_differences(stored, rec))
                raise ZeroError(f"{self.root} holds a run with other settings ({diff}): use another --out")
        elif self.root.exists() and any(self.root.iterdir()):
            raise ZeroError(f"{self.root} exists and is not a gotk zero run: use an empty or new --out")
        else:
            self.root.mkdir(parents=True, exist_ok=True)
            self.state = {"format": "gotk-zero", "options": rec, "elapsed_s": 0.0, "generations": [], "best": 0}
            self._save()

    def _save(self) -> None:
        with atomic_path(self.state_path) as tmp:
            Path(tmp).write_text(json.dumps(self.state, indent=2) + "\n")

    def _tick(self) -> float:
        """Add the session's time since the last tick to ``elapsed_s``; returns the total."""
        now = time.time()
        self.state["elapsed_s"] = round(self.state["elapsed_s"] + now - self.t_session, 3)
        self.t_session = now
        self._save()
        return self.state["elapsed_s"]

    def _out_of_budget(self) -> bool:
        o = self.opts
        if o.generations is not None and len(self.state["generations"]) >= o.generations:
            return True
        return o.hours is not None and self._tick() >= o.hours * 3600

    # --- the loop -----------------------------------------------------------------------------------

    def run(self, log=print) -> dict:
        self._load_state()
        self._first_agent()
        while not self._out_of_budget():
            g = len(self.state["generations"])
            rec = self.generation(g, log)
            self.state["generations"].append(rec)
            if rec["promoted"]:
                self.state["best"] = g + 1  # network g + 1
            self._tick()
            report = self.write_report()
            elo = report["generations"][-1].get("elo")
            wins = ", ".join(f"{k} {v:.2f}" for k, v in rec["eval"].items() if isinstance(v, float))
            log(f"generation {g}: {rec['selfplay']['games']} games, {rec['selfplay']['positions']} positions, "
                f"train loss {rec['train'].get('loss')}, {net_name(g + 1)} Elo {elo}"
                + (f" ({wins})" if wins else "") + f", {'promoted' if rec['promoted'] else 'the best kept'}; "
                f"{self.state['elapsed_s'] / 3600:.2f} h")
        return self.write_report()

    def agent_path(self, g: int) -> Path:
        return self.root / _gen(g) / "agent.gotk"

    def _first_agent(self) -> None:
        path = self.agent_path(0)
        if path.is_file():
            return
        o = self.opts
        if o.init_agent:  # checked by ZeroOptions.validate
            from gotk.nets.agent_file import resolve_agent

            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_path(path) as tmp:
                shutil.copyfile(resolve_agent(o.init_agent), tmp)
            return
        from gotk.selfplay.run import new_agent

        new_agent(path, o.size, o.model, o.encoder, o.seed, globals=o.globals, blocks=o.blocks, filters=o.filters)

    def candidate_path(self, g: int) -> Path:
        """Network ``g + 1``: trained in generation ``g`` from network ``g``'s weights."""
        return self.root / _gen(g) / "candidate.gotk"

    def generation(self, g: int, log) -> dict:
        """Self-play with network ``g``, train network ``g + 1``, evaluate it; each step skipped when done."""
        o = self.opts
        gdir = self.root / _gen(g)
        t0 = time.time()
        sp = self._selfplay(g, log)
        t1 = time.time()
        tr = self._train(g, log)
        t2 = time.time()
        ev = self._evaluate(g, log)
        t3 = time.time()
        promoted = ev.get("gating_win_rate") is None or ev["gating_win_rate"] >= o.gate
        nxt = self.agent_path(g + 1)
        if not nxt.is_file():  # the network of the next generation's games: the new one, or the best kept
            nxt.parent.mkdir(parents=True, exist_ok=True)
            with atomic_path(nxt) as tmp:
                shutil.copyfile(self.candidate_path(g) if promoted else self.agent_path(g), tmp)
        rec = {"generation": g, "network": net_name(g + 1), "selfplay": sp, "train": tr, "eval": ev,
               "promoted": promoted,
               "seconds": {"selfplay": round(t1 - t0, 1), "train": round(t2 - t1, 1), "eval": round(t3 - t2, 1)},
               "hours_at_end": round((self.state["elapsed_s"] + time.time() - self.t_session) / 3600, 4)}
        with atomic_path(gdir / "generation.json") as tmp:
            Path(tmp).write_text(json.dumps(rec, indent=2) + "\n")
        return rec

    def _selfplay(self, g: int, log) -> dict:
        from gotk.selfplay.config import SelfPlayOptions
        from gotk.selfplay.run import REPORT_NAME, selfplay

        out = self.root / _gen(g) / "selfplay"
        done = out / REPORT_NAME
        if done.is_file() and (out / MANIFEST_NAME).is_file():
            return json.loads(done.read_text())
        o = self.opts
        log(f"generation {g}: self-play, {o.games} games")
        return selfplay(SelfPlayOptions(agent=str(self.agent_path(g)), out=str(out), games=o.games,
                                        config=o.selfplay, chunk_games=o.chunk_games, workers=o.workers or 1,
                                        seed=o.seed * 100_003 + g, threads=o.threads, device=o.device))

    def window_dataset(self, g: int) -> Path:
        """``gen-g/window``: a dataset over the self-play shards of generations ``g - window + 1 .. g``, all of
        them in its ``train`` split."""
        from gotk.shards.assemble import assemble_dataset
        from gotk.shards.manifest import load_manifest, read_games

        out = self.root / _gen(g) / "window"
        if (out / MANIFEST_NAME).is_file():
            return out
        lo = max(0, g - self.opts.window + 1)
        train, games, encoder = [], {}, None
        for k in range(lo, g + 1):
            src = self.root / _gen(k) / "selfplay"
            m = load_manifest(src)
            encoder = m["encoder"]
            train += [src / e["file"] for e in m["splits"]["train"]["shards"]]
            for row in read_games(src).to_pylist():
                games.setdefault(row["game_id"], row)
        files = [os.path.relpath(f, out) for f in train]
        games = [dict(r, split="train") for r in games.values()]
        assemble_dataset(out, encoder, {"train": files}, games,
                         options={"window": [lo, g]},
                         generator={"name": "gotk zero", "generation": g})
        return out

    @property
    def eval_visits(self) -> int:
        """Visits of the networks' searches in evaluation games: ``--eval-visits``, else self-play's; a learner
        from experience plays its policy (0) unless ``--eval-visits`` asks for a search."""
        if self.opts.recipe.raw_policy:
            return self.opts.eval_visits or 0
        return self.opts.eval_visits or max(2, self.opts.selfplay.tree.visits)

    def _train(self, g: int, log) -> dict:
        from gotk.nets.agent import convert_agent
        from gotk.train.trainer import train

        nxt = self.candidate_path(g)
        summary_path = self.root / _gen(g) / "train.json"
        if nxt.is_file() and summary_path.is_file():
            return json.loads(summary_path.read_text())
        o = self.opts
        data = self.window_dataset(g)
        prev = self.agent_path(g)
        out = self.root / _gen(g) / "train"
        if out.exists():
            shutil.rmtree(out)  # a half-done training step starts again
        carried = self._carried_optimizer(g)
        log(f"generation {g}: training {o.train_steps} steps on {data}"
            + (f", the optimizer from {carried.parent.name}" if carried else f", a fresh optimizer ({o.warmup} "
               f"warm-up steps)"))
        settings = LearnerSettings.of(o)
        factor = settings.lr_factor(o.progress(self.state["elapsed_s"] / 3600, g))
        cfg = round_config(settings, data, out, prev, o.seed + g, carried, max(1, o.train_steps // 5), factor)
        result = train(cfg)
        last = last_step_record(out)
        summary = {"steps": result.get("step"), "seconds": result.get("seconds"), "lr": cfg.resolved().lr, **last,
                   "optimizer_from": carried.parent.name if carried else None}
        # the network carries the search it was trained with: gotk gtp / match and the evaluations below play it so
        convert_agent(out / "agent.gotk", nxt, fp16=False, search=o.selfplay.agent_search())
        if o.carry_optimizer:
            from gotk.train.checkpoint import CHECKPOINT, load_checkpoint, save_optimizer_state

            st = load_checkpoint(out / CHECKPOINT)
            save_optimizer_state(self.root / _gen(g) / OPTIMIZER_NAME, st["config"]["optimizer"], st["optimizer"])
        with atomic_path(summary_path) as tmp:
            Path(tmp).write_text(json.dumps(summary, indent=2) + "\n")
        return summary

    def _carried_optimizer(self, g: int) -> Path | None:
        """The optimizer state generation ``g`` goes on from: the one saved after training network ``g`` when
        that network is the one trained from (it was promoted), else None (a fresh optimizer)."""
        if not self.opts.carry_optimizer or g == 0:
            return None
        gens = self.state.get("generations") or []
        path = self.root / _gen(g - 1) / OPTIMIZER_NAME
        promoted = len(gens) >= g and gens[g - 1].get("promoted")
        return path if promoted and path.is_file() else None

    # --- evaluation -----------------------------------------------------------------------------------

    def _evaluate(self, g: int, log) -> dict:
        """Matches of generation ``g``'s new network against the anchors (and the best, with gating)."""
        from gotk.zero.evaluation import play_anchors, play_match

        o = self.opts
        edir = self.root / _gen(g) / "eval"
        edir.mkdir(parents=True, exist_ok=True)
        out: dict = {}
        last = o.generations is not None and g + 1 >= o.generations
        common = {"size": o.size, "komi": o.selfplay.komi, "visits": self.eval_visits, "seed": g, "log": log}
        if o.eval_games and (g % o.eval_every == o.eval_every - 1 or last):
            out.update(play_anchors(self.candidate_path(g), net_name(g + 1), edir, o.eval_games, o.gnugo_levels,
                                    o.gnugo, anchors=o.gnugo_anchors, **common))
        if o.gating:
            best = self.state["best"]
            rep = play_match(self.candidate_path(g), net_name(g + 1),
                             [sys.executable, "-m", "gotk", "gtp", "--agent", str(self.agent_path(g)),
                              "--visits", str(self.eval_visits), "--seed", str(g)],
                             net_name(best), o.gating_games, edir / "vs-best.json", **common)
            out["gating_win_rate"] = rep["win_rate"]
            out["gating_against"] = best
        return out

    # --- the report ---------------------------------------------------------------------------------

    def match_reports(self) -> list[Path]:
        """The run's match reports (a generation's evaluation folder)."""
        return sorted(self.root.glob("gen-*/eval/*.json"))

    def ratings(self) -> dict[str, dict]:
        """Elo of every player in the run's match reports (:meth:`match_reports`), the random player at 0."""
        from gotk.play.elo import EloError, fit, read_match_reports

        try:
            games = read_match_reports(self.match_reports())
            if not games:
                return {}
            return {r.name: r.as_dict() for r in fit(games, RANDOM_NAME, 0.0)}
        except EloError:
            return {}

    def write_report(self) -> dict:
        from gotk.zero.report import write_report

        return write_report(self.root, self.state, self.ratings())


__all__ = ["ZeroRun"]
