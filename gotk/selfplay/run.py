"""``gotk selfplay``: games in chunks over an executor, written as SGF files and shards, resumable.

The output folder::

    OUT/selfplay.json                what the run is (agent and its sha256, settings, seed): a rerun must match
    OUT/chunks/chunk-NNNNN.parquet   the training rows of a chunk's games (shards with target columns)
    OUT/chunks/chunk-NNNNN.json      the chunk's done-record (written last: its presence = the chunk is done)
    OUT/sgf/game-NNNNNNN.sgf         every game (result, the root value per move as a comment, provenance)
    OUT/manifest.json, games.parquet the gotk dataset over every chunk (split ``train``), written at the end
    OUT/report.json                  the run's figures: games, positions/s, time outside the network, results,
                                     resignations, the false-resignation rate, games stopped at the move cap

A chunk is ``chunk_games`` games played together in one process (:class:`gotk.selfplay.games.SelfPlayBatch`);
game ``i`` draws its random numbers from ``(seed, i)`` and a chunk's symmetries from ``(seed, chunk)``, so a
seed gives the same games, and a killed run rerun with the same command redoes only the chunks without a
done-record (the games in flight).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from gotk import __version__
from gotk.atomic import atomic_path
from gotk.hashing import sha256_file
from gotk.runfolder import RunFolderError, prepare_run_folder, read_done_record, write_done_record
from gotk.selfplay import DEFAULT_ENCODER
from gotk.selfplay.config import SelfPlayConfig, SelfPlayError, SelfPlayOptions
from gotk.selfplay.games import FinishedGame, SelfPlayBatch

RECORD_NAME = "selfplay.json"
REPORT_NAME = "report.json"
GENERATOR = "gotk selfplay"
INIT_NAME = "agent-init.gotk"  # the random network of ``--init random``, kept in the output folder


def chunk_name(chunk: int) -> str:
    """The file name (no suffix) of chunk ``chunk``'s rows and done-record: ``chunk-NNNNN``."""
    return f"chunk-{chunk:05d}"


def chunk_batch(agent, cfg: SelfPlayConfig, chunk: int, first: int, count: int, seed: int,
                opponent=None) -> SelfPlayBatch:
    """The games of chunk ``chunk`` (games ``first .. first+count-1``; game ``i`` draws from ``(seed, i)``, the
    batch's evaluations from the chunk's own seed), as ``gotk selfplay`` and the zero loop's actors play them."""
    return SelfPlayBatch(agent, cfg, [(first + i, seed) for i in range(count)], seed=seed * 1_000_003 + chunk,
                         opponent=opponent)


def chunks_dataset(folder: str | Path, chunks: Path, records: list[dict], encoder: dict, options: dict,
                   generator: dict) -> dict:
    """``folder`` made a gotk dataset (split ``train``) over the rows files of the done-records ``records`` in the
    folder ``chunks`` (nothing copied: the manifest lists them relative to ``folder``), its games from the records;
    returns the manifest."""
    import os

    from gotk.shards.assemble import assemble_dataset

    files = [os.path.relpath(Path(chunks) / f"{chunk_name(r['chunk'])}.parquet", folder)
             for r in records if r["rows"] > 0]
    return assemble_dataset(folder, encoder, {"train": files}, dataset_games(records), options=options,
                            generator=generator)


_AGENTS: dict[str, object] = {}


def _load(agent_path: str, device: str = "cpu"):
    """The agent of a worker process (loaded once per process, file and device); bf16 autocast on CUDA."""
    from gotk.nets.agent import load_agent

    key = f"{agent_path}@{device}"
    if key not in _AGENTS:
        _AGENTS.clear()
        agent = load_agent(agent_path, device=device)
        agent.amp = agent.device.type == "cuda"
        _AGENTS[key] = agent
    return _AGENTS[key]


