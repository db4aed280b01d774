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
from console.dashboard.svg import NO_DATA, PALETTE, plot_box
from nodemedic.contracts.metrics import (
    BREAKER_METRIC,
    CLUSTER_DIMENSION,
    FAULT_TO_ACTION_METRIC,
    METRICS_NAMESPACE,
    NODE_GROUP_DIMENSION,
    REMEDIATION_EXTRA_DIMENSIONS,
    REMEDIATIONS_METRIC,
)
from stacks.insights import insights_query
from stacks.synth import synth_template
from tests.support.browser import RGB, Picture, read_png, screenshot
from tests.support.dashboard_page import colour, page_problems
from tests.support.dashboard_page import plot_colours as drawn_colours
from tests.support.templates import SETTINGS, render
from world.aws.motoserver import moto_server

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


def plot_colours(picture: Picture, index: int, series: int) -> set[RGB]:
    """The palette colours inside widget ``index``'s plot area (legend excluded)."""
    raw = WIDGETS[index]
    widget = Widget("chart", "", raw["x"], raw["y"], raw["width"], raw["height"])
    return drawn_colours(picture, widget, series)


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


def _demo_like_body() -> dict[str, Any]:
    """The widgets the demo's page left empty or garbled, as the stack writes them."""
    percentiles = [
        [{"expression": _percentile_search(p), "label": f"{p} ${{PROP('Dim.NodeGroup')}}"}]
        for p in ("p50", "p99")
    ]
    outcomes = insights_query(
        "SUM",
        REMEDIATIONS_METRIC,
        METRICS_NAMESPACE,
        cluster="pic",
        dimensions=None,
        group_by=REMEDIATION_EXTRA_DIMENSIONS,
    )
    held = insights_query("SUM", BREAKER_METRIC, METRICS_NAMESPACE, cluster="pic")
    log = "SOURCE '/nodemedic/pic/nodes' | fields @timestamp, @message\n| limit 50"
    return {
        "start": "-PT1H",
        "widgets": [
            {
                "type": "metric",
                **DEMO_PLACES["outcomes"],
                "properties": {
                    "title": "Remediations by action and outcome",
                    "stacked": True,
                    "metrics": [[{"expression": outcomes}]],
                },
            },
            {
                "type": "metric",
                **DEMO_PLACES["percentiles"],
                "properties": {
                    "title": "Fault to first action on the node, p50 and p99 (s)",
                    "metrics": percentiles,
                },
            },
            {
                "type": "metric",
                **DEMO_PLACES["held"],
                "properties": {
                    "title": "Breaker: trips of the cluster, decisions held per node group",
                    "metrics": [[{"expression": held}]],
                },
            },
            {
                "type": "log",
                **DEMO_PLACES["log"],
                "properties": {
                    "title": "Latest node lines",
                    "query": log,
                    "region": REGION,
                    "view": "table",
                },
            },
        ],
    }


DEMO_PLACES: dict[str, dict[str, int]] = {
    "outcomes": {"x": 0, "y": 0, "width": 12, "height": 6},
    "percentiles": {"x": 12, "y": 0, "width": 6, "height": 6},
    "held": {"x": 18, "y": 0, "width": 6, "height": 6},
    "log": {"x": 0, "y": 6, "width": 24, "height": 3},
}


def _percentile_search(statistic: str) -> str:
    return (
        'SEARCH(\'{"NodeMedic","Cluster","NodeGroup"} Cluster="pic" AND '
        f"(MetricName=\"{FAULT_TO_ACTION_METRIC}\")', '{statistic}', 300)"
    )


