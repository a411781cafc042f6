"""The fast rollout policy: AlphaGo's linear softmax over local patterns and tactical features
(:mod:`gotk.game.patterns`), learnt from any gotk dataset whose planes name the stones (``gotk train --model
rollout``), evaluated on the same test rows as a network (``gotk eval``), and played inside playouts
(:mod:`gotk.game.playouts`) and as the priors of a search without a network (:mod:`gotk.search.rollouts`).

**Data.** A row gives the board (rebuilt from its stone planes, :func:`gotk.encoders.stones.stones_batch`), the
player to move and the move played. The last two moves, which the tactical and response features need, are the
moves of the two rows before it in the same game (rows come in move order); where a row is missing before it (the
game's first moves, or a pass left out of the dataset) they are unknown and those features are off. The board is
set up on the compiled engine (strings and liberties) and every feature is computed there, as in a playout.

**Learning.** The loss is the softmax cross-entropy of the move played over the legal moves (a row whose move is a
pass or not legal on the rebuilt board is skipped in training and counted a miss in evaluation), minimised by
AdaGrad one row at a time (the features are sparse: a rare pattern's weight moves as fast as a common one's). Rows
are taken in the dataset's order; ``--epochs`` passes, or ``--max-positions`` rows, or ``--max-minutes``.

**The agent file.** An agent package like a network's (:mod:`gotk.nets.agent_file`: ``agent.json`` and
``weights.safetensors``, hashed and checked on load) whose model is ``rollout``: one tensor ``weights`` of
:data:`~gotk.game.patterns.N_WEIGHTS` float32 and the layout of its features (:data:`~gotk.game.patterns.LAYOUT`).
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gotk.game import kernels as K
from gotk.game import patterns as P
from gotk.game.loops import setup_position
from gotk.game.state import new_engine
from gotk.jit import nogil_kernel

MODEL = "rollout"
HEAD = "policy"
#: what a row's evaluation adds up: rows, top-1 hits, top-5 hits, summed NLL, rows whose move was not a candidate
STATS = 5


@nogil_kernel
def _rows(work_t, boards, movers, last, last2, labels, W, G, lr, train, canon_pat, canon_resp, stack, cand, score,
          keys, isc, lp, lf, seen, out):
    """Score (and with ``train`` learn from) each row; ``out`` += :data:`STATS`."""
    e = K.Engine(*work_t)
    board = e.board
    npts = board.shape[0]
    size = 1
    while size * size < npts:
        size += 1
    stamp = 0
    for i in range(boards.shape[0]):
        for p in range(npts):
            board[p] = boards[i, p]
        e.meta[K.M_KO] = -1
        if setup_position(e, stack) >= 0:  # a string without liberties: not a position of a game
            out[4] += 1
            continue
        me = movers[i]
        n, m = P.move_scores(board, e.head, e.nxt, e.libs, e.ssize, e.nbr, W, canon_pat, canon_resp, size, me,
                             last[i], last2[i], -1, cand, score, keys, lp, lf, seen)
        stamp += 1
        top = -1e300
        for j in range(n):
            p = cand[j]
            isc[p] = stamp
            if score[p] > top:
                top = score[p]
        y = labels[i]
        out[0] += 1
        if y < 0 or y >= npts or isc[y] != stamp:
            out[4] += 1
            out[3] += 30.0  # the NLL of a move the policy cannot play, capped
            continue
        z = 0.0
        above = 0
        for j in range(n):
            p = cand[j]
            z += math.exp(score[p] - top)
            if score[p] > score[y]:
                above += 1
        if above == 0:
            out[1] += 1
        if above < 5:
            out[2] += 1
        out[3] += -(score[y] - top - math.log(z))
        if not train:
            continue
        for j in range(n):
            p = cand[j]
            g = math.exp(score[p] - top) / z - (1.0 if p == y else 0.0)
            if abs(g) < 1e-6:
                continue
            for f in (P.OFF_PAT + canon_pat[keys[p]], P.OFF_LINE + P.line_of(p, size)):
                G[f] += g * g
                W[f] -= lr * g / math.sqrt(G[f])
        for j in range(m):
            p = lp[j]
            if isc[p] != stamp:
                continue
            g = math.exp(score[p] - top) / z - (1.0 if p == y else 0.0)
            f = lf[j]
            G[f] += g * g
            W[f] -= lr * g / math.sqrt(G[f])


def previous_moves(game: np.ndarray, move_number: np.ndarray, labels: np.ndarray, size: int,
                   carry: tuple | None = None) -> tuple[np.ndarray, np.ndarray, tuple]:
    """The last and the one-before-last move of each row (points; -1 unknown or a pass) from the rows before it in
    the same game (module docstring). ``carry``: the previous batch's last two rows, returned for the next."""
    g = np.concatenate([carry[0], game]) if carry else game
    mn = np.concatenate([carry[1], move_number]) if carry else move_number
    lab = np.concatenate([carry[2], labels]) if carry else labels
    k = len(g) - len(game)
    npts = size * size
    out = []
    for back in (1, 2):
        prev = np.full(len(game), -1, dtype=np.int64)
        idx = np.arange(k, len(g)) - back
        ok = idx >= 0
        src = idx[ok]
        good = (g[src] == g[k:][ok]) & (mn[src] == mn[k:][ok] - back) & (lab[src] < npts)
        vals = np.where(good, lab[src], -1)
        prev[ok] = vals
        out.append(prev)
    return out[0], out[1], (g[-2:], mn[-2:], lab[-2:])


