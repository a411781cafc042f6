"""Helpers shared by the benchmarks in ``bench/``: finding ``../shared/kgs``, timing, reporting.

Nothing here is part of the gotk package. Benchmarks run as plain scripts
(``python bench/replay.py``) or as modules (``python -m bench.replay``).
"""

from __future__ import annotations

import gc
import json
import os
import platform
import re
import sys
import time
import types
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

# --- locating the shared data ------------------------------------------------------------------


def shared_dir() -> Path:
    """``../shared`` beside the checkout (``GOTK_SHARED`` overrides)."""
    env = os.environ.get("GOTK_SHARED")
    if env:
        return Path(env)
    return REPO_ROOT.parent / "shared"


def kgs_dir() -> Path:
    """The folder of real KGS archives (``GOTK_KGS`` overrides ``../shared/kgs``)."""
    env = os.environ.get("GOTK_KGS")
    if env:
        return Path(env)
    return shared_dir() / "kgs"


def default_kgs_archives(folder: Path | None = None) -> list[Path]:
    """Every archive in ``folder`` (default :func:`kgs_dir`), one per game set: where the same
    archive is published as ``.tar.gz``, ``.tar.bz2`` and ``.zip`` (the 2017 months) only the
    first of those in :data:`gotk.sources.archives.ARCHIVE_SUFFIXES` order is kept. Sorted by name."""
    from gotk.sources.archives import archive_stem  # here: it imports the SGF reader (sgfmill)

    folder = folder or kgs_dir()
    best: dict[str, tuple[int, Path]] = {}
    for p in sorted(folder.iterdir()):
        if not p.is_file():
            continue
        found = archive_stem(p.name)
        if found is None:
            continue
        stem, rank = found
        if stem not in best or rank < best[stem][0]:
            best[stem] = (rank, p)
    return [best[s][1] for s in sorted(best)]


def require_kgs(paths: Sequence[str] | None) -> list[Path]:
    """The archives to use: ``paths`` when given, else :func:`default_kgs_archives`. Exits with a
    clear message (status 2) when the shared data is missing: a benchmark never skips silently."""
    if paths:
        out = [Path(p) for p in paths]
        missing = [str(p) for p in out if not p.exists()]
        if missing:
            sys.exit(f"error: no such file or folder: {', '.join(missing)}")
        return out
    folder = kgs_dir()
    if not folder.is_dir():
        sys.exit(f"error: the KGS sample is missing: {folder} does not exist (it is ../shared/kgs beside the "
                 "checkout; set GOTK_KGS or pass archive paths)")
    found = default_kgs_archives(folder)
    if not found:
        sys.exit(f"error: no archives in {folder}")
    return found


# --- timing ------------------------------------------------------------------------------------


@dataclass
class Timing:
    """Wall-clock and process CPU seconds of one timed run."""

    wall: float
    cpu: float


class Timer:
    """``with Timer() as t: ...`` → ``t.wall``, ``t.cpu`` seconds. The garbage collector is
    collected before and paused during the block (as :mod:`timeit` does), for every contender alike."""

    def __init__(self, pause_gc: bool = True) -> None:
        self.pause_gc = pause_gc
        self.wall = 0.0
        self.cpu = 0.0

    def __enter__(self) -> Timer:
        self._gc_was_enabled = gc.isenabled()
        if self.pause_gc:
            gc.collect()
            gc.disable()
        self._w0 = time.perf_counter()
        self._c0 = time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        self.cpu = time.process_time() - self._c0
        self.wall = time.perf_counter() - self._w0
        if self.pause_gc and self._gc_was_enabled:
            gc.enable()

    @property
    def timing(self) -> Timing:
        return Timing(self.wall, self.cpu)


def best_of(timings: Iterable[Timing]) -> Timing:
    """The repeat with the least wall-clock time (the least disturbed by other processes)."""
    return min(timings, key=lambda t: t.wall)


