"""Charts for the HTML report: inline SVG strings built from the data, no plotting library.

Every function takes plain data (lists of numbers and labels, as found in the audit JSON) and
returns an ``<svg …>…</svg>`` string ready to be inserted into a template with ``{{ svg | safe }}``.

* **Self-contained and CSP-safe**: inline SVG only: no script, no ``style`` attribute, no
  external reference, no ``http(s)://`` string; presentation attributes only.
* **Accessible**: ``role="img"`` with ``<title>`` and ``<desc>`` (the chart's data in words)
  named by ``aria-labelledby``; text stays SVG ``<text>`` (selectable, drawn by the browser
  with its own fonts, any script).
* **Deterministic and safe to combine**: the same data gives the same SVG; element ids are
  prefixed with a hash of the chart, so several charts in one page never share an id. Text
  from the data is XML-escaped.
* **Small**: a scatter of thousands of points is one ``<path>`` per colour.

Drawing units are points (1/72 in), like the inch sizes the functions take; the ``width`` /
``height`` attributes are the natural size in CSS pixels and the page scales charts down.
Missing values (``None`` / NaN) are drawn as hatched grey "undefined" cells or bars, never as 0.
The drawing primitives live in :mod:`fairaudit.report._svg`.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from typing import Any

from fairaudit.report._svg import (
    GRID_COLOR,
    MISSING_COLOR,
    NOISE_COLOR,
    PALETTE,
    TEXT_COLOR,
    Canvas,
    colormap,
    fmt_tick,
    label,
    nice_ticks,
    num,
    text_width,
)

__all__ = [
    "PALETTE",
    "NOISE_COLOR",
    "composition_bars",
    "grouped_bars",
    "heatmap",
    "hbar",
    "histogram",
    "scatter",
    "trend",
]

MUTED = "#6b6b6b"


def _colors(n: int) -> list[str]:
    return [PALETTE[i % len(PALETTE)] for i in range(n)]


def _pct(v: float) -> str:
    return f"{v * 100:.0f}%"


def _summary(pairs: Sequence[tuple[str, str]], limit: int = 30) -> str:
    text = "; ".join(f"{k}: {v}" for k, v in pairs[:limit])
    return text + (f"; … ({len(pairs) - limit} more)" if len(pairs) > limit else "")


# ----------------------------------------------------------------------------- charts
def composition_bars(
    categories: Sequence[Any],
    groups: Sequence[Any],
    shares: Sequence[Sequence[Any]],
    *,
    title: str | None = None,
    xlabel: str = "share of rows",
    reference: str | None = None,
    width: float = 6.4,
) -> str:
    """Horizontal 100 % stacked bars: one bar per category (cluster), split by group.

    ``shares[i][g]`` is group ``g``'s share of category ``i`` (``None`` = unknown). The part of
    a bar not accounted for by known shares is drawn hatched grey as "unknown". ``reference``
    names a category (e.g. ``"population"``) that is drawn first and separated by a gap, so each
    cluster can be compared with it.
    """
    n_cat, n_grp = len(categories), len(groups)
    rows = [(i + (0.5 if reference is not None and i > 0 else 0)) for i in range(n_cat)]
    cat_labels = [label(c) for c in categories]
    grp_labels = [label(g) for g in groups]
    legend = list(zip(grp_labels, _colors(n_grp), strict=True))
    unknown = any(sum(max(num(v), 0.0) for v in row if math.isfinite(num(v))) < 0.999
                  for row in shares)
    if unknown:
        legend.append(("unknown", None))
    height = max(1.6, 0.55 + 0.32 * (n_cat + (1 if reference else 0)) + 0.17 * min(n_grp, 12))
    c = Canvas(width, height, title)
    c.legend_right(legend, top=c.top)
    c.height_for(c.top + 13 * len(legend) + 24)
    plot = c.plot_area(left_labels=cat_labels, xlabel=xlabel)
    span = (max(rows) + 1.2) if rows else 1.2
    row_h = plot.h / span
    c.x_axis(plot, 0.0, 1.0, [i / 5 for i in range(6)], _pct, grid=True)
    desc = []
    for i, (r, row) in enumerate(zip(rows, shares, strict=True)):
        y = plot.y + (r + 0.6) * row_h
        h = 0.7 * row_h
        left = 0.0
        parts = []
        for g in range(n_grp):
            v = num(row[g]) if g < len(row) else math.nan
            if not math.isfinite(v) or v <= 0:
                continue
            c.rect(plot.sx(left, 0, 1), y - h / 2, plot.w * v, h, legend[g][1], stroke="#ffffff",
                   stroke_width=0.6)
            parts.append(f"{grp_labels[g]} {_pct(v)}")
            left += v
        if left < 0.999:
            c.rect(plot.sx(left, 0, 1), y - h / 2, plot.w * (1.0 - left), h, None, hatch=True)
            parts.append(f"unknown {_pct(1.0 - left)}")
        c.text(plot.x - 4, y, cat_labels[i], anchor="end")
        desc.append((cat_labels[i], ", ".join(parts)))
    return c.svg(_summary(desc))


def grouped_bars(
    categories: Sequence[Any],
    series: Mapping[Any, Sequence[Any]],
    *,
    title: str | None = None,
    ylabel: str | None = None,
    percent: bool = False,
    width: float = 6.4,
    height: float = 2.8,
) -> str:
    """Vertical grouped bars: for each category, one bar per series (e.g. group share per
    cluster next to the population share). ``None`` values are left out and marked "n/a"."""
    names = list(series)
    n_s = max(1, len(names))
    colors = _colors(n_s)
    c = Canvas(width, height, title)
    if len(names) > 1:
        c.legend_right(list(zip([label(n) for n in names], colors, strict=False)), top=c.top)
    vals = {n: [num(v) for v in series[n]] for n in names}
    finite = [v for vs in vals.values() for v in vs if math.isfinite(v)]
    lo, hi = min([0.0, *finite]), max([0.0, *finite])
    ticks = nice_ticks(lo, hi if hi > lo else lo + 1.0)
    fmt = _pct if percent else fmt_tick
    plot = c.plot_area(left_labels=[fmt(t) for t in ticks], xlabel=None, ylabel=ylabel,
                       bottom_labels=True)
    c.y_axis(plot, ticks[0], ticks[-1], ticks, fmt, grid=True)
    n_cat = max(1, len(categories))
    slot = plot.w / n_cat
    bar_w = 0.8 * slot / n_s
    y0 = plot.sy(0.0, ticks[0], ticks[-1])
    desc = []
    for k, cat in enumerate(categories):
        cx = plot.x + (k + 0.5) * slot
        c.text(cx, plot.y + plot.h + 10, label(cat), anchor="middle", size=8, fill=MUTED)
        parts = []
        for j, name in enumerate(names):
            v = vals[name][k] if k < len(vals[name]) else math.nan
            x = cx - 0.4 * slot + bar_w * j
            if math.isfinite(v):
                y = plot.sy(v, ticks[0], ticks[-1])
                c.rect(x + bar_w * 0.04, min(y, y0), bar_w * 0.92, abs(y0 - y), colors[j])
                parts.append(f"{label(name)} {fmt(v)}")
            else:
                c.text(x + bar_w / 2, y0 - 4, "n/a", anchor="middle", size=6.5, fill="#7a7a7a")
                parts.append(f"{label(name)} n/a")
        desc.append((label(cat), ", ".join(parts)))
    return c.svg(_summary(desc))


def heatmap(
    values: Sequence[Sequence[Any]],
    row_labels: Sequence[Any],
    col_labels: Sequence[Any],
    *,
    title: str | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    vmin: float = 0.0,
    vmax: float = 1.0,
    cmap: str = "RdYlGn",
    fmt: str = "{:.2f}",
    missing: str = "n/a",
    colorbar_label: str | None = None,
    width: float | None = None,
) -> str:
    """Annotated heatmap of ``values[row][col]``; ``None``/NaN cells are hatched grey and
    annotated with ``missing``. Annotation colour follows the cell's lightness."""
    colour_of = colormap(cmap)
    n_r, n_c = len(row_labels), len(col_labels)
    grid = [[num(row[j]) if j < len(row) else math.nan for j in range(n_c)]
            for row in list(values)[:n_r]]
    grid += [[math.nan] * n_c for _ in range(n_r - len(grid))]
    rows = [label(r, 24) for r in row_labels]
    cols = [label(c, 24) for c in col_labels]
    longest_row = max((len(str(r)) for r in row_labels), default=0)
    longest_col = max((len(c) for c in cols), default=0)
    if width is None:
        width = min(9.6, max(3.6, 1.6 + 0.065 * min(longest_row, 24) + 0.62 * n_c))
    rotate = n_c * min(longest_col, 24) > 40
    col_room = (max((text_width(s, 8) for s in cols), default=0) * 0.62 + 8) if rotate else 14
    c = Canvas(width, max(1.8, 1.0 + 0.36 * n_r) + col_room / 72 - 14 / 72, title)
    bar_room = 46 + (12 if colorbar_label else 0)
    plot = c.plot_area(left_labels=rows, xlabel=xlabel, ylabel=ylabel, right=bar_room,
                       bottom=col_room + (14 if xlabel else 0))
    cw, ch = plot.w / max(n_c, 1), plot.h / max(n_r, 1)
    span = (vmax - vmin) or 1.0
    desc = []
    for r in range(n_r):
        c.text(plot.x - 4, plot.y + (r + 0.5) * ch, rows[r], anchor="end", size=8)
        parts = []
        for j in range(n_c):
            v = grid[r][j]
            x, y = plot.x + j * cw, plot.y + r * ch
            if math.isfinite(v):
                fill, lum = colour_of(min(1.0, max(0.0, (v - vmin) / span)))
                c.rect(x, y, cw, ch, fill, stroke="#ffffff", stroke_width=1.0)
                c.text(x + cw / 2, y + ch / 2, fmt.format(v), anchor="middle", size=7.5,
                       fill="#111111" if lum > 0.5 else "#ffffff")
                parts.append(f"{cols[j]} {fmt.format(v)}")
            else:
                c.rect(x, y, cw, ch, None, hatch=True, stroke="#ffffff", stroke_width=1.0)
                c.text(x + cw / 2, y + ch / 2, missing, anchor="middle", size=6.5, fill=MUTED)
                parts.append(f"{cols[j]} {missing}")
        desc.append((rows[r], ", ".join(parts)))
    for j in range(n_c):
        x = plot.x + (j + 0.5) * cw
        if rotate:
            c.text(x, plot.y + plot.h + 6, cols[j], anchor="end", size=8, fill=MUTED, rotate=-35,
                   baseline="hanging")
        else:
            c.text(x, plot.y + plot.h + 9, cols[j], anchor="middle", size=8, fill=MUTED)
    c.colorbar(plot.x + plot.w + 8, plot.y, 10, plot.h, vmin, vmax, colour_of, colorbar_label)
    return c.svg(_summary(desc))


