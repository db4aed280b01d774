"""``nodemedic dashboard --html`` against moto, looked at in a real browser: known
datapoints come out as lines of their series' colours in their chart, a widget without
data says so and draws none, and what the reader cannot evaluate is written on the page."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from console.cli import main
from console.dashboard.page import WIDTH, chart_origin, chart_size
from console.dashboard.read import Widget
from console.dashboard.svg import NO_DATA, PALETTE, legend_rows, plot_box
from tests.support.browser import RGB, Picture, read_png, screenshot
from world.motoserver import moto_server

REGION = "us-east-1"
GROUPS = ("p5-a", "trn1-b")
SEARCH = (
    'FILL(SEARCH(\'{"NodeMedic","Cluster","NodeGroup"} Cluster="pic" AND '
    "(MetricName=\"InRemediation\")', 'Maximum', 300), REPEAT)"
)
WIDGETS: list[dict[str, Any]] = [
    {
        "type": "metric",
        "x": 0,
        "y": 0,
        "width": 12,
        "height": 6,
        "properties": {
            "title": "Silent and stranded",
            "view": "timeSeries",
            "metrics": [
                ["NodeMedic", "SilentNodes", "Cluster", "pic", {"stat": "Maximum"}],
                ["NodeMedic", "StrandedNodes", "Cluster", "pic", {"stat": "Maximum"}],
            ],
        },
    },
    {
        "type": "metric",
        "x": 12,
        "y": 0,
        "width": 12,
        "height": 6,
        "properties": {
            "title": "In remediation",
            "view": "timeSeries",
            "metrics": [
                [{"expression": SEARCH, "label": "${PROP('Dim.NodeGroup')}"}],
            ],
        },
    },
    {
        "type": "metric",
        "x": 0,
        "y": 6,
        "width": 12,
        "height": 6,
        "properties": {
            "title": "Quiet",
            "view": "timeSeries",
            "metrics": [
                ["NodeMedic", "BreakerTripped", "Cluster", "pic", {"stat": "Sum"}],
                [{"expression": "ANOMALY_DETECTION_BAND(m1)", "label": "band"}],
            ],
        },
    },
]


def colour(hex_colour: str) -> RGB:
    return int(hex_colour[1:3], 16), int(hex_colour[3:5], 16), int(hex_colour[5:7], 16)


def plot_colours(picture: Picture, index: int, series: int) -> set[RGB]:
    """The palette colours inside widget ``index``'s plot area (legend excluded)."""
    raw = WIDGETS[index]
    widget = Widget("chart", "", raw["x"], raw["y"], raw["width"], raw["height"])
    (x0, y0), (width, height) = chart_origin(widget), chart_size(widget)
    left, top, right, bottom = plot_box(width, height, legend_rows([None] * series, width))  # type: ignore[list-item]
    # Not the palette's grey: anti-aliased text has it too.
    palette = {colour(c) for c in PALETTE if c != "#7f7f7f"}
    return {
        picture.pixel(x, y)
        for y in range(y0 + top + 1, y0 + bottom)
        for x in range(x0 + left + 1, x0 + right)
    } & palette


@pytest.fixture
def endpoint() -> Iterator[str]:
    with moto_server() as url:
        yield url


def put(cloudwatch: Any, name: str, dimensions: dict[str, str], values: list[float]) -> None:
    now = datetime.now(UTC)
    cloudwatch.put_metric_data(
        Namespace="NodeMedic",
        MetricData=[
            {
                "MetricName": name,
                "Dimensions": [{"Name": k, "Value": v} for k, v in dimensions.items()],
                "Value": value,
                "Timestamp": now - timedelta(minutes=5 * (len(values) - i)),
            }
            for i, value in enumerate(values)
        ],
    )


def test_charts_draw_their_series_and_an_empty_widget_says_so(
    endpoint: str, tmp_path: Path
) -> None:
    cloudwatch = boto3.client("cloudwatch", region_name=REGION, endpoint_url=endpoint)
    body = {"start": "-PT1H", "widgets": WIDGETS}
    cloudwatch.put_dashboard(DashboardName="nodemedic-pic", DashboardBody=json.dumps(body))
    put(cloudwatch, "SilentNodes", {"Cluster": "pic"}, [0, 1, 3, 2, 4])
    put(cloudwatch, "StrandedNodes", {"Cluster": "pic"}, [5, 5, 6, 1, 0])
    for offset, group in enumerate(GROUPS):
        put(cloudwatch, "InRemediation", {"Cluster": "pic", "NodeGroup": group}, [offset, 2])

    html = tmp_path / "dashboard.html"
    argv = ["dashboard", "--cluster", "pic", "--html", str(html), "--region", REGION]
    assert main([*argv, "--endpoint-url", endpoint]) == 0
    text = html.read_text()
    assert "ANOMALY_DETECTION_BAND" in text and "not drawn" in text
    assert text.count(NO_DATA) == 1

    picture = read_png(screenshot(html, tmp_path / "shot.png", width=WIDTH, height=700))
    two = {colour(PALETTE[0]), colour(PALETTE[1])}
    assert plot_colours(picture, 0, 2) == two, "both plain metrics are drawn"
    assert plot_colours(picture, 1, 2) == two, "a line per node group from SEARCH"
    assert plot_colours(picture, 2, 1) == set(), "a widget without data draws no series"


def test_a_missing_dashboard_is_one_clear_error(
    endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    html = tmp_path / "none.html"
    argv = ["dashboard", "--cluster", "absent", "--html", str(html), "--region", REGION]
    assert main([*argv, "--endpoint-url", endpoint]) == 2
    assert "nodemedic dashboard:" in capsys.readouterr().err
    assert not html.exists()
