"""Inline SVG for one dashboard widget: a line chart with its time axis, value axis,
annotations and legend, or a single value per series.

Pure functions of the data and a box size, so that a test can compute where the plot area
lies (``plot_box``) and look there in a screenshot.
"""

from __future__ import annotations

import colorsys
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape

from console.dashboard.read import Annotation, Series

PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
"""CloudWatch's own series colours, in its order."""
MARGIN_LEFT = 48
MARGIN_TOP = 8
MARGIN_RIGHT = 12
AXIS = 22
"""Height of the time axis' labels under the plot."""
LEGEND_ROW = 16
NO_DATA = "No data in this time range"
LABEL_CHARACTER = 6
"""Width in px of a character of an axis label, at the widest (digits at 10 px)."""
LABEL_GAP = 12


def colour(index: int) -> str:
    """The palette, then hues a golden angle apart: many series stay apart."""
    if index < len(PALETTE):
        return PALETTE[index]
    hue = (index - len(PALETTE)) * 0.381966 % 1.0
    r, g, b = colorsys.hls_to_rgb(hue, 0.45, 0.75)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def legend_rows(series: Sequence[Series], width: int) -> int:
    per_row = max(1, (width - MARGIN_LEFT) // 180)
    return math.ceil(len(series) / per_row) if series else 0


def plot_box(width: int, height: int, legend: int) -> tuple[int, int, int, int]:
    """(left, top, right, bottom) of the plot area in a chart ``width`` by ``height``
    with ``legend`` rows of legend under it."""
    bottom = height - AXIS - legend * LEGEND_ROW
    return MARGIN_LEFT, MARGIN_TOP, width - MARGIN_RIGHT, max(bottom, MARGIN_TOP + 20)


def nice_top(value: float) -> float:
    """The smallest 1, 2, 2.5 or 5 times a power of ten at or above ``value``: round axis labels."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return float(next(step * power for step in (1, 2, 2.5, 5, 10) if step * power >= value))


def stacked(series: Sequence[Series]) -> list[Series]:
    """Each series on top of the ones before it, at each time."""
    totals: dict[float, float] = {}
    out = []
    for s in series:
        points = []
        for at, value in s.points:
            totals[at] = totals.get(at, 0.0) + value
            points.append((at, totals[at]))
        out.append(Series(s.label, tuple(points)))
    return out


def _clock(at: float, span: float) -> str:
    stamp = datetime.fromtimestamp(at, UTC)
    return stamp.strftime("%m-%d %H:%M" if span > 86400 else "%H:%M:%S" if span < 600 else "%H:%M")


def time_ticks(plot_width: float, characters: int) -> int:
    """How many time labels fit under a plot ``plot_width`` wide, at most 5, at least the
    two ends. The first and last hang inwards from the ends, the others are centred on
    their tick: next to an end a label needs one and a half label widths and a gap."""
    label = characters * LABEL_CHARACTER
    return max(2, min(5, int(plot_width // (1.5 * label + LABEL_GAP)) + 1))


def _legend(series: Sequence[Series], width: int, top: int) -> list[str]:
    per_row = max(1, (width - MARGIN_LEFT) // 180)
    parts = []
    for index, s in enumerate(series):
        x = MARGIN_LEFT + 180 * (index % per_row)
        y = top + LEGEND_ROW * (index // per_row) + 12
        label = s.label + ("" if s.points else " (no data)")
        parts.append(
            f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{colour(index)}"/>'
            f'<text x="{x + 14}" y="{y}" class="legend">{escape(label[:28])}'
            f"<title>{escape(label)}</title></text>"
        )
    return parts


def line_chart(
    series: Sequence[Series],
    *,
    start: float,
    end: float,
    width: int,
    height: int,
    is_stacked: bool = False,
    annotations: Sequence[Annotation] = (),
    y_label: str = "",
    y_min: float | None = None,
) -> str:
    """The chart; with no datapoint at all it says so in the plot instead of drawing axes
    that would pass for a quiet system."""
    rows = legend_rows(series, width)
    left, top, right, bottom = plot_box(width, height, rows)
    drawn = stacked(series) if is_stacked else list(series)
    values = [v for s in drawn for _, v in s.points]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" class="chart" role="img">',
        f'<rect x="{left}" y="{top}" width="{right - left}" height="{bottom - top}" '
        'fill="#ffffff" stroke="#d0d0d0"/>',
    ]
    if not values:
        parts.append(
            f'<text x="{(left + right) / 2}" y="{(top + bottom) / 2}" text-anchor="middle" '
            f'class="nodata">{NO_DATA}</text>'
        )
    else:
        low = min(0.0, *values) if y_min is None else y_min
        high = nice_top(max([*values, *(a.value for a in annotations), low + 1e-9]) - low) + low
        span = end - start or 1.0

        def x(at: float) -> float:
            return left + (right - left) * (at - start) / span

        def y(value: float) -> float:
            return bottom - (bottom - top) * (value - low) / (high - low)

        for tick in range(5):
            value = low + (high - low) * tick / 4
            parts.append(
                f'<line x1="{left}" x2="{right}" y1="{y(value):.1f}" y2="{y(value):.1f}" '
                f'stroke="#eeeeee"/><text x="{left - 4}" y="{y(value) + 4:.1f}" '
                f'text-anchor="end" class="axis">{value:g}</text>'
            )
        ticks = time_ticks(right - left, len(_clock(start, span)))
        for tick in range(ticks):
            at = start + span * tick / (ticks - 1)
            anchor = "start" if tick == 0 else "end" if tick == ticks - 1 else "middle"
            parts.append(
                f'<text x="{x(at):.1f}" y="{bottom + 15}" text-anchor="{anchor}" '
                f'class="axis time">{_clock(at, span)}</text>'
            )
        for a in annotations:
            parts.append(
                f'<line x1="{left}" x2="{right}" y1="{y(a.value):.1f}" y2="{y(a.value):.1f}" '
                f'stroke="{escape(a.colour)}" stroke-dasharray="6 3"><title>'
                f"{escape(a.label)}</title></line>"
            )
        for index, s in enumerate(drawn):
            dots = " ".join(f"{x(at):.1f},{y(v):.1f}" for at, v in s.points)
            parts.append(
                f'<polyline points="{dots}" fill="none" stroke="{colour(index)}" '
                f'stroke-width="2"><title>{escape(s.label)}</title></polyline>'
            )
            parts.extend(
                f'<circle cx="{x(at):.1f}" cy="{y(v):.1f}" r="3" fill="{colour(index)}"/>'
                for at, v in s.points
            )
    if y_label:
        parts.append(
            f'<text x="10" y="{(top + bottom) / 2}" class="axis" '
            f'transform="rotate(-90 10 {(top + bottom) / 2})" text-anchor="middle">'
            f"{escape(y_label)}</text>"
        )
    parts += _legend(series, width, bottom + AXIS)
    parts.append("</svg>")
    return "".join(parts)


def single_values(series: Sequence[Series]) -> str:
    """The latest value of each series, in its colour; a series without one says so."""
    if not series:
        return f'<p class="nodata">{NO_DATA}</p>'
    return "".join(
        f'<div class="value" style="color:{colour(index)}">'
        f"<b>{f'{s.points[-1][1]:g}' if s.points else 'no data'}</b> {escape(s.label)}</div>"
        for index, s in enumerate(series)
    )