def histogram(
    values: Sequence[Any],
    *,
    bins: int | Sequence[float] = 30,
    title: str | None = None,
    xlabel: str | None = None,
    ylabel: str = "count",
    markers: Mapping[str, float] | None = None,
    log: bool = False,
    width: float = 6.0,
    height: float = 2.6,
) -> str:
    """Histogram of finite ``values`` (NaN/None dropped, their number noted in the title area);
    ``markers`` draws labelled vertical lines (e.g. ``{"threshold": 0.8}``)."""
    import numpy as np

    arr = np.array([num(v) for v in values], dtype=float)
    finite = arr[np.isfinite(arr)]
    marks = sorted((markers or {}).items())
    mark_colors = [PALETTE[3 + i % 3] for i in range(len(marks))]
    c = Canvas(width, height, title)
    if marks:
        c.legend_right([(label(n), col) for (n, _), col in zip(marks, mark_colors, strict=True)],
                       top=c.top, lines=True)
    if finite.size:
        counts, edges = np.histogram(finite, bins=bins)
    else:
        counts, edges = np.zeros(0), np.array([0.0, 1.0])
    xs = [float(edges[0]), float(edges[-1]), *(float(x) for _, x in marks)]
    x0, x1 = min(xs), max(xs)
    if x1 <= x0:
        x0, x1 = x0 - 0.5, x1 + 0.5
    top = float(counts.max()) if counts.size else 1.0
    if log:
        lo_exp, hi_exp = 0, max(1, math.ceil(math.log10(max(top, 1.0)) + 0.05))
        ticks = [10.0 ** e for e in range(lo_exp, hi_exp + 1)]
        scale = (math.log10(ticks[0]), math.log10(ticks[-1]))
    else:
        ticks = nice_ticks(0.0, max(top, 1.0))
        scale = (ticks[0], ticks[-1])
    plot = c.plot_area(left_labels=[fmt_tick(t) for t in ticks], xlabel=xlabel, ylabel=ylabel,
                       bottom_labels=True)

    def sy(v: float) -> float:
        return plot.sy(math.log10(v) if log else v, *scale)

    c.y_axis(plot, scale[0], scale[1], [math.log10(t) if log else t for t in ticks],
             lambda t: fmt_tick(10 ** t if log else t), grid=True)
    xt = nice_ticks(x0, x1)
    c.x_axis(plot, x0, x1, [t for t in xt if x0 <= t <= x1], fmt_tick, grid=False)
    for n, a, b in zip(counts, edges[:-1], edges[1:], strict=True):
        if n <= 0 or (log and n < 1):
            continue
        xa, xb = plot.sx(float(a), x0, x1), plot.sx(float(b), x0, x1)
        y = sy(float(n))
        c.rect(xa, y, xb - xa, plot.y + plot.h - y, PALETTE[0], stroke="#ffffff",
               stroke_width=0.5)
    if not finite.size:
        c.text(plot.x + plot.w / 2, plot.y + plot.h / 2, "no finite values", anchor="middle")
    for (_, x), col in zip(marks, mark_colors, strict=True):
        px = plot.sx(float(x), x0, x1)
        c.line(px, plot.y, px, plot.y + plot.h, col, width=1.2, dash="4 2")
    dropped = int(arr.size - finite.size)
    if dropped:
        c.text(plot.x + plot.w, plot.y - 4, f"{dropped} undefined value(s) not shown",
               anchor="end", size=7, fill=MUTED)
    desc = f"{finite.size:,} values in {len(counts)} bins from {fmt_tick(x0)} to {fmt_tick(x1)}"
    desc += "".join(f"; {label(n)} at {fmt_tick(float(x))}" for n, x in marks)
    return c.svg(desc)


