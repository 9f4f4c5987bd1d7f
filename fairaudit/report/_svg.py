"""Drawing primitives of the report's charts (:mod:`fairaudit.report.charts`): a canvas that
lays out a title, a legend and a plot area, and writes escaped SVG elements.

Coordinates are points (1/72 in). Text widths are estimated (no font metrics at run time): an
average Latin glyph is ~0.56 em, a wide (CJK) glyph 1 em; margins are sized from the estimate.
"""

from __future__ import annotations

import hashlib
import math
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

PALETTE: tuple[str, ...] = (
    "#3b6ea5", "#e08b3a", "#4f9d69", "#c8553d", "#8266a8", "#8c6d4f", "#d17fb3", "#6f7f8c",
    "#b5a642", "#3fa7b5", "#9bb8d8", "#f1c08e", "#a3d3aa", "#eba79a", "#c4b3dc", "#c9b29b",
    "#eec0dc", "#b9c2c9", "#dcd58e", "#9fd6de",
)
"""Qualitative colours for groups / clusters (colour-blind friendly first ten, then tints)."""
NOISE_COLOR = "#b0b0b0"
MISSING_COLOR = "#e6e6e6"
TEXT_COLOR = "#2b2f36"
GRID_COLOR = "#e3e6ea"
AXIS_COLOR = "#9aa3ad"
TICK_COLOR = "#5b636d"
FONT = "DejaVu Sans, Noto Sans, Arial, Helvetica, sans-serif"
_MARK = "<P>"  # id prefix placeholder: never in escaped text, replaced by a hash of the chart

_CMAPS: dict[str, tuple[str, ...]] = {
    "RdYlGn": ("#a50026", "#d73027", "#f46d43", "#fdae61", "#fee08b", "#ffffbf", "#d9ef8b",
               "#a6d96a", "#66bd63", "#1a9850", "#006837"),
    "viridis": ("#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779",
                "#6ece58", "#b5de2b", "#fde725"),
    "Blues": ("#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5",
              "#08519c", "#08306b"),
}


def num(x: Any) -> float:
    """``None`` / non-numbers -> NaN."""
    if x is None:
        return math.nan
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def label(value: Any, limit: int = 40) -> str:
    """A label from the data, shortened to ``limit`` characters (escaped when written)."""
    s = str(value)
    return s[: limit - 1] + "\u2026" if len(s) > limit else s


def text_width(s: str, size: float) -> float:
    """Estimated width of ``s`` at font size ``size`` (points)."""
    return size * sum(1.0 if unicodedata.east_asian_width(ch) in "WF" else 0.56 for ch in s)


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values covering ``[lo, hi]`` (about ``n`` of them)."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        hi = lo + 1.0 if math.isfinite(lo) else 1.0
        lo = lo if math.isfinite(lo) else 0.0
    raw = (hi - lo) / max(n - 1, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    return [round(k * step, 12) + 0.0 for k in range(first, last + 1)]


def fmt_tick(v: float) -> str:
    """A tick value without float noise: 0.30000000000000004 -> 0.3, 2000.0 -> 2000."""
    return f"{round(v, 10) + 0.0:.6g}"


def colormap(name: str) -> Callable[[float], tuple[str, float]]:
    """``t`` in [0, 1] -> (hex colour, relative luminance in [0, 1]) along a named colour map."""
    try:
        stops = [tuple(int(h[i:i + 2], 16) / 255 for i in (1, 3, 5)) for h in _CMAPS[name]]
    except KeyError:
        raise ValueError(f"unknown colour map {name!r}; expected one of {sorted(_CMAPS)}") from None

    def colour(t: float) -> tuple[str, float]:
        pos = min(max(t, 0.0), 1.0) * (len(stops) - 1)
        i = min(int(pos), len(stops) - 2)
        f = pos - i
        rgb = [a + (b - a) * f for a, b in zip(stops[i], stops[i + 1], strict=True)]
        lum = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]
        return "#" + "".join(f"{round(c * 255):02x}" for c in rgb), lum

    return colour


def _f(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".") if math.isfinite(v) else "0"


@dataclass(frozen=True)
class Plot:
    """The plot area (points)."""

    x: float
    y: float
    w: float
    h: float

    def sx(self, v: float, lo: float, hi: float) -> float:
        return self.x + (v - lo) / ((hi - lo) or 1.0) * self.w

    def sy(self, v: float, lo: float, hi: float) -> float:
        return self.y + self.h - (v - lo) / ((hi - lo) or 1.0) * self.h


