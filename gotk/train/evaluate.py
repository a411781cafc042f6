"""Move-prediction and value metrics, game-phase breakdowns and baselines (``gotk eval``).

Metrics over rows: ``top1``/``top5`` (the played move is the most probable / among the five most
probable, pass included), ``nll`` (mean negative log-likelihood of the played move, nats), and with a
value head ``value_mse`` and ``value_sign_accuracy`` over rows whose value target is non-zero (rows
of drawn, void or unknown-result games carry 0 and are left out of value metrics and value loss).

Phases use the 1-based move number (``move_number + 1``): ``opening`` 1–50, ``middle`` 51–150,
``endgame`` 151+. Baselines on the same rows: ``frequency`` always answers the most frequent labels
of the evaluated rows (its top-5 is the five most frequent); ``random`` picks uniformly among the empty
points, so its expected top-1 is the mean of ``1 / empty points`` over rows whose move is not a pass
(top-5: ``min(5, empty) / empty``). Empty points are counted from the features (the ``stone_empty``
plane, or points with no stone/liberty plane set).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import torch

from gotk.encoders import metadata_inputs as MI
from gotk.sgf.metadata import RANK_BANDS

if TYPE_CHECKING:
    from gotk.nets.agent import Agent

PHASES: tuple[tuple[str, int, int | None], ...] = (("1-50", 1, 50), ("51-150", 51, 150), ("151+", 151, None))


def phase_index(move_number: np.ndarray) -> np.ndarray:
    """0-based move numbers → phase index (0, 1, 2) by the 1-based move number."""
    m = np.asarray(move_number) + 1
    return np.where(m <= 50, 0, np.where(m <= 150, 1, 2))


def empty_points(features: np.ndarray, encoder: dict) -> np.ndarray | None:
    """Number of empty board points of each row of ``features`` (N, C, H, W), from the planes named in
    the encoder description; None when the planes say nothing about stones."""
    names = list(encoder.get("plane_names") or [])
    f = np.asarray(features)
    if "stone_empty" in names:
        return f[:, names.index("stone_empty")].reshape(len(f), -1).astype(bool).sum(axis=1)
    idx = [i for i, n in enumerate(names) if "liberties" in n or "stone" in n]
    if not idx:
        return None
    occupied = (f[:, idx] != 0).any(axis=1).reshape(len(f), -1)
    return occupied.shape[1] - occupied.sum(axis=1)


class Metrics:
    """Running sums of policy/value metrics, overall and by phase (all-reducible across processes)."""

    # per phase: rows, top1, top5, nll, value rows, value sq err, value sign ok, rnd top1, rnd top5, rnd rows,
    # komi/handicap baseline: rows, sq err, sign ok
    _FIELDS = ("rows", "top1", "top5", "nll", "vrows", "vse", "vsign", "rnd1", "rnd5", "rndrows", "brows", "bse",
               "bsign")

    def __init__(self, num_moves: int) -> None:
        from gotk.train.value_eval import Calibration

        self.num_moves = num_moves
        self.sums = np.zeros((len(PHASES), len(self._FIELDS)), dtype=np.float64)
        self.calibration = Calibration()
        self.label_counts = np.zeros(num_moves, dtype=np.int64)
        self.has_policy = False
        self.has_value = False
        self.has_random = True

    def _add(self, phase: np.ndarray, field: str, values: np.ndarray) -> None:
        j = self._FIELDS.index(field)
        self.sums[:, j] += np.bincount(phase, weights=np.asarray(values, dtype=np.float64), minlength=len(PHASES))

    def update(self, labels: np.ndarray, move_numbers: np.ndarray, logp: np.ndarray | None = None,
               values: np.ndarray | None = None, value_targets: np.ndarray | None = None,
               empty: np.ndarray | None = None, baseline_values: np.ndarray | None = None) -> None:
        """Add a batch: ``logp`` (B, M) log-probabilities, ``values`` (B,) predictions in [-1, 1],
        ``baseline_values`` (B,) the komi/handicap baseline's predictions for the same rows."""
        labels = np.asarray(labels, dtype=np.int64)
        phase = phase_index(move_numbers)
        self._add(phase, "rows", np.ones(len(labels)))
        self.label_counts += np.bincount(labels, minlength=self.num_moves)[: self.num_moves]
        if logp is not None:
            self.has_policy = True
            picked = logp[np.arange(len(labels)), labels]
            k = min(5, logp.shape[1])
            top5 = np.argpartition(-logp, k - 1, axis=1)[:, :k]
            self._add(phase, "top1", np.argmax(logp, axis=1) == labels)
            self._add(phase, "top5", (top5 == labels[:, None]).any(axis=1))
            self._add(phase, "nll", -picked)
        if values is not None and value_targets is not None:
            self.has_value = True
            t = np.asarray(value_targets, dtype=np.float64)
            known = t != 0
            v = np.asarray(values, dtype=np.float64)
            self._add(phase, "vrows", known)
            self._add(phase, "vse", np.where(known, (v - t) ** 2, 0.0))
            self._add(phase, "vsign", known & (np.sign(v) == np.sign(t)))
            self.calibration.update(v, t)
            if baseline_values is not None:
                b = np.asarray(baseline_values, dtype=np.float64)
                self._add(phase, "brows", known)
                self._add(phase, "bse", np.where(known, (b - t) ** 2, 0.0))
                self._add(phase, "bsign", known & (np.sign(b) == np.sign(t)))
        if empty is None:
            self.has_random = False
        else:
            e = np.maximum(np.asarray(empty, dtype=np.float64), 1.0)
            not_pass = labels != self.num_moves - 1
            self._add(phase, "rnd1", np.where(not_pass, 1.0 / e, 0.0))
            self._add(phase, "rnd5", np.where(not_pass, np.minimum(5.0, e) / e, 0.0))
            self._add(phase, "rndrows", np.ones(len(labels)))

    def all_reduce(self) -> None:
        """Sum over the processes of a ``torch.distributed`` group (no-op when not distributed)."""
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            cal = self.calibration.sums
            t = torch.from_numpy(np.concatenate([self.sums.ravel(), cal.ravel(), self.label_counts.astype(np.float64)]))
            if torch.distributed.get_backend() == "nccl":  # NCCL reduces CUDA tensors only
                t = t.cuda()
            torch.distributed.all_reduce(t)
            a = t.cpu().numpy()
            n, c = self.sums.size, cal.size
            self.sums = a[:n].reshape(self.sums.shape)
            self.calibration.sums = a[n:n + c].reshape(cal.shape)
            self.label_counts = a[n + c:].astype(np.int64)

    @property
    def rows(self) -> int:
        return int(self.sums[:, 0].sum())

    def _summary(self, s: np.ndarray) -> dict:
        f = dict(zip(self._FIELDS, s, strict=True))
        rows = f["rows"]
        out: dict = {"positions": int(rows)}
        if self.has_policy:
            out.update(top1=_ratio(f["top1"], rows), top5=_ratio(f["top5"], rows), nll=_ratio(f["nll"], rows))
        if self.has_value:
            out.update(value_positions=int(f["vrows"]), value_mse=_ratio(f["vse"], f["vrows"]),
                       value_sign_accuracy=_ratio(f["vsign"], f["vrows"]))
            if f["brows"]:
                out.update(komi_handicap_mse=_ratio(f["bse"], f["brows"]),
                           komi_handicap_sign_accuracy=_ratio(f["bsign"], f["brows"]))
        return out

    def summary(self) -> dict:
        """Overall metrics, ``by_phase`` and ``baselines`` as one JSON-able dict."""
        out = self._summary(self.sums.sum(axis=0))
        out["by_phase"] = {name: self._summary(self.sums[i]) for i, (name, _, _) in enumerate(PHASES)}
        rows = self.rows
        counts = np.sort(self.label_counts)[::-1]
        freq = {"top1": _ratio(counts[:1].sum(), rows), "top5": _ratio(counts[:5].sum(), rows),
                "label": int(np.argmax(self.label_counts)) if rows else None}
        out["baselines"] = {"frequency": freq}
        if self.has_random:
            tot = self.sums.sum(axis=0)
            j1, j5, jr = (self._FIELDS.index(k) for k in ("rnd1", "rnd5", "rndrows"))
            out["baselines"]["random"] = {"top1": _ratio(tot[j1], tot[jr]), "top5": _ratio(tot[j5], tot[jr])}
        if self.has_value:
            tot = self.sums.sum(axis=0)
            vrows, brows = (tot[self._FIELDS.index(k)] for k in ("vrows", "brows"))
            value = {"always_0": {"value_mse": 1.0 if vrows else None, "value_sign_accuracy": None}}
            if brows:
                value["komi_handicap"] = {"value_mse": out.get("komi_handicap_mse"),
                                          "value_sign_accuracy": out.get("komi_handicap_sign_accuracy")}
            out["baselines"]["value"] = value
            out["calibration"] = self.calibration.table()
            out["calibration_ece"] = self.calibration.ece()
        return out


