"""The results page's plots as inline SVG (:mod:`harness.report.page`): a series per system with its
95% intervals, on a linear or a decades axis. No script and nothing fetched: the SVG is text in
the page."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from html import escape

from harness.report.reproduction import UNITS
from harness.systems import PLOTTED_SYSTEMS

WIDTH, HEIGHT = 640, 360
LEFT, RIGHT, TOP, BOTTOM = 64, 230, 36, 54
DODGE = 3.0  # px between the systems' markers at one U, so their intervals do not overlap
PALETTE = (
    "#1f77b4", "#ff7f0e", "#7f7f7f", "#2ca02c", "#d62728",
    "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf",
    "#393b79", "#637939",
)  # fmt: skip
SYSTEM_COLOUR = dict(zip(PLOTTED_SYSTEMS, PALETTE, strict=False))  # a peer beyond: the last


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    interval: tuple[float, float] | None = None


@dataclass(frozen=True)
class Series:
    name: str
    points: tuple[Point, ...]
    colour: str
    dashed: bool = False


@dataclass(frozen=True)
class Axis:
    label: str
    low: float
    high: float
    ticks: tuple[float, ...]
    log: bool
    tick_label: Callable[[float], str]

    def fraction(self, value: float) -> float:
        if self.log:
            return (math.log10(value) - math.log10(self.low)) / (math.log10(self.high) - math.log10(self.low))
        return (value - self.low) / (self.high - self.low)


@dataclass(frozen=True)
class Plot:
    name: str  # the svg's data-plot
    title: str
    x: Axis
    y: Axis
    series: tuple[Series, ...]
    dodge: bool = False


def share_axis(label: str) -> Axis:
    return Axis(label, 0.0, 1.0, tuple(i / 5 for i in range(6)), False, lambda v: f"{v:.1f}")


def units_axis() -> Axis:
    # Log-spaced: U doubles from preset to preset.
    return Axis("U (units per context)", 8.0, 50.0, tuple(map(float, UNITS)), True, lambda v: f"{v:g}")


def decades_axis(label: str, values: Iterable[float], tick_label: Callable[[float], str]) -> Axis:
    positive = [v for v in values if v > 0] or [1.0]
    # A hair of slack: 10,000,239 tokens sits on the 10M line, not under a decade of its own.
    low = math.floor(math.log10(min(positive)) + 1e-3)
    high = max(math.ceil(math.log10(max(positive)) - 1e-3), low + 1)
    ticks = tuple(10.0**e for e in range(low, high + 1))
    return Axis(label, ticks[0], ticks[-1], ticks, True, tick_label)


def magnitude(value: float) -> str:
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def _xy(plot: Plot, x: float, y: float) -> tuple[float, float]:
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    return LEFT + plot.x.fraction(x) * inner_w, TOP + (1 - plot.y.fraction(y)) * inner_h


def _axes(plot: Plot) -> list[str]:
    right, bottom = WIDTH - RIGHT, HEIGHT - BOTTOM
    parts = [f'<rect class="frame" x="{LEFT}" y="{TOP}" width="{right - LEFT}" height="{bottom - TOP}"/>']
    for tick in plot.x.ticks:
        x, _ = _xy(plot, tick, plot.y.low)
        parts.append(f'<line class="grid" x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{bottom}"/>')
        label = escape(plot.x.tick_label(tick))
        parts.append(f'<text class="tick" x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">{label}</text>')
    for tick in plot.y.ticks:
        _, y = _xy(plot, plot.x.low, tick)
        parts.append(f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}"/>')
        label = escape(plot.y.tick_label(tick))
        parts.append(f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
    parts.append(
        f'<text class="axis-label" x="{(LEFT + right) / 2:.1f}" y="{HEIGHT - 12}" '
        f'text-anchor="middle">{escape(plot.x.label)}</text>'
    )
    parts.append(
        f'<text class="axis-label" transform="translate(16 {(TOP + bottom) / 2:.1f}) rotate(-90)" '
        f'text-anchor="middle">{escape(plot.y.label)}</text>'
    )
    return parts


def _series(plot: Plot, index: int, series: Series) -> list[str]:
    shift = (index - (len(plot.series) - 1) / 2) * DODGE if plot.dodge else 0.0
    points = [(p, *_xy(plot, p.x, p.y)) for p in series.points]
    d = " ".join(f"{'M' if i == 0 else 'L'}{x + shift:.1f},{y:.1f}" for i, (_, x, y) in enumerate(points))
    dash = ' stroke-dasharray="6 3"' if series.dashed else ""
    name = escape(series.name)
    parts = [
        f'<path class="series" data-series="{name}" d="{d}" stroke="{series.colour}"{dash}>'
        f"<title>{name}</title></path>"
    ]
    for point, x, y in points:
        x += shift
        if point.interval:
            _, top = _xy(plot, point.x, point.interval[1])
            _, low = _xy(plot, point.x, point.interval[0])
            parts.append(
                f'<line class="errbar" data-series="{name}" x1="{x:.1f}" y1="{low:.1f}" x2="{x:.1f}" '
                f'y2="{top:.1f}" stroke="{series.colour}"/>'
            )
        title = f"{series.name}: {point.y:g}" + (
            f" [{point.interval[0]:g}, {point.interval[1]:g}]" if point.interval else ""
        )
        parts.append(
            f'<circle class="marker" cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{series.colour}">'
            f"<title>{escape(title)}</title></circle>"
        )
    return parts


def _legend(plot: Plot) -> list[str]:
    x = WIDTH - RIGHT + 14
    parts = ['<g class="legend">']
    for i, series in enumerate(plot.series):
        y = TOP + 8 + i * 18
        dash = ' stroke-dasharray="6 3"' if series.dashed else ""
        parts.append(
            f'<line x1="{x}" y1="{y}" x2="{x + 22}" y2="{y}" stroke="{series.colour}" '
            f'stroke-width="2"{dash}/><text x="{x + 28}" y="{y + 4}">{escape(series.name)}</text>'
        )
    parts.append("</g>")
    return parts


def svg(plot: Plot) -> str:
    """The plot as inline SVG: axes, one ``path.series`` per series with ``line.errbar`` intervals
    and ``circle.marker`` points, and a legend."""
    body = [*_axes(plot)]
    for index, series in enumerate(plot.series):
        body.extend(_series(plot, index, series))
    body.extend(_legend(plot))
    return (
        f'<svg class="plot" data-plot="{escape(plot.name)}" xmlns="http://www.w3.org/2000/svg" '
        f'width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(plot.title)}"><title>{escape(plot.title)}</title>'
        f'<text class="plot-title" x="{LEFT}" y="22">{escape(plot.title)}</text>' + "".join(body) + "</svg>"
    )
