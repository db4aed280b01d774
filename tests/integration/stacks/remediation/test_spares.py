"""Spares (setting ``spares``): a replace in a group that keeps one brings the Standby spare
into service before the group even launches the broken instance's replacement, and holds
that replacement back as the next spare; a group without spares waits for the launch."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import boto3
import pytest
from kubernetes import client

from nodemedic.contracts.kube import SPARE_LABEL, SPARE_TAINT_KEY
from tests.support.flow import GPU, World, asg_instance
from tests.support.remediation import REGION, decision, instances
from world.aws.spares import stand_by

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("own_nodes")]
LAUNCH_SECONDS = 2.0
"""From ``Unhealthy`` to the replacement's Node joining: on AWS 5 to 15 minutes."""
HUGE = 900
"""Instances in the big group: DescribeAutoScalingGroups answers ~317 bytes each."""
TASK_RESULT_LIMIT = 256 * 1024
"""Step Functions' quota on a task's result, checked before its ResultSelector trims it."""


@pytest.fixture
def launches(world: World, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, float]]:
    """The group terminates an Unhealthy instance ``LAUNCH_SECONDS`` later and the
    replacement it launches joins the cluster; launched instance id -> when its Node
    joined (epoch)."""
    joined: dict[str, float] = {}

    def launched(instance_id: str) -> None:
        group = asg_instance(instance_id)["AutoScalingGroupName"]
        world.join(group, [instance_id], **GPU)
        joined[instance_id] = time.time()

    monkeypatch.setattr(world.hypervisor, "terminate_after", LAUNCH_SECONDS)
    monkeypatch.setattr(world.hypervisor, "on_launch", launched)
    yield joined


def _schedulable(node: client.V1Node | None) -> bool:
    taints = node.spec.taints or [] if node is not None else []
    return node is not None and not node.spec.unschedulable and not taints


def _desired(group: str) -> int:
    autoscaling = boto3.client("autoscaling", region_name=REGION)
    (found,) = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[group])[
        "AutoScalingGroups"
    ]
    return int(found["DesiredCapacity"])


def _at(world: World, execution: str, state: str, event: str = "Entered") -> list[float]:
    """When the execution entered (or ``Exited``) ``state``, each time, in epoch seconds."""
    events = world.pipelines["demo"].sfn.get_execution_history(executionArn=execution)["events"]
    details = f"state{event}EventDetails"
    return [
        e["timestamp"].timestamp()
        for e in events
        if e["type"].endswith(f"State{event}") and e[details]["name"] == state
    ]


def test_a_replace_brings_the_spare_into_service_at_once_and_refills_the_pool(
    world: World, core: client.CoreV1Api, launches: dict[str, float]
) -> None:
    sick, *_ = world.group("p5-spares", 4, **GPU)
    autoscaling = boto3.client("autoscaling", region_name=REGION)
    (spare,) = stand_by(autoscaling, core, "p5-spares", 1)
    assert asg_instance(spare)["LifecycleState"] == "Standby"
    assert not _schedulable(world.node(spare))
    pipeline = world.pipelines["demo"]

    record = decision(sick, "nvidia-xid-79")
    execution = pipeline.start(record)
    assert pipeline.finish(execution)["status"] == "SUCCEEDED"

    assert asg_instance(spare)["LifecycleState"] == "InService"
    assert _schedulable(world.node(spare))
    assert SPARE_LABEL not in (world.node(spare).metadata.labels or {})  # type: ignore[union-attr]
    assert world.node(sick) is None
    # The spare took work before the group had even launched the broken one's replacement.
    (admitted,) = _at(world, execution, "Admit spare", "Exited")
    (newcomer,) = launches
    assert admitted < launches[newcomer]
    # ... which went back to the pool: Standby, held back, and the group's size as before.
    assert asg_instance(newcomer)["LifecycleState"] == "Standby"
    held = world.node(newcomer)
    assert held is not None and held.metadata.labels[SPARE_LABEL] == "true"
    assert [t.key for t in held.spec.taints or []] == [SPARE_TAINT_KEY]
    assert _desired("p5-spares") == 3
    assert [m["outcome"] for m in pipeline.messages(sick)] == ["replaced"]
    (began,) = _at(world, execution, "Start replacing")
    print(f"\nspare: replace decision to schedulable capacity {admitted - began:.2f}s")


def test_without_spares_a_replace_waits_for_the_launch(
    world: World, launches: dict[str, float]
) -> None:
    sick, *_ = world.group("p5-no-spares", 3, **GPU)
    pipeline = world.pipelines["demo"]

    execution = pipeline.start(decision(sick, "nvidia-xid-79"))
    assert pipeline.finish(execution)["status"] == "SUCCEEDED"

    assert _at(world, execution, "Exit standby") == []
    assert world.node(sick) is None
    deadline = time.monotonic() + 10 * LAUNCH_SECONDS
    while not launches and time.monotonic() < deadline:
        time.sleep(0.1)
    (newcomer,) = launches
    assert asg_instance(newcomer)["LifecycleState"] == "InService"
    assert _schedulable(world.node(newcomer))
    assert _desired("p5-no-spares") == 3
    (began,) = _at(world, execution, "Start replacing")
    print(
        f"\nno spare: replace decision to schedulable capacity {launches[newcomer] - began:.2f}s"
        f" (launch and join simulated as {LAUNCH_SECONDS:.0f}s)"
    )


def test_a_group_too_big_for_a_task_result_still_gets_its_spare_and_refill(
    world: World, core: client.CoreV1Api, launches: dict[str, float]
) -> None:
    """DescribeAutoScalingGroups lists 900 instances here, over the 256 KiB a Step Functions
    task may return: neither the group's size nor its spare may be read through it."""
    ids = instances("p5-huge", HUGE)
    sick, last = ids[0], ids[-1]
    world.join("p5-huge", [sick, last], **GPU)
    autoscaling = boto3.client("autoscaling", region_name=REGION)
    (spare,) = stand_by(autoscaling, core, "p5-huge", 1)
    assert spare == last
    answer = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=["p5-huge"])
    assert len(json.dumps(answer, default=str)) > TASK_RESULT_LIMIT
    pipeline = world.pipelines["demo"]

    execution = pipeline.start(decision(sick, "nvidia-xid-79"))
    assert pipeline.finish(execution)["status"] == "SUCCEEDED"

    assert [m["outcome"] for m in pipeline.messages(sick)] == ["replaced"]
    assert world.node(sick) is None
    assert asg_instance(spare)["LifecycleState"] == "InService"
    assert _schedulable(world.node(spare))
    (newcomer,) = launches
    assert asg_instance(newcomer)["LifecycleState"] == "Standby"
    assert _desired("p5-huge") == HUGE - 1