def _ratio(a: float, b: float) -> float | None:
    return float(a) / float(b) if b else None


# --- evaluation inputs ---------------------------------------------------------------------------


def is_shard_dir(path: str | os.PathLike, storage_options: dict | None = None) -> bool:
    """Whether ``path`` (a folder or an fsspec URL) holds a dataset: a ``manifest.json``."""
    from gotk.shards.manifest import MANIFEST_NAME
    from gotk.storage import Storage, is_url, join

    if is_url(path):
        return Storage.for_url(path, storage_options).isfile(join(path, MANIFEST_NAME))
    return (Path(path) / MANIFEST_NAME).is_file()


def shard_batches(path: str | os.PathLike, split: str, batch_size: int,
                  storage_options: dict | None = None) -> tuple[dict, Iterator[dict]]:
    """``(encoder description, batches)`` of a shard folder's split, in file order, unaugmented."""
    from gotk.datasets import Sampling, ShardDataset

    ds = ShardDataset(path, sampling=Sampling(batch_size=batch_size, shuffle=False, symmetries="none"), split=split,
                      storage_options=storage_options)

    def gen() -> Iterator[dict]:
        for b in ds:
            yield {k: (v.numpy() if isinstance(v, torch.Tensor) else v) for k, v in b.items()}

    return ds.encoder, gen()


