"""``gotk stats``: a report of a game collection (SGF sources or an encoded dataset's games table)."""

from gotk.stats.collect import dataset_games, source_games
from gotk.stats.report import build_report, format_report

__all__ = ["build_report", "dataset_games", "format_report", "source_games"]