@dataclass
class Scratch:
    """A board size's scratch for the row kernel."""

    size: int
    work: tuple = field(init=False)

    def __post_init__(self) -> None:
        n = self.size * self.size
        self.work = tuple(new_engine(self.size))
        self.stack = np.empty(n, dtype=np.int32)
        self.cand = np.empty(n, dtype=np.int64)
        self.score = np.zeros(n, dtype=np.float64)
        self.keys = np.zeros(n, dtype=np.int64)
        self.isc = np.zeros(n, dtype=np.int64)
        self.lp = np.empty(P.MAX_LOCAL, dtype=np.int64)
        self.lf = np.empty(P.MAX_LOCAL, dtype=np.int64)
        self.seen = np.empty(5, dtype=np.int64)


class RolloutPolicy:
    """A rollout policy: its weights (:data:`~gotk.game.patterns.N_WEIGHTS` float64) for ``board_size`` boards, and
    what its agent file recorded (``meta``)."""

    def __init__(self, weights: np.ndarray, board_size: int, meta: dict | None = None,
                 any_size: bool = False) -> None:
        self.weights = np.ascontiguousarray(weights, dtype=np.float64)
        # any_size: its weights are local (3x3 patterns, responses, edge distance), so they play every board size
        # (at_size), as gotk agent convert --board-size carries them; else its own size only
        self.any_size = any_size
        self._sizes: dict[int, RolloutPolicy] = {}
        if self.weights.shape != (P.N_WEIGHTS,):
            raise ValueError(f"a rollout policy has {P.N_WEIGHTS} weights, not {self.weights.shape}")
        self.board_size = int(board_size)
        self.meta = meta or {}
        self.canon_pat, self.canon_resp = P.canon_tables()
        self.exp_weights = np.exp(self.weights)  # what playouts multiply
        self._scratch: Scratch | None = None
        self.name = self.meta.get("name", "rollout")

    def at_size(self, size: int) -> RolloutPolicy:
        """This policy for ``size`` boards: itself on its own size, else the same weights for that size (one per size,
        kept)."""
        if size == self.board_size:
            return self
        if size not in self._sizes:
            self._sizes[size] = RolloutPolicy(self.weights, size, {**self.meta, "resized_from": self.board_size})
        return self._sizes[size]

    def scratch(self) -> Scratch:
        if self._scratch is None:
            self._scratch = Scratch(self.board_size)
        return self._scratch

    def score_rows(self, boards: np.ndarray, movers: np.ndarray, last: np.ndarray, last2: np.ndarray,
                   labels: np.ndarray, train: bool = False, grads: np.ndarray | None = None,
                   lr: float = 0.1) -> np.ndarray:
        """Top-1/top-5/NLL sums of the rows (:data:`STATS`); with ``train`` also one AdaGrad step a row (``grads``:
        the squared-gradient sums)."""
        s = self.scratch()
        out = np.zeros(STATS, dtype=np.float64)
        g = grads if grads is not None else np.zeros(1, dtype=np.float64)
        _rows(s.work, boards, movers.astype(np.int64), last, last2, labels.astype(np.int64), self.weights, g,
              float(lr), bool(train), self.canon_pat, self.canon_resp, s.stack, s.cand, s.score, s.keys, s.isc,
              s.lp, s.lf, s.seen, out)
        return out

    def probabilities(self, state) -> np.ndarray:
        """The policy's move probabilities in ``state`` (``size² + 1``; pass only when no move is left)."""
        if state.size != self.board_size:
            raise ValueError(f"a rollout policy of {self.board_size}x{self.board_size}, not "
                             f"{state.size}x{state.size}")
        s = self.scratch()
        e = state.e
        last, last2 = _last_moves(state)
        n, m = P.move_scores(e.board, e.head, e.nxt, e.libs, e.ssize, e.nbr, self.weights, self.canon_pat,
                             self.canon_resp, state.size, state.to_play, last, last2, _ko(state), s.cand,
                             s.score, s.keys, s.lp, s.lf, s.seen)
        out = np.zeros(state.size * state.size + 1)
        if n == 0:
            out[-1] = 1.0
            return out
        pts = s.cand[:n]
        v = s.score[pts]
        v = np.exp(v - v.max())
        out[pts] = v / v.sum()
        return out

    def save(self, path: str | os.PathLike, metrics: dict | None = None, data_manifest_sha256: str | None = None,
             extra: dict | None = None, fp16: bool = False) -> Path:
        """Write the agent file (module docstring); ``fp16``: the weights as float16 (the shipped policy's), which
        plays as those rounded weights."""
        from gotk.nets.agent_file import save_tables

        meta = {"model": {"name": MODEL, "head": HEAD, "hparams": {"features_version": P.VERSION,
                                                                  "layout": P.LAYOUT}},
                "board_size": self.board_size, "num_planes": 1,
                "encoder": {"name": "rollout-features", "version": P.VERSION, "board_size": self.board_size,
                            "num_planes": 1},
                "data_manifest_sha256": data_manifest_sha256, "metrics": metrics or {}, **(extra or {})}
        return save_tables(path, meta, {"weights": self.weights.astype(np.float16 if fp16 else np.float32)})


