"""PNG charts of a ``gotk stats`` report (matplotlib, headless Agg backend): rendered in memory
(:func:`render_charts`, also what ``gotk serve`` shows on a dataset's page) or written atomically
(:func:`write_plots`)."""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path

from gotk.storage import Storage

#: The charts of a report, in the order they are drawn (file names without ``.png``).
CHARTS = ("years", "ranks", "rank_matrix", "handicap_komi", "results", "length")
_LOCK = threading.Lock()  # pyplot's figure manager is not thread-safe (gotk serve renders in a thread pool)


def _bar(ax, d: dict, title: str, xlabel: str, rotate: bool = False) -> None:
    keys = list(d)
    ax.bar(range(len(keys)), [d[k] for k in keys], color="#4878a8")
    ax.set_xticks(range(len(keys)), keys, rotation=60 if rotate else 0, ha="right" if rotate else "center",
                  fontsize=8)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("games")


def write_plots(report: dict, out_dir: str | os.PathLike, dpi: int = 100) -> list[str]:
    """Write the :data:`CHARTS` as ``NAME.png`` into ``out_dir`` (see :func:`render_charts`); returns the
    file names written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    st = Storage.for_url(out)
    written: list[str] = []
    for name, data in render_charts(report, dpi).items():
        st.write_bytes_atomic(out / f"{name}.png", data)
        written.append(f"{name}.png")
    return written


def render_charts(report: dict, dpi: int = 100) -> dict[str, bytes]:
    """The :data:`CHARTS` of ``report`` as PNG bytes: ``years`` (games by year, stacked by source),
    ``ranks``, ``rank_matrix`` (black × white rank bands), ``handicap_komi``, ``results`` (end kinds and
    winners), ``length``."""
    with _LOCK:
        return _render(report, dpi)


def _render(report: dict, dpi: int) -> dict[str, bytes]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    written: dict[str, bytes] = {}

    def save(fig, name: str) -> None:
        buf = io.BytesIO()
        fig.tight_layout()
        fig.savefig(buf, format="png", dpi=dpi)
        plt.close(fig)
        written[name.removesuffix(".png")] = buf.getvalue()

    games = report["games"]
    fig, ax = plt.subplots(figsize=(8, 4))
    years = list(report["by_year_source"])
    bottom = np.zeros(len(years))
    for src in report["by_source"]:
        vals = np.array([report["by_year_source"][y].get(src, 0) for y in years], dtype=float)
        ax.bar(years, vals, bottom=bottom, label=src)
        bottom += vals
    ax.set_title(f"games by year and source ({games:,} games)")
    ax.set_xlabel("year")
    ax.set_ylabel("games")
    ax.tick_params(axis="x", labelrotation=60, labelsize=8)
    ax.legend(fontsize=8)
    save(fig, "years.png")

    fig, ax = plt.subplots(figsize=(10, 4))
    _bar(ax, report["ranks"], "rank of every player (black and white)", "rank", rotate=True)
    ax.set_ylabel("players")
    save(fig, "ranks.png")

    m = report["rank_matrix"]
    bands, counts = m["bands"], np.array(m["counts"], dtype=float)
    used = [i for i in range(len(bands)) if counts[i].any() or counts[:, i].any()] or list(range(len(bands)))
    sub = counts[np.ix_(used, used)]
    fig, ax = plt.subplots(figsize=(6.5, 5.5))
    im = ax.imshow(sub, cmap="viridis", origin="lower")
    ax.set_xticks(range(len(used)), [bands[i] for i in used], rotation=45)
    ax.set_yticks(range(len(used)), [bands[i] for i in used])
    for (i, j), v in np.ndenumerate(sub):
        if v:
            ax.text(j, i, f"{int(v)}", ha="center", va="center", fontsize=7,
                    color="white" if v < sub.max() / 2 else "black")
    ax.set_xlabel("white rank")
    ax.set_ylabel("black rank")
    ax.set_title("games: black rank x white rank")
    fig.colorbar(im, ax=ax, label="games")
    save(fig, "rank_matrix.png")

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    _bar(a1, report["handicap"], "handicap", "handicap stones")
    _bar(a2, report["komi"], "komi (normalised)", "komi", rotate=True)
    save(fig, "handicap_komi.png")

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4), gridspec_kw={"width_ratios": [3, 2]})
    _bar(a1, report["results"], "how games ended", "end kind")
    _bar(a2, report["winner"], "winner", "")
    save(fig, "results.png")

    fig, ax = plt.subplots(figsize=(8, 4))
    ln = report["length"]
    _bar(ax, dict(zip(ln["bins"], ln["counts"], strict=True)),
         f"game length (mean {ln['mean']}, median {ln['median']} moves)", "main-line moves")
    save(fig, "length.png")
    return written
