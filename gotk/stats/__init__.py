"""``gotk stats``: a report of a game collection (SGF sources or an encoded dataset's games table); ``gotk replay``
(:mod:`gotk.stats.replay`): every game of some sources replayed, with what was skipped and why."""

from gotk.stats.collect import dataset_games, source_games
from gotk.stats.report import build_report, format_report

__all__ = ["build_report", "dataset_games", "format_report", "source_games"]
