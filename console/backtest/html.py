"""The backtest's document → one self-contained HTML page: heading, fleet timeline, decisions.

Inline CSS and inline SVG, no script, nothing fetched: the page opens from a mail or a
ticket. Top to bottom: the heading with the totals, the legend, the timeline (a row per
node, healthy nodes too: an empty row is news; a time axis with ticks in the history's own
range) and a table of every decision, so that no decision lives only in a hover title.

Marks that would fall on one spot of a row are one mark: the strongest action's colour
(``STRONGEST``), with the number of decisions it stands for written in it and each of them
in its title. A weaker mark drawn last can no longer hide a replacement.

The layout is fixed (``LEFT``, ``TOP``, ``ROW``, ``WIDTH``, ``AXIS_FILL``) so that a test can
find the timeline and a node's row in a screenshot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from html import escape
from typing import Any

from console.backtest.axis import ticks
from console.backtest.report import ACTIONS, TOTALS

COLOURS: Mapping[str, str] = {
    "notify": "#1f77b4",
    "monitor": "#9467bd",
    "reboot": "#ff7f0e",
    "replace": "#d62728",
    "held-breaker": "#8c564b",
    "held-fleet": "#e377c2",
    "duplicate": "#bcbd22",
    "upgraded": "#17becf",
    "below-threshold": "#2ca02c",
    "superseded": "#7f7f7f",
}
"""Every action's colour (``report.ACTIONS``), far enough apart to tell in a picture."""
STRONGEST = (
    "replace",
    "reboot",
    "held-fleet",
    "held-breaker",
    "monitor",
    "upgraded",
    "notify",
    "duplicate",
    "superseded",
    "below-threshold",
)
"""Every action, what happened to the node first: the one a shared mark shows."""
AXIS_FILL = "#e8edf3"
"""The axis band across the top of the timeline, a colour no mark has."""
LEFT = 240
"""Width of the node names' column, in CSS pixels; the plot starts here."""
TOP = 36
"""Height of the axis band: the first node's row starts this far below the timeline's top."""
ROW = 28
WIDTH = 1000
MARK = 7
"""Radius of a mark."""
_PLOT = WIDTH - LEFT - 2 * MARK - 10
_SPOT = 2 * MARK + 2
"""Marks within one spot of this many pixels are one mark; neighbouring spots' marks do
not touch."""


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def _when(row: Mapping[str, Any]) -> str:
    return str(row["acted"] or row["decided"] or row["first_line"])


def _x(at: float, start: float, span: float) -> float:
    return LEFT + MARK + 5 + _PLOT * ((at - start) / span if span else 0.5)


def _action(row: Mapping[str, Any]) -> str:
    return str(row["action"]) + (f" (would {row['would']})" if row["action"] == "monitor" else "")


def _title(row: Mapping[str, Any]) -> str:
    return (
        f"{row['fault_id']}: {_action(row)} at {_when(row)}; first line {row['first_line']}; "
        f"{row['lines']} line(s); {row['reason']}"
    )