def baseline_games(path: str | os.PathLike, storage_options: dict | None = None, where: str | None = None) -> pa.Table:
    """``game_id``, ``handicap``, ``komi`` (a missing komi read as 0), ``winner`` and ``split`` of a dataset's
    games (those ``where`` keeps, when given): what the komi/handicap baseline is fit on and indexes."""
    import pyarrow.compute as pc

    from gotk.shards.manifest import read_games

    w = None
    if where:
        from gotk.shards.manifest import GAMES_SCHEMA
        from gotk.shards.where import compile_where

        w = compile_where(where, GAMES_SCHEMA.names)
    games = read_games(path, storage_options, ["game_id", "handicap", "komi", "winner", "split"], where=w)
    return games.set_column(games.schema.get_field_index("komi"), "komi", pc.fill_null(games["komi"], 0.0))


def fit_baseline(games: pa.Table, splits: list[str]):
    """The :class:`~gotk.train.value_eval.KomiHandicapBaseline` fit on the games of ``splits``, or None when none
    of them has a result."""
    import pyarrow.compute as pc

    from gotk.train.value_eval import KomiHandicapBaseline

    fit_on = games.filter(pc.is_in(games.column("split"), pa.array(splits, pa.string())))
    if pc.sum(pc.is_valid(fit_on.column("winner"))).as_py() in (0, None):
        return None
    return KomiHandicapBaseline.fit(fit_on)


def komi_handicap_baseline(path: str | os.PathLike, split: str, storage_options: dict | None = None,
                           recorded: dict | None = None):
    """``(baseline, note)``: the komi/handicap value baseline for a dataset's ``split``, indexing every game.

    It is the one ``recorded`` in the agent file (fit on the games the agent was trained on) when there is one,
    else fit on the dataset's ``train`` split (on every other split's when it has no ``train``). ``baseline`` is
    None when there is nothing to fit it on; ``note`` then says why in one line."""
    from gotk.train.value_eval import KomiHandicapBaseline

    games = baseline_games(path, storage_options)
    baseline = None
    if recorded is not None:
        try:
            baseline = KomiHandicapBaseline.from_dict(recorded)
        except ValueError:
            baseline = None
    if baseline is None:
        splits = set(games.column("split").to_pylist())
        fit_on = ["train"] if "train" in splits and split != "train" else sorted(splits - {split})
        if not fit_on:
            return None, (f"komi/handicap baseline left out: the agent file records none and the dataset has no "
                          f"split besides {split!r} to fit it on")
        baseline = fit_baseline(games, fit_on)
        if baseline is None:
            return None, f"komi/handicap baseline left out: no game of {', '.join(fit_on)} has a result"
    baseline.index_games(games)
    return baseline, None


