"""Forged executions, on moto and the real apiserver: a decision started on the remediation
state machine by someone other than the process that makes decisions of its source is
refused before it touches anything, counted in ``ForgedDecisions`` and paged; the same
decisions started by their recorders act (``nodemedic.remediate.recorded``)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from kubernetes import client

from lambdas.recorded import record_start
from nodemedic.contracts.kube import DEEP_CHECK_LABEL, DEEP_CHECK_TAINT_KEY, HEALTH_LABEL
from nodemedic.contracts.logs import DEEP_CHECK_PASSED_FAULT, DEEP_CHECK_SOURCE
from tests.support.flow import GPU, World, asg_instance, ship_verdict
from tests.support.remediation import REGION, Pipeline, decision

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("own_nodes")]

REFUSED = "Refused forged decision"


def _behind_health_check(world: World, instance_id: str) -> None:
    """As a node registers: tainted and labelled until its deep check passes."""
    world.core.patch_node(
        world.nodes[instance_id],
        {
            "metadata": {"labels": {HEALTH_LABEL: "Unschedulable", DEEP_CHECK_LABEL: "InProgress"}},
            "spec": {"taints": [{"key": DEEP_CHECK_TAINT_KEY, "effect": "NoSchedule"}]},
        },
    )


def _forged_pass(instance_id: str) -> dict[str, Any]:
    """A deep check's pass as whoever may call StartExecution can write one."""
    return decision(instance_id, "nvidia-xid-79") | {
        "decision_id": f"{instance_id}-forged-pass",
        "fault_id": DEEP_CHECK_PASSED_FAULT,
        "source": DEEP_CHECK_SOURCE,
        "action": "notify",
    }


def _states(pipeline: Pipeline, execution_arn: str) -> list[str]:
    events = pipeline.sfn.get_execution_history(executionArn=execution_arn)["events"]
    return [
        e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e
    ]


def _refused(pipeline: Pipeline, execution_arn: str) -> bool:
    """The execution ended refused, having read nothing but its marker."""
    ended = pipeline.finish(execution_arn)
    states = _states(pipeline, execution_arn)
    return ended["status"] == "SUCCEEDED" and states[-1] == REFUSED


def _forged_count() -> float:
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    now = datetime.now(UTC)
    points = cloudwatch.get_metric_statistics(
        Namespace="NodeMedic",
        MetricName="ForgedDecisions",
        Dimensions=[{"Name": "Cluster", "Value": "demo"}],
        StartTime=now - timedelta(hours=1),
        EndTime=now + timedelta(minutes=1),
        Period=3600,
        Statistics=["Sum"],
    )["Datapoints"]
    return float(sum(p["Sum"] for p in points))


def _untouched(world: World, instance_id: str) -> client.V1Node:
    node = world.node(instance_id)
    assert node is not None
    assert not node.spec.unschedulable
    assert asg_instance(instance_id)["HealthStatus"].upper() == "HEALTHY"
    return node


def test_a_forged_kmsg_decision_and_a_forged_pass_are_refused_and_paged(world: World) -> None:
    victim, held, _ = world.group("p5-forged-start", 3, **GPU)
    _behind_health_check(world, held)
    pipeline = world.pipelines["demo"]
    before = _forged_count()
    replace = decision(victim, "nvidia-xid-79")
    planned = decision(victim, "nvidia-xid-79") | {
        "decision_id": f"{victim}-forged-planned",
        "source": "planned",
    }

    refused = [
        pipeline.start(record, recorded=False) for record in (replace, _forged_pass(held), planned)
    ]

    assert all(_refused(pipeline, arn) for arn in refused)
    _untouched(world, victim)
    waiting = world.node(held)
    assert waiting is not None
    assert [t.key for t in waiting.spec.taints or []] == [DEEP_CHECK_TAINT_KEY]
    assert waiting.metadata.labels[DEEP_CHECK_LABEL] == "InProgress"
    assert pipeline.ledger(replace) is None, "nothing recorded"
    assert pipeline.messages(victim) == [] and pipeline.messages(held) == []
    assert _forged_count() - before == 3
    # The node's own agent's pass, through the classifier, admits it.
    ship_verdict(world, held, "ok", "Passed", signed=True)
    (genuine,) = [a for a in pipeline.executions(held) if a not in refused]
    assert pipeline.finish(genuine)["status"] == "SUCCEEDED"
    admitted = world.node(held)
    assert admitted is not None
    assert DEEP_CHECK_TAINT_KEY not in [t.key for t in admitted.spec.taints or []]
    assert admitted.metadata.labels[DEEP_CHECK_LABEL] == "Passed"


def test_a_recorded_decision_replayed_or_altered_is_refused(world: World) -> None:
    acted, recorded, third = world.group("p5-forged-replay", 3, **GPU)
    pipeline = world.pipelines["demo"]
    genuine = decision(acted, "nvidia-xid-79")
    assert pipeline.run(genuine)["status"] == "SUCCEEDED"
    assert asg_instance(acted)["LifecycleState"] == "Terminating"
    # Recorded by the classifier, not yet started.
    other = decision(recorded, "nvidia-xid-79")
    record_start(pipeline.dynamodb, pipeline.table, other, starts_at=time.time())
    before = _forged_count()

    replayed = pipeline.sfn.start_execution(
        stateMachineArn=pipeline.arn, name=f"{acted}-again", input=json.dumps(genuine)
    )["executionArn"]
    altered = pipeline.start(other | {"instance_id": third}, recorded=False)

    assert _refused(pipeline, replayed) and _refused(pipeline, altered)
    _untouched(world, recorded)
    _untouched(world, third)
    assert _forged_count() - before == 2


def test_the_refusal_pages(default_template: dict[str, Any]) -> None:
    (alarm,) = [
        r["Properties"]
        for r in default_template["Resources"].values()
        if r["Type"] == "AWS::CloudWatch::Alarm"
        and r["Properties"].get("MetricName") == "ForgedDecisions"
    ]
    assert alarm["AlarmName"] == "nodemedic-demo-forged-decisions"
    assert (alarm["Namespace"], alarm["Statistic"]) == ("NodeMedic", "Sum")
    assert alarm["Dimensions"] == [{"Name": "Cluster", "Value": "demo"}]
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (
        1,
        "GreaterThanOrEqualToThreshold",
    )
    (action,) = alarm["AlarmActions"]
    assert action["Ref"].startswith("NotificationsTopic")