class Canvas:
    """One chart: title, optional legend (right or top), plot area and elements."""

    def __init__(self, width_in: float, height_in: float, title: str | None) -> None:
        self.w = width_in * 72.0
        self.h = height_in * 72.0
        self.title = label(title, 90) if title else None
        self.top = 24.0 if title else 8.0
        self.right = 8.0
        self._body: list[str] = []
        self._legend: list[str] = []
        self._defs: dict[str, str] = {}
        if self.title:
            self._legend.append(self._text(6, 12, self.title, size=10, weight="bold"))

    # ------------------------------------------------------------------ layout
    def height_for(self, needed: float) -> None:
        self.h = max(self.h, needed)

    def legend_right(self, entries: Sequence[tuple[str, str | None]], *, top: float,
                     lines: bool = False) -> None:
        """A legend column on the right (``None`` colour = the hatched "unknown" swatch)."""
        if not entries:
            return
        width = min(max(text_width(n, 8) for n, _ in entries) + 20, self.w * 0.35)
        x = self.w - width
        for i, (name, colour) in enumerate(entries):
            y = top + 4 + 13 * i
            if lines:
                self._legend.append(_line(x, y + 4, x + 12, y + 4, colour or NOISE_COLOR, 1.5))
            else:
                self._legend.append(self._swatch(x, y, 9, 9, colour))
            self._legend.append(self._text(x + 15, y + 4.5, label(name, 40), size=8))
        self.right = width + 6
        self.height_for(top + 13 * len(entries) + 12)

    def legend_top(self, entries: Sequence[tuple[str, str]]) -> None:
        """A one-line legend of dashed lines above the plot, right-aligned."""
        x = self.w - 8
        for name, colour in reversed(entries):
            x -= text_width(name, 8)
            self._legend.append(self._text(x, self.top + 4, name, size=8))
            self._legend.append(_line(x - 16, self.top + 4, x - 4, self.top + 4, colour, 1.1,
                                      "4 2"))
            x -= 24
        self.top += 14

    def plot_area(self, *, left_labels: Iterable[str], xlabel: str | None,
                  ylabel: str | None = None, right: float | None = None,
                  bottom: float | None = None, bottom_labels: bool = False) -> Plot:
        del bottom_labels
        left = max((text_width(s, 9) for s in left_labels), default=0.0) + 10
        left = min(max(left, 24.0), self.w * 0.45) + (14 if ylabel else 0)
        bottom = (16.0 + (14 if xlabel else 0)) if bottom is None else bottom
        right_margin = self.right + (right or 0.0)
        plot = Plot(left, self.top + 4, max(self.w - left - right_margin, 20.0),
                    max(self.h - self.top - 4 - bottom, 20.0))
        if xlabel:
            self._body.append(self._text(plot.x + plot.w / 2, self.h - 6, label(xlabel, 80),
                                         anchor="middle"))
        if ylabel:
            self._body.append(self._text(10, plot.y + plot.h / 2, label(ylabel, 80),
                                         anchor="middle", rotate=-90))
        return plot

    # ------------------------------------------------------------------ axes
    def x_axis(self, plot: Plot, lo: float, hi: float, ticks: Sequence[float],
               fmt: Callable[[float], str], *, grid: bool) -> None:
        base = plot.y + plot.h
        for t in ticks:
            x = plot.sx(t, lo, hi)
            if grid:
                self._body.append(_line(x, plot.y, x, base, GRID_COLOR, 0.6))
            self._body.append(_line(x, base, x, base + 3, AXIS_COLOR, 0.8))
            self._body.append(self._text(x, base + 10, fmt(t), anchor="middle", size=8,
                                         fill=TICK_COLOR))
        self._body.append(_line(plot.x, base, plot.x + plot.w, base, AXIS_COLOR, 0.8))

    def y_axis(self, plot: Plot, lo: float, hi: float, ticks: Sequence[float],
               fmt: Callable[[float], str], *, grid: bool) -> None:
        for t in ticks:
            y = plot.sy(t, lo, hi)
            if grid:
                self._body.append(_line(plot.x, y, plot.x + plot.w, y, GRID_COLOR, 0.6))
            self._body.append(_line(plot.x - 3, y, plot.x, y, AXIS_COLOR, 0.8))
            self._body.append(self._text(plot.x - 5, y, fmt(t), anchor="end", size=8,
                                         fill=TICK_COLOR))
        self._body.append(_line(plot.x, plot.y, plot.x, plot.y + plot.h, AXIS_COLOR, 0.8))

    def colorbar(self, x: float, y: float, w: float, h: float, vmin: float, vmax: float,
                 colour: Callable[[float], tuple[str, float]], title: str | None) -> None:
        stops = "".join(f'<stop offset="{i / 10:.1f}" stop-color="{colour(i / 10)[0]}"/>'
                        for i in range(11))
        self._defs["cb"] = (f'<linearGradient id="{_MARK}-cb" x1="0" y1="1" x2="0" y2="0">'
                            f"{stops}</linearGradient>")
        self._body.append(f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(w)}" height="{_f(h)}" '
                          f'fill="url(#{_MARK}-cb)"/>')
        for t in nice_ticks(vmin, vmax):
            if vmin - 1e-12 <= t <= vmax + 1e-12:
                ty = y + h - (t - vmin) / ((vmax - vmin) or 1.0) * h
                self._body.append(_line(x + w, ty, x + w + 3, ty, AXIS_COLOR, 0.8))
                self._body.append(self._text(x + w + 5, ty, fmt_tick(t), size=7.5,
                                             fill=TICK_COLOR))
        if title:
            self._body.append(self._text(x + w + 32, y + h / 2, label(title, 60), size=8,
                                         anchor="middle", rotate=-90))

    # ------------------------------------------------------------------ elements
    def rect(self, x: float, y: float, w: float, h: float, fill: str | None, *,
             stroke: str | None = None, stroke_width: float | None = None,
             hatch: bool = False) -> None:
        paint = self._hatch() if hatch or fill is None else fill
        extra = f' stroke="{stroke}" stroke-width="{stroke_width:g}"' if stroke else ""
        self._body.append(f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(max(w, 0))}" '
                          f'height="{_f(max(h, 0))}" fill="{paint}"{extra}/>')

    def text(self, x: float, y: float, s: str, **kw: Any) -> None:
        self._body.append(self._text(x, y, s, **kw))

    def line(self, x1: float, y1: float, x2: float, y2: float, colour: str, *,
             width: float = 0.8, dash: str | None = None) -> None:
        self._body.append(_line(x1, y1, x2, y2, colour, width, dash))

    def path(self, d: str, colour: str, *, width: float = 1.0) -> None:
        self._body.append(f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="{width:g}"/>')

    def polygon(self, points: str, fill: str, *, opacity: float | None = None) -> None:
        op = f' fill-opacity="{opacity:g}"' if opacity is not None else ""
        self._body.append(f'<polygon points="{points}" fill="{fill}"{op}/>')

    def polyline(self, points: str, colour: str, *, width: float = 1.0) -> None:
        self._body.append(f'<polyline points="{points}" fill="none" stroke="{colour}" '
                          f'stroke-width="{width:g}" stroke-linejoin="round"/>')

    def points(self, xs: Iterable[float], ys: Iterable[float], colour: str, *,
               diameter: float, opacity: float | None = None) -> None:
        """Markers as one path: a zero-length segment per point, drawn with round caps."""
        d = "".join(f"M{_f(x)} {_f(y)}h0" for x, y in zip(xs, ys, strict=True))
        if not d:
            return
        op = f' stroke-opacity="{opacity:g}"' if opacity is not None else ""
        self._body.append(f'<path class="pts" d="{d}" fill="none" stroke="{colour}" '
                          f'stroke-width="{diameter:.1f}" stroke-linecap="round"{op}/>')

    # ------------------------------------------------------------------ output
    def svg(self, desc: str) -> str:
        """The finished ``<svg>`` (ids prefixed with a hash of the chart)."""
        title = f'<title id="{_MARK}-t">{escape(self.title)}</title>' if self.title else ""
        labelled = (f"{_MARK}-t " if self.title else "") + f"{_MARK}-d"
        defs = f"<defs>{''.join(self._defs[k] for k in sorted(self._defs))}</defs>" \
            if self._defs else ""
        body = "".join([title, f'<desc id="{_MARK}-d">{escape(desc)}</desc>', defs,
                        *self._body, *self._legend])
        head = (f'<svg class="chart" viewBox="0 0 {_f(self.w)} {_f(self.h)}" '
                f'width="{self.w * 4 / 3:.0f}" height="{self.h * 4 / 3:.0f}" role="img" '
                f'aria-labelledby="{labelled}" font-family="{FONT}" font-size="9">')
        svg = head + body + "</svg>"
        prefix = "c" + hashlib.sha1(svg.encode("utf-8")).hexdigest()[:10]
        return svg.replace(_MARK, prefix) + "\n"

    def _hatch(self) -> str:
        self._defs["hatch"] = (
            f'<pattern id="{_MARK}-hatch" width="5" height="5" patternUnits="userSpaceOnUse" '
            f'patternTransform="rotate(45)"><rect width="5" height="5" fill="{MISSING_COLOR}"/>'
            '<path d="M0 0V5" stroke="#c4c4c4" stroke-width="1.2"/></pattern>')
        return f"url(#{_MARK}-hatch)"

    def _swatch(self, x: float, y: float, w: float, h: float, colour: str | None) -> str:
        paint = self._hatch() if colour is None else colour
        return f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(w)}" height="{_f(h)}" fill="{paint}"/>'

    @staticmethod
    def _text(x: float, y: float, s: str, *, anchor: str = "start", size: float = 9,
              fill: str = TEXT_COLOR, weight: str | None = None, rotate: float | None = None,
              baseline: str = "central") -> str:
        attrs = f'x="{_f(x)}" y="{_f(y)}"'
        if anchor != "start":
            attrs += f' text-anchor="{anchor}"'
        if size != 9:
            attrs += f' font-size="{size:g}"'
        if weight:
            attrs += f' font-weight="{weight}"'
        if rotate:
            attrs += f' transform="rotate({rotate:g} {_f(x)} {_f(y)})"'
        return (f'<text {attrs} fill="{fill}" dominant-baseline="{baseline}">'
                f"{escape(str(s), quote=False)}</text>")


def _line(x1: float, y1: float, x2: float, y2: float, colour: str, width: float,
          dash: str | None = None) -> str:
    d = f' stroke-dasharray="{dash}"' if dash else ""
    return (f'<line x1="{_f(x1)}" y1="{_f(y1)}" x2="{_f(x2)}" y2="{_f(y2)}" stroke="{colour}" '
            f'stroke-width="{width:g}"{d}/>')