def rate(count: float, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("nan")


# --- machine description ----------------------------------------------------------------------


def cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or platform.machine()
    m = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return m.group(1).strip() if m else (platform.processor() or platform.machine())


def load_average() -> tuple[float, float, float] | None:
    try:
        return os.getloadavg()
    except OSError:
        return None


def python_loop_seconds(n: int = 10_000_000) -> float:
    """Seconds for ``n`` iterations of a pure-Python add loop (best of 3): how fast one core of this
    machine is right now, so runs taken at different times (a shared host speeds up and slows down)
    can be told apart."""
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        x = 0
        for i in range(n):
            x += i
        best = min(best, time.perf_counter() - t)
    return round(best, 3)


def machine_info() -> dict:
    """What a benchmark report says about where it ran."""
    import numpy

    info = {
        "cpu_model": cpu_model(),
        "nproc": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "numpy": numpy.__version__,
        "loadavg_at_start": load_average(),
        "date_utc": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "python_loop_s": python_loop_seconds(),
    }
    try:
        import numba

        info["numba"] = numba.__version__
    except ImportError:  # pragma: no cover
        pass
    return info


def pin_to_cpu(cpu: int) -> None:
    """Restrict this process to one CPU (Linux only)."""
    if not hasattr(os, "sched_setaffinity"):
        raise SystemExit("--pin-cpu needs Linux (os.sched_setaffinity)")
    os.sched_setaffinity(0, {cpu})


# --- output ------------------------------------------------------------------------------------


def format_table(rows: Sequence[dict], columns: Sequence[tuple[str, str]]) -> str:
    """An aligned text table (Markdown pipe syntax, so it pastes into BENCHMARKS.md as is).
    ``columns`` are ``(key, header)`` pairs; missing values print as empty cells; numbers right-aligned."""
    cells = [[h for _, h in columns]]
    numeric = [True] * len(columns)
    for row in rows:
        line = []
        for i, (key, _) in enumerate(columns):
            v = row.get(key, "")
            if not isinstance(v, int | float) or isinstance(v, bool):
                if v not in ("", None):
                    numeric[i] = False
            line.append(fmt_value(v))
        cells.append(line)
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]

    def render(line: list[str]) -> str:
        parts = [c.rjust(w) if numeric[i] else c.ljust(w) for i, (c, w) in enumerate(zip(line, widths, strict=True))]
        return "| " + " | ".join(parts) + " |"

    sep = "|" + "|".join(("-" * (w + 1) + ":") if numeric[i] else ("-" * (w + 2)) for i, w in enumerate(widths)) + "|"
    return "\n".join([render(cells[0]), sep, *(render(line) for line in cells[1:])])


def fmt_value(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if v != v:  # nan
            return "n/a"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        if abs(v) >= 10:
            return f"{v:.1f}"
        return f"{v:.3f}"
    return str(v)


def write_json(obj: dict, path: str | os.PathLike | None) -> str:
    """The JSON text of ``obj``; also written to ``path`` when given."""
    text = json.dumps(obj, indent=2, sort_keys=False, default=_json_default)
    if path:
        Path(path).write_text(text + "\n")
    return text


def _json_default(o):
    if isinstance(o, Path):
        return str(o)
    if hasattr(o, "item"):  # numpy scalars
        return o.item()
    if isinstance(o, set | frozenset | tuple):
        return list(o)
    raise TypeError(f"{type(o).__name__} is not JSON serialisable")


# --- peers -------------------------------------------------------------------------------------


def install_keras_stub() -> bool:
    """Put a do-nothing ``keras`` package in ``sys.modules`` when the real one is not importable.

    dlgo (installed with ``--no-deps`` for the benchmarks) imports keras at module level in some
    modules; the benchmarks only use its pure-Python board (``dlgo.goboard_fast``, ``dlgo.gotypes``),
    which never touches keras, and its MCTS agent, which imports ``h5py`` through ``dlgo.kerasutil``: both are
    stubbed. Returns True when a stub was installed."""
    try:
        import keras  # noqa: F401

        return False
    except ImportError:
        pass

    class _Stub(types.ModuleType):
        __path__: list[str] = []  # a package, so ``import keras.layers`` resolves to stubs too

        def __getattr__(self, name: str):
            if name.startswith("__"):
                raise AttributeError(name)
            sub = _Stub(f"{self.__name__}.{name}")
            sys.modules[sub.__name__] = sub
            setattr(self, name, sub)
            return sub

        def __call__(self, *args, **kwargs):  # used as a class or decorator: harmless no-op
            return self

    import importlib.abc
    import importlib.machinery

    class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, fullname, path, target=None):
            if fullname.split(".")[0] in ("keras", "h5py"):
                return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
            return None

        def create_module(self, spec):
            return _Stub(spec.name)

        def exec_module(self, module):
            return None

    sys.meta_path.append(_Finder())
    return True


def import_dlgo():
    """``(goboard_fast, gotypes)`` from dlgo, stubbing keras only if the plain import needs it."""
    try:
        from dlgo import goboard_fast, gotypes
    except ImportError as e:
        if "keras" not in str(e):
            raise
        install_keras_stub()
        from dlgo import goboard_fast, gotypes
    return goboard_fast, gotypes
