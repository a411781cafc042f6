"""``gotk analysis``: KataGo's JSON analysis engine (KataGo's docs/Analysis_Engine.md) on gotk's one search, for
KaTrain and other analysis clients.

One JSON query a line on stdin (:mod:`gotk.play.analysis_query` reads it), one JSON answer a line on stdout, logs
on stderr only. A query names a game and the turns of it to analyse; each turn is a *position*, queued by
``priority`` (highest first, then the order they came in). Up to ``max_active`` positions are searched at once,
each with its own :class:`gotk.search.core.Search` (the search GTP, matches and self-play use), and every step
gathers the next leaves of all of them into **one network call**: a client that asks for a whole game keeps the
network busy with large batches, as KataGo's analysis threads share its batches. A position started is never put
back: a later query of higher priority waits for a free place.

Each position's search is exactly the search ``gotk gtp`` runs for the same position, visits and seed: the same
leaves, in the same batches of ``batch`` leaves, under the same random symmetries (each position draws them from
its own generator seeded by ``--seed``), whatever else is searched beside it. So ``gotk analysis`` and
``gotk gtp``'s ``lz-genmove_analyze`` agree on the best move and its win rate.

Answers (KataGo's fields; values from ``reportAnalysisWinratesAs``'s side, ``BLACK`` by default as in KataGo's
example configuration, which KaTrain's own follows):

* ``moveInfos``: every root child with visits (at least the most probable one), best first as gotk plays
  (:func:`gotk.search.choice.ranking`): ``move``, ``visits``, ``edgeVisits``, ``winrate``, ``utility`` (the
  search's value, −1..1), ``lcb`` and ``utilityLcb`` (:mod:`gotk.search.lcb`, the mean where a move has too few
  visits for a bound), ``prior`` (the policy over the candidates, renormalised), ``order``, ``pv``, ``pvVisits``
  (with ``includePVVisits``), ``scoreLead`` = ``scoreMean`` = ``scoreSelfplay``, ``scoreStdev``, and
  ``ownership`` with ``includeMovesOwnership``;
* ``rootInfo``: ``winrate``, ``utility``, ``visits``, ``scoreLead``, ``scoreSelfplay``, ``scoreStdev``,
  ``rawWinrate`` and ``rawLead`` (the network at the root, before the search), ``currentPlayer``, ``thisHash``
  and ``symHash`` (the same for the 8 symmetric positions);
* ``ownership`` (``includeOwnership``), ``policy`` (``includePolicy``: the network's raw policy over the legal
  moves, −1 elsewhere, pass last) and ``humanPolicy`` (``includePolicy`` with ``humanSLProfile`` and a human-SL
  agent: that agent's policy as the profile, same layout).

**Without a network** (``--agent mcts``: leaves valued by rollouts, :mod:`gotk.search.rollouts`) ``rawWinrate`` and
the ownership are the mean result and final ownership of :data:`ROOT_PLAYOUTS` playouts from the root, ``policy``
the rollout policy's (``--rollout-policy``) or uniform over the sensible moves; the board size is the engine's
(``--board-size``, or the rollout policy's).

**Scores and ownership.** A network with ownership and score heads (``zero`` models) gives them: a move's
``scoreLead`` and ``ownership`` are the heads' at the position after it, the root's the visit-weighted mean of its
moves' leads and the heads' ownership at the root. For a network without them the answers are estimates, never
missing keys: ``scoreLead`` = ``size²/40 · atanh(v)`` for the searched value ``v`` (clipped to ±0.995; about
9 points a unit of atanh on 19×19), ``scoreStdev`` = ``size²/12`` (a fixed spread, not a measurement), and the
ownership is :func:`gotk.play.analysis_answer.ownership_estimate`: every stone its own colour's, an empty point by
the influence of the stones near it.

**Limits.** At most ``max_queued`` positions wait (default 10,000); a query that would pass that is answered with
an error and nothing of it is queued. ``maxVisits`` ≤ :data:`~gotk.play.analysis_query.MAX_QUERY_VISITS`, and each
tree is held within ``max_nodes`` rows (its least visited branches folded, as in play). Memory is so bounded by
``max_active`` trees and the compact queued games.

**Actions.** ``query_version`` (echoed with ``version`` and ``git_hash``: gotk's version), ``clear_cache`` (echoed:
gotk keeps no network cache), ``terminate`` (``terminateId``, optional ``turnNumbers``) and ``terminate_all``
(optional ``turnNumbers``): echoed at once; each terminated position then gives its one final answer, with what
its search found so far, or ``noResults`` when it had not started. At the end of input the queued positions are
finished first (``--quit-without-waiting``: terminated instead), as KataGo does.
"""

