"""One board drawing for the web app and ``gotk show --svg/--png``: a :class:`Board` becomes a list of
drawing primitives, written either as SVG (the browser shows exactly this SVG) or onto a matplotlib
figure (PNG). Points follow :mod:`gotk.coords` (flat ``row * size + col``, row 0 at the top).

SVG elements carry ``data-*`` attributes (``data-point`` in GTP notation, ``data-plane``,
``data-rank``, ``data-prob``) so that the page and its browser tests read what is drawn, not
what was meant to be drawn.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

import numpy as np

from gotk import coords

CELL = 32
MARGIN = 44  # room for the coordinate labels outside the edge stones (a stone reaches CELL / 2 past the edge)
LABEL_INSET = 14  # the labels' centre, from the drawing's edge
LEGEND_ROW = 22  # the height of one row of the overlay legend under the board
NUMBER_SHIFT = 5.0  # on a numbered stone, the marks sit this far below the centre (the number above them)
# colour-blind-friendly palette (Okabe-Ito), one colour per overlaid plane in toggle order
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442", "#000000")
BOARD_COLOUR = "#dcb35c"


@dataclass
class Board:
    """What to draw. ``stones``: flat int array (0 empty, 1 black, 2 white); ``numbers``: move number
    shown on a stone; ``next_move``: the recorded next move (ringed); ``last_move``: a dot;
    ``overlays``: ``(plane name, flat values)`` drawn as marks where the value is not 0: a square centred
    on the point, one colour per plane (:data:`PALETTE`), with a black outline inside a white halo so that
    it reads on a black stone, a white stone and the empty board alike; several planes share a point as a
    small grid of such squares, each plane always in the same cell; on a stone with a move number the grid
    is smaller and a little lower, and the number above it (both stay readable); a legend (colour → plane)
    is drawn under the board;
    ``heat``: flat probabilities (``size*size`` or ``+1`` with pass) drawn as a red heat map with
    the ``top`` most probable moves labelled (ties in board order), or, where ``ranking`` is given (flat moves, best
    first, as a search's table lists them), the first ``top`` of ``ranking`` with heat > 0, so that the map's labels
    and the table agree on ties; ``clickable``: an invisible target per point."""

    size: int
    stones: np.ndarray | None = None
    numbers: dict[int, int] = field(default_factory=dict)
    next_move: int | None = None
    last_move: int | None = None
    overlays: list[tuple[str, np.ndarray]] = field(default_factory=list)
    heat: np.ndarray | None = None
    top: int = 5
    ranking: list[int] | None = None
    clickable: bool = False


def _xy(point: int, size: int) -> tuple[float, float]:
    row, col = divmod(point, size)
    return MARGIN + col * CELL, MARGIN + row * CELL


def star_points(size: int) -> list[int]:
    """Hoshi: the 4-4 points (3-3 below 13x13), the centre of odd boards, the side points from 15x15."""
    if size < 7:
        return []
    low = 3 if size >= 13 else 2
    far = size - 1 - low
    pts = [r * size + c for r in (low, far) for c in (low, far)]
    if size % 2 == 1:
        mid = size // 2
        pts.append(mid * size + mid)
        if size >= 15:
            pts += [low * size + mid, far * size + mid, mid * size + low, mid * size + far]
    return sorted(pts)


def canvas(b: Board) -> tuple[int, int]:
    """Width and height of the drawing in pixels: the board, plus the legend's rows when planes are overlaid."""
    side = (b.size - 1) * CELL + 2 * MARGIN
    return side, side + LEGEND_ROW * len(_legend_rows(b, side)) + (6 if b.overlays else 0)


def _legend_rows(b: Board, width: int) -> list[list[tuple[int, str]]]:
    """The overlay legend's entries ``(plane index, name)`` in rows that fit ``width`` (text width estimated)."""
    rows: list[list[tuple[int, str]]] = []
    used = width
    for i, (name, _values) in enumerate(b.overlays):
        need = 26 + 7 * len(name)
        if used + need > width - 8:
            rows.append([])
            used = 8
        rows[-1].append((i, name))
        used += need
    return rows


def _mark_cells(k: int) -> tuple[int, float]:
    """For ``k`` overlaid planes: the grid's columns and the side of one mark (the grid stays inside a stone)."""
    cols = 1 if k == 1 else 2 if k <= 4 else 3
    return cols, {1: 14.0, 2: 10.0, 3: 7.0}[cols]


def _mark(x: float, y: float, side: float, colour: str, attrs: dict) -> list[tuple]:
    """A plane's mark centred on ``x, y``: a white halo, then the coloured square with a black outline."""
    h = side / 2
    return [("rect", x - h - 1.5, y - h - 1.5, side + 3, side + 3, "#fff", 1.0, {"class": "mark-halo"}),
            ("rect", x - h, y - h, side, side, colour, 1.0, {**attrs, "stroke": "#000", "stroke-width": "1"})]


def top_moves(probs: np.ndarray, size: int, n: int) -> list[tuple[int, float]]:
    """The ``n`` most probable moves with probability > 0 (stable order on ties: lower index first)."""
    order = np.argsort(-np.asarray(probs, dtype=np.float64), kind="stable")[:n]
    return [(int(p), float(probs[p])) for p in order if probs[p] > 0]


def primitives(b: Board) -> list[tuple]:
    """The drawing as primitives (pixel units, y down):
    ``("rect", x, y, w, h, fill, opacity, attrs)``, ``("line", x1, y1, x2, y2, colour, width)``,
    ``("circle", cx, cy, r, fill, stroke, opacity, attrs)``, ``("text", x, y, text, px, fill, attrs)``
    (text centred on ``x, y``)."""
    s = b.size
    span = (s - 1) * CELL
    width, height = canvas(b)
    out: list[tuple] = [("rect", 0, 0, width, height, BOARD_COLOUR, 1.0, {})]
    for i in range(s):
        out.append(("line", MARGIN, MARGIN + i * CELL, MARGIN + span, MARGIN + i * CELL, "#000", 1.0))
        out.append(("line", MARGIN + i * CELL, MARGIN, MARGIN + i * CELL, MARGIN + span, "#000", 1.0))
    for p in star_points(s):
        x, y = _xy(p, s)
        out.append(("circle", x, y, 3.2, "#000", None, 1.0, {}))
    for i in range(s):
        letter = coords.GTP_COLUMNS[i]
        x = MARGIN + i * CELL
        far = span + 2 * MARGIN - LABEL_INSET
        out.append(("text", x, LABEL_INSET, letter, 12, "#333", {"class": "coord"}))
        out.append(("text", x, far, letter, 12, "#333", {"class": "coord"}))
        y = MARGIN + i * CELL
        out.append(("text", LABEL_INSET, y, str(s - i), 12, "#333", {"class": "coord"}))
        out.append(("text", far, y, str(s - i), 12, "#333", {"class": "coord"}))
    n = s * s
    if b.heat is not None:
        probs = np.asarray(b.heat, dtype=np.float64)[:n]
        peak = float(probs.max()) if probs.size and probs.max() > 0 else 1.0
        for p in np.flatnonzero(probs > 0):
            x, y = _xy(int(p), s)
            alpha = 0.12 + 0.78 * float(np.sqrt(probs[p] / peak))
            out.append(("rect", x - CELL / 2 + 1, y - CELL / 2 + 1, CELL - 2, CELL - 2, "#e8112d", round(alpha, 3),
                        {"class": "heat", "data-point": coords.to_gtp(int(p), s), "data-prob": f"{probs[p]:.6f}"}))
    if b.stones is not None:
        for p in np.flatnonzero(np.asarray(b.stones) != 0):
            p = int(p)
            x, y = _xy(p, s)
            black = int(b.stones[p]) == 1
            out.append(("circle", x, y, CELL / 2 - 1, "#111" if black else "#f8f8f8", "#000", 1.0,
                        {"class": "stone", "data-point": coords.to_gtp(p, s), "data-color": "B" if black else "W"}))
    k = len(b.overlays)
    marked: set[int] = set()  # numbered stones with a mark: their number moves up, the marks down and smaller
    numbered = {p for p in b.numbers if b.stones is not None and b.stones[p] != 0}
    if k:
        cols, side = _mark_cells(k)
        rows = -(-k // cols)
        pitch = side + 4
        for i, (name, values) in enumerate(b.overlays):
            flat = np.asarray(values).reshape(-1)
            colour = PALETTE[i % len(PALETTE)]
            r, c = divmod(i, cols)
            dx, dy = (c - (cols - 1) / 2) * pitch, (r - (rows - 1) / 2) * pitch
            for p in np.flatnonzero(flat != 0):
                x, y = _xy(int(p), s)
                if int(p) in numbered:
                    marked.add(int(p))
                    out += _mark(x + 0.7 * dx, y + 0.7 * dy + NUMBER_SHIFT, 0.7 * side, colour,
                                 {"class": "overlay", "data-plane": name, "data-point": coords.to_gtp(int(p), s),
                                  "data-value": str(int(flat[p]))})
                    continue
                out += _mark(x + dx, y + dy, side, colour,
                             {"class": "overlay", "data-plane": name, "data-point": coords.to_gtp(int(p), s),
                              "data-value": str(int(flat[p]))})
        top = span + 2 * MARGIN + 4
        for row, entries in enumerate(_legend_rows(b, width)):
            x = 8.0
            y = top + row * LEGEND_ROW + LEGEND_ROW / 2
            for i, name in entries:
                out += _mark(x + 7, y, 12, PALETTE[i % len(PALETTE)], {"class": "legend-mark", "data-plane": name})
                out.append(("text", x + 18, y, name, 12, "#111", {"class": "legend", "data-plane": name,
                                                                  "text-anchor": "start"}))
                x += 26 + 7 * len(name)
    if b.stones is not None:  # numbers above the overlays, so both stay readable
        for p, num in sorted(b.numbers.items()):
            if b.stones[p] != 0:
                x, y = _xy(p, s)
                text = str(num)
                black = b.stones[p] == 1
                colour = "#fff" if black else "#000"
                if p in marked:  # above the marks, with a halo of the stone's colour
                    out.append(("text", x, y - 1.6 * NUMBER_SHIFT, text, 9, colour,
                                {"class": "number", "data-point": coords.to_gtp(p, s),
                                 "halo": "#111" if black else "#f8f8f8"}))
                else:
                    out.append(("text", x, y, text, 13 if len(text) < 3 else 10, colour,
                                {"class": "number", "data-point": coords.to_gtp(p, s)}))
    if b.last_move is not None and 0 <= b.last_move < n:
        x, y = _xy(b.last_move, s)
        if b.stones is not None and b.stones[b.last_move] != 0 and b.last_move in b.numbers:  # ring the stone
            out.append(("circle", x, y, CELL / 2 - 1, "none", "#d00", 1.0,
                        {"class": "last-move", "stroke-width": "2.5"}))
        else:
            out.append(("circle", x, y, 5, "#d00", None, 1.0, {"class": "last-move"}))
    if b.next_move is not None and 0 <= b.next_move < n:
        x, y = _xy(b.next_move, s)
        out.append(("circle", x, y, CELL / 2 - 3, "none", "#00a000", 1.0,
                    {"class": "next-move", "data-point": coords.to_gtp(b.next_move, s), "stroke-width": "4"}))
    if b.heat is not None:
        heat = np.asarray(b.heat)
        ranked = (top_moves(heat, s, b.top) if b.ranking is None
                  else [(p, float(heat[p])) for p in b.ranking if heat[p] > 0][:b.top])
        for rank, (p, prob) in enumerate(ranked, start=1):
            if p >= n:  # pass: written in the top-left corner
                out.append(("text", MARGIN / 2, MARGIN / 2, f"pass {100 * prob:.0f}", 10, "#e8112d",
                            {"class": "top-move", "data-rank": str(rank), "data-point": "pass",
                             "font-weight": "bold"}))
                continue
            x, y = _xy(p, s)
            out.append(("text", x, y, f"{100 * prob:.0f}" if prob >= 0.01 else "<1", 11, "#000",
                        {"class": "top-move", "data-rank": str(rank), "data-point": coords.to_gtp(p, s),
                         "font-weight": "bold"}))
    if b.clickable:
        for p in range(n):
            x, y = _xy(p, s)
            out.append(("rect", x - CELL / 2, y - CELL / 2, CELL, CELL, "#fff", 0.0,
                        {"class": "target", "data-point": coords.to_gtp(p, s)}))
    return out


def _attrs(attrs: dict) -> str:
    return "".join(f' {k}="{html.escape(str(v))}"' for k, v in attrs.items())


def to_svg(b: Board) -> str:
    """The board as a standalone SVG document (no external references)."""
    width, height = canvas(b)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="board" viewBox="0 0 {width} {height}" '
             f'width="{width}" height="{height}" data-size="{b.size}" font-family="sans-serif">']
    for prim in primitives(b):
        kind = prim[0]
        if kind == "rect":
            _, x, y, w, h, fill, op, attrs = prim
            parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" fill="{fill}"'
                         + (f' fill-opacity="{op}"' if op != 1.0 else "") + _attrs(attrs) + "/>")
        elif kind == "line":
            _, x1, y1, x2, y2, colour, width = prim
            parts.append(f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{colour}" stroke-width="{width}"/>')
        elif kind == "circle":
            _, cx, cy, r, fill, stroke, op, attrs = prim
            attrs = dict(attrs)
            sw = attrs.pop("stroke-width", "1")
            parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r:.1f}" fill="{fill}"'
                         + (f' stroke="{stroke}" stroke-width="{sw}"' if stroke else "")
                         + (f' fill-opacity="{op}"' if op != 1.0 else "") + _attrs(attrs) + "/>")
        else:
            _, x, y, text, px, fill, attrs = prim
            attrs = dict(attrs)
            anchor = attrs.pop("text-anchor", "middle")
            halo = attrs.pop("halo", None)
            stroke = f' stroke="{halo}" stroke-width="3" paint-order="stroke"' if halo else ""
            parts.append(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{px}" fill="{fill}" text-anchor="{anchor}" '
                         f'dominant-baseline="central"{stroke}{_attrs(attrs)}>{html.escape(text)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def to_png(b: Board, path, dpi: int = 100) -> None:
    """The same primitives drawn with matplotlib (Agg) and saved as PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    from matplotlib import patheffects
    from matplotlib.patches import Circle, Rectangle

    width, height = canvas(b)
    fig = plt.figure(figsize=(width / dpi, height / dpi), dpi=dpi)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.set_aspect("equal")
    ax.axis("off")
    pt = 72 / dpi  # pixels -> points
    for z, prim in enumerate(primitives(b)):
        kind = prim[0]
        if kind == "rect":
            _, x, y, w, h, fill, op, attrs = prim
            if op > 0:
                edge = attrs.get("stroke")
                ax.add_patch(Rectangle((x, y), w, h, facecolor=fill, alpha=op, edgecolor=edge or "none",
                                       linewidth=float(attrs.get("stroke-width", 1)) * pt if edge else 0, zorder=z))
        elif kind == "line":
            _, x1, y1, x2, y2, colour, width = prim
            ax.plot([x1, x2], [y1, y2], color=colour, linewidth=width * pt, zorder=z)
        elif kind == "circle":
            _, cx, cy, r, fill, stroke, op, attrs = prim
            sw = float(attrs.get("stroke-width", 1)) * pt
            ax.add_patch(Circle((cx, cy), r, facecolor="none" if fill == "none" else fill, alpha=op,
                                edgecolor=stroke or "none", linewidth=sw if stroke else 0, zorder=z))
        else:
            _, x, y, text, px, fill, attrs = prim
            effects = [patheffects.withStroke(linewidth=3 * pt, foreground=attrs["halo"])] if "halo" in attrs else []
            ax.text(x, y, text, fontsize=px * pt, color=fill, va="center", zorder=z,
                    ha="left" if attrs.get("text-anchor") == "start" else "center",
                    fontweight=attrs.get("font-weight", "normal"), path_effects=effects)
    fig.savefig(path, format="png", dpi=dpi)
    plt.close(fig)


__all__ = ["Board", "PALETTE", "canvas", "primitives", "star_points", "to_png", "to_svg", "top_moves"]
