"""One stored position of a dataset, as ``gotk show`` prints it: the row read by number
(:func:`gotk.shards.position.read_row`), its planes decoded, the stones rebuilt from them by plane name
(:func:`gotk.encoders.stones.stones_from_planes`), the move played and a chosen point marked on a text board,
and the planes set at a point listed."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pyarrow.parquet as pq

from gotk import coords
from gotk.encoders.stones import stones_from_planes
from gotk.game.render import render_board
from gotk.shards.format import PAGE_CHECKS, decode_features
from gotk.shards.manifest import load_manifest
from gotk.storage import Storage, join

#: What marks a point on the text board: the move played, and the point asked about (``--point``).
MOVE_MARK = "*"
POINT_MARK = "+"


@dataclass(frozen=True)
class StoredPosition:
    """Row ``row`` of split ``split``: its columns (``game_id``, ``move_number``, ``to_play``, ``label``,
    ``value``, as read), its planes ``(C, H, W)`` decoded, and the dataset's encoder description."""

    split: str
    row: int
    columns: dict
    planes: np.ndarray
    encoder: dict

    @property
    def size(self) -> int:
        return int(self.encoder["board_size"])

    @property
    def label(self) -> int:
        """The move played, as a flat point (``size * size``: pass)."""
        return int(self.columns["label"])

    @property
    def to_play(self) -> int:
        return int(self.columns["to_play"])

    def stones(self) -> np.ndarray | None:
        """The flat board (0 empty, 1 black, 2 white) rebuilt from the planes; None when the encoder has no
        plane that names stones."""
        return stones_from_planes(self.planes, self.encoder["plane_names"], self.to_play)

    def point(self, vertex: str | None) -> int | None:
        """The point a GTP vertex (``D4``) names on this board (ValueError for a bad one); without one, the move
        played (None for a pass)."""
        if vertex:
            return coords.from_gtp(vertex, self.size)
        return self.label if self.label < self.size * self.size else None

    def marks(self, point: int | None) -> dict[int, str]:
        """The text board's marks: :data:`MOVE_MARK` on the move played, :data:`POINT_MARK` on ``point`` when it
        is another point of the board."""
        n = self.size * self.size
        marks = {self.label: MOVE_MARK} if self.label < n else {}
        if point is not None and point < n and point != self.label:
            marks[point] = POINT_MARK
        return marks

    def planes_at(self, point: int) -> list[str]:
        """The planes set at ``point``: their names (``name=value`` for ``int8`` encoders)."""
        r, c = divmod(point, self.size)
        return [f"{name}={int(v)}" if self.planes.dtype == np.int8 else name
                for name, v in zip(self.encoder["plane_names"], self.planes[:, r, c], strict=True) if v != 0]

    def lines(self, point: int | None) -> list[str]:
        """The text ``gotk show`` prints: a summary line, the board with its :meth:`marks` (stones as the planes
        give them), and the planes set at ``point`` (a point of the board; else that line is left out)."""
        n = self.size * self.size
        move = "pass" if self.label == n else coords.to_gtp(self.label, self.size)
        c = self.columns
        out = [f"{self.split} row {self.row}: game {c['game_id']}  move {c['move_number']}  "
               f"{'Black' if self.to_play > 0 else 'White'} to play  label {move} ({self.label})  "
               f"value {c['value']:+d}"]
        board = self.stones()
        out.append(render_board(board if board is not None else np.zeros(n, dtype=np.int8), self.size,
                                self.marks(point)))
        if board is None:
            out.append(f"(encoder {self.encoder['name']} has no stone planes: the board shows only the marks)")
        if point is not None and point < n:
            active = self.planes_at(point)
            out.append(f"planes set at {coords.to_gtp(point, self.size)}: {', '.join(active) if active else '(none)'}")
        return out


def read_row(folder: str | os.PathLike, split: str, row: int, storage_options: dict | None = None):
    """``(table_of_one_row, manifest)`` for row ``row`` (0-based over the split's shards in order);
    ``folder`` may be an fsspec URL."""
    m = load_manifest(folder, storage_options)
    st = Storage.for_url(folder, storage_options)
    if split not in m["splits"]:
        raise ValueError(f"no split {split!r}; the dataset has {', '.join(m['splits'])}")
    s = m["splits"][split]
    if not 0 <= row < s["rows"]:
        raise ValueError(f"row {row} outside 0..{s['rows'] - 1} of split {split!r}")
    for shard in s["shards"]:
        if row < shard["rows"]:
            pf = pq.ParquetFile(st.open_input(join(folder, shard["file"])), **PAGE_CHECKS)
            for g in range(pf.metadata.num_row_groups):
                n = pf.metadata.row_group(g).num_rows
                if row < n:
                    return pf.read_row_group(g).slice(row, 1), m
                row -= n
        row -= shard["rows"]
    raise ValueError(f"row {row} not found: the manifest and the shard files disagree")


def read_position(folder: str | os.PathLike, split: str, row: int,
                  storage_options: dict | None = None) -> StoredPosition:
    """Row ``row`` (0-based over the split's shards) of the dataset at ``folder`` (a path or an fsspec URL).
    ValueError for a split or row the dataset does not have; OSError / StorageError as reading raises them."""
    table, manifest = read_row(folder, split, row, storage_options)
    return StoredPosition(split=split, row=row, columns=table.to_pylist()[0], planes=decode_features(table)[0],
                          encoder=manifest["encoder"])
