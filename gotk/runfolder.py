"""A resumable run's output folder, one rule for ``gotk encode``, ``gotk export`` and ``gotk selfplay``.

A run writes what it is (its record: sources, options, agent...) into the folder before any work, and a small
done-record beside each finished piece of work (a shard, an exported file, a self-play chunk), written last and
atomically: its presence says the piece is finished. A rerun into the same folder (``--resume``; self-play
always) must have the same record; it then keeps every finished piece and redoes the rest. A folder that holds
something else, or another run, is refused before any work starts.

:func:`prepare_run_folder` owns those checks, :func:`write_done_record` / :func:`read_done_record` the
done-records, and :func:`record_differences` the message that says how two records differ. Local folders and
fsspec URLs alike (:mod:`gotk.storage`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from gotk.errors import GotkError
from gotk.storage import Storage, join


class RunFolderError(GotkError):
    """An output folder a run cannot write into: ``out_not_dir``, ``out_not_empty``, ``out_not_resumable`` or
    ``resume_mismatch`` (then ``differences`` says how the records differ)."""

    def __init__(self, reason: str, message: str, differences: list[str] | None = None) -> None:
        super().__init__(reason, message)
        self.message = message
        self.differences = differences or []


@dataclass
class RunFolder:
    """What :func:`prepare_run_folder` found: ``finished`` when a finished run with the same record is there
    (nothing to do), ``damaged`` the files of a finished run its check found damaged (the run is redone)."""

    finished: bool = False
    damaged: list = field(default_factory=list)


def _plain(record: dict) -> dict:
    """``record`` as it reads back from JSON (tuples become lists...), so that records compare by value."""
    return json.loads(json.dumps(record))


def without_defaults(defaults: dict[str, object]) -> Callable[[dict], dict]:
    """A ``comparable`` for :func:`prepare_run_folder`: the record with each option in ``defaults`` (a name under
    ``options``, and its default) left out while it has that default, so that a run recorded before the option
    existed (which ran as with its default) and a run now at the default compare equal."""

    def comparable(record: dict) -> dict:
        opts = record.get("options")
        if not isinstance(opts, dict):
            return record
        kept = {k: v for k, v in opts.items() if not (k in defaults and v == defaults[k])}
        return {**record, "options": kept}

    return comparable


def prepare_run_folder(out: str | os.PathLike, record: dict, resume: bool, *, run_file: str,
                       finished_file: str | None = None, finished_keys: Iterable[str] = (),
                       comparable: Callable[[dict], dict] = _plain,
                       verify: Callable[[dict], list] | None = None, ignore: Iterable[str] = (),
                       command: str = "gotk run", noun: str = "run", st: Storage | None = None) -> RunFolder:
    """Check the output folder ``out`` of a run described by ``record``, create it, and write ``record`` to
    ``run_file`` (a path relative to ``out``). Raises :class:`RunFolderError` when the run may not write there.

    An empty or missing folder is a new run. A folder holding anything but the names in ``ignore`` needs
    ``resume``; it must then hold the same run: ``run_file`` (an interrupted run), or ``finished_file`` (the
    finished run's marker, whose ``finished_keys`` make its record), compared through ``comparable``. A
    finished run with the same record is ``finished`` when ``verify`` (given the marker, returns the problems
    found) finds none; a damaged one is listed in ``damaged``, its marker removed, and the run redone. Files of a
    killed run (``*.tmp``) are removed. ``command`` and ``noun`` name the run in the messages."""
    st = st if st is not None else Storage.for_url(out)
    ignore = set(ignore)
    found = RunFolder()
    if st.exists(out) and not st.isdir(out):
        raise RunFolderError("out_not_dir", f"--out {out} exists and is not a folder")
    nonempty = st.isdir(out) and any(name not in ignore for name, _ in st.listdir(out))
    if nonempty and not resume:
        raise RunFolderError("out_not_empty", f"output folder {out} is not empty: choose another --out, empty it, "
                             f"or pass --resume to finish an interrupted {noun} with the same sources and options")
    run_path = join(out, run_file)
    if nonempty:
        current = comparable(_plain(record))
        shown = run_path
        if st.isfile(run_path):
            previous = comparable(json.loads(st.read_text(run_path)))
        elif finished_file is not None and st.isfile(join(out, finished_file)):
            shown = finished_path = join(out, finished_file)
            marker = json.loads(st.read_text(finished_path))
            previous = comparable({k: marker.get(k) for k in finished_keys})
            if previous == current:
                problems = verify(marker) if verify is not None else []
                if not problems:
                    found.finished = True
                    return found
                found.damaged.extend(problems)
                st.rm(finished_path)  # redo the run: the same sources and options give the same bytes
        else:
            marker_name = f" or {finished_file}" if finished_file else ""
            raise RunFolderError("out_not_resumable", f"{out} holds no interrupted {command} (no {run_file}"
                                 f"{marker_name}); refusing to write into it")
        if previous != current:
            why = record_differences(previous, current)
            raise RunFolderError("resume_mismatch", f"--resume: the sources or options differ from the {noun} in "
                                 f"{out}: {'; '.join(why)} (see {shown}); rerun with the same ones or use a new --out",
                                 why)
        for leftover in st.find(out):  # temp files of the killed run: never part of the output
            if str(leftover).endswith(".tmp"):
                st.rm(leftover)
    st.makedirs(os.path.dirname(str(run_path)))
    st.write_text_atomic(run_path, json.dumps(record, indent=2) + "\n")
    return found


def write_done_record(path: str | os.PathLike, record: dict, st: Storage | None = None) -> None:
    """Mark one piece of work finished: ``record`` (JSON, keys sorted) written atomically to ``path``, after
    the piece's own files are in place."""
    st = st if st is not None else Storage.for_url(path)
    st.write_text_atomic(path, json.dumps(record, sort_keys=True) + "\n")


def read_done_record(path: str | os.PathLike, st: Storage | None = None, digest: str | None = None) -> dict | None:
    """The done-record at ``path``, or None when there is none, it does not read, or (with ``digest``) it was
    written for another plan of the work (its ``digest`` differs). The caller checks the files it names."""
    st = st if st is not None else Storage.for_url(path)
    try:
        rec = json.loads(st.read_text(path))
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or (digest is not None and rec.get("digest") != digest):
        return None
    return rec


def record_differences(old: object, new: object, limit: int = 3) -> list[str]:
    """Where two JSON records of a run differ (what ``--resume`` compares: options, encoder, sources), as at most
    ``limit`` phrases such as ``options.encoder is 'simple' in the run, 'sevenplane' now``: a changed value,
    a key only one of them has, or a list whose length changed (``sources``: 2 entries in the run, 3 now)."""
    out: list[str] = []

    def show(v: object) -> str:
        text = json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else repr(v)
        return text if len(text) <= 60 else text[:57] + "..."

    def walk(a: object, b: object, path: str) -> None:
        if len(out) >= limit or a == b:
            return
        name = path or "the record"
        if isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(set(a) | set(b), key=str):
                sub = f"{path}.{k}" if path else str(k)
                if k not in a:
                    out.append(f"{sub} is {show(b[k])} now, not set in the run")
                elif k not in b:
                    out.append(f"{sub} is {show(a[k])} in the run, not set now")
                else:
                    walk(a[k], b[k], sub)
                if len(out) >= limit:
                    return
        elif isinstance(a, list) and isinstance(b, list) and len(a) != len(b):
            out.append(f"{name}: {len(a)} entries in the run, {len(b)} now")
        elif isinstance(a, list) and isinstance(b, list):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                walk(x, y, f"{path}[{i}]")
        else:
            out.append(f"{name} is {show(a)} in the run, {show(b)} now")

    walk(old, new, "")
    return out
