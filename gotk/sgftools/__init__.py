"""SGF reading, game records, metadata and coordinates."""

from gotk.sgftools.reader import iter_sgf, read_sgf, read_sgf_file
from gotk.sgftools.record import GameRecord, Result, parse_result

__all__ = ["GameRecord", "Result", "parse_result", "read_sgf", "read_sgf_file", "iter_sgf"]