def scatter(
    x: Sequence[Any],
    y: Sequence[Any],
    labels: Sequence[Any] | None = None,
    *,
    max_points: int = 5000,
    seed: int = 0,
    title: str | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    label_names: Mapping[Any, str] | None = None,
    noise_label: Any = -1,
    raster_above: int | None = None,
    width: float = 5.6,
    height: float = 4.2,
) -> str:
    """2-D scatter coloured by ``labels`` (e.g. clusters of a 2-D projection); points with
    ``noise_label`` are grey and drawn underneath. Above ``max_points`` a seeded uniform sample
    of that size is drawn (same data + seed => same chart) and the chart says so. The markers of
    one colour are one ``<path>`` (a zero-length stroke with round caps per point), so thousands
    of points stay small. ``raster_above`` is accepted for compatibility and ignored."""
    import numpy as np

    del raster_above
    xs = np.asarray([num(v) for v in x], dtype=float)
    ys = np.asarray([num(v) for v in y], dtype=float)
    if xs.shape != ys.shape:
        raise ValueError(f"scatter: x and y must have the same length; got {xs.size} and {ys.size}")
    lab = np.asarray(list(labels) if labels is not None else [0] * xs.size, dtype=object)
    if lab.shape != xs.shape:
        raise ValueError(f"scatter: labels must have the same length as x; got {lab.size}")
    n_total = xs.size
    if n_total > max_points:
        idx = np.sort(np.random.default_rng(seed).choice(n_total, size=max_points, replace=False))
        xs, ys, lab = xs[idx], ys[idx], lab[idx]
    ok = np.isfinite(xs) & np.isfinite(ys)
    is_noise = np.array([v == noise_label for v in lab], dtype=bool)
    uniq = sorted({v for v, nz in zip(lab.tolist(), is_noise, strict=True) if not nz}, key=str)
    colors = _colors(len(uniq))
    names = [label((label_names or {}).get(u, str(u))) for u in uniq]
    c = Canvas(width, height, title)
    if labels is not None:
        entries = ([("noise", NOISE_COLOR)] if is_noise.any() else []) + list(
            zip(names, colors, strict=True))
        c.legend_right(entries, top=c.top)
    x0, x1 = _range(xs[ok])
    y0, y1 = _range(ys[ok])
    xt, yt = nice_ticks(x0, x1), nice_ticks(y0, y1)
    plot = c.plot_area(left_labels=[fmt_tick(t) for t in yt], xlabel=xlabel, ylabel=ylabel,
                       bottom_labels=True)
    c.x_axis(plot, xt[0], xt[-1], xt, fmt_tick, grid=True)
    c.y_axis(plot, yt[0], yt[-1], yt, fmt_tick, grid=True)
    layers = [(is_noise, NOISE_COLOR, 6, 0.6)] if is_noise.any() else []
    for u, colour in zip(uniq, colors, strict=True):
        layers.append((np.array([v == u for v in lab], dtype=bool) & ~is_noise, colour, 8, 0.85))
    for mask, colour, size, alpha in layers:
        m = mask & ok
        px = plot.x + (xs[m] - xt[0]) / (xt[-1] - xt[0]) * plot.w
        py = plot.y + plot.h - (ys[m] - yt[0]) / (yt[-1] - yt[0]) * plot.h
        c.points(px, py, colour, diameter=math.sqrt(size) * 1.1, opacity=alpha)
    if n_total > max_points:
        c.text(plot.x + plot.w, plot.y - 4, f"{max_points:,} of {n_total:,} points (seeded sample)",
               anchor="end", size=7, fill=MUTED)
    counts = [(nm, f"{int((lab == u).sum()):,} points") for nm, u in zip(names, uniq, strict=True)]
    if is_noise.any():
        counts.insert(0, ("noise", f"{int(is_noise.sum()):,} points"))
    return c.svg(_summary(counts) or f"{int(ok.sum()):,} points")