def play_chunk(agent_path: str, config: dict, out: str, chunk: int, first: int, count: int, seed: int,
               threads: int | None, generator: dict, device: str = "cpu") -> dict:
    """Play games ``first .. first+count-1`` together and write the chunk's files; returns its done-record. A
    work unit: top-level, arguments plain, so that any executor (process pool, Dask) can run it."""
    import torch

    if threads:
        torch.set_num_threads(threads)
    agent = _load(agent_path, device)
    cfg = SelfPlayConfig.from_record(config)
    batch = chunk_batch(agent, cfg, chunk, first, count, seed)
    games = batch.run()
    root = Path(out)
    write_sgfs(root / "sgf", games, generator, cfg)
    rows = write_chunk(root / "chunks" / f"{chunk_name(chunk)}.parquet", games, agent.encoder.describe(),
                       *cfg.chunk_columns())
    record = {
        "chunk": chunk, "first": first, "count": count, "rows": rows,
        "games": [game_row(g) for g in games],
        "seconds": round(batch.seconds, 4), "net_seconds": round(batch.net_seconds, 4),
        "evaluations": batch.evaluations, "calls": batch.calls,
    }
    write_done_record(root / "chunks" / f"{chunk_name(chunk)}.json", record)
    return record


def game_id_of(g: FinishedGame) -> str:
    from gotk.shards.gameid import game_id_from_parts

    return game_id_from_parts(g.size, [], [], [], [c for c, _ in g.moves], [p for _, p in g.moves])


def game_row(g: FinishedGame) -> dict:
    """The game's row of ``games.parquet`` plus what the report needs."""
    return {"game_id": game_id_of(g), "index": g.index, "black": "gotk-selfplay", "white": "gotk-selfplay",
            "komi": g.komi, "result": g.result, "winner": {1: "b", 2: "w"}.get(g.winner),
            "end": "resign" if g.resigned else ("draw" if g.winner == 0 else "score"), "num_moves": len(g.moves),
            "positions": int(g.label.shape[0]), "rules": "chinese", "source": GENERATOR, "capped": g.capped,
            "resign_enabled": g.resign_enabled, "would_resign": g.would_resign}


def write_sgfs(folder: Path, games: list[FinishedGame], generator: dict, cfg: SelfPlayConfig) -> None:
    """Each game as ``folder/game-NNNNNNN.sgf`` (atomically), provenance in the root comment."""
    from gotk.sgf.writer import game_sgf

    folder.mkdir(parents=True, exist_ok=True)
    for g in games:
        note = json.dumps({**generator, "game": g.index, "search": cfg.tree.search, "visits": cfg.tree.visits,
                           "fast_visits": cfg.fast_visits}, sort_keys=True)
        text = game_sgf(g.size, g.komi, "gotk-selfplay", "gotk-selfplay", g.result, g.moves, comment=note,
                        date="2026-01-01" if generator.get("fixed_date") else None, move_comments=g.comments)
        with atomic_path(folder / f"game-{g.index:07d}.sgf") as tmp:
            Path(tmp).write_text(text)