class _RankLookup:
    """Rank scale values of both players of every game of a dataset folder (from ``games.parquet``)."""

    def __init__(self, path, storage_options: dict | None) -> None:
        from gotk.datasets.index import game_index
        from gotk.shards.manifest import read_games

        t = read_games(path, storage_options, columns=["game_id", "black_rank", "white_rank"])
        keys = np.array([game_index(g) for g in t.column("game_id").to_pylist()], dtype=np.int64)
        order = np.argsort(keys)
        self.keys = keys[order]
        self.black = t.column("black_rank").to_numpy(zero_copy_only=False).astype(np.float64)[order]
        self.white = t.column("white_rank").to_numpy(zero_copy_only=False).astype(np.float64)[order]

    def __call__(self, batch: dict) -> np.ndarray:
        gi = np.asarray(batch["game_index"], dtype=np.int64)
        i = np.clip(np.searchsorted(self.keys, gi), 0, max(len(self.keys) - 1, 0))
        found = self.keys[i] == gi if len(self.keys) else np.zeros(len(gi), bool)
        r = np.where(np.asarray(batch["to_play"]) == 1, self.black[i], self.white[i])
        return np.where(found, r, np.nan)


def _update(metrics: Metrics, per_band: dict[str, Metrics], bands: np.ndarray | None, b: dict, n: int,
            logp: np.ndarray | None, val: np.ndarray | None, empty: np.ndarray | None,
            base: np.ndarray | None) -> None:
    """Add the first ``n`` rows of batch ``b`` (their predictions ``logp``, ``val``) to ``metrics`` and, with
    ``bands`` (each row's rank band), to the band's metrics in ``per_band``."""
    metrics.update(b["label"][:n], b["move_number"][:n], logp, val, b["value"][:n] if val is not None else None,
                   empty, base)
    if bands is None:
        return
    for band in np.unique(bands).tolist():
        sel = np.flatnonzero(bands == band)
        per_band.setdefault(band, Metrics(metrics.num_moves)).update(
            b["label"][:n][sel], b["move_number"][:n][sel], logp[sel] if logp is not None else None,
            val[sel] if val is not None else None, b["value"][:n][sel] if val is not None else None,
            empty[sel] if empty is not None else None, base[sel] if base is not None else None)


def _band_summaries(per_band: dict[str, Metrics]) -> dict[str, dict]:
    """The metrics of every rank band, in :data:`gotk.sgf.metadata.RANK_BANDS` order (``?`` last)."""
    order = [name for name, _, _ in RANK_BANDS] + ["?"]
    return {band: per_band[band]._summary(per_band[band].sums.sum(axis=0)) for band in order if band in per_band}


def _bands(ranks: np.ndarray) -> np.ndarray:
    """Rank values → :data:`gotk.sgf.metadata.RANK_BANDS` names (``?`` unknown), per row."""
    from gotk.sgf.metadata import rank_band

    uniq, inv = np.unique(np.nan_to_num(ranks, nan=-1e9), return_inverse=True)
    names = np.array([rank_band(None if u == -1e9 else float(u)) for u in uniq], dtype=object)
    return names[inv.reshape(-1)]


def encoder_mismatch(data: dict, agent: dict) -> str | None:
    """How the encoder a dataset records differs from an agent's (both :meth:`Encoder.describe` dicts), in one
    phrase (``the data was encoded with 'simple', the agent uses 'sevenplane'``), or None when they agree."""
    if data.get("name") != agent.get("name"):
        return f"the data was encoded with {data.get('name')!r}, the agent uses {agent.get('name')!r}"
    for key in ("version", "shape", "options"):
        if key in data and data[key] != agent.get(key):
            return (f"the data was encoded with {data['name']!r} {key} {data[key]!r}, the agent's {key} is "
                    f"{agent.get(key)!r}")
    return None