def _range(v: Any) -> tuple[float, float]:
    if not v.size:
        return 0.0, 1.0
    lo, hi = float(v.min()), float(v.max())
    return (lo - 0.5, hi + 0.5) if hi <= lo else (lo, hi)


def hbar(
    labels: Sequence[Any],
    values: Sequence[Any],
    *,
    title: str | None = None,
    xlabel: str | None = None,
    errors: Sequence[Sequence[Any] | None] | None = None,
    reference: float | None = None,
    reference_label: str | None = None,
    colors: Sequence[str] | None = None,
    fmt: str = "{:.3g}",
    width: float = 6.0,
    max_bars: int = 40,
) -> str:
    """Horizontal bars, first label on top, each annotated with its value. ``errors[i]`` is an
    interval ``[lo, hi]`` drawn as a whisker (e.g. a bootstrap CI); ``reference`` draws a dashed
    line (e.g. a threshold). Only the first ``max_bars`` bars are drawn."""
    names = [label(v) for v in list(labels)[:max_bars]]
    vals = [num(v) for v in list(values)[:max_bars]]
    n = len(names)
    cols = list(colors) if colors is not None else [PALETTE[0]] * n
    errs: list[tuple[float, float]] = []
    given = list(errors or [])[:max_bars]
    for e in given + [None] * (n - len(given)):
        lo, hi = (num(e[0]), num(e[1])) if e is not None else (math.nan, math.nan)
        errs.append((lo, hi) if math.isfinite(lo) and math.isfinite(hi) else (math.nan, math.nan))
    finite = [v for v in vals if math.isfinite(v)]
    finite += [x for pair in errs for x in pair if math.isfinite(x)]
    if reference is not None:
        finite.append(float(reference))
    left, right = min([0.0, *finite]), max([0.0, *finite]) * 1.15
    if right - left <= 0:  # every value 0: an axis from 0 to 1, not one of 1e-12
        right = left + 1.0
    c = Canvas(width, max(1.4, 0.6 + 0.26 * n), title)
    if reference is not None and reference_label:
        c.legend_top([(label(reference_label), PALETTE[3])])
    ticks = [t for t in nice_ticks(left, right) if left - 1e-12 <= t <= right + 1e-12]
    plot = c.plot_area(left_labels=names, xlabel=xlabel, right=10)
    c.x_axis(plot, left, right, ticks, fmt_tick, grid=True)
    row_h = plot.h / max(n, 1)
    x_zero = plot.sx(0.0, left, right)
    desc = []
    for i, (name, v, colour, (lo, hi)) in enumerate(zip(names, vals, cols, errs, strict=False)):
        yc = plot.y + (i + 0.5) * row_h
        c.text(plot.x - 4, yc, name, anchor="end")
        if math.isfinite(v):
            xv = plot.sx(v, left, right)
            c.rect(min(x_zero, xv), yc - 0.33 * row_h, abs(xv - x_zero), 0.66 * row_h, colour)
        if math.isfinite(lo):
            xl, xh = plot.sx(lo, left, right), plot.sx(hi, left, right)
            w = 0.15 * row_h
            c.path(f"M{xl:.1f} {yc:.1f}H{xh:.1f}M{xl:.1f} {yc - w:.1f}V{yc + w:.1f}"
                   f"M{xh:.1f} {yc - w:.1f}V{yc + w:.1f}", "#222222", width=1.0)
        if math.isfinite(v):
            end = max(v, hi) if math.isfinite(hi) else v
            c.text(plot.sx(end, left, right) + 3, yc, fmt.format(v), size=7.5)
            desc.append((name, fmt.format(v) + (f" [{fmt.format(lo)}, {fmt.format(hi)}]"
                                                if math.isfinite(lo) else "")))
        else:
            c.text(x_zero + 3, yc, "undefined", size=7.5, fill="#7a7a7a")
            desc.append((name, "undefined"))
    if reference is not None:
        xr = plot.sx(float(reference), left, right)
        c.line(xr, plot.y, xr, plot.y + plot.h, PALETTE[3], width=1.1, dash="4 2")
        desc.append((label(reference_label or "reference"), fmt.format(float(reference))))
    return c.svg(_summary(desc))