def _spots(rows: Sequence[Mapping[str, Any]], start: float, span: float) -> dict[int, list[Any]]:
    """A node's rows by the spot of the row they fall on, strongest first in each."""
    spots: dict[int, list[Any]] = {}
    for row in rows:
        spots.setdefault(int((_x(_epoch(_when(row)), start, span) - LEFT) // _SPOT), []).append(row)
    for found in spots.values():
        found.sort(key=lambda r: STRONGEST.index(r["action"]))
    return spots


def _mark(node: str, spot: int, found: Sequence[Mapping[str, Any]], y: float) -> str:
    x = LEFT + _SPOT * spot + _SPOT / 2
    title = f"{node}: " + "\n".join(_title(r) for r in found)
    count = (
        f'<text x="{x:.1f}" y="{y + 3:.1f}" class="count">{min(len(found), 99)}</text>'
        if len(found) > 1
        else ""
    )
    return (
        f'<g><title>{escape(title)}</title><circle cx="{x:.1f}" cy="{y:.1f}" r="{MARK}" '
        f'fill="{COLOURS[found[0]["action"]]}"/>{count}</g>'
    )


def _axis(start: float, end: float, height: int) -> list[str]:
    parts = [
        f'<rect x="0" y="0" width="{WIDTH}" height="{TOP}" fill="{AXIS_FILL}"/>',
        f'<text x="6" y="{TOP - 12}" class="axis">time (UTC)</text>',
    ]
    for at, label in ticks(start, end):
        x = _x(at, start, end - start)
        parts.append(
            f'<line x1="{x:.1f}" y1="{TOP - 6}" x2="{x:.1f}" y2="{height}" class="tick"/>'
            f'<text x="{x:.1f}" y="{TOP - 12}" class="axis" text-anchor="middle">'
            f"{escape(label)}</text>"
        )
    return parts


def _svg(doc: Mapping[str, Any], nodes: Sequence[str]) -> str:
    rows = doc["rows"]
    times = [_epoch(_when(r)) for r in rows] + [_epoch(r["first_line"]) for r in rows]
    start, end = (min(times), max(times)) if times else (0.0, 0.0)
    height = TOP + ROW * len(nodes)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" class="timeline" role="img" aria-label="fleet timeline">'
    ]
    for index, node in enumerate(nodes):
        y = TOP + ROW * index
        fill = "#f3f3f3" if index % 2 else "#ffffff"
        parts.append(f'<rect x="0" y="{y}" width="{WIDTH}" height="{ROW}" fill="{fill}"/>')
        parts.append(f'<text x="6" y="{y + ROW / 2 + 5}" class="node">{escape(node)}</text>')
    if rows:
        parts.extend(_axis(start, end, height))
    for index, node in enumerate(nodes):
        spots = _spots([r for r in rows if r["node"] == node], start, end - start)
        parts.extend(
            _mark(node, s, found, TOP + ROW * index + ROW / 2) for s, found in spots.items()
        )
    parts.append("</svg>")
    return "".join(parts)


def _legend() -> str:
    keys = "".join(
        f'<span class="key"><svg width="14" height="14"><circle cx="7" cy="7" r="6" '
        f'fill="{COLOURS[action]}"/></svg> {escape(action)}</span>'
        for action in ACTIONS
    )
    return (
        f'<p class="legend">{keys}</p><p class="note">A mark is a decision at the time of '
        "its last step; a number in a mark: that many decisions at one spot, shown in the "
        "strongest one's colour (replace, reboot, held, monitor, notify, ...). Every "
        "decision is in the table below.</p>"
    )


def _table(doc: Mapping[str, Any]) -> str:
    head = ("Node", "Fault", "Lines", "First line", "Decided", "Action", "At", "Why")
    cells = [
        (
            escape(r["node"]), escape(r["fault_id"]), str(r["lines"]), r["first_line"],
            r["decided"] or "-",
            f'<span class="dot" style="background:{COLOURS[r["action"]]}"></span>'
            + escape(_action(r)),
            r["acted"] or "-", escape(r["reason"]),
        )
        for r in doc["rows"]
    ]  # fmt: skip
    return (
        "<table><thead><tr>"
        + "".join(f"<th>{h}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in cells)
        + "</tbody></table>"
        if cells
        else "<p>No fault in the history: nothing to decide.</p>"
    )


_STYLE = (
    "body{margin:0;font:13px system-ui,sans-serif;color:#222;background:#fff}"
    "header,section{padding:8px 12px}h1{font-size:16px;margin:0 0 4px}"
    "h2{font-size:14px;margin:12px 0 6px}p{margin:4px 0}"
    ".axis{font-size:11px;fill:#444}.node{font:12px ui-monospace,monospace;fill:#222}"
    ".tick{stroke:#c8c8c8;stroke-width:1}"
    ".count{font:bold 9px system-ui,sans-serif;fill:#fff;text-anchor:middle}"
    ".key{margin-right:14px;white-space:nowrap}.key svg{vertical-align:middle}"
    ".note{color:#555}.timeline{display:block}.warn{color:#8a4b00}"
    "table{border-collapse:collapse}th,td{text-align:left;padding:2px 8px;"
    "border-bottom:1px solid #e4e4e4;vertical-align:top}td:nth-child(-n+7){white-space:nowrap}"
    "td:last-child{min-width:18em}"
    ".dot{display:inline-block;width:10px;height:10px;border-radius:5px;margin-right:4px}"
)


def page(doc: Mapping[str, Any], nodes: Sequence[str]) -> str:
    """The page; ``nodes`` are every node of the history, in row order."""
    totals = ", ".join(f"{n.replace('_', ' ')} {doc['totals'][n]}" for n in TOTALS)
    warn = (
        '<p class="warn">monitor-only: this cluster acts on no node group; nothing would '
        "have been cordoned, rebooted or replaced</p>"
        if doc["monitor_only"]
        else ""
    )
    heading = (
        f"nodemedic backtest: cluster {escape(doc['cluster'])}, group "
        f"{escape(doc['group'])} ({doc['group_size']} nodes)"
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{heading}</title><style>{_STYLE}</style></head><body>"
        f"<header><h1>{heading}</h1>{warn}<p>{escape(totals)}</p>{_legend()}</header>"
        f"{_svg(doc, nodes)}"
        f"<section><h2>Decisions</h2>{_table(doc)}</section></body></html>"
    )
