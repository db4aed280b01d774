"""What the page says instead of a chart: moto's error page for a percentile becomes one
plain sentence, an empty entry says whether its metric was ever published, and a log
widget becomes a link to its query in the console."""

from __future__ import annotations

import re
from urllib.parse import unquote

from botocore.exceptions import ClientError

from console.dashboard.links import log_sources, logs_insights_url
from console.dashboard.notes import answer, silence


def _server_error() -> ClientError:
    body = {
        "Error": {"Code": "500", "Message": "<!doctype html>\n<title>500</title>"},
        "ResponseMetadata": {"HTTPStatusCode": 500},
    }
    return ClientError(body, "GetMetricData")


def test_a_server_error_on_a_percentile_is_said_plainly() -> None:
    said = answer(_server_error(), {"p50"})
    assert "computes no percentiles (p50)" in said
    assert "doctype" not in said and "500" not in said
    assert answer(_server_error(), {"Sum"}) == "CloudWatch failed (HTTP 500)"


def test_a_client_error_keeps_its_code_and_first_line() -> None:
    refused = ClientError(
        {"Error": {"Code": "AccessDenied", "Message": "no\nmore"}}, "GetMetricData"
    )
    assert answer(refused, {"p50"}) == "AccessDenied no"


def test_an_empty_entry_says_whether_its_metric_was_ever_published() -> None:
    assert silence("BreakerHeld", ["BreakerHeld"], found=False) == (
        "BreakerHeld: never published to this CloudWatch"
    )
    assert silence("efa", ["EfaA", "EfaB"], found=True) == (
        "efa (EfaA, EfaB): no datapoint in this time range"
    )
    assert silence("SilentNodes", ["SilentNodes"], found=None) == (
        "SilentNodes: no datapoint in this time range"
    )


def test_a_log_widget_links_its_query_and_groups_to_the_console() -> None:
    groups, query = log_sources("SOURCE '/nodemedic/demo/nodes' | fields @message\n| limit 5")
    assert groups == ("/nodemedic/demo/nodes",)
    assert query == "fields @message\n| limit 5"
    url = logs_insights_url("eu-west-1", query, groups)
    assert url.startswith(
        "https://eu-west-1.console.aws.amazon.com/cloudwatch/home?region=eu-west-1#logsV2:logs-insights$3FqueryDetail$3D~("
    )
    detail = unquote(url.split("#logsV2:logs-insights", 1)[1].replace("$", "%"))
    found = re.search(r"~editorString~'([^~]*)~source~\(~'([^~)]*)\)", detail)
    assert found is not None, detail

    def decode(text: str) -> str:
        return re.sub(r"\*([0-9a-f]{2})", lambda m: chr(int(m.group(1), 16)), text)

    assert decode(found.group(1)) == query
    assert decode(found.group(2)) == groups[0]
