"""The deep check's verdict end to end: the verdict line the agent ships on the stream
``<instance-id>/deep-check`` reaches the classifier through the synthesized stack's
subscription in moto, and the state machine admits or replaces the real Node."""

from __future__ import annotations

import json
import time

import boto3
import pytest
from kubernetes import client

from nodemedic.contracts import (
    DEEP_CHECK_LABEL,
    DEEP_CHECK_TAINT_KEY,
    HEALTH_LABEL,
    SCHEDULABLE,
    UNSCHEDULABLE,
    deep_check_stream,
)
from nodemedic.origin.signing import sign
from tests.support.flow import GPU, World, asg_instance
from tests.support.origin import put
from tests.support.remediation import REGION

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("own_nodes")]


def _registered(core: client.CoreV1Api, world: World, instance_id: str) -> None:
    """As the node registers (docs/deploy.md): behind the health-check taint, waiting for
    its deep check."""
    core.patch_node(
        world.nodes[instance_id],
        {
            "metadata": {"labels": {HEALTH_LABEL: UNSCHEDULABLE, DEEP_CHECK_LABEL: "InProgress"}},
            "spec": {"taints": [{"key": DEEP_CHECK_TAINT_KEY, "effect": "NoSchedule"}]},
        },
    )


def _verdict(world: World, instance_id: str, status: str, reason: str, *, signed: bool) -> None:
    """The verdict line as the agent ships it (agent.deepcheck.verdict), signed with the
    node's registered key, or written unsigned by anyone holding the agents' credential."""
    line = json.dumps(
        {"check": "deep-check", "device": "node", "status": status, "reason": reason}
        | {"figures": {"passed": 3}, "ts": "2026-11-22T18:30:00Z"}
    )
    now_ms = int(time.time() * 1000)
    key = world.key("demo", instance_id)
    message = sign(key, instance_id, now_ms, line) if signed else line
    logs = boto3.client("logs", region_name=REGION)
    put(logs, "demo", deep_check_stream(instance_id), message, now_ms)


def _health_check_taints(node: client.V1Node) -> list[str]:
    return [t.key for t in node.spec.taints or [] if t.key == DEEP_CHECK_TAINT_KEY]


def test_a_failed_deep_check_replaces_the_node_and_an_unsigned_one_does_not(
    world: World, core: client.CoreV1Api
) -> None:
    sick, forged, _ = world.group("p5-deep-failed", 3, **GPU)
    for instance_id in (sick, forged):
        _registered(core, world, instance_id)
    pipeline = world.pipelines["demo"]

    _verdict(world, forged, "fail", "Failed", signed=False)
    _verdict(world, sick, "fail", "Failed", signed=True)

    (capped,) = pipeline.executions(forged)
    assert pipeline.finish(capped)["status"] == "SUCCEEDED"
    node = world.node(forged)
    assert node is not None and node.metadata.labels[DEEP_CHECK_LABEL] == "InProgress"
    assert asg_instance(forged)["HealthStatus"] == "Healthy"
    assert {m["outcome"] for m in pipeline.messages(forged)} == {"notified"}
    (acted,) = pipeline.executions(sick)
    assert pipeline.finish(acted)["status"] == "SUCCEEDED"
    (labelled,) = pipeline.outputs(acted, "Label deep check failed")
    assert labelled["deep_check"] == {"node": world.nodes[sick], "changed": True}
    assert world.node(sick) is None
    assert asg_instance(sick)["LifecycleState"] == "Terminating"
    assert [m["outcome"] for m in pipeline.messages(sick)] == ["replaced"]


def test_a_passed_deep_check_admits_only_a_node_waiting_behind_the_health_check_taint(
    world: World, core: client.CoreV1Api
) -> None:
    waiting, serving, forged = world.group("p5-deep-passed", 3, **GPU)
    for instance_id in (waiting, forged):
        _registered(core, world, instance_id)

    for instance_id in (waiting, serving):
        _verdict(world, instance_id, "ok", "Passed", signed=True)
    _verdict(world, forged, "ok", "Passed", signed=False)

    pipeline = world.pipelines["demo"]
    for instance_id in (waiting, serving):
        (execution,) = pipeline.executions(instance_id)
        assert pipeline.finish(execution)["status"] == "SUCCEEDED"
    admitted = world.node(waiting)
    assert admitted is not None and _health_check_taints(admitted) == []
    assert admitted.metadata.labels[DEEP_CHECK_LABEL] == "Passed"
    assert admitted.metadata.labels[HEALTH_LABEL] == SCHEDULABLE
    untouched = world.node(serving)
    assert untouched is not None and DEEP_CHECK_LABEL not in untouched.metadata.labels
    # An unsigned pass starts nothing: the node stays out until its own agent's verdict.
    assert pipeline.executions(forged) == []
    still = world.node(forged)
    assert still is not None and _health_check_taints(still) == [DEEP_CHECK_TAINT_KEY]
    assert still.metadata.labels[DEEP_CHECK_LABEL] == "InProgress"
    # Nothing is mailed for a pass: every healthy node of a scale-up passes.
    assert pipeline.messages(waiting) == []