def evaluate(agent: Agent, data: str | os.PathLike | list, split: str = "test", max_positions: int | None = None,
             batch_size: int = 512, progress: bool = False, storage_options: dict | None = None,
             by: str | None = None, as_rank: str | None = None) -> dict:
    """Evaluate ``agent`` on a shard folder's ``split`` (a path or an fsspec URL: ``storage_options``
    go to fsspec) or on SGF files/folders/archives. ``by="rank"`` adds ``by_rank``: the same metrics per
    rank band of the player to move (:data:`gotk.sgf.metadata.RANK_BANDS`, ``?`` when unknown).

    A conditioned agent (trained with ``--metadata``) is fed every position's true metadata (the shards' ``metadata``
    column, or the SGF headers). ``as_rank`` (a rank such as ``9d``, conditioned agents only) evaluates every position
    a second time with the player to move's rank in the metadata replaced by that rank (the opponent's left as it
    was; :func:`gotk.encoders.metadata_inputs.with_mover_rank`) and adds ``as_rank``: ``{"rank", the overall metrics,
    "by_rank"}`` beside the true-rank ones."""
    if by not in (None, "rank"):
        raise ValueError(f"--by {by!r}: only 'rank' is supported")
    conditioned = bool(agent.num_metadata)
    if as_rank is not None and not conditioned:
        raise ValueError("--as-rank: the agent is not conditioned on metadata (trained without --metadata)")
    as_inverse = MI.rank_label_inverse(as_rank) if as_rank is not None else None
    rank_of = None
    from gotk.datasets.sgf_batches import sgf_batches
    from gotk.nets.agent_file import AgentError
    from gotk.storage import is_url

    t0 = time.perf_counter()
    paths = [data] if isinstance(data, str | os.PathLike) else list(data)
    missing = [str(p) for p in paths if not is_url(p) and not Path(p).exists()]
    if missing:
        raise FileNotFoundError(f"no such dataset folder, SGF file or archive: {', '.join(missing)}")
    stats: dict = {}
    if len(paths) == 1 and is_shard_dir(paths[0], storage_options):
        desc, batches = shard_batches(paths[0], split, batch_size, storage_options)
        mine = agent.encoder.describe()
        mismatch = encoder_mismatch(desc, mine)
        if mismatch:
            raise AgentError(f"{mismatch}: re-encode the data with the agent's encoder or pass SGF files instead")
        source = {"kind": "shards", "path": str(paths[0]), "split": split}
        baseline, note = (komi_handicap_baseline(paths[0], split, storage_options,
                                                 agent.meta.get("value_baseline")) if agent.has_value else (None, None))
        if by == "rank":
            rank_of = _RankLookup(paths[0], storage_options)
    else:
        desc = agent.encoder.describe()
        batches = sgf_batches(paths, agent.encoder, batch_size, stats)
        source = {"kind": "sgf", "paths": [str(p) for p in paths]}
        baseline, note = None, None  # the rows of SGF input carry no game to look up
        if by == "rank":
            rank_of = lambda b: b["rank"]  # noqa: E731
    metrics = Metrics(agent.num_moves)
    per_band: dict[str, Metrics] = {}
    as_metrics = Metrics(agent.num_moves) if as_rank is not None else None
    as_band: dict[str, Metrics] = {}
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=max_positions, unit="pos", desc="eval", leave=False, disable=None)
    for b in batches:
        n = len(b["label"])
        if max_positions is not None:
            n = min(n, max_positions - metrics.rows)
            if n <= 0:
                break
        feats = b["features"][:n]
        glob = b.get("globals")
        if agent.num_globals and glob is None:
            raise AgentError("the agent takes global inputs (komi, side to move) and the data has no globals column: "
                             "re-encode it (gotk encode writes them unless --no-globals) or pass SGF files instead")
        meta = b.get("metadata") if conditioned else None
        if conditioned and meta is None:
            raise AgentError("the agent is conditioned on metadata and the data has no metadata column: re-encode "
                             "it with gotk encode --metadata or pass SGF files instead")
        meta = None if meta is None else np.asarray(meta)[:n]
        logp, val = agent.predict(feats, None if glob is None else glob[:n], meta)
        base = baseline.predict(b["game_index"][:n], b["to_play"][:n]) if baseline is not None else None
        empty = empty_points(feats, desc)
        bands = _bands(np.asarray(rank_of(b), dtype=np.float64)[:n]) if rank_of is not None else None
        _update(metrics, per_band, bands, b, n, logp, val, empty, base)
        if as_metrics is not None:
            logp, val = agent.predict(feats, None if glob is None else glob[:n], MI.with_mover_rank(meta, as_inverse))
            _update(as_metrics, as_band, bands, b, n, logp, val, empty, base)
        if bar is not None:
            bar.update(n)
    if bar is not None:
        bar.close()
    out = metrics.summary()
    if rank_of is not None:
        out["by_rank"] = _band_summaries(per_band)
    if as_metrics is not None:
        out["as_rank"] = {"rank": as_rank, "player": "to move", **as_metrics.summary()}
        if rank_of is not None:
            out["as_rank"]["by_rank"] = _band_summaries(as_band)
    out["source"] = source
    if note:
        out["notes"] = [note]
    if stats:
        out["source"].update(stats)
    out["agent"] = {"model": agent.meta.get("model"), "encoder": desc.get("name")}
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def format_report(r: dict) -> str:
    """A short text table of an :func:`evaluate` result."""
    def pct(x):
        return "n/a" if x is None else f"{100 * x:6.2f}%"

    lines = [f"positions {r['positions']:,}"]
    if "top1" in r:
        lines.append(f"top-1 {pct(r['top1'])}   top-5 {pct(r['top5'])}   nll {r['nll']:.4f}")
    if "value_mse" in r:
        mse = r["value_mse"]
        lines.append(f"value mse {'n/a' if mse is None else f'{mse:.4f}'}   "
                     f"sign accuracy {pct(r['value_sign_accuracy'])}")
    lines.append("by phase (1-based move number):")
    for name, p in r["by_phase"].items():
        extra = f"  top-1 {pct(p.get('top1'))}  top-5 {pct(p.get('top5'))}" if "top1" in p else ""
        if "value_mse" in p and p["value_mse"] is not None:
            extra += f"  value mse {p['value_mse']:.4f}  winner {pct(p['value_sign_accuracy'])}"
            if p.get("komi_handicap_mse") is not None:
                extra += f"  (komi/handicap mse {p['komi_handicap_mse']:.4f})"
        lines.append(f"  {name:<8} {p['positions']:>9,}{extra}")
    as_rank = r.get("as_rank")
    if as_rank is not None and "top1" in as_rank:
        lines.append(f"as {as_rank['rank']} (the player to move's rank replaced): top-1 {pct(as_rank['top1'])}   "
                     f"top-5 {pct(as_rank['top5'])}   nll {as_rank['nll']:.4f}")
    if "by_rank" in r:
        lines.append("by rank of the player to move:" + (f" (true rank | as {as_rank['rank']})" if as_rank else ""))
        for name, p in r["by_rank"].items():
            extra = f"  top-1 {pct(p.get('top1'))}  top-5 {pct(p.get('top5'))}" if "top1" in p else ""
            q = (as_rank or {}).get("by_rank", {}).get(name)
            if q is not None and "top1" in q:
                extra += f"  | top-1 {pct(q['top1'])}  nll {p['nll']:.4f} -> {q['nll']:.4f}"
            lines.append(f"  {name:<8} {p['positions']:>9,}{extra}")
    for name, b in r["baselines"].items():
        if name != "value":
            lines.append(f"baseline {name:<10} top-1 {pct(b['top1'])}   top-5 {pct(b['top5'])}")
    for name, b in r["baselines"].get("value", {}).items():
        mse = b["value_mse"]
        lines.append(f"value baseline {name:<14} mse {'n/a' if mse is None else f'{mse:.4f}'}   "
                     f"sign accuracy {pct(b['value_sign_accuracy'])}")
    if r.get("calibration"):
        ece = r.get("calibration_ece")
        lines.append(f"calibration (win probability of the player to move; ECE "
                     f"{'n/a' if ece is None else f'{ece:.4f}'}):")
        lines.append(f"  {'bin':<9} {'positions':>10} {'predicted':>10} {'observed':>10}")
        for row in r["calibration"]:
            if row["positions"]:
                lines.append(f"  {row['bin']:<9} {row['positions']:>10,} {row['predicted']:>10.3f} "
                             f"{row['observed']:>10.3f}")
    lines += [f"note: {n}" for n in r.get("notes", [])]
    return "\n".join(lines)
