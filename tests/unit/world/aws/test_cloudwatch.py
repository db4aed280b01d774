"""The local world's CloudWatch as the dashboard reads it on AWS: a Lambda's or an
agent's Embedded Metric Format lines become metrics (a malformed one is stored and counted,
never extracted), and percentiles are computed over each period's values."""

from __future__ import annotations

import io
import json
import time
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from world.aws.cloudwatch import (
    metrics_from_logs,
    metrics_listed_once,
    percentile,
    percentile_statistics,
)
from world.aws.inprocess import handlers_in_process

REGION = "us-east-1"
GROUP = "/nodemedic/demo/nodes"


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws(), metrics_from_logs(), percentile_statistics():
        yield


def client(service: str) -> Any:
    return boto3.client(service, region_name=REGION)


def emf_line(at: datetime, **root: Any) -> str:
    return json.dumps(
        {
            "_aws": {
                "Timestamp": int(at.timestamp() * 1000),
                "CloudWatchMetrics": [
                    {
                        "Namespace": "NodeMedic",
                        "Dimensions": [["Cluster", "NodeGroup"]],
                        "Metrics": [{"Name": "FaultToAction", "Unit": "Seconds"}],
                    }
                ],
            },
            "Cluster": "demo",
            "NodeGroup": "p5",
            "FaultToAction": [2.0, 4.0],
            **root,
        }
    )


def put_lines(*lines: str) -> None:
    logs = client("logs")
    logs.create_log_group(logGroupName=GROUP)
    logs.create_log_stream(logGroupName=GROUP, logStreamName="i-1/telemetry")
    now = int(time.time() * 1000)
    logs.put_log_events(
        logGroupName=GROUP,
        logStreamName="i-1/telemetry",
        logEvents=[{"timestamp": now, "message": line} for line in lines],
    )


def sums(namespace: str, name: str, dimensions: dict[str, str], hours: int = 1) -> list[Any]:
    now = datetime.now(UTC)
    return list(
        client("cloudwatch").get_metric_statistics(
            Namespace=namespace,
            MetricName=name,
            Dimensions=[{"Name": k, "Value": v} for k, v in dimensions.items()],
            StartTime=now - timedelta(hours=hours),
            EndTime=now + timedelta(minutes=1),
            Period=3600 * hours,
            Statistics=["Sum", "SampleCount"],
        )["Datapoints"]
    )


def test_an_emf_line_put_to_logs_becomes_its_metric_at_its_own_time(aws: None) -> None:
    at = datetime.now(UTC) - timedelta(minutes=30)
    put_lines(emf_line(at), "an ordinary line")
    listed = client("cloudwatch").list_metrics(Namespace="NodeMedic")["Metrics"]
    assert {(m["MetricName"], json.dumps(m["Dimensions"])) for m in listed} == {
        (
            "FaultToAction",
            json.dumps(
                [{"Name": "Cluster", "Value": "demo"}, {"Name": "NodeGroup", "Value": "p5"}]
            ),
        )
    }
    (point,) = sums("NodeMedic", "FaultToAction", {"Cluster": "demo", "NodeGroup": "p5"})
    assert (point["Sum"], point["SampleCount"], point["Unit"]) == (6.0, 2.0, "Seconds")
    # Its time is the document's, not the event's.
    assert abs(point["Timestamp"] - at) < timedelta(seconds=1)


def test_a_malformed_line_is_stored_counted_and_never_extracted(aws: None) -> None:
    at = datetime.now(UTC)
    put_lines(emf_line(at, NodeGroup=5), emf_line(at)[:-3], emf_line(at, NodeGroup=6))
    assert client("cloudwatch").list_metrics(Namespace="NodeMedic")["Metrics"] == []
    by_group = {"LogGroupName": GROUP}
    (invalid,) = sums("AWS/Logs", "EMFValidationErrors", by_group)
    (unparsed,) = sums("AWS/Logs", "EMFParsingErrors", by_group)
    assert (invalid["Sum"], unparsed["Sum"]) == (2.0, 1.0)
    events = client("logs").get_log_events(logGroupName=GROUP, logStreamName="i-1/telemetry")
    assert len(events["events"]) == 3


def test_what_a_lambda_handler_prints_reaches_its_log_group_and_becomes_metrics() -> None:
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("handler.py", "")
    with mock_aws(), handlers_in_process(), metrics_from_logs():
        role = client("iam").create_role(
            RoleName="r", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17"})
        )["Role"]["Arn"]
        client("lambda").create_function(
            FunctionName="probe",
            Runtime="python3.11",
            Role=role,
            Handler="tests.support.handlers.publish",
            Code={"ZipFile": code.getvalue()},
        )
        answer = client("lambda").invoke(
            FunctionName="probe", Payload=json.dumps({"value": 3, "cluster": "demo"})
        )
        assert "FunctionError" not in answer
        (point,) = sums("NodeMedic", "Probed", {"Cluster": "demo"})
        assert point["Sum"] == 3.0


