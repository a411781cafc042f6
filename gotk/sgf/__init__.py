"""SGF: reading and writing game records (coordinates live in gotk.coords)."""

from gotk.sgf.reader import iter_sgf, read_sgf, read_sgf_file
from gotk.sgf.record import GameRecord, Result, parse_result

__all__ = ["GameRecord", "Result", "parse_result", "read_sgf", "read_sgf_file", "iter_sgf"]