def write_chunk(path: Path, games: list[FinishedGame], encoder_desc: dict, targets: bool = True,
                experience: float | None = None, opponent: str = "self") -> int:
    """The games' training rows as one shard with the globals column (each row's komi and side to move); returns
    the row count. ``targets``: with the self-play target columns (``aux_weight``: :func:`aux_weight`);
    ``experience`` (a discount γ; policy games, whose rows have their play-time probabilities): with the experience
    columns (:mod:`gotk.shards.experience_column`: the return discounted by γ, the value and the move's
    probability at play time, ``opponent``, the moves the player chose from and the symmetry its network saw).
    :meth:`SelfPlayConfig.chunk_columns` says which a run's games have."""
    from gotk.encoders import global_inputs as GI
    from gotk.shards import experience_column as X
    from gotk.shards import format as S

    schema = S.shard_schema(encoder_desc, targets=targets, globals_desc=GI.describe(),
                            experience_desc=None if experience is None else X.describe(experience))
    writer = S.ShardWriter(path, schema)
    rows = 0
    try:
        for g in games:
            n = int(g.label.shape[0])
            if n == 0:
                continue
            sign = np.where(g.to_play == 1, 1, -1).astype(np.int8)  # +1 where black is to move
            black_won = 1 if g.winner == 1 else -1 if g.winner == 2 else 0
            extra = {}
            if targets:
                own = g.ownership[None].astype(np.int8) * sign[:, None, None]
                extra["targets"] = {"policy": g.policy.astype(np.float32), "root_value": g.root_value,
                                    "ownership": own, "score": (sign * _score_target(g)).astype(np.float32),
                                    "weight": g.weight, "aux_weight": np.full(n, aux_weight(g), np.float32)}
            if experience is not None:
                extra["experience"] = {"return": g.returns(experience), "play_value": np.clip(g.root_value, -1, 1),
                                       "play_prob": g.play_prob, "opponent": opponent, "choices": g.choices,
                                       "symmetry": g.symmetry}
            writer.write(S.rows_table(schema, [game_id_of(g)] * n, g.move_number, g.to_play,
                                      S.pack_features(g.planes, encoder_desc["dtype"]), g.label, sign * black_won,
                                      global_inputs=g.global_inputs, **extra))
            rows += n
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return rows


def aux_weight(g: FinishedGame) -> float:
    """The weight of a game's ownership and score targets (KataGo's): 1 for a game played out to two passes, whose
    final board is settled and scored; 0 for one that resigned or stopped at the move cap, whose last board still
    has dead stones on it and whose score is made up."""
    return 0.0 if g.resigned or g.capped else 1.0


def _score_target(g: FinishedGame) -> float:
    """Black's final score; after a resignation, the final position's area score, at least 1 point to the winner
    (the game was not played out)."""
    if not g.resigned:
        return g.score
    area = float(g.ownership.sum()) - g.komi
    return max(abs(area), 1.0) * (1 if g.winner == 1 else -1)


