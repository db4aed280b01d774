"""Planned repairs: AWS's documented notices (``tests/events/aws-notices``) given to the
planned Lambda as EventBridge would, the planned state machine waiting for the lead time,
the remediation acting before the notice's deadline.

The world is ``tests.support.flow``'s; moto fires no EventBridge rule, so the event is the
Lambda's invocation, as the rule's target makes it.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import boto3
import pytest

from console.cli.approval import execution_arn
from console.cli.history import records
from console.cli.remediations import entry
from lambdas.planned import handler as planned_handler
from tests.support.flow import GPU, World, asg_instance
from tests.support.paths import ROOT
from tests.support.remediation import ACTING, REGION, Pipeline
from world.aws.quotas import TokenBucket, start_execution_quota

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("own_nodes")]

EVENTS = ROOT / "tests" / "events" / "aws-notices"
WAIT = 3
"""Seconds from the notice to its ``act_at``: the planned machine waits them out."""


def _notice(name: str, filled: dict[str, str]) -> dict[str, Any]:
    text = (EVENTS / name).read_text()
    for placeholder, value in filled.items():
        text = text.replace(placeholder, value)
    event: dict[str, Any] = json.loads(text)
    return event


def _delivered(pipeline: Pipeline, event: dict[str, Any]) -> dict[str, Any]:
    """The planned Lambda invoked with ``event``, as its EventBridge rule does."""
    name = pipeline.deployment.find("AWS::Lambda::Function", "PlannedTranslate").ref
    answer = boto3.client("lambda", region_name=REGION).invoke(
        FunctionName=name, Payload=json.dumps(event).encode()
    )
    assert "FunctionError" not in answer, answer["Payload"].read()
    result: dict[str, Any] = json.loads(answer["Payload"].read())
    return result


def _planned_machine(pipeline: Pipeline) -> str:
    return pipeline.deployment.find("AWS::StepFunctions::StateMachine", "PlannedWait").ref


def _planned_executions(pipeline: Pipeline) -> list[dict[str, Any]]:
    listed = pipeline.sfn.list_executions(stateMachineArn=_planned_machine(pipeline))
    return list(listed["executions"])


def _retirement(instance_id: str, deadline: datetime) -> dict[str, Any]:
    """AWS Health's retirement notice of ``instance_id``, due at ``deadline``."""
    event = _notice("aws-health-ec2-instance-retirement-scheduled.json", {})
    arn = f"arn:aws:ec2:us-east-1:123456789012:instance/{instance_id}"
    event["detail"]["affectedEntities"][0]["entityValue"] = arn
    event["detail"]["startTime"] = format_datetime(deadline, usegmt=True)
    return event


def _remediated(pipeline: Pipeline, decision_id: str) -> dict[str, Any]:
    """The planned execution ended, and the remediation it started, ended."""
    planned = execution_arn(_planned_machine(pipeline), decision_id)
    assert pipeline.finish(planned)["status"] == "SUCCEEDED"
    return pipeline.finish(execution_arn(pipeline.arn, decision_id))


def test_a_retirement_notice_is_drained_and_replaced_after_its_lead_time_before_its_deadline(
    world: World,
) -> None:
    pipeline = world.pipelines["demo"]
    retiring, _ = world.group("p5-retiring", 2, **GPU)
    noticed = datetime.now(UTC).replace(microsecond=0)
    deadline = noticed + timedelta(seconds=ACTING.planned_lead_time + WAIT)
    event = _retirement(retiring, deadline)

    answer = _delivered(pipeline, event)
    again = _delivered(pipeline, event)  # AWS Health delivers at least once

    (decision_id,) = answer["planned"]
    # The same execution (delivered within the second: the same input), or none started.
    assert again["notice"] == answer["notice"] and again["planned"] in ([], [decision_id])
    assert answer["notice"] == "planned-instance-retirement"
    assert [e["name"] for e in _planned_executions(pipeline)].count(decision_id) == 1
    ended = _remediated(pipeline, decision_id)
    assert ended["status"] == "SUCCEEDED"
    # Waited for act_at (moto's Wait counts whole seconds: up to one early).
    assert ended["startDate"] >= noticed + timedelta(seconds=WAIT - 1)
    assert ended["stopDate"] < deadline
    assert asg_instance(retiring)["HealthStatus"].upper() == "UNHEALTHY"
    (record,) = records(pipeline.dynamodb, pipeline.table, retiring)
    history = entry(record)
    assert (history["outcome"], history["source"], history["fault_id"]) == (
        "replaced",
        "planned",
        "planned-instance-retirement",
    )
    assert {c["change"] for c in history["node_changes"]} >= {"marked", "drained"}
    subjects = [m["subject"] for m in pipeline.messages(retiring)]
    assert subjects[-1] == f"nodemedic replaced: {retiring}"


