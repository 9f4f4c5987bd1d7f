"""Charts for the HTML report: matplotlib figures rendered to inline SVG strings.

Every function takes plain data (lists of numbers and labels, as found in the audit JSON) and
returns an ``<svg …>…</svg>`` string ready to be inserted into a template with ``{{ svg | safe }}``.

* matplotlib is imported lazily, and only the object API is used (``matplotlib.figure.Figure``
  with the SVG backend's canvas): no pyplot, no global state, safe in threads and servers.
* Output is deterministic: ``svg.hashsalt`` is fixed, metadata (date, creator) is dropped, and
  element ids are prefixed with a hash of the chart itself, so several charts in one page never
  share an id and the same data always gives the same SVG.
* Text is kept as SVG ``<text>`` (``svg.fonttype = "none"``): it stays selectable, and matplotlib
  XML-escapes it. Labels come from the data (column and group names), so ``$`` is escaped before
  it reaches matplotlib's mathtext parser.
* The XML prolog, doctype, ``<metadata>`` block and namespace URLs are removed, so the page holds
  no ``http(s)://`` string from a chart.

Missing values (``None`` / NaN) are drawn as hatched grey "undefined" cells or bars, never as
0.
"""

from __future__ import annotations

import functools
import hashlib
import io
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

_F = TypeVar("_F")

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

PALETTE: tuple[str, ...] = (
    "#3b6ea5",
    "#e08b3a",
    "#4f9d69",
    "#c8553d",
    "#8266a8",
    "#8c6d4f",
    "#d17fb3",
    "#6f7f8c",
    "#b5a642",
    "#3fa7b5",
    "#9bb8d8",
    "#f1c08e",
    "#a3d3aa",
    "#eba79a",
    "#c4b3dc",
    "#c9b29b",
    "#eec0dc",
    "#b9c2c9",
    "#dcd58e",
    "#9fd6de",
)
"""Qualitative colours for groups / clusters (colour-blind friendly first ten, then tints)."""

NOISE_COLOR = "#b0b0b0"
_RASTER_DPI = 144
MISSING_COLOR = "#e6e6e6"
TEXT_COLOR = "#2b2f36"
GRID_COLOR = "#e3e6ea"

_STYLE: dict[str, Any] = {
    "svg.hashsalt": "fairaudit",
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica"],
    "font.size": 9.0,
    "axes.edgecolor": "#9aa3ad",
    "axes.labelcolor": TEXT_COLOR,
    "axes.titlesize": 10.0,
    "axes.titleweight": "bold",
    "axes.titlecolor": TEXT_COLOR,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "xtick.color": "#5b636d",
    "ytick.color": "#5b636d",
    "legend.frameon": False,
    "legend.fontsize": 8.0,
    "path.simplify": True,
}


FALLBACK_FONTS: tuple[str, ...] = (
    "DejaVu Sans",
    "Noto Sans",
    "Noto Sans CJK JP",
    "Noto Sans CJK SC",
    "Noto Sans CJK KR",
    "Noto Sans Arabic",
    "Noto Naskh Arabic",
    "Noto Sans Hebrew",
    "Noto Sans Devanagari",
    "Noto Sans Thai",
    "WenQuanYi Zen Hei",
    "Droid Sans Fallback",
    "Arial Unicode MS",
    "Arial",
    "Helvetica",
)
"""Sans-serif fonts tried in order for every glyph (matplotlib's per-glyph font fallback), so
column and group names in any script get their own glyph widths. Only installed ones are used."""

_QUIET = (
    r"Glyph \d+ .*missing from (current )?font",  # a script no installed font covers
    r"(constrained|tight)[ _]layout not applied",  # very long labels
    r".*[Cc]onstrained ?[Ll]ayout",
)


@functools.lru_cache(maxsize=1)
def _fonts() -> list[str]:
    from matplotlib import font_manager

    installed = {f.name for f in font_manager.fontManager.ttflist}
    return [f for f in FALLBACK_FONTS if f in installed] or ["DejaVu Sans"]


