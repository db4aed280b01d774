"""Metric widgets drawn by CloudWatch itself (``GetMetricWidgetImage``), for a page that
shows exactly what the console shows: every statistic, percentiles and Metrics Insights
included, which the page's own drawing approximates or leaves out.

Only on AWS: moto has no such call, so the local world's page is drawn by
``console.dashboard.svg``. A widget CloudWatch refuses to draw keeps the page's own drawing
and says why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from console.dashboard.page import chart_size
from console.dashboard.read import Board, Widget

Place = tuple[int, int]


def metric_widget(properties: Mapping[str, Any], widget: Widget, board: Board) -> str:
    """The MetricWidget JSON of one dashboard widget: its own properties, the page's time
    range and the chart's size in pixels (CloudWatch's limit is 2,000 by 2,000)."""
    width, height = chart_size(widget)
    return json.dumps(
        {
            **properties,
            "width": min(width, 2000),
            "height": min(height, 2000),
            "start": datetime.fromtimestamp(board.start, UTC).isoformat(),
            "end": datetime.fromtimestamp(board.end, UTC).isoformat(),
            "timezone": "+0000",
        }
    )


def drawn_by_cloudwatch(cloudwatch: Any, name: str, board: Board) -> Board:
    """``board`` with each metric widget's image as CloudWatch draws it."""
    body = json.loads(cloudwatch.get_dashboard(DashboardName=name)["DashboardBody"])
    properties: dict[Place, Mapping[str, Any]] = {
        (int(raw.get("x", 0)), int(raw.get("y", 0))): raw.get("properties", {})
        for raw in body.get("widgets", [])
        if raw.get("type") == "metric"
    }
    widgets = []
    for widget in board.widgets:
        found = properties.get((widget.x, widget.y))
        if widget.kind not in ("chart", "value") or found is None:
            widgets.append(widget)
            continue
        try:
            answer = cloudwatch.get_metric_widget_image(
                MetricWidget=metric_widget(found, widget, board), OutputFormat="png"
            )
        except ClientError as exc:
            note = f"CloudWatch did not draw it ({exc.response['Error']['Code']}): drawn here"
            widgets.append(replace(widget, notes=(*widget.notes, note)))
            continue
        widgets.append(replace(widget, image=bytes(answer["MetricWidgetImage"]), notes=()))
    return replace(board, widgets=tuple(widgets))
