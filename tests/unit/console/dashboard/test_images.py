"""``nodemedic dashboard --cloudwatch-images``: metric widgets as CloudWatch draws them, on a
real CloudWatch client whose answers are stubbed (botocore checks each request against the
API's model); a widget CloudWatch refuses keeps the page's own drawing and says why."""

from __future__ import annotations

import base64
import json
from typing import Any

import boto3
from botocore.stub import ANY, Stubber

from console.dashboard.images import drawn_by_cloudwatch
from console.dashboard.page import page
from console.dashboard.read import Board, Series, Widget

PNG = b"\x89PNG\r\n\x1a\n" + b"drawn by CloudWatch"
OUTCOMES: dict[str, Any] = {
    "title": "Remediations by action and outcome",
    "metrics": [[{"expression": 'SELECT SUM("Remediations") FROM "NodeMedic"'}]],
    "view": "timeSeries",
}
LATENCY: dict[str, Any] = {
    "title": "Fault to first action",
    "metrics": [["NodeMedic", "FaultToAction"]],
}
BODY = {
    "widgets": [
        {"type": "metric", "x": 0, "y": 0, "width": 12, "height": 6, "properties": OUTCOMES},
        {"type": "metric", "x": 12, "y": 0, "width": 12, "height": 6, "properties": LATENCY},
        {"type": "text", "x": 0, "y": 6, "width": 24, "height": 2, "properties": {"markdown": "x"}},
    ]
}
SERIES = (Series("replaced", ((1_800_000_000.0, 1.0), (1_800_000_300.0, 2.0))),)


def board() -> Board:
    return Board(
        "nodemedic-demo",
        1_800_000_000.0,
        1_800_003_600.0,
        (
            Widget("chart", OUTCOMES["title"], 0, 0, 12, 6, series=SERIES),
            Widget("chart", LATENCY["title"], 12, 0, 12, 6, series=SERIES),
            Widget("text", "", 0, 6, 24, 2, text="x"),
        ),
    )


def test_metric_widgets_are_drawn_by_cloudwatch_and_a_refusal_keeps_the_own_drawing() -> None:
    cloudwatch: Any = boto3.client("cloudwatch", region_name="us-west-2")
    requests: list[dict[str, Any]] = []
    with Stubber(cloudwatch) as stub:
        stub.add_response("get_dashboard", {"DashboardBody": json.dumps(BODY)})
        stub.add_response(
            "get_metric_widget_image",
            {"MetricWidgetImage": PNG},
            {"MetricWidget": ANY, "OutputFormat": "png"},
        )
        stub.add_client_error("get_metric_widget_image", "InvalidParameterInput", "no such metric")
        cloudwatch.meta.events.register(
            "provide-client-params.cloudwatch.GetMetricWidgetImage",
            lambda params, **_: requests.append(json.loads(params["MetricWidget"])),
        )
        drawn = drawn_by_cloudwatch(cloudwatch, "nodemedic-demo", board())
        stub.assert_no_pending_responses()
    outcomes, latency, text = drawn.widgets
    assert outcomes.image == PNG and outcomes.notes == ()
    assert latency.image == b"" and "InvalidParameterInput" in latency.notes[0]
    assert text == board().widgets[2]
    first = requests[0]
    assert first["metrics"] == OUTCOMES["metrics"] and first["title"] == OUTCOMES["title"]
    assert first["start"].startswith("2027-01-15T08:00:00") and first["end"] > first["start"]
    assert 0 < first["width"] <= 2000 and 0 < first["height"] <= 2000
    html = page(drawn)
    assert f'src="data:image/png;base64,{base64.b64encode(PNG).decode()}"' in html
    assert html.count("<img") == 1 and html.count("<svg") >= 1