def _first_start_failed(pipeline: Pipeline, decision_id: str, timeout: float = 180) -> None:
    """Until the planned execution's start of the remediation failed once, or it ended."""
    arn = execution_arn(_planned_machine(pipeline), decision_id)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = pipeline.sfn.get_execution_history(executionArn=arn)["events"]
        if any(e["type"] == "TaskFailed" for e in events):
            return
        if pipeline.sfn.describe_execution(executionArn=arn)["status"] != "RUNNING":
            return
        time.sleep(0.1)
    raise TimeoutError(f"{arn} neither failed a start nor ended after {timeout} s")


def test_a_planned_start_throttled_in_a_storm_is_retried_once_the_bucket_has_room(
    world: World,
) -> None:
    pipeline = world.pipelines["demo"]
    retiring, _ = world.group("p5-throttled", 2, **GPU)
    deadline = datetime.now(UTC).replace(microsecond=0) + timedelta(
        seconds=ACTING.planned_lead_time + WAIT
    )
    event = _retirement(retiring, deadline)
    # One start in the bucket, the planned Lambda's own: when the lead time is over, the
    # planned machine's start of the remediation is throttled, botocore's retries too.
    bucket = TokenBucket(size=1, refill=0)
    with start_execution_quota(bucket):
        (decision_id,) = _delivered(pipeline, event)["planned"]
        _first_start_failed(pipeline, decision_id)
        assert bucket.throttled >= 1
        bucket.refill = 10.0  # the storm passed
        ended = _remediated(pipeline, decision_id)
    assert ended["status"] == "SUCCEEDED"
    assert asg_instance(retiring)["HealthStatus"].upper() == "UNHEALTHY"


def test_a_capacity_block_warning_drains_its_nodes_and_says_so_without_a_replacement(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = world.pipelines["demo"]
    ending = world.group("p5-capacity-block", 3, **GPU)
    # moto's DescribeInstances knows no capacity-reservation-id filter: the block's
    # instances are the group's.
    monkeypatch.setattr(planned_handler, "reserved", lambda ec2, reservation: tuple(ending))
    sent = datetime.now(UTC).replace(microsecond=0)
    event = _notice(
        "ec2-capacity-block-reservation-expiration-warning.json",
        {
            "[ODCR ID]": "cr-0123456789abcdef0",
            "[Current time]": sent.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "[ODCR End Date]": (sent + timedelta(minutes=40)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    )

    answer = _delivered(pipeline, event)

    assert len(answer["planned"]) == 3
    for decision_id in answer["planned"]:
        assert _remediated(pipeline, decision_id)["status"] == "SUCCEEDED"
    for instance in ending:
        node = world.node(instance)
        assert node is not None and node.spec.unschedulable  # drained, left to AWS
        assert asg_instance(instance)["HealthStatus"].upper() == "HEALTHY"
        # One at a time, as the group's breaker admits them: held first, then drained.
        assert [m["outcome"] for m in pipeline.messages(instance)][-1] == "drained"
    assert time.time() < (sent + timedelta(minutes=10)).timestamp()