def trend(
    dates: Sequence[str],
    series: Sequence[Mapping[str, Any]],
    *,
    thresholds: Sequence[tuple[float, str]] = (),
    failed: Sequence[bool] = (),
    title: str | None = None,
    ylabel: str | None = None,
    width: float = 7.0,
    height: float = 2.8,
) -> str:
    """A metric over time (``fairaudit history``). ``dates`` are ISO 8601 timestamps (one per
    run); each series is ``{"label", "values", "lower", "upper"}`` (lists aligned with ``dates``;
    ``None`` = no value / no interval) drawn as a line with markers and a shaded interval band.
    ``thresholds`` are ``(value, label)`` dashed lines; runs with ``failed[i]`` get a red mark
    on the top edge ("gate failed")."""
    when = [dt.datetime.fromisoformat(str(d).replace("Z", "+00:00")).replace(tzinfo=None)
            for d in dates]
    ts = [w.timestamp() for w in when]
    t0, t1 = (min(ts), max(ts)) if ts else (0.0, 1.0)
    if t1 <= t0:
        t0, t1 = t0 - 86400.0, t1 + 86400.0
    lines = [(label(s.get("label", "")), PALETTE[i % len(PALETTE)], s)
             for i, s in enumerate(series)]
    bad = [t for t, f in zip(ts, list(failed) + [False] * len(ts), strict=False) if f]
    entries = [(nm, col) for nm, col, _ in lines]
    entries += [(label(lbl), PALETTE[3 + j % 3]) for j, (_, lbl) in enumerate(thresholds)]
    if bad:
        entries.append(("gate failed", PALETTE[3]))
    c = Canvas(width, height, title)
    c.legend_right(entries, top=c.top, lines=True)

    def col(s: Mapping[str, Any], key: str) -> list[float]:
        vals = [num(v) for v in (s.get(key) or [])]
        return vals + [math.nan] * (len(ts) - len(vals))

    allv = [v for _, _, s in lines for k in ("values", "lower", "upper") for v in col(s, k)]
    allv += [float(v) for v, _ in thresholds]
    finite = [v for v in allv if math.isfinite(v)]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    yt = nice_ticks(lo, hi)
    stamps = [w.strftime("%Y-%m-%d") for w in when]
    plot = c.plot_area(left_labels=[fmt_tick(t) for t in yt], xlabel=None, ylabel=ylabel,
                       bottom=max((text_width(s, 8) for s in stamps), default=40) * 0.6 + 12)
    c.y_axis(plot, yt[0], yt[-1], yt, fmt_tick, grid=True)

    def px(t: float) -> float:
        return plot.sx(t, t0, t1)

    def py(v: float) -> float:
        return plot.sy(v, yt[0], yt[-1])

    step = max(1, math.ceil(len(ts) / 8))
    for t, s in list(zip(ts, stamps, strict=True))[::step]:
        c.line(px(t), plot.y + plot.h, px(t), plot.y + plot.h + 3, "#9aa3ad", width=0.8)
        c.text(px(t), plot.y + plot.h + 6, s, anchor="end", size=8, fill=MUTED, rotate=-30,
               baseline="hanging")
    desc = []
    for name, colour, s in lines:
        vals, los, his = col(s, "values"), col(s, "lower"), col(s, "upper")
        band = [i for i in range(len(ts)) if math.isfinite(los[i]) and math.isfinite(his[i])]
        for run in _runs(band):
            upper = " ".join(f"{px(ts[i]):.1f},{py(his[i]):.1f}" for i in run)
            lower = " ".join(f"{px(ts[i]):.1f},{py(los[i]):.1f}" for i in reversed(run))
            c.polygon(f"{upper} {lower}", colour, opacity=0.18)
        ok = [i for i in range(len(ts)) if math.isfinite(vals[i])]
        for run in _runs(ok):
            c.polyline(" ".join(f"{px(ts[i]):.1f},{py(vals[i]):.1f}" for i in run), colour,
                       width=1.3)
        c.points([px(ts[i]) for i in ok], [py(vals[i]) for i in ok], colour, diameter=4.5)
        desc.append((name, ", ".join(f"{stamps[i]} {fmt_tick(vals[i])}" for i in ok) or "none"))
    for j, (value, lbl) in enumerate(thresholds):
        c.line(plot.x, py(float(value)), plot.x + plot.w, py(float(value)), PALETTE[3 + j % 3],
               width=1.1, dash="4 2")
        desc.append((label(lbl), fmt_tick(float(value))))
    for t in bad:
        x = px(t)
        c.polygon(f"{x - 4:.1f},{plot.y - 6:.1f} {x + 4:.1f},{plot.y - 6:.1f} {x:.1f},{plot.y:.1f}",
                  PALETTE[3])
    if bad:
        desc.append(("gate failed", f"{len(bad)} run(s)"))
    return c.svg(_summary(desc))


def _runs(idx: Sequence[int]) -> list[list[int]]:
    """Consecutive runs of indices: [1, 2, 4] -> [[1, 2], [4]]."""
    out: list[list[int]] = []
    for i in idx:
        if out and out[-1][-1] == i - 1:
            out[-1].append(i)
        else:
            out.append([i])
    return out


__all__ += ["GRID_COLOR", "MISSING_COLOR", "TEXT_COLOR"]