class SelfPlayRun:
    """A resumable self-play run (see the module docstring)."""

    def __init__(self, opts: SelfPlayOptions) -> None:
        self.opts = opts.validate()
        self.out = Path(opts.out)
        from gotk.nets.agent_file import AgentError, read_agent_files, resolve_agent

        agent = Path(opts.agent)
        self.agent_file = resolve_agent(agent).resolve()  # a built-in name (kgs) becomes its packaged file
        if not self.agent_file.is_file():
            raise SelfPlayError(f"{agent}: no such agent file")

        try:
            meta, _ = read_agent_files(agent)
        except AgentError as e:
            raise SelfPlayError(str(e)) from e
        cfg = opts.config
        if meta["board_size"] != cfg.size:
            raise SelfPlayError(f"{agent}: the agent plays {meta['board_size']}x{meta['board_size']}, not "
                                f"{cfg.size}x{cfg.size} (--size)")
        head = meta["model"]["head"]
        if not cfg.policy_only and head != "both":
            raise SelfPlayError(f"{agent}: search needs policy and value heads, this agent has head {head!r} "
                                f"(use --policy-only, or an agent trained with --head both)")
        if cfg.policy_only and head == "value":
            raise SelfPlayError(f"{agent}: the agent has no policy head")
        self.agent_sha = sha256_file(self.agent_file)
        self.encoder = meta["encoder"]
        self.record = {"generator": GENERATOR, "gotk_version": __version__,
                       "agent": {"file": str(agent), "sha256": self.agent_sha}, "config": asdict(cfg),
                       "games": opts.games, "chunk_games": opts.chunk_games, "seed": opts.seed}

    def _check_out(self) -> None:
        def comparable(record: dict) -> dict:  # a rerun may ask for more games, or name the agent otherwise
            record = {k: v for k, v in record.items() if k not in ("games", "gotk_version")}
            record.get("agent", {}).pop("file", None)
            if isinstance(record.get("config"), dict):  # an earlier gotk's flat record reads as today's
                try:
                    record["config"] = asdict(SelfPlayConfig.from_record(record["config"]))
                except (TypeError, SelfPlayError):
                    pass  # unreadable: it differs, and the folder is refused as another run's
            return record

        try:
            prepare_run_folder(self.out, self.record, True, run_file=RECORD_NAME, comparable=comparable,
                               ignore=(INIT_NAME,))
        except RunFolderError as e:
            if e.reason == "resume_mismatch":
                diff = "; ".join(e.differences)
                raise SelfPlayError(f"{self.out} holds another self-play run ({diff}): use another --out") from e
            raise SelfPlayError(f"{self.out} exists and is not a self-play folder: use an empty or new --out") from e
        (self.out / "chunks").mkdir(exist_ok=True)

    def chunks(self) -> list[tuple[int, int, int]]:
        k = self.opts.chunk_games
        return [(c, c * k, min(k, self.opts.games - c * k)) for c in range(-(-self.opts.games // k))]

    def _done(self, chunk: int) -> dict | None:
        shard = self.out / "chunks" / f"{chunk_name(chunk)}.parquet"
        return read_done_record(self.out / "chunks" / f"{chunk_name(chunk)}.json") if shard.is_file() else None

    def execute(self, progress=None) -> dict:
        """Play every chunk not done yet, then write the dataset and the report; returns the report."""
        from gotk.executors import make_executor

        self._check_out()
        t0 = time.perf_counter()
        opts = self.opts
        records: dict[int, dict] = {}
        todo = []
        for c, first, count in self.chunks():
            rec = self._done(c)
            if rec is not None and rec.get("count") == count and rec.get("first") == first:
                records[c] = rec
            else:
                todo.append((c, first, count))
        reused = len(records)
        threads = opts.threads or max(1, (os.cpu_count() or 1) // max(1, opts.workers))
        generator = {"generator": GENERATOR, "gotk_version": __version__, "agent_sha256": self.agent_sha,
                     "seed": opts.seed}
        cfg = asdict(opts.config)
        if todo:
            spawn = opts.device.startswith("cuda") and opts.executor == "local" and opts.workers > 1
            executor = make_executor(opts.executor, opts.workers, opts.scheduler, "spawn" if spawn else None)
            try:
                futures = [executor.submit(play_chunk, str(self.agent_file), cfg, str(self.out.resolve()),
                                           c, first, count, opts.seed, threads, generator, opts.device)
                           for c, first, count in todo]
                for f in futures:
                    rec = f.result()
                    records[rec["chunk"]] = rec
                    if progress is not None:
                        progress(rec)
            finally:
                executor.shutdown(wait=True, cancel_futures=True)
        wall = time.perf_counter() - t0
        ordered = [records[c] for c in sorted(records)]
        self._assemble(ordered)
        report = summarize(ordered, wall, reused, [records[c] for c, _, _ in todo])
        report["device"] = opts.device
        with atomic_path(self.out / REPORT_NAME) as tmp:
            Path(tmp).write_text(json.dumps(report, indent=2) + "\n")
        return report

    def _assemble(self, records: list[dict]) -> None:
        chunks_dataset(self.out, self.out / "chunks", records, self.encoder,
                       options={"selfplay": self.record["config"], "games": self.opts.games},
                       generator={"name": GENERATOR, "gotk_version": __version__, "agent_sha256": self.agent_sha})


GAME_KEYS = ("game_id", "black", "white", "komi", "result", "winner", "end", "num_moves", "positions", "rules",
             "source")


def dataset_games(records: list[dict]) -> list[dict]:
    """The ``games.parquet`` rows (split ``train``) of the games in chunks' done-records, in their order."""
    return [{k: g[k] for k in GAME_KEYS} | {"split": "train"} for r in records for g in r["games"]]


def summarize(records: list[dict], wall: float, reused: int, fresh: list[dict]) -> dict:
    """The run's figures from its chunks' done-records; the speeds from the chunks played now (``fresh``) over the
    run's wall time (None when every chunk was done already)."""
    games = [g for r in records for g in r["games"]]
    seconds = sum(r["seconds"] for r in fresh)
    net = sum(r["net_seconds"] for r in fresh)
    positions = sum(r["rows"] for r in records)
    fresh_rows = sum(r["rows"] for r in fresh)
    fresh_moves = sum(g["num_moves"] for r in fresh for g in r["games"])
    evals = sum(r["evaluations"] for r in fresh)
    speed = wall if fresh and wall > 0 else None
    disabled = [g for g in games if not g["resign_enabled"]]
    would = [g for g in disabled if g["would_resign"]]
    false = [g for g in would if g["winner"] == {1: "b", 2: "w"}[g["would_resign"]]]
    wins = {"b": sum(g["winner"] == "b" for g in games), "w": sum(g["winner"] == "w" for g in games)}
    moves = sum(g["num_moves"] for g in games)
    return {
        "generator": GENERATOR, "games": len(games), "positions": positions, "moves": moves,
        "chunks": len(records), "chunks_reused": reused, "wall_s": round(wall, 3),
        "play_seconds": round(seconds, 3), "net_seconds": round(net, 3),
        "outside_network_share": round(1 - net / seconds, 4) if seconds > 0 else None,
        "positions_per_s": round(fresh_rows / speed, 2) if speed else None,
        "moves_per_s": round(fresh_moves / speed, 2) if speed else None,
        "evaluations_per_s": round(evals / speed, 1) if speed else None,
        "black_wins": wins["b"], "white_wins": wins["w"], "draws": len(games) - wins["b"] - wins["w"],
        "resigned": sum(g["end"] == "resign" for g in games),
        "capped": sum(bool(g.get("capped")) for g in games),
        "resign_disabled_games": len(disabled), "would_have_resigned": len(would),
        "false_resignations": len(false),
        "false_resignation_rate": round(len(false) / len(would), 4) if would else None,
        "mean_length": round(moves / len(games), 2) if games else None,
    }


def new_agent(path: str | os.PathLike, size: int, model: str = "zero", encoder: str = DEFAULT_ENCODER, seed: int = 0,
              globals: bool = False, **hparams) -> Path:
    """A randomly initialised agent (policy and value heads) at ``path``, the same for a seed; an existing file is
    kept (a rerun resumes with it). ``globals``: the model takes the global inputs (komi, side to move:
    :mod:`gotk.encoders.global_inputs`)."""
    path = Path(path)
    if path.is_file():
        return path
    import torch

    from gotk.encoders import get_encoder
    from gotk.encoders import global_inputs as GI
    from gotk.nets.agent_file import save_agent
    from gotk.nets.networks import build_model, model_hparams

    try:
        enc = get_encoder(encoder, size)
        hp = model_hparams(model, **hparams)
        torch.manual_seed(seed)
        net = build_model(model, enc.num_planes, size, head="both", num_globals=GI.size() if globals else 0, **hp)
    except (KeyError, ValueError) as e:
        raise SelfPlayError(str(e).strip("'\"")) from None
    path.parent.mkdir(parents=True, exist_ok=True)
    save_agent(path, net, model, hp, enc.describe(), extra={"init": {"kind": "random", "seed": seed}})
    return path


def selfplay(opts: SelfPlayOptions, progress=None) -> dict:
    """Run (or resume) a self-play run; returns its report."""
    return SelfPlayRun(opts).execute(progress)


__all__ = ["GAME_KEYS", "SelfPlayOptions", "SelfPlayRun", "chunk_batch", "chunk_name", "chunks_dataset",
           "dataset_games", "play_chunk", "selfplay", "summarize", "write_chunk"]
