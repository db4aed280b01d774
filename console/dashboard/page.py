"""A read dashboard → one self-contained HTML page: inline CSS and SVG, nothing fetched.

Widgets keep CloudWatch's 24-column grid, at ``COLUMN`` by ``ROW`` CSS pixels a grid unit,
so the page looks like the console's and a test can find a widget by its place
(``chart_origin``). What a widget leaves out is written under it.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from html import escape

from console.dashboard.read import Board, Widget
from console.dashboard.svg import line_chart, single_values

COLUMN = 50
ROW = 50
HEADER = 56
"""Height of the page's heading, above the grid."""
TITLE = 36
"""Height of a widget's title, above its chart: two lines, so that a narrow widget's long
title wraps instead of being cut."""
WIDTH = 24 * COLUMN
STATES = {"OK": "#2ca02c", "ALARM": "#d62728", "INSUFFICIENT_DATA": "#7f7f7f"}


def chart_origin(widget: Widget) -> tuple[int, int]:
    """Page coordinates of the top left corner of the widget's chart."""
    return widget.x * COLUMN, HEADER + widget.y * ROW + TITLE


def chart_size(widget: Widget) -> tuple[int, int]:
    return widget.width * COLUMN, widget.height * ROW - TITLE


def _body(widget: Widget, board: Board) -> str:
    width, height = chart_size(widget)
    if widget.image:
        data = base64.b64encode(widget.image).decode()
        return (
            f'<img class="chart" alt="{escape(widget.title)}, drawn by CloudWatch" '
            f'width="{width}" height="{height}" src="data:image/png;base64,{data}">'
        )
    if widget.kind == "chart":
        return line_chart(
            widget.series,
            start=board.start,
            end=board.end,
            width=width,
            height=height,
            is_stacked=widget.stacked,
            annotations=widget.annotations,
            y_label=widget.y_label,
            y_min=widget.y_min,
        )
    if widget.kind == "value":
        return single_values(widget.series)
    if widget.kind == "alarms":
        return "".join(
            f'<span class="alarm" style="background:{STATES.get(state, "#444")}">'
            f"{escape(name)}: {escape(state)}</span>"
            for name, state in widget.alarms
        )
    if widget.link:
        return (
            f'<p class="link">{escape(widget.text)}: '
            f'<a href="{escape(widget.link)}">run the query in the CloudWatch console</a></p>'
        )
    return f"<pre>{escape(widget.text)}</pre>"


def _widget(widget: Widget, board: Board) -> str:
    left, top = chart_origin(widget)
    width, height = chart_size(widget)
    notes = "".join(f'<p class="note">{escape(note)}</p>' for note in widget.notes)
    if notes:  # over the chart's foot, never clipped away with the widget's overflow
        notes = f'<div class="notes">{notes}</div>'

    return (
        f'<section class="widget {widget.kind}" style="left:{left}px;top:{top - TITLE}px;'
        f'width:{width}px;height:{height + TITLE}px">'
        f'<h2 title="{escape(widget.title)}">{escape(widget.title)}</h2>'
        f"{_body(widget, board)}{notes}</section>"
    )


_STYLE = (
    "body{margin:0;font:12px system-ui,sans-serif;color:#222;background:#fff;position:relative}"
    "header{height:" + str(HEADER) + "px;padding:8px 12px;box-sizing:border-box}"
    "h1{font-size:16px;margin:0 0 4px}"
    ".widget{position:absolute;box-sizing:border-box;overflow:hidden;border:1px solid #e4e4e4}"
    ".widget h2{font-size:13px;margin:0;height:"
    + str(TITLE)
    + "px;line-height:"
    + str(TITLE // 2)
    + "px;padding:0 6px;box-sizing:border-box;overflow:hidden}"
    ".chart{display:block}.axis,.legend{font-size:10px;fill:#555}.nodata{font-size:13px;fill:#555}"
    ".notes{position:absolute;left:0;right:0;bottom:0;background:#fff8e6}"
    ".note{color:#8a4b00;margin:2px 6px;font-size:11px}"
    ".alarm{display:inline-block;color:#fff;margin:4px;padding:2px 6px;border-radius:3px}"
    ".value{font-size:14px;margin:6px}.value b{font-size:24px}"
    "pre{margin:4px 6px;font-size:10px;white-space:pre-wrap}.link{margin:6px;font-size:13px}"
)


def page(board: Board) -> str:
    bottom = max((HEADER + (w.y + w.height) * ROW for w in board.widgets), default=HEADER)
    span = " to ".join(
        datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
        for at in (board.start, board.end)
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(board.name)}</title><style>{_STYLE}</style></head>"
        f'<body style="width:{WIDTH}px;height:{bottom}px">'
        f"<header><h1>CloudWatch dashboard {escape(board.name)}</h1><p>{span} (UTC)</p></header>"
        + "".join(_widget(w, board) for w in board.widgets)
        + "</body></html>"
    )
