"""The deep check's verdict end to end: the verdict line the agent ships on the stream
``<instance-id>/deep-check`` reaches the classifier through the synthesized stack's
subscription in moto, and the state machine admits or replaces the real Node."""

from __future__ import annotations

import pytest
from kubernetes import client

from nodemedic.contracts.kube import (
    DEEP_CHECK_LABEL,
    DEEP_CHECK_TAINT_KEY,
    HEALTH_LABEL,
    SCHEDULABLE,
    UNSCHEDULABLE,
)
from tests.support.flow import GPU, World, asg_instance, ship_verdict

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


def _health_check_taints(node: client.V1Node) -> list[str]:
    return [t.key for t in node.spec.taints or [] if t.key == DEEP_CHECK_TAINT_KEY]


def test_a_failed_deep_check_replaces_the_node_and_an_unsigned_one_does_not(
    world: World, core: client.CoreV1Api
) -> None:
    sick, forged, _ = world.group("p5-deep-failed", 3, **GPU)
    for instance_id in (sick, forged):
        _registered(core, world, instance_id)
    pipeline = world.pipelines["demo"]

    ship_verdict(world, forged, "fail", "Failed", signed=False)
    ship_verdict(world, sick, "fail", "Failed", signed=True)

    (capped,) = pipeline.executions(forged)
    assert pipeline.finish(capped)["status"] == "SUCCEEDED"
    node = world.node(forged)
    assert node is not None and node.metadata.labels[DEEP_CHECK_LABEL] == "InProgress"
    assert asg_instance(forged)["HealthStatus"] == "Healthy"
    assert {m["outcome"] for m in pipeline.messages(forged)} == {"notified"}
    (acted,) = pipeline.executions(sick)
    assert pipeline.finish(acted)["status"] == "SUCCEEDED"
    (labelled,) = pipeline.outputs(acted, "Label deep check failed")
    assert labelled["deep_check"] == {
        "node": world.nodes[sick],
        "changed": True,
        "uncordoned": False,
        "kept_cordon": False,
        "refused": None,
    }
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
        ship_verdict(world, instance_id, "ok", "Passed", signed=True)
    ship_verdict(world, forged, "ok", "Passed", signed=False)

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
