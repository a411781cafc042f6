"""What an export reads from a ``gotk encode`` dataset: its source archives and its games."""

from __future__ import annotations

import json
import os
from pathlib import Path

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