def test_the_demos_widgets_have_data_or_say_plainly_why_not(endpoint: str, tmp_path: Path) -> None:
    cloudwatch = boto3.client("cloudwatch", region_name=REGION, endpoint_url=endpoint)
    cloudwatch.put_dashboard(
        DashboardName="nodemedic-pic", DashboardBody=json.dumps(_demo_like_body())
    )
    # In the order the state machine publishes them (stacks/remediation/kit/signals.py).
    for action, outcome in (
        ("replace", "replaced"),
        ("reboot", "rebooted"),
        ("notify", "notified"),
    ):
        values = (action, outcome)
        dimensions = {CLUSTER_DIMENSION: "pic", NODE_GROUP_DIMENSION: "p5-a"}
        dimensions |= dict(zip(REMEDIATION_EXTRA_DIMENSIONS, values, strict=True))
        put(cloudwatch, REMEDIATIONS_METRIC, dimensions, [1])
    # Two periods of four remediations each: p50 and p99 are two lines apart.
    now = datetime.now(UTC)
    cloudwatch.put_metric_data(
        Namespace="NodeMedic",
        MetricData=[
            {
                "MetricName": FAULT_TO_ACTION_METRIC,
                "Dimensions": [
                    {"Name": "Cluster", "Value": "pic"},
                    {"Name": "NodeGroup", "Value": "p5-a"},
                ],
                "Value": value,
                "Timestamp": now - timedelta(minutes=minutes),
            }
            for minutes, values in ((10, (1, 10, 3, 2)), (5, (2, 4, 20, 6)))
            for value in values
        ],
    )

    html = tmp_path / "demo.html"
    argv = ["dashboard", "--cluster", "pic", "--html", str(html), "--region", REGION]
    assert main([*argv, "--endpoint-url", endpoint]) == 0

    assert page_problems(html, tmp_path, width=WIDTH, height=700) == []
    text = html.read_text()
    assert "computes no percentiles" not in text
    assert f"{BREAKER_METRIC}: never published" in text
    assert "SOURCE" not in text and "logs-insights" in text
    picture = read_png(screenshot(html, tmp_path / "demo.png", width=WIDTH, height=700))
    raw = DEMO_PLACES["outcomes"]
    widget = Widget("chart", "", raw["x"], raw["y"], raw["width"], raw["height"])
    (x0, y0), (width, height) = chart_origin(widget), chart_size(widget)
    left, top, right, bottom = plot_box(width, height, 1)
    seen = {
        picture.pixel(x, y)
        for y in range(y0 + top + 1, y0 + bottom)
        for x in range(x0 + left + 1, x0 + right)
    }
    three = {colour(c) for c in PALETTE[:3]}
    assert seen & three == three, "a series per action and outcome"
    raw = DEMO_PLACES["percentiles"]
    percentiles = Widget("chart", "", raw["x"], raw["y"], raw["width"], raw["height"])
    two = {colour(c) for c in PALETTE[:2]}
    assert drawn_colours(picture, percentiles, 2) == two, "a line for p50 and one for p99"


def _stack_alarm_widget(template: dict[str, Any]) -> dict[str, Any]:
    """The stack's pipeline alarms widget, its alarm ARNs resolved as CloudFormation would."""
    (body,) = [
        r["Properties"]["DashboardBody"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::CloudWatch::Dashboard"
    ]
    text = render(body).replace("${AWS::Region}", REGION).replace("${AWS::Partition}", "aws")
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] == "AWS::CloudWatch::Alarm":
            name = resource["Properties"]["AlarmName"]
            arn = f"arn:aws:cloudwatch:{REGION}:123456789012:alarm:{name}"
            text = text.replace("${" + logical_id + ".Arn}", arn)
    (widget,) = [w for w in json.loads(text)["widgets"] if w["type"] == "alarm"]
    return dict(widget)


def test_every_pipeline_alarm_of_the_stack_shows_whole(endpoint: str, tmp_path: Path) -> None:
    """The stack's own widget, at its own size, with every alarm it lists: none cut off."""
    widget = _stack_alarm_widget(synth_template(SETTINGS))
    arns = widget["properties"]["alarms"]
    assert len(arns) >= 11
    cloudwatch = boto3.client("cloudwatch", region_name=REGION, endpoint_url=endpoint)
    for arn in arns:
        cloudwatch.put_metric_alarm(
            AlarmName=arn.split(":alarm:", 1)[1],
            Namespace=METRICS_NAMESPACE,
            MetricName=REMEDIATIONS_METRIC,
            Statistic="Sum",
            Period=300,
            EvaluationPeriods=1,
            Threshold=1,
            ComparisonOperator="GreaterThanOrEqualToThreshold",
        )
    body = {"start": "-PT1H", "widgets": [widget | {"x": 0, "y": 0}]}
    cloudwatch.put_dashboard(DashboardName="nodemedic-pic", DashboardBody=json.dumps(body))

    html = tmp_path / "alarms.html"
    argv = ["dashboard", "--cluster", "pic", "--html", str(html), "--region", REGION]
    assert main([*argv, "--endpoint-url", endpoint]) == 0

    assert page_problems(html, tmp_path, width=WIDTH, height=700) == []
    text = html.read_text()
    assert all(f"{arn.split(':alarm:', 1)[1]}: " in text for arn in arns)
