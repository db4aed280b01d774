"""The dashboard's SVG: values land where the scale puts them, an empty chart says so
instead of drawing axes, many series keep distinct colours, stacking adds up."""

from __future__ import annotations

import re
from itertools import pairwise

from console.dashboard.read import Series
from console.dashboard.svg import (
    LABEL_CHARACTER,
    NO_DATA,
    colour,
    line_chart,
    nice_top,
    plot_box,
    stacked,
    time_ticks,
)


def _points(svg: str) -> list[list[tuple[float, float]]]:
    return [
        [(float(x), float(y)) for x, y in (p.split(",") for p in found.split())]
        for found in re.findall(r'<polyline points="([^"]*)"', svg)
    ]


def test_values_are_scaled_into_the_plot_area() -> None:
    svg = line_chart(
        [Series("a", ((0.0, 0.0), (50.0, 5.0), (100.0, 10.0)))],
        start=0.0,
        end=100.0,
        width=400,
        height=200,
    )
    left, top, right, bottom = plot_box(400, 200, 1)
    (line,) = _points(svg)
    assert line[0] == (left, bottom)
    assert line[-1] == (right, top)
    assert line[1] == ((left + right) / 2, (top + bottom) / 2)
    assert NO_DATA not in svg


def test_a_chart_without_datapoints_says_so_and_draws_no_line() -> None:
    svg = line_chart([Series("a", ())], start=0.0, end=100.0, width=400, height=200)
    assert NO_DATA in svg and "(no data)" in svg
    assert _points(svg) == []


def test_many_series_keep_distinct_colours() -> None:
    series = [Series(f"s{i}", ((0.0, float(i)), (10.0, float(i)))) for i in range(40)]
    svg = line_chart(series, start=0.0, end=10.0, width=1200, height=600)
    strokes = re.findall(r'<polyline [^>]*stroke="(#[0-9a-f]{6})"', svg)
    assert len(strokes) == 40 and len(set(strokes)) == 40
    assert [colour(i) for i in range(40)] == strokes


def test_stacked_series_add_up_and_the_axis_ends_on_a_round_number() -> None:
    a, b = Series("a", ((0.0, 1.0), (1.0, 2.0))), Series("b", ((0.0, 3.0), (1.0, 4.0)))
    assert [s.points for s in stacked([a, b])] == [a.points, ((0.0, 4.0), (1.0, 6.0))]
    assert [nice_top(v) for v in (0.0, 3.0, 7.0, 12.0, 2.2)] == [1.0, 5.0, 10.0, 20.0, 2.5]


def test_time_labels_never_overlap_however_narrow_the_chart() -> None:
    for width in (160, 300, 600, 1200):
        svg = line_chart(
            [Series("a", ((0.0, 1.0), (90.0, 2.0)))], start=0.0, end=90.0, width=width, height=200
        )
        labels = re.findall(
            r'<text x="([\d.]+)" [^>]*text-anchor="(\w+)" class="axis time">([^<]*)<', svg
        )
        spans = []
        for x, anchor, text in labels:
            size = len(text) * LABEL_CHARACTER
            begin = {"start": 0.0, "middle": size / 2, "end": size}[anchor]
            spans.append((float(x) - begin, float(x) - begin + size))
        assert len(spans) >= 2
        assert all(a[1] <= b[0] for a, b in pairwise(spans)), (width, spans)
    assert time_ticks(1140, 8) == 5
