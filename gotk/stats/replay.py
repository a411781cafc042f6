"""Replay every game found under some paths and report counts: the ``gotk replay`` job."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from gotk.errors import GotkError
from gotk.game.replay import replay
from gotk.sgf.fast import path_counts
from gotk.sgf.metadata import BotList, normalise_record
from gotk.sgf.reader import iter_sgf
from gotk.shards.gameid import game_id
from gotk.shards.manifest import GAMES_SCHEMA
from gotk.shards.where import compile_where
from gotk.sources.archives import SgfSource, Skip, iter_sources


@dataclass
class ReplayReport:
    """Counts of a replay run. ``skipped`` maps a reason code to how many games (or inputs) it hit;
    ``partial`` counts games cut short by an illegal move whose earlier positions were replayed."""

    games_read: int = 0
    games_replayed: int = 0
    partial: int = 0
    moves: int = 0
    passes: int = 0
    skipped: Counter = field(default_factory=Counter)
    examples: dict = field(default_factory=dict)  # reason -> first place it happened
    filtered_where: Counter = field(default_factory=Counter)  # --where: the first failed term -> games
    metadata_warnings: Counter = field(default_factory=Counter)  # bad_rank, bad_komi … (games kept)
    seconds: float = 0.0
    sgf_reader: Counter = field(default_factory=Counter)  # inputs/games per SGF reader path (iter_sgf counts)

    @property
    def moves_per_second(self) -> float:
        return self.moves / self.seconds if self.seconds > 0 else 0.0

    def skip(self, reason: str, where: str, message: str = "") -> None:
        self.skipped[reason] += 1
        self.examples.setdefault(reason, f"{where}: {message}" if message else where)

    def as_dict(self) -> dict:
        return {
            "games_read": self.games_read,
            "games_replayed": self.games_replayed,
            "games_partial": self.partial,
            "moves": self.moves,
            "passes": self.passes,
            "skipped": dict(sorted(self.skipped.items())),
            "skip_examples": dict(sorted(self.examples.items())),
            "filtered_where": dict(sorted(self.filtered_where.items())),
            "metadata_warnings": dict(sorted(self.metadata_warnings.items())),
            "seconds": round(self.seconds, 4),
            "moves_per_second": round(self.moves_per_second, 1),
            "sgf_reader": path_counts(self.sgf_reader),
        }


#: Columns a ``gotk replay --where`` expression may name (known before a game is replayed).
REPLAY_WHERE_COLUMNS = [n for n in GAMES_SCHEMA.names if n not in ("split", "positions", "partial")]


def replay_paths(paths: Iterable[str], min_moves: int = 1, progress=None, where: str | None = None,
                 bots: BotList | None = None) -> ReplayReport:
    """Read, parse and replay every game under ``paths``; never raises for bad input. ``where``: a
    :mod:`gotk.shards.where` expression (games it rejects are skipped as ``filtered_where``, counted by the
    first failed term; WhereError before any work when it does not compile)."""
    w = compile_where(where, REPLAY_WHERE_COLUMNS) if where else None
    rep = ReplayReport()
    t0 = time.perf_counter()
    for item in iter_sources(paths):
        if isinstance(item, Skip):
            rep.skip(item.reason, item.where, item.message)
            continue
        assert isinstance(item, SgfSource)
        place = f"{item.archive}:{item.member}" if item.member else item.archive
        try:
            records = list(iter_sgf(item.data, item.archive, item.member, counts=rep.sgf_reader))
        except GotkError as e:
            rep.games_read += 1
            rep.skip(e.reason, place, str(e))
            continue
        for rec in records:
            rep.games_read += 1
            if isinstance(rec, GotkError):
                rep.skip(rec.reason, place, str(rec))
                continue
            meta = normalise_record(rec, bots)
            if rec.warnings:  # the reader's fallbacks (charset_mismatch) join the metadata warnings
                meta["warnings"] = ",".join(sorted({*(meta["warnings"] or "").split(","), *rec.warnings} - {""}))
                rep.examples.setdefault(f"warning:{rec.warnings[0]}", place)
            if meta["warnings"]:
                rep.metadata_warnings.update(meta["warnings"].split(","))
            if w is not None:
                row = {"game_id": game_id(rec), "archive": item.archive, "member": item.member, "black": rec.black,
                       "white": rec.white, "handicap": rec.handicap, "result": str(rec.result),
                       "winner": rec.result.winner, "num_moves": rec.num_moves, **meta}
                if (why := w.reason(row)) is not None:
                    rep.skip("filtered_where", place, why)
                    rep.filtered_where[why] += 1
                    continue
            try:
                out = replay(rec, min_moves=min_moves, keep_history=False)
            except GotkError as e:
                rep.skip(e.reason, place, str(e))
                continue
            rep.moves += out.moves_played
            rep.passes += int((rec.points[: out.moves_played] == rec.size * rec.size).sum())
            if out.error is None:
                rep.games_replayed += 1
            else:
                rep.partial += 1
                rep.skip(out.error.reason, place, str(out.error))
        if progress is not None:
            progress(rep)
    rep.seconds = time.perf_counter() - t0
    return rep
