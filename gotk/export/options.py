"""What decides an export's output (:class:`ExportOptions`), the run's one error type, the formats."""

from __future__ import annotations

from dataclasses import dataclass, field

from gotk.errors import GotkError
from gotk.sources.archives import MAX_SGF_BYTES

FORMATS = ("leela-zero", "katago")


class ExportError(GotkError):
    """A run that cannot start or finish; ``exit_code`` is what the CLI exits with."""

    def __init__(self, reason: str, message: str, exit_code: int = 2) -> None:
        super().__init__(reason, message)
        self.message = message
        self.exit_code = exit_code


@dataclass
class ExportOptions:
    """Everything that decides the output bytes (``--workers``, ``--out``, ``--resume`` do not)."""

    format: str
    seed: int = 0
    games_per_chunk: int = 32  # leela-zero: OutputChunker::CHUNK_SIZE
    compress_level: int = 6  # leela-zero: gzip level (leelaz writes 9: smaller files, much slower to write)
    rows_per_file: int = 10000  # katago
    metadata: bool = False  # katago: add metadataInputNC (gotk.encoders.metadata_inputs)
    keep_time_wins: bool = False  # leela-zero: dump_supervised drops games won on time
    board_size: int = 19
    min_rank: str | None = None
    no_handicap: bool = False
    where: str | None = None  # gotk.shards.where expression over the games table (as gotk encode --where)
    bots: list[str] = field(default_factory=list)  # extra bot-name list files (gotk.sgf.metadata.BotList)
    split: str | None = None  # dataset input: export only the games of this split
    max_member_bytes: int = MAX_SGF_BYTES

    def validate(self) -> None:
        if self.format not in FORMATS:
            raise ExportError("bad_option", f"--format {self.format!r}: choose one of {', '.join(FORMATS)}")
        if self.games_per_chunk < 1 or self.rows_per_file < 1 or not 0 <= self.compress_level <= 9:
            raise ExportError("bad_option", "--games-per-chunk and --rows-per-file must be ≥ 1, --compress-level 0..9")
        if self.metadata and self.format != "katago":
            raise ExportError("bad_option", "--metadata is for --format katago (metadataInputNC)")
        if self.format == "leela-zero" and self.board_size != 19:
            raise ExportError("bad_option", "--format leela-zero is 19x19 only (Leela Zero's board size is fixed)")
        from gotk.jobs.splits import check_game_filters
        from gotk.shards.where import WhereError

        try:
            check_game_filters(self.min_rank, self.where, self.bots)
        except WhereError as e:
            raise ExportError("bad_where", str(e)) from e
        except ValueError as e:
            raise ExportError("bad_option", str(e)) from e

    def bot_patterns(self) -> tuple[str, ...]:
        """The bot-name patterns (default list + $GOTK_BOTS + ``bots`` files), resolved in the parent so
        every worker uses the same list (as ``gotk encode``)."""
        from gotk.jobs.splits import check_game_filters

        return check_game_filters(None, None, self.bots)


def katago_available() -> bool:
    """Whether the KataGo feature module (:mod:`gotk.export.katago`) is in this build."""
    try:
        from gotk.export import katago
    except ImportError:
        return False
    return hasattr(katago, "katago_game_rows") and hasattr(katago, "write_katago_npz")