def put(name: str, **datum: Any) -> datetime:
    """One datum of ``name`` in the period the queries below read, ten minutes ago."""
    at = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=10)
    client("cloudwatch").put_metric_data(
        Namespace="NodeMedic", MetricData=[{"MetricName": name, "Timestamp": at, **datum}]
    )
    return at


def put_values(values: list[float], name: str = "RemediationSeconds") -> datetime:
    return [put(name, Value=v) for v in values][-1]


def metric_data(stat: str, at: datetime, name: str = "RemediationSeconds") -> list[float]:
    result = client("cloudwatch").get_metric_data(
        MetricDataQueries=[
            {
                "Id": "q",
                "MetricStat": {
                    "Metric": {"Namespace": "NodeMedic", "MetricName": name},
                    "Period": 3600,
                    "Stat": stat,
                },
            }
        ],
        StartTime=at - timedelta(minutes=5),
        EndTime=at + timedelta(minutes=30),
    )
    return [float(v) for v in result["MetricDataResults"][0]["Values"]]


def test_get_metric_data_answers_percentiles_over_the_period_s_values(aws: None) -> None:
    at = put_values([float(v) for v in range(100, 0, -1)])
    assert metric_data("p50", at) == [50.0]
    assert metric_data("p90", at) == [90.0]
    assert metric_data("p99.5", at) == [100.0]
    assert metric_data("p0", at) == [1.0]
    assert metric_data("Average", at) == [50.5]


def test_get_metric_statistics_answers_extended_statistics(aws: None) -> None:
    at = put_values([3.0, 1.0, 2.0, 10.0])
    asked = {
        "Namespace": "NodeMedic",
        "MetricName": "RemediationSeconds",
        "StartTime": at - timedelta(minutes=5),
        "EndTime": at + timedelta(minutes=30),
        "Period": 3600,
    }
    cloudwatch = client("cloudwatch")
    (point,) = cloudwatch.get_metric_statistics(**asked, ExtendedStatistics=["p50", "p99"])[
        "Datapoints"
    ]
    assert point["ExtendedStatistics"] == {"p50": 2.0, "p99": 10.0}
    with pytest.raises(ClientError, match="InvalidParameterCombination"):
        cloudwatch.get_metric_statistics(**asked, Statistics=["Sum"], ExtendedStatistics=["p50"])
    with pytest.raises(ClientError, match="InvalidParameterValue"):
        cloudwatch.get_metric_statistics(**asked, ExtendedStatistics=["p101"])


def test_no_percentile_where_cloudwatch_has_none(aws: None) -> None:
    negative = put_values([1.0, -2.0])
    assert metric_data("p50", negative) == []
    assert metric_data("Sum", negative) == [-1.0]


def test_a_statistic_set_has_a_percentile_only_when_it_holds_one_value(aws: None) -> None:
    spread = put("Spread", StatisticValues={"SampleCount": 3, "Sum": 6, "Minimum": 1, "Maximum": 3})
    assert metric_data("p50", spread, "Spread") == []
    same = put("Same", StatisticValues={"SampleCount": 2, "Sum": 8, "Minimum": 4, "Maximum": 4})
    assert metric_data("p50", same, "Same") == [4.0]


def test_the_percentile_is_the_nearest_rank() -> None:
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.0
    assert percentile([4.0, 1.0, 3.0, 2.0], 75.5) == 4.0
    assert percentile([], 50) is None


def test_list_metrics_lists_each_metric_once_as_cloudwatch_does() -> None:
    """moto lists a metric of two dimensions once per datapoint; CloudWatch once."""

    def datum(value: float, group: str, outcome: str) -> dict[str, Any]:
        dimensions = [{"Name": "NodeGroup", "Value": group}, {"Name": "Outcome", "Value": outcome}]
        return {"MetricName": "Remediations", "Dimensions": dimensions, "Value": value}

    with mock_aws(), metrics_listed_once():
        cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
        data = [datum(1, "p5", "replaced"), datum(1, "p5", "replaced"), datum(1, "p5", "held")]
        cloudwatch.put_metric_data(Namespace="NodeMedic", MetricData=data)
        cloudwatch.put_metric_data(
            Namespace="NodeMedic", MetricData=[{"MetricName": "Bare", "Value": 1}] * 2
        )
        listed = cloudwatch.list_metrics(Namespace="NodeMedic")["Metrics"]
        named = cloudwatch.list_metrics(
            Namespace="NodeMedic", Dimensions=[{"Name": "Outcome", "Value": "held"}]
        )["Metrics"]
        any_outcome = cloudwatch.list_metrics(
            Namespace="NodeMedic", Dimensions=[{"Name": "Outcome"}]
        )["Metrics"]

    outcomes = sorted(
        next(d["Value"] for d in m["Dimensions"] if d["Name"] == "Outcome")
        for m in listed
        if m["MetricName"] == "Remediations"
    )
    assert outcomes == ["held", "replaced"]
    assert [m["MetricName"] for m in listed].count("Bare") == 1
    assert [m["Dimensions"][-1]["Value"] for m in named] == ["held"]
    assert len(any_outcome) == 2
