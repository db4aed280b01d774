"""The backtest's document → one self-contained HTML page with a fleet timeline.

Inline CSS and inline SVG, nothing fetched: the page opens from a mail or a ticket. A row
per node (healthy nodes too: an empty row is news), a mark per decision at the time of its
last step, coloured by its action, a ``<title>`` on each mark for the hover text, a
legend. The layout is fixed (``LEFT``, ``TOP``, ``ROW``, ``WIDTH``) so that a test can find a
node's row in a screenshot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from html import escape
from typing import Any

from console.backtest.report import ACTIONS, TOTALS, when

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
LEFT = 240
"""Width of the node names' column, in CSS pixels; the plot starts here."""
TOP = 48
ROW = 28
WIDTH = 1000
MARK = 7
"""Radius of a mark."""
_PLOT = WIDTH - LEFT - 2 * MARK - 10


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def _when(row: Mapping[str, Any]) -> str:
    return str(row["acted"] or row["decided"] or row["first_line"])


def _x(at: float, start: float, span: float) -> float:
    return LEFT + MARK + 5 + _PLOT * ((at - start) / span if span else 0.5)


def _mark(row: Mapping[str, Any], y: float, start: float, span: float) -> str:
    title = (
        f"{row['node']} {row['fault_id']}: {row['action']}"
        + (f" (would {row['would']})" if row["action"] == "monitor" else "")
        + f" at {_when(row)}; first line {row['first_line']}; {row['lines']} line(s); "
        + row["reason"]
    )
    return (
        f'<circle cx="{_x(_epoch(_when(row)), start, span):.1f}" cy="{y:.1f}" r="{MARK}" '
        f'fill="{COLOURS[row["action"]]}"><title>{escape(title)}</title></circle>'
    )


def _svg(doc: Mapping[str, Any], nodes: Sequence[str]) -> str:
    rows = doc["rows"]
    times = [_epoch(_when(r)) for r in rows] + [_epoch(r["first_line"]) for r in rows]
    start, end = (min(times), max(times)) if times else (0.0, 0.0)
    height = TOP + ROW * len(nodes) + 20
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" class="timeline" role="img" aria-label="fleet timeline">',
        f'<text x="{LEFT}" y="20" class="axis">{when(start) if rows else ""}</text>',
        f'<text x="{WIDTH - 4}" y="20" class="axis" text-anchor="end">'
        f"{when(end) if rows else ''}</text>",
    ]
    for index, node in enumerate(nodes):
        y = TOP + ROW * index
        fill = "#f3f3f3" if index % 2 else "#ffffff"
        parts.append(f'<rect x="0" y="{y}" width="{WIDTH}" height="{ROW}" fill="{fill}"/>')
        parts.append(f'<text x="6" y="{y + ROW / 2 + 5}" class="node">{escape(node)}</text>')
        parts.extend(_mark(r, y + ROW / 2, start, end - start) for r in rows if r["node"] == node)
    parts.append("</svg>")
    return "".join(parts)


def _legend() -> str:
    return "".join(
        f'<span class="key"><svg width="14" height="14"><circle cx="7" cy="7" r="6" '
        f'fill="{COLOURS[action]}"/></svg> {escape(action)}</span>'
        for action in ACTIONS
    )


_STYLE = (
    "body{margin:0;font:13px system-ui,sans-serif;color:#222;background:#fff}"
    "header,footer{padding:8px 12px}h1{font-size:16px;margin:0 0 4px}"
    ".axis{font-size:11px;fill:#555}.node{font:12px ui-monospace,monospace;fill:#222}"
    ".key{margin-right:14px;white-space:nowrap}.key svg{vertical-align:middle}"
    ".timeline{display:block}.warn{color:#8a4b00}"
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
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>nodemedic backtest: {escape(doc['cluster'])}</title>"
        f"<style>{_STYLE}</style></head><body>"
        f"{_svg(doc, nodes)}"
        f"<footer><h1>nodemedic backtest: cluster {escape(doc['cluster'])}, group "
        f"{escape(doc['group'])} ({doc['group_size']} nodes)</h1>{warn}<p>{escape(totals)}</p>"
        f"<p>{_legend()}</p></footer></body></html>"
    )