# ----------------------------------------------------------------------------- plumbing
def _styled(fn: _F) -> _F:
    """Run a chart function inside the house style (``rc_context``; no global rcParams change),
    with the installed fallback fonts and without matplotlib's glyph and layout warnings: the
    text is kept as SVG ``<text>`` and drawn by the browser with its own fonts, so a glyph
    matplotlib cannot measure is at worst laid out a little narrower, never missing."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import logging
        import warnings

        from matplotlib import rc_context

        style = dict(_STYLE, **{"font.sans-serif": _fonts()})
        fm_log = logging.getLogger("matplotlib.font_manager")
        level = fm_log.level
        fm_log.setLevel(logging.ERROR)
        try:
            with warnings.catch_warnings(), rc_context(style):
                for pattern in _QUIET:
                    warnings.filterwarnings("ignore", message=pattern)
                return fn(*args, **kwargs)
        finally:
            fm_log.setLevel(level)

    return wrapper  # type: ignore[return-value]


def _text(value: Any, limit: int = 40) -> str:
    """A label from the data, safe for matplotlib: ``$`` would start mathtext."""
    s = str(value)
    if len(s) > limit:
        s = s[: limit - 1] + "\u2026"
    return s.replace("\\", "\\\\").replace("$", r"\$")


def _num(x: Any) -> float:
    """``None`` / non-numbers -> NaN."""
    if x is None:
        return math.nan
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    # the SVG backend draws vector output at 72 dpi and embeds rasterised artists (large
    # scatters) at the figure's dpi
    fig = Figure(figsize=(width, height), dpi=_RASTER_DPI, layout="constrained")
    fig.patch.set_alpha(0.0)
    return fig


_PROLOG = re.compile(r"^.*?(?=<svg\b)", re.S)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.S)
_XMLNS = re.compile(r'\s+xmlns(:\w+)?="[^"]*"')
_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(url\(#|href="#)([^)"]+)')
_SIZE = re.compile(r'^(<svg\b[^>]*?)\s+width="([\d.]+)pt"\s+height="([\d.]+)pt"')


def _to_svg(fig: Any, *, label: str | None = None) -> str:
    """Render ``fig`` to an inline ``<svg>`` string (deterministic, no prolog, unique ids)."""
    from matplotlib import rc_context
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    buf = io.StringIO()
    with rc_context({"svg.hashsalt": "fairaudit", "svg.fonttype": "none"}):
        FigureCanvasSVG(fig).print_svg(buf, metadata={"Date": None, "Creator": None})
    svg = buf.getvalue()
    svg = _PROLOG.sub("", svg, count=1)
    svg = _METADATA.sub("", svg, count=1)
    svg = _XMLNS.sub("", svg)
    prefix = "c" + hashlib.sha1(svg.encode("utf-8")).hexdigest()[:10] + "-"
    svg = _ID.sub(lambda m: f'id="{prefix}{m.group(1)}"', svg)
    svg = _REF.sub(lambda m: f"{m.group(1)}{prefix}{m.group(2)}", svg)
    # responsive: keep the viewBox, let CSS size it, but remember the natural width
    m = _SIZE.match(svg)
    if m:
        width_px = float(m.group(2)) * 4 / 3
        svg = (
            f'{m.group(1)} class="chart" style="max-width:{width_px:.0f}px"'
            + (' role="img"' if label else "")
            + svg[m.end() :]
        )
    if label:
        # an accessible name for screen readers (escaped: it comes from the data)
        from markupsafe import escape

        svg = svg.replace(">", f' aria-label="{escape(label)}">', 1)
    return svg.strip() + "\n"


def _colors(n: int) -> list[str]:
    return [PALETTE[i % len(PALETTE)] for i in range(n)]


def _finish_axes(ax: Any, *, title: str | None, xlabel: str | None, ylabel: str | None) -> None:
    if title:  # figure-level, left-aligned: never clipped by long tick labels
        ax.get_figure().suptitle(
            _text(title, 90), x=0.01, ha="left", fontsize=10.0, fontweight="bold", color=TEXT_COLOR
        )
    if xlabel:
        ax.set_xlabel(_text(xlabel, 80))
    if ylabel:
        ax.set_ylabel(_text(ylabel, 80))


# ----------------------------------------------------------------------------- charts
@_styled
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
    height = max(1.6, 0.55 + 0.32 * (n_cat + (1 if reference else 0)) + 0.17 * min(n_grp, 12))
    fig = _figure(width, height)
    ax = fig.add_subplot()
    colors = _colors(n_grp)
    ys = []
    for i in range(n_cat):
        ys.append(-(i + (0.5 if reference is not None and i > 0 else 0)))
    missing_drawn = False
    for i, (y, row) in enumerate(zip(ys, shares, strict=True)):
        left = 0.0
        for g in range(n_grp):
            v = _num(row[g]) if g < len(row) else math.nan
            if not math.isfinite(v) or v <= 0:
                continue
            ax.barh(
                y,
                v,
                left=left,
                height=0.7,
                color=colors[g],
                edgecolor="white",
                linewidth=0.6,
                label=_text(groups[g]) if i == 0 else None,
            )
            left += v
        if left < 0.999:
            ax.barh(
                y,
                1.0 - left,
                left=left,
                height=0.7,
                color=MISSING_COLOR,
                hatch="///",
                edgecolor="#c4c4c4",
                linewidth=0.0,
                label="unknown" if not missing_drawn else None,
            )
            missing_drawn = True
    ax.set_yticks(ys, [_text(c) for c in categories])
    ax.set_xlim(0, 1)
    ax.set_ylim(min(ys) - 0.6, 0.6)
    ax.xaxis.set_major_formatter(_percent_formatter())
    ax.tick_params(axis="y", length=0)
    ax.spines["left"].set_visible(False)
    ax.grid(axis="x", color=GRID_COLOR, linewidth=0.6)
    ax.set_axisbelow(True)
    _legend(ax, n_grp + (1 if missing_drawn else 0))
    _finish_axes(ax, title=title, xlabel=xlabel, ylabel=None)
    return _to_svg(fig, label=title)


@_styled
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
    import numpy as np

    names = list(series)
    n_s = max(1, len(names))
    x = np.arange(len(categories), dtype=float)
    bar_w = 0.8 / n_s
    fig = _figure(width, height)
    ax = fig.add_subplot()
    colors = _colors(n_s)
    for j, name in enumerate(names):
        vals = [_num(v) for v in series[name]]
        pos = x - 0.4 + bar_w * (j + 0.5)
        ok = [math.isfinite(v) for v in vals]
        ax.bar(
            [p for p, o in zip(pos, ok, strict=True) if o],
            [v for v, o in zip(vals, ok, strict=True) if o],
            width=bar_w * 0.92,
            color=colors[j],
            label=_text(name),
        )
        for p, o in zip(pos, ok, strict=True):
            if not o:
                ax.text(p, 0, "n/a", ha="center", va="bottom", fontsize=6.5, color="#7a7a7a")
    ax.set_xticks(x, [_text(c) for c in categories])
    if percent:
        ax.yaxis.set_major_formatter(_percent_formatter())
    ax.grid(axis="y", color=GRID_COLOR, linewidth=0.6)
    ax.set_axisbelow(True)
    if len(names) > 1:
        _legend(ax, len(names))
    _finish_axes(ax, title=title, xlabel=None, ylabel=ylabel)
    return _to_svg(fig, label=title)


@_styled
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
    import numpy as np
    from matplotlib import colormaps
    from matplotlib.colors import Normalize

    arr = np.array([[_num(v) for v in row] for row in values], dtype=float).reshape(
        len(row_labels), len(col_labels)
    )
    n_r, n_c = arr.shape
    longest_row = max((len(str(r)) for r in row_labels), default=0)
    longest_col = max((len(str(c)) for c in col_labels), default=0)
    if width is None:
        width = min(9.6, max(3.6, 1.6 + 0.065 * min(longest_row, 24) + 0.62 * n_c))
    height = max(1.8, 1.0 + 0.36 * n_r)
    fig = _figure(width, height)
    ax = fig.add_subplot()
    norm = Normalize(vmin=vmin, vmax=vmax)
    cm = colormaps[cmap]
    cmap_obj = cm.with_extremes(bad=MISSING_COLOR)
    # vector cells (pcolormesh), not an image: small, crisp, and fast to render
    im = ax.pcolormesh(
        np.ma.masked_invalid(arr), cmap=cmap_obj, norm=norm, edgecolors="white", linewidth=1.0
    )
    ax.set_xlim(0, max(n_c, 1))  # an empty table (e.g. all-noise labels) still draws, silently
    ax.set_ylim(max(n_r, 1), 0)
    for r in range(n_r):
        for c in range(n_c):
            v = arr[r, c]
            if math.isfinite(v):
                rgb = cm(norm(v))[:3]
                lum = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]
                ax.text(
                    c + 0.5,
                    r + 0.5,
                    fmt.format(v),
                    ha="center",
                    va="center",
                    fontsize=7.5,
                    color="#111111" if lum > 0.5 else "#ffffff",
                )
            else:
                ax.add_patch(_hatched_cell(c + 0.5, r + 0.5))
                ax.text(
                    c + 0.5, r + 0.5, missing, ha="center", va="center", fontsize=6.5,
                    color="#6b6b6b",
                )  # fmt: skip
    ax.set_xticks([c + 0.5 for c in range(n_c)], [_text(c, 24) for c in col_labels])
    ax.set_yticks([r + 0.5 for r in range(n_r)], [_text(r, 24) for r in row_labels])
    if n_c * min(longest_col, 24) > 40:
        for lbl in ax.get_xticklabels():
            lbl.set_rotation(35)
            lbl.set_horizontalalignment("right")
            lbl.set_rotation_mode("anchor")
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    cb = fig.colorbar(im, ax=ax, fraction=0.05, pad=0.02, shrink=0.9)
    cb.outline.set_visible(False)
    if colorbar_label:
        cb.set_label(_text(colorbar_label, 60))
    _finish_axes(ax, title=title, xlabel=xlabel, ylabel=ylabel)
    return _to_svg(fig, label=title)


@_styled
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

    arr = np.array([_num(v) for v in values], dtype=float)
    finite = arr[np.isfinite(arr)]
    fig = _figure(width, height)
    ax = fig.add_subplot()
    if finite.size:
        ax.hist(finite, bins=bins, color=PALETTE[0], edgecolor="white", linewidth=0.5, log=log)
    else:
        ax.text(0.5, 0.5, "no finite values", ha="center", va="center", transform=ax.transAxes)
    for i, (name, x) in enumerate(sorted((markers or {}).items())):
        ax.axvline(x, color=PALETTE[3 + i % 3], linestyle="--", linewidth=1.2, label=_text(name))
    if markers:
        ax.legend(loc="upper right")
    dropped = int(arr.size - finite.size)
    if dropped:
        ax.text(
            1.0,
            1.02,
            f"{dropped} undefined value(s) not shown",
            ha="right",
            va="bottom",
            fontsize=7,
            color="#6b6b6b",
            transform=ax.transAxes,
        )
    ax.grid(axis="y", color=GRID_COLOR, linewidth=0.6)
    ax.set_axisbelow(True)
    _finish_axes(ax, title=title, xlabel=xlabel, ylabel=ylabel)
    return _to_svg(fig, label=title)


@_styled
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
    raster_above: int = 1500,
    width: float = 5.6,
    height: float = 4.2,
) -> str:
    """2-D scatter coloured by ``labels`` (e.g. clusters of a 2-D projection); points with
    ``noise_label`` are grey and drawn underneath. Above ``max_points`` a seeded uniform sample
    of that size is drawn (same data + seed => same chart) and the chart says so. Above
    ``raster_above`` points the markers are embedded as a PNG image to keep the page small."""
    import numpy as np

    xs = np.asarray([_num(v) for v in x], dtype=float)
    ys = np.asarray([_num(v) for v in y], dtype=float)
    if xs.shape != ys.shape:
        raise ValueError(f"scatter: x and y must have the same length; got {xs.size} and {ys.size}")
    lab = np.asarray(list(labels) if labels is not None else [0] * xs.size, dtype=object)
    if lab.shape != xs.shape:
        raise ValueError(f"scatter: labels must have the same length as x; got {lab.size}")
    n_total = xs.size
    if n_total > max_points:
        idx = np.sort(np.random.default_rng(seed).choice(n_total, size=max_points, replace=False))
        xs, ys, lab = xs[idx], ys[idx], lab[idx]
    # many points: draw the markers as one embedded PNG (data: URI) instead of one SVG element
    # per point; axes, labels and legend stay vector
    raster = xs.size > raster_above
    fig = _figure(width, height)
    ax = fig.add_subplot()
    is_noise = np.array([v == noise_label for v in lab], dtype=bool)
    if is_noise.any():
        ax.scatter(
            xs[is_noise],
            ys[is_noise],
            s=6,
            c=NOISE_COLOR,
            linewidths=0,
            alpha=0.6,
            label="noise",
            rasterized=raster,
        )
    uniq = sorted({v for v, nz in zip(lab.tolist(), is_noise, strict=True) if not nz}, key=str)
    colors = _colors(len(uniq))
    for i, u in enumerate(uniq):
        m = np.array([v == u for v in lab], dtype=bool) & ~is_noise
        name = (label_names or {}).get(u, str(u))
        ax.scatter(
            xs[m],
            ys[m],
            s=8,
            color=colors[i],
            linewidths=0,
            alpha=0.85,
            label=_text(name),
            rasterized=raster,
        )
    if labels is not None:
        _legend(ax, len(uniq) + int(is_noise.any()), markerscale=2.0)
    if n_total > max_points:
        ax.text(
            1.0,
            1.02,
            f"{max_points:,} of {n_total:,} points (seeded sample)",
            ha="right",
            va="bottom",
            fontsize=7,
            color="#6b6b6b",
            transform=ax.transAxes,
        )
    ax.grid(color=GRID_COLOR, linewidth=0.5)
    ax.set_axisbelow(True)
    _finish_axes(ax, title=title, xlabel=xlabel, ylabel=ylabel)
    return _to_svg(fig, label=title)


@_styled
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
    labels = list(labels)[:max_bars]
    vals = [_num(v) for v in list(values)[:max_bars]]
    n = len(labels)
    height = max(1.4, 0.6 + 0.26 * n)
    fig = _figure(width, height)
    ax = fig.add_subplot()
    ys = list(range(n))[::-1] if n else []
    cols = list(colors) if colors is not None else [PALETTE[0]] * n
    errs: list[tuple[float, float]] = []
    for e in list(errors or [])[:max_bars] + [None] * (n - len(list(errors or [])[:max_bars])):
        lo, hi = (_num(e[0]), _num(e[1])) if e is not None else (math.nan, math.nan)
        errs.append((lo, hi) if math.isfinite(lo) and math.isfinite(hi) else (math.nan, math.nan))
    finite = [v for v in vals if math.isfinite(v)]
    finite += [x for pair in errs for x in pair if math.isfinite(x)]
    if reference is not None:
        finite.append(float(reference))
    span = max([abs(v) for v in finite] + [0.0]) or 1.0  # all zero: a unit axis, not 1e-12
    for y, v, c, (lo, hi) in zip(ys, vals, cols, errs, strict=False):
        if math.isfinite(lo):
            ax.plot([lo, hi], [y, y], color="#222222", linewidth=1.0, zorder=3)
            ax.plot([lo, lo], [y - 0.15, y + 0.15], color="#222222", linewidth=1.0, zorder=3)
            ax.plot([hi, hi], [y - 0.15, y + 0.15], color="#222222", linewidth=1.0, zorder=3)
        if math.isfinite(v):
            ax.barh(y, v, height=0.66, color=c)
            end = max(v, hi) if math.isfinite(hi) else v
            ax.text(end + span * 0.01, y, " " + fmt.format(v), va="center", fontsize=7.5)
        else:
            ax.text(0, y, " undefined", va="center", fontsize=7.5, color="#7a7a7a")
    if reference is not None:
        ax.axvline(
            reference,
            color=PALETTE[3],
            linestyle="--",
            linewidth=1.1,
            label=_text(reference_label) if reference_label else None,
        )
        if reference_label:
            ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), borderaxespad=0.2)
    ax.set_yticks(ys, [_text(lbl) for lbl in labels])
    ax.set_ylim(-0.6, n - 0.4)
    left, right = min([0.0] + finite), max([0.0] + finite) * 1.15
    if right - left <= 0:  # every value 0: an axis from 0 to 1, not one of 1e-12
        right = left + 1.0
    ax.set_xlim(left=left, right=right)
    ax.tick_params(axis="y", length=0)
    ax.spines["left"].set_visible(False)
    ax.grid(axis="x", color=GRID_COLOR, linewidth=0.6)
    ax.set_axisbelow(True)
    _finish_axes(ax, title=title, xlabel=xlabel, ylabel=None)
    return _to_svg(fig, label=title)


# ----------------------------------------------------------------------------- helpers
def _percent_formatter() -> Any:
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _pos: f"{v * 100:.0f}%")


def _legend(ax: Any, n: int, **kwargs: Any) -> None:
    if n <= 0:
        return
    ncol = 1 if n <= 14 else 2
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), ncol=ncol, handlelength=1.0, **kwargs)


def _hatched_cell(c: float, r: float) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle(
        (c - 0.5, r - 0.5), 1.0, 1.0, facecolor=MISSING_COLOR, hatch="///", edgecolor="#c8c8c8",
        linewidth=0.0,
    )  # fmt: skip


@_styled
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
    ``thresholds`` are ``(value, label)`` dashed lines; runs with ``failed[i]`` get a red tick
    on the top edge ("gate failed")."""
    import datetime as dt

    import numpy as np

    xs = [dt.datetime.fromisoformat(str(d).replace("Z", "+00:00")).replace(tzinfo=None)
          for d in dates]
    fig = _figure(width, height)
    ax = fig.add_subplot()
    for i, s in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        vals = np.array([_num(v) for v in s.get("values", [])], dtype=float)
        lo = np.array([_num(v) for v in s.get("lower", [None] * len(xs))], dtype=float)
        hi = np.array([_num(v) for v in s.get("upper", [None] * len(xs))], dtype=float)
        band = np.isfinite(lo) & np.isfinite(hi)
        if band.any():
            ax.fill_between(xs, np.where(band, lo, np.nan), np.where(band, hi, np.nan),
                            color=colour, alpha=0.18, linewidth=0)
        ax.plot(xs, vals, color=colour, marker="o", markersize=3, linewidth=1.3,
                label=_text(s.get("label", "")))
    for j, (value, label) in enumerate(thresholds):
        ax.axhline(float(value), color=PALETTE[3 + j % 3], linestyle="--", linewidth=1.1,
                   label=_text(label))
    bad = [x for x, f in zip(xs, list(failed) + [False] * len(xs), strict=False) if f]
    if bad:
        ax.plot(bad, [1.0] * len(bad), linestyle="none", marker="v", markersize=6,
                color=PALETTE[3], transform=ax.get_xaxis_transform(), clip_on=False,
                label="gate failed")
    if len(xs) == 1:
        ax.set_xlim(xs[0] - dt.timedelta(days=1), xs[0] + dt.timedelta(days=1))
    fig.autofmt_xdate()
    ax.grid(axis="y", color=GRID_COLOR, linewidth=0.6)
    ax.set_axisbelow(True)
    handles = len(series) + len(thresholds) + (1 if bad else 0)
    _legend(ax, handles, fontsize=7)
    _finish_axes(ax, title=title, xlabel=None, ylabel=ylabel)
    return _to_svg(fig, label=title)