def _last_moves(state) -> tuple[int, int]:
    n = state.size * state.size
    hist = state.history
    last = hist[-1][1] if hist else -1
    last2 = hist[-2][1] if len(hist) >= 2 else -1
    return (last if 0 <= last < n else -1), (last2 if 0 <= last2 < n else -1)


def _ko(state) -> int:
    e = state.e
    return int(e.meta[K.M_KO]) if int(e.meta[K.M_KO_COLOR]) == state.to_play else -1


def is_rollout_meta(meta: dict) -> bool:
    return isinstance(meta.get("model"), dict) and meta["model"].get("name") == MODEL


def load_rollout_policy(path: str | os.PathLike, any_size: bool = False) -> RolloutPolicy:
    """The rollout policy in an agent file (:class:`~gotk.nets.agent_file.AgentError` when it is not one);
    ``any_size``: it plays every board size (:meth:`RolloutPolicy.at_size`)."""
    from gotk.nets.agent_file import read_agent_files

    meta, tensors = read_agent_files(path)
    pol = rollout_policy_from_parts(meta, tensors, path)
    pol.any_size = any_size
    return pol


def rollout_policy_from_parts(meta: dict, tensors: dict, path: str | os.PathLike) -> RolloutPolicy:
    """The rollout policy of an agent file already read (:func:`gotk.nets.agent_file.read_agent_files`)."""
    from gotk.nets.agent_file import AgentError

    if not is_rollout_meta(meta):
        raise AgentError(f"is a {meta['model'].get('name')} network, not a rollout policy (gotk train --model "
                         f"rollout makes one)", path)
    layout = meta["model"]["hparams"].get("layout")
    if meta["model"]["hparams"].get("features_version") != P.VERSION or layout != P.LAYOUT:
        raise AgentError(f"rollout features version {meta['model']['hparams'].get('features_version')!r}; this gotk "
                         f"computes version {P.VERSION}", path)
    w = tensors.get("weights")
    if w is None or list(w.shape) != [P.N_WEIGHTS] or not w.is_floating_point():
        raise AgentError(f"a rollout policy holds one tensor 'weights' of {P.N_WEIGHTS}", path)
    meta = dict(meta, name=Path(str(path)).stem)
    return RolloutPolicy(w.double().numpy(), meta["board_size"], meta)


# --- data -------------------------------------------------------------------------------------------------


def rollout_batches(data: str | os.PathLike, split: str, batch_size: int = 4096,
                    storage_options: dict | None = None):
    """``(board size, batches)``: the split's rows in order as ``(boards, movers, last, last2, labels)`` (movers 1
    black, 2 white). ValueError when the dataset's planes name no stones."""
    from gotk.encoders.stones import stones_batch
    from gotk.train.evaluate import shard_batches

    enc, batches = shard_batches(data, split, batch_size, storage_options)
    size = int(enc["board_size"])
    names = list(enc.get("plane_names") or [])
    if stones_batch(np.zeros((1, int(enc["num_planes"]), size, size), dtype=np.uint8), names,
                    np.ones(1)) is None:
        raise ValueError(f"the dataset's encoder {enc.get('name')!r} has no planes that name the stones: a rollout "
                         f"policy learns from the board (encode with sevenplane, simple, alphago, oneplane...)")

    def gen():
        carry = None
        for b in batches:
            boards = stones_batch(b["features"], names, b["to_play"])
            labels = b["label"].astype(np.int64)
            last, last2, carry = previous_moves(b["game_index"], b["move_number"], labels, size, carry)
            movers = np.where(b["to_play"] > 0, 1, 2).astype(np.int64)
            yield boards, movers, last, last2, labels

    return size, gen()