from __future__ import annotations

import heapq
import itertools
import json
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import numpy as np

from gotk import __version__, coords
from gotk.datasets.symmetry import NUM_SYMMETRIES
from gotk.encoders import global_inputs as GI
from gotk.game.state import BLACK
from gotk.play.analysis_answer import ownership_list, policy_list, position_hashes, score_estimate, score_stdev
from gotk.play.analysis_query import Query, QueryError, parse_query
from gotk.search import choice as C
from gotk.search import tree as T
from gotk.search.config import SearchConfig
from gotk.search.core import Search

#: KataGo's analysis engine version the protocol follows (``query_version``'s ``version``; clients check it)
PROTOCOL_VERSION = "1.15.3"
DEFAULT_MAX_ACTIVE = 16
DEFAULT_MAX_QUEUED = 10_000
#: tree rows per position searched at once (each tree folds its least visited branches past it)
DEFAULT_MAX_NODES = 1_000_000
PV_LIMIT = 30
#: playouts from the root that give a search without a network its raw value and ownership
ROOT_PLAYOUTS = 64


@dataclass(eq=False)
class _Position:
    """One turn of one query, queued or being searched."""

    query: Query
    turn: int
    priority: int
    seq: int
    search: Search | None = None
    sym_rng: np.random.Generator | None = None
    started: float = 0.0
    last_report: float = 0.0
    terminated: bool = False
    done: bool = False
    raw: tuple | None = None  # the network at the root, for rawWinrate / rawLead

    def __lt__(self, other: _Position) -> bool:
        return (-self.priority, self.seq) < (-other.priority, other.seq)


