"""What an export reads from a dataset folder: a ``gotk encode`` dataset's source archives and games, or a
``gotk selfplay`` folder's SGF games and the search policies of its shard rows."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from gotk.export.options import ExportError
from gotk.hashing import sha256_file
from gotk.shards import manifest as M


def is_dataset(path: str | os.PathLike) -> bool:
    """A folder made by ``gotk encode`` (it holds a ``manifest.json`` of format ``gotk-shards``)."""
    p = Path(path)
    if not (p / M.MANIFEST_NAME).is_file():
        return False
    try:
        return json.loads((p / M.MANIFEST_NAME).read_text()).get("format") == M.FORMAT
    except (OSError, ValueError):
        return False


def dataset_sources(folder: str | os.PathLike, split: str | None) -> tuple[list[Path], set[str], int]:
    """The source archives of a ``gotk encode`` dataset and the ids of its games (of ``split`` if
    given): ``(files, game_ids, board_size)``. The manifest lists each archive with its path and
    sha256, ``games.parquet`` each kept game's id; the archives must still be there, unchanged.
    Loose ``.sgf`` files are listed only as a count in the manifest, so such a dataset cannot be
    exported: pass the files themselves."""
    import pyarrow.parquet as pq

    folder = Path(folder)
    try:
        m = M.load_manifest(folder)
    except ValueError as e:
        raise ExportError("bad_dataset", str(e)) from e
    files: list[Path] = []
    for src in m.get("sources", []):
        if src.get("path") == "(loose .sgf files)":
            raise ExportError("dataset_sources_unknown", f"{folder} was encoded from {src.get('files')} loose .sgf "
                              "files, whose paths the manifest does not record: export those files or their "
                              "folder directly (gotk export FOLDER ...)")
        candidates = [Path(src["path"]), folder / src["path"], folder.parent / src["path"]]
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            raise ExportError("missing_source", f"{folder}: its source {src['path']} is not there any more; export "
                              "needs the original archives (pass them directly)")
        if found.stat().st_size != src.get("bytes") or sha256_file(found) != src.get("sha256"):
            raise ExportError("source_changed", f"{found} differs from the archive {folder} was encoded from "
                              "(size or sha256)")
        files.append(found)
    splits = list(m.get("splits", {}))
    if split is not None and split not in splits:
        raise ExportError("bad_option", f"--split {split!r}: {folder} has splits {', '.join(splits)}")
    t = pq.read_table(folder / M.GAMES_NAME, columns=["game_id", "split"]).to_pydict()
    ids = {g for g, s in zip(t["game_id"], t["split"], strict=True) if split is None or s == split}
    return files, ids, int(m.get("options", {}).get("board_size", 19))


# --- a self-play folder: its SGF games and its shards' search policies ----------------------------


def is_selfplay(path: str | os.PathLike) -> bool:
    """A dataset folder whose shards carry the self-play ``policy`` target and whose games are in
    ``sgf/*.sgf`` (what ``gotk selfplay`` writes: manifest ``generator`` set, ``sources`` empty)."""
    p = Path(path)
    if not is_dataset(p) or not (p / "sgf").is_dir():
        return False
    m = json.loads((p / M.MANIFEST_NAME).read_text())
    return bool(m.get("generator")) and "policy" in (m.get("targets") or [])


def selfplay_sources(folder: str | os.PathLike, split: str | None) -> tuple[list[Path], set[str], int]:
    """The game files of a self-play folder (``sgf/*.sgf``, sorted) and the ids of its games (of ``split``
    if given): ``(files, game_ids, board_size)``, as :func:`dataset_sources`."""
    import pyarrow.parquet as pq

    folder = Path(folder)
    try:
        m = M.load_manifest(folder)
    except ValueError as e:
        raise ExportError("bad_dataset", str(e)) from e
    splits = list(m.get("splits", {}))
    if split is not None and split not in splits:
        raise ExportError("bad_option", f"--split {split!r}: {folder} has splits {', '.join(splits)}")
    files = sorted((folder / "sgf").glob("*.sgf"))
    t = pq.read_table(folder / M.GAMES_NAME, columns=["game_id", "split"]).to_pydict()
    ids = {g for g, s in zip(t["game_id"], t["split"], strict=True) if split is None or s == split}
    return files, ids, int(m.get("encoder", {}).get("board_size", 19))


def selfplay_shards(folder: str | os.PathLike) -> list[dict]:
    """The shards of a self-play folder as its manifest lists them (``file`` relative to the folder,
    ``rows``, ``bytes``, ``sha256``), every split, in manifest order."""
    m = M.load_manifest(folder)
    return [dict(s) for sp in m.get("splits", {}).values() for s in sp.get("shards", [])]


class PolicyRows:
    """The search policies of a self-play folder's shard rows, by game: :meth:`game` gives a game's
    ``(move_numbers, labels, policy)`` (ascending move numbers, the moves played there; ``policy`` float16
    ``(n, size*size + 1)`` in gotk's flat order, exactly the shard's bytes). The index (``game_id``,
    ``move_number``, ``label`` of every row) is read once; each shard's ``policy`` column is read when first
    needed, a few shards kept at a time. A reader of the shards' raw bytes, so that the export needs nothing
    from the loader."""

    KEEP = 8

    def __init__(self, folder: str | os.PathLike) -> None:
        import pyarrow.parquet as pq

        self.folder = Path(folder)
        self.files = [self.folder / s["file"] for s in selfplay_shards(folder)]
        rows: dict[str, list[tuple[int, int, int, int]]] = {}
        for f, path in enumerate(self.files):
            t = pq.read_table(path, columns=["game_id", "move_number", "label"]).to_pydict()
            for r, (gid, mv, lab) in enumerate(zip(t["game_id"], t["move_number"], t["label"], strict=True)):
                rows.setdefault(gid, []).append((int(mv), int(lab), f, r))
        self.rows = {g: sorted(v) for g, v in rows.items()}
        self._policy: dict[int, np.ndarray] = {}

    def _shard_policy(self, f: int) -> np.ndarray:
        got = self._policy.get(f)
        if got is None:
            import pyarrow.parquet as pq

            col = pq.read_table(self.files[f], columns=["policy"]).column("policy").combine_chunks()
            width = col.type.byte_width
            raw = np.frombuffer(col.buffers()[1], np.uint8, count=(col.offset + len(col)) * width)
            got = raw[col.offset * width:].reshape(len(col), width).view("<f2")
            if len(self._policy) >= self.KEEP:
                self._policy.pop(next(iter(self._policy)))
            self._policy[f] = got
        return got

    def game(self, game_id: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows = self.rows.get(game_id, [])
        moves = np.array([mv for mv, _, _, _ in rows], dtype=np.int64)
        labels = np.array([lab for _, lab, _, _ in rows], dtype=np.int64)
        if not rows:
            return moves, labels, np.empty((0, 0), dtype="<f2")
        return moves, labels, np.stack([self._shard_policy(f)[r] for _, _, f, r in rows])


_POLICY_ROWS: dict[str, PolicyRows] = {}


def policy_rows(folder: str | os.PathLike) -> PolicyRows:
    """:class:`PolicyRows` of ``folder``, built once per process (export work units call it for every file)
    and again when the folder's manifest changes (a resumed self-play run adds shards)."""
    path = Path(folder).absolute()
    st = (path / M.MANIFEST_NAME).stat()
    key = f"{path}:{st.st_mtime_ns}:{st.st_size}"
    if key not in _POLICY_ROWS:
        _POLICY_ROWS.clear()
        _POLICY_ROWS[key] = PolicyRows(path)
    return _POLICY_ROWS[key]