def summary(stats: np.ndarray, seconds: float) -> dict:
    rows = max(1.0, stats[0])
    return {"positions": int(stats[0]), "top1": stats[1] / rows, "top5": stats[2] / rows, "nll": stats[3] / rows,
            "not_candidates": int(stats[4]), "seconds": round(seconds, 1)}


def evaluate_rollout(policy: RolloutPolicy, data: str | os.PathLike, split: str = "test",
                     max_positions: int | None = None, storage_options: dict | None = None) -> dict:
    """Top-1/top-5/NLL of the policy on a dataset split (the rows ``gotk eval`` reads for a network), and the
    microseconds it took a row to score every legal move."""
    size, batches = rollout_batches(data, split, storage_options=storage_options)
    if size != policy.board_size:
        raise ValueError(f"the rollout policy is for {policy.board_size}x{policy.board_size}; the dataset is "
                         f"{size}x{size}")
    stats = np.zeros(STATS)
    spent = 0.0
    t0 = time.perf_counter()
    warm = np.zeros((1, size * size), dtype=np.int8)
    policy.score_rows(warm, np.ones(1, dtype=np.int64), -np.ones(1, dtype=np.int64), -np.ones(1, dtype=np.int64),
                      np.zeros(1, dtype=np.int64))  # compiled (or loaded from the cache) before the clock runs
    for boards, movers, last, last2, labels in batches:
        if max_positions is not None:
            left = max_positions - int(stats[0])
            if left <= 0:
                break
            boards, movers, last, last2, labels = (a[:left] for a in (boards, movers, last, last2, labels))
        t = time.perf_counter()
        stats += policy.score_rows(boards, movers, last, last2, labels)
        spent += time.perf_counter() - t
    out = summary(stats, time.perf_counter() - t0)
    out["us_per_position"] = round(1e6 * spent / max(1, stats[0]), 2)
    out["agent"] = policy.name
    out["model"] = MODEL
    return out


@dataclass
class RolloutTraining:
    """``gotk train --model rollout``'s settings."""

    data: str
    out: str
    epochs: int = 1
    lr: float = 0.1
    max_positions: int | None = None
    max_minutes: float | None = None
    val_positions: int = 20_000
    storage_options: dict | None = None


def train_rollout(cfg: RolloutTraining, progress=None) -> dict:
    """Learn a rollout policy (module docstring); writes ``out/agent.gotk`` and ``out/metrics.json``. Returns the
    summary."""
    from gotk.atomic import write_text_atomic
    from gotk.shards.manifest import read_manifest

    manifest, manifest_sha = read_manifest(cfg.data, cfg.storage_options)
    if "train" not in manifest["splits"]:
        raise ValueError(f"the dataset has no train split (splits: {', '.join(manifest['splits'])})")
    size, _ = rollout_batches(cfg.data, "train", storage_options=cfg.storage_options)  # checks the planes
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    policy = RolloutPolicy(np.zeros(P.N_WEIGHTS), size)
    grads = np.full(P.N_WEIGHTS, 1e-8)
    t0 = time.perf_counter()
    deadline = None if cfg.max_minutes is None else t0 + 60 * cfg.max_minutes
    seen = 0
    stats = np.zeros(STATS)
    ended = "epochs"
    for epoch in range(cfg.epochs):
        _, batches = rollout_batches(cfg.data, "train", storage_options=cfg.storage_options)
        for boards, movers, last, last2, labels in batches:
            if cfg.max_positions is not None and seen >= cfg.max_positions:
                ended = "max_positions"
                break
            if deadline is not None and time.perf_counter() > deadline:
                ended = "max_minutes"
                break
            stats += policy.score_rows(boards, movers, last, last2, labels, train=True, grads=grads, lr=cfg.lr)
            seen += len(labels)
            if progress:
                progress(epoch, seen, summary(stats, time.perf_counter() - t0))
        else:
            continue
        break
    result = {"train": summary(stats, time.perf_counter() - t0), "positions_seen": seen, "ended_by": ended,
              "epochs": cfg.epochs}
    if "val" in manifest["splits"]:
        result["val"] = evaluate_rollout(policy, cfg.data, "val", cfg.val_positions, cfg.storage_options)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    policy.save(out / "agent.gotk", metrics={k: result["val"][k] for k in ("top1", "top5", "nll")}
                if "val" in result else {}, data_manifest_sha256=manifest_sha,
                extra={"training": {"positions": seen, "epochs": cfg.epochs, "lr": cfg.lr, "ended_by": ended}})
    write_text_atomic(out / "metrics.json", json.dumps(result, indent=2))
    return result


__all__ = ["MODEL", "RolloutPolicy", "RolloutTraining", "evaluate_rollout", "is_rollout_meta",
           "load_rollout_policy", "previous_moves", "rollout_batches", "rollout_policy_from_parts", "train_rollout"]