class AnalysisEngine:
    """The analysis engine over ``evaluator`` (a :class:`gotk.search.evaluate.NetEvaluator`) with the search
    settings ``config`` (the agent's own applied; ``config.visits`` is the default ``maxVisits``), and optionally
    ``human`` (a conditioned agent for ``humanPolicy``). ``write`` takes each answer line; ``log`` each stderr line."""

    def __init__(self, evaluator, config: SearchConfig, human=None, *, report_as: str = "BLACK",
                 max_active: int = DEFAULT_MAX_ACTIVE, max_queued: int = DEFAULT_MAX_QUEUED,
                 max_nodes: int = DEFAULT_MAX_NODES, write: Callable[[str], None] | None = None,
                 log: Callable[[str], None] | None = None) -> None:
        if max_active < 1 or max_queued < 1:
            raise ValueError("max_active and max_queued must be >= 1")
        self.evaluator = evaluator
        self.agent = getattr(evaluator, "agent", None)  # None: the search without a network (rollouts)
        self.value_agent = (evaluator.value_agent or evaluator.agent) if self.agent is not None else None
        self.cfg = replace(config, max_nodes=min(config.max_nodes, max_nodes)).validate()
        self.human = human
        self.size = evaluator.board_size
        self.report_as = report_as
        self.max_active = max_active
        self.max_queued = max_queued
        self.write = write or (lambda line: (sys.stdout.write(line), sys.stdout.flush()))
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.trained_on = human.meta.get("trained_on") if human is not None else None
        self.queued: list[_Position] = []
        self.active: list[_Position] = []
        self.seq = itertools.count()
        self.positions_done = 0
        self.enc = evaluator.encoder
        self.leaves = evaluator.leaves(0)
        self.rows = 0  # rows of self.leaves

    # --- input ------------------------------------------------------------------------------------------

    def _send(self, obj: dict) -> None:
        self.write(json.dumps(obj, separators=(",", ":")) + "\n")

    def _error(self, message: str, field: str | None = None, qid=None) -> None:
        out: dict = {"error": message}
        if field is not None:
            out["field"] = field
        if qid is not None:
            out["id"] = qid
        self._send(out)

    def handle_line(self, line: str) -> None:
        """One input line: a query queued (or answered with an error), an action done. Never raises."""
        text = line.strip()
        if not text:
            return
        try:
            obj = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as e:
            self._error(f"could not parse JSON: {getattr(e, 'msg', e)}")
            return
        if not isinstance(obj, dict):
            self._error("a query must be a JSON object")
            return
        qid = obj.get("id")
        if not isinstance(qid, str):
            self._error("id is required and must be a string", "id", qid if isinstance(qid, (int, float)) else None)
            return
        try:
            action = obj.get("action")
            if action is not None:
                self._action(action, obj)
            else:
                self._enqueue(obj)
        except QueryError as e:
            self._error(e.message, e.field, qid)
        except Exception as e:  # noqa: BLE001 - one bad query never stops the engine
            self._error(f"internal error: {type(e).__name__}: {e}".replace("\n", " "), None, qid)

    def _enqueue(self, obj: dict) -> None:
        q = parse_query(obj, self.size, self.cfg.visits, self.report_as, self.human is not None, self.trained_on)
        waiting = len(self.queued) + len(self.active)
        if waiting + len(q.turns) > self.max_queued:
            raise QueryError(f"too many positions waiting ({waiting} + {len(q.turns)} > the limit of "
                             f"{self.max_queued}, --max-queued): send fewer at once", "analyzeTurns")
        for fld, msg in q.warnings:
            self._send({"warning": msg, "field": fld, "id": q.id})
        for turn, pri in zip(q.turns, q.priorities, strict=True):
            heapq.heappush(self.queued, _Position(q, turn, pri, next(self.seq)))

    def _action(self, action, obj: dict) -> None:
        if action == "query_version":
            self._send({**obj, "version": PROTOCOL_VERSION, "git_hash": f"gotk-{__version__}"})
        elif action == "clear_cache":
            self._send(obj)
        elif action in ("terminate", "terminate_all"):
            target = obj.get("terminateId") if action == "terminate" else None
            if action == "terminate" and not isinstance(target, str):
                raise QueryError("terminate needs terminateId, the id of the query to stop", "terminateId")
            turns = obj.get("turnNumbers")
            if turns is not None and (not isinstance(turns, list)
                                      or not all(isinstance(t, int) and not isinstance(t, bool) for t in turns)):
                raise QueryError("turnNumbers must be a list of integers", "turnNumbers")
            self._send(obj)
            self.terminate(target, None if turns is None else set(turns))
        else:
            raise QueryError(f"unknown action {action!r} (query_version, clear_cache, terminate, terminate_all)",
                             "action")

    def terminate(self, qid: str | None, turns: set[int] | None = None) -> None:
        """Stop the positions of query ``qid`` (None: every query), of ``turns`` only when given: queued ones are
        answered ``noResults`` now, searching ones give their final answer at the next step."""

        def hit(p: _Position) -> bool:
            return (qid is None or p.query.id == qid) and (turns is None or p.turn in turns)

        keep = []
        for p in sorted(self.queued):
            if hit(p):
                self._send({"id": p.query.id, "isDuringSearch": False, "noResults": True, "turnNumber": p.turn})
            else:
                keep.append(p)
        heapq.heapify(keep)
        self.queued = keep
        for p in self.active:
            if hit(p):
                p.terminated = True

    # --- searching ----------------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return bool(self.queued or self.active)

    def _start(self, p: _Position) -> None:
        s = p.query.settings
        cfg = self.cfg if s.c_puct is None else replace(self.cfg, c_puct=s.c_puct)
        cfg = replace(cfg, visits=s.visits)
        seed = cfg.seed
        search = Search(self.evaluator, cfg, rng=np.random.default_rng(None if seed is None else seed + 1))
        search.avoid = s.avoid
        search.root_temperature = s.root_temperature
        search.set_position(p.query.state(p.turn))
        search.begin(s.visits)
        p.search = search
        # the symmetries of this position's leaves: the stream gotk gtp's evaluator draws for the same seed
        p.sym_rng = np.random.default_rng(seed)
        p.started = p.last_report = time.monotonic()

    def _fill(self) -> None:
        while self.queued and len(self.active) < self.max_active:
            p = heapq.heappop(self.queued)
            self._start(p)
            self.active.append(p)

    def _stop_reason(self, p: _Position, now: float) -> bool:
        """True when ``p``'s search is over (before its next gather): as :meth:`Search.run` decides."""
        search = p.search
        status = search.tree.status[0]
        if p.terminated or status == T.TERMINAL:
            return True
        if status == T.EXPANDED:
            if search.finished or not search.room(search.cfg.batch):
                return True
            limit = p.query.settings.seconds
            if limit is not None and now - p.started >= limit:
                return True
        return False

    def step(self) -> int:
        """One round: every searching position gathers its next leaves, one network call evaluates them all, each
        takes its results; finished positions are answered. Returns the leaves evaluated."""
        self._fill()
        if not self.active:
            return 0
        now = time.monotonic()
        batch = self.cfg.batch
        need = batch * len(self.active)
        if self.rows < need:
            self.leaves, self.rows = self.evaluator.leaves(need), need
        finished: list[_Position] = []
        parts: list[tuple[_Position, int, int, int]] = []  # position, first row, leaves, root visits before
        rows = 0
        for p in self.active:
            if self._stop_reason(p, now):
                finished.append(p)
                continue
            before = int(p.search.tree.N[0])
            try:
                n = p.search.gather(self.leaves, rows, batch)
            except Exception as e:  # noqa: BLE001 - a broken position is answered, the rest go on
                p.search.clear_tree()
                self._error(f"search failed: {type(e).__name__}: {e}", None, p.query.id)
                p.done = True
                continue
            parts.append((p, rows, n, before))
            rows += n
        if rows:
            syms = np.concatenate([p.sym_rng.integers(0, NUM_SYMMETRIES, size=n) if self.evaluator.symmetries
                                   else np.zeros(n, dtype=np.int64) for p, _, n, _ in parts])
            probs, values = self.evaluator.evaluate_leaves(self.leaves, rows, syms)
        for p, first, n, before in parts:
            if n:
                p.search.absorb(probs[first:first + n], values[first:first + n])
            if int(p.search.tree.N[0]) == before and not p.search.pending:
                finished.append(p)  # nothing more to do (Search.run stops here too)
        now = time.monotonic()
        for p, _, _, _ in parts:
            every = p.query.settings.report_every
            if every is not None and p not in finished and now - p.last_report >= every:
                p.last_report = now
                self._send(self._answer([p], during=True)[0])
        self._finish(finished)
        self.active = [p for p in self.active if not p.done and p not in finished]
        return rows

    def _finish(self, finished: list[_Position]) -> None:
        if not finished:
            return
        answers = self._answer(finished, during=False)
        for p, a in zip(finished, answers, strict=True):
            self._send(a)
            p.done = True
            p.search = None  # the tree's memory goes now
            self.positions_done += 1

    # --- answers ------------------------------------------------------------------------------------------

    def _answer(self, ps: list[_Position], during: bool) -> list[dict]:
        """The answers of positions ``ps`` (their network extras computed in one call per agent)."""
        out = []
        infos_of = []
        for p in ps:
            search = p.search
            if search is None or search.tree.N[0] <= 0 and search.tree.status[0] != T.EXPANDED:
                infos_of.append(None)
            else:
                infos_of.append(self._move_rows(search))
        extras = self._extras(ps, infos_of)
        for p, rows, extra in zip(ps, infos_of, extras, strict=True):
            if rows is None:
                out.append({"id": p.query.id, "isDuringSearch": False, "noResults": True, "turnNumber": p.turn})
                continue
            out.append(self._format(p, rows, extra, during))
        return out

    def _move_rows(self, search: Search) -> list[tuple]:
        """The reported root children, best first: (tree row, move, visits, q, prior, lcb q)."""
        tree = search.tree
        kids, order = C.ranking(search)
        n = tree.N[kids]
        q = np.where(n > 0, tree.W[kids] / np.maximum(n, 1), 0.0)
        bounds = q.copy()
        able = n > 2
        if able.any():
            bounds[able] = search.lower_bounds(kids[able])
        rows = []
        for i in order:
            if n[i] <= 0 and rows:
                break
            c = int(kids[i])
            rows.append((c, int(tree.move[c]), int(n[i]), float(q[i]), float(tree.P[c]), float(bounds[i])))
        return rows

    @staticmethod
    def _pv(search: Search, node: int) -> tuple[list[int], list[int]]:
        """The principal variation from root child ``node``: its moves and their visits."""
        nodes = search.pv_nodes(node, PV_LIMIT)
        tree = search.tree
        return [int(tree.move[n]) for n in nodes], [int(tree.N[n]) for n in nodes]

    def _extras(self, ps: list[_Position], rows_of: list) -> list[dict]:
        """Per position: the network's root outputs (raw value, policy), its score / ownership heads at the root
        and after each reported move (where the network has them and the answer needs them), the human policy.
        Without a network: :meth:`_rollout_extras`."""
        if self.agent is None:
            return self._rollout_extras(ps, rows_of)
        aux = self.value_agent.has_aux
        states, owners = [], []  # (position index, kind, move)
        extras: list[dict] = [{} for _ in ps]
        for i, (p, rows) in enumerate(zip(ps, rows_of, strict=True)):
            if rows is None:
                continue
            root = p.search.root_state
            s = p.query.settings
            states.append(root)
            owners.append((i, "root", None))
            if aux:
                for r in rows:
                    child = root.copy()
                    child.play(r[1])
                    states.append(child)
                    owners.append((i, "move", r[1]))
            if s.policy and self.human is not None and s.human_profile is not None:
                extras[i]["humanPolicy"] = policy_list(
                    root, self.human.policy(root, s.human_profile))
        if not states:
            return extras
        feats = np.stack([self.enc.encode(st) for st in states])
        glob = np.stack([GI.for_state(st) for st in states]) if self.evaluator.num_globals else None
        if aux:
            logp, val, own, score = self.value_agent.predict_aux(feats, glob)
            if self.evaluator.value_agent is not None:
                logp, _ = self.agent.predict(feats, glob)
        else:
            logp, val = self.agent.predict(feats, glob)
            if self.evaluator.value_agent is not None:
                _, val = self.evaluator.value_agent.predict(feats, glob)
            own = score = None
        for k, (i, kind, move) in enumerate(owners):
            st = states[k]
            sign = 1.0 if st.to_play == BLACK else -1.0  # mover's view → Black's
            if kind == "root":
                extras[i]["raw_value"] = float(np.asarray(val).reshape(-1)[k])
                extras[i]["policy"] = np.exp(logp[k].astype(np.float64))
                if aux:
                    extras[i]["raw_score"] = float(score[k])
                    extras[i]["ownership_black"] = sign * own[k].reshape(-1)
            else:
                # the position after the move: its mover is the root's opponent
                extras[i].setdefault("moves", {})[move] = (-float(score[k]), sign * own[k].reshape(-1))
        return extras

    def _rollout_extras(self, ps: list[_Position], rows_of: list) -> list[dict]:
        """The search without a network: the raw value and the ownership are the mean result and final ownership of
        :data:`ROOT_PLAYOUTS` playouts from the root (:meth:`RolloutEvaluator.estimate`), the raw policy the
        rollout policy's, or uniform over the sensible moves."""
        from gotk.game.moves import sensible_moves

        ev = self.evaluator
        extras: list[dict] = [{} for _ in ps]
        for i, (p, rows) in enumerate(zip(ps, rows_of, strict=True)):
            if rows is None:
                continue
            root = p.search.root_state
            value, owned = ev.estimate(root, ROOT_PLAYOUTS)
            if ev.policy is not None:
                probs = ev.policy_at(root.size).probabilities(root)
            else:
                probs = np.zeros(root.size * root.size + 1)
                moves = sensible_moves(root)
                probs[moves if moves.size else root.pass_point] = 1.0 / max(1, moves.size)
            extras[i].update(raw_value=value, policy=probs, ownership_black=owned)
        return extras

    def _format(self, p: _Position, rows: list[tuple], extra: dict, during: bool) -> dict:
        search, q, s = p.search, p.query, p.query.settings
        root = search.root_state
        size = root.size
        flip = (s.report_as == "BLACK" and root.to_play != BLACK) or (s.report_as == "WHITE" and root.to_play == BLACK)
        sgn = -1.0 if flip else 1.0

        def win(v: float) -> float:
            return (sgn * v + 1.0) / 2.0

        aux = "moves" in extra or "raw_score" in extra
        own_sign = 1.0 if s.report_as != "WHITE" and not (s.report_as == "SIDETOMOVE" and root.to_play != BLACK) \
            else -1.0
        infos = []
        leads, weights = [], []
        for order, (node, move, visits, qv, prior, lcb) in enumerate(rows):
            lead = extra["moves"][move][0] if aux else score_estimate(qv, size)
            pv, pv_visits = self._pv(search, node) if visits > 0 else ([move], [0])
            info = {"move": coords.to_gtp(move, size), "visits": visits, "edgeVisits": visits,
                    "winrate": win(qv), "utility": sgn * qv, "lcb": win(lcb), "utilityLcb": sgn * lcb,
                    "scoreLead": sgn * lead, "scoreMean": sgn * lead, "scoreSelfplay": sgn * lead,
                    "scoreStdev": score_stdev(size), "prior": prior, "order": order,
                    "pv": [coords.to_gtp(m, size) for m in pv]}
            if s.pv_visits:
                info["pvVisits"] = pv_visits
            if s.moves_ownership:
                info["ownership"] = ownership_list(root, extra["moves"][move][1] if aux else None, move, own_sign)
            infos.append(info)
            leads.append(lead)
            weights.append(visits)
        root_q = search.root_value()
        total = sum(weights)
        if aux:
            root_lead = float(np.dot(leads, weights) / total) if total else extra.get("raw_score", 0.0)
        else:
            root_lead = score_estimate(root_q, size)
        raw_value = extra.get("raw_value", root_q)
        raw_lead = extra.get("raw_score", score_estimate(raw_value, size))
        this_hash, sym_hash = position_hashes(root)
        root_info = {"winrate": win(root_q), "utility": sgn * root_q, "visits": int(search.tree.N[0]),
                     "scoreLead": sgn * root_lead, "scoreSelfplay": sgn * root_lead,
                     "scoreStdev": score_stdev(size), "rawWinrate": win(raw_value),
                     "rawLead": sgn * raw_lead, "currentPlayer": "B" if root.to_play == BLACK else "W",
                     "thisHash": this_hash, "symHash": sym_hash}
        out = {"id": q.id, "isDuringSearch": during, "turnNumber": p.turn, "moveInfos": infos, "rootInfo": root_info}
        if s.ownership:
            out["ownership"] = ownership_list(root, extra.get("ownership_black"), None, own_sign)
        if s.policy and "policy" in extra:
            out["policy"] = policy_list(root, extra["policy"])
        if "humanPolicy" in extra:
            out["humanPolicy"] = extra["humanPolicy"]
        return out

    # --- serving ------------------------------------------------------------------------------------------

    def serve(self, lines: Iterable[str], wait_at_end: bool = True) -> None:
        """Answer ``lines`` until they end (then finish the queued positions, or with ``wait_at_end`` false
        terminate them). Input is read by a thread, so searches go on while queries arrive."""
        inbox: queue.Queue[str | None] = queue.Queue()

        def reader() -> None:
            try:
                for raw in lines:
                    inbox.put(raw)
            finally:
                inbox.put(None)

        threading.Thread(target=reader, daemon=True).start()
        ended = False
        while True:
            while True:
                try:
                    raw = inbox.get(block=not self.busy and not ended)
                except queue.Empty:
                    break
                if raw is None:
                    ended = True
                    if not wait_at_end:
                        self.terminate(None)
                    break
                self.handle_line(raw)
            if self.busy:
                self.step()
            elif ended:
                return

    def serve_stdio(self, wait_at_end: bool = True) -> None:
        """:meth:`serve` on stdin/stdout; the process also ends when the process that started it is gone (a client
        that ran it through a shell and stopped the shell alone: the engine would otherwise search on, orphaned)."""
        from gotk.play.gtp import read_lines

        parent = os.getppid()

        def watch() -> None:
            while True:
                time.sleep(1.0)
                if os.getppid() != parent:
                    os._exit(0)

        if parent > 1:
            threading.Thread(target=watch, daemon=True).start()
        try:
            self.serve(read_lines(sys.stdin.buffer), wait_at_end)
        except BrokenPipeError:
            pass


__all__ = ["DEFAULT_MAX_ACTIVE", "DEFAULT_MAX_QUEUED", "PROTOCOL_VERSION", "AnalysisEngine"]
