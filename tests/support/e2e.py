"""The whole local world: moto server with the synthesized stack, the real kube-apiserver,
simulated kubelets, one agent process per node (``world.start``).

Each test module runs its scenario in a world of its own (``tests/e2e/conftest.py``): the
breaker's rate limits count per clock hour, so one scenario's replacements would hold the
next one's back. The scenarios are the demo's own; the tests then read the
final state through the APIs themselves (Kubernetes, Auto Scaling, EC2, SQS, CloudWatch,
DynamoDB)."""

from __future__ import annotations

import time
from typing import Any

from world.scenarios.kit import Result
from world.scenarios.registry import SCENARIOS
from world.world import NODE_GROUP, World

DEADLINE = 300.0
"""How long a wait of the e2e tier may last before the run is called broken: each ends as
soon as what it waits for is seen, and a busy machine makes that minutes, not seconds."""


def run_scenario(world: World, name: str) -> Result:
    """The demo's scenario ``name`` as ``nodemedic demo`` runs it, printing its progress and
    how long it took (``pytest -s`` shows both)."""
    began = time.monotonic()
    found = SCENARIOS[name](world, print)
    print(f"{name} scenario: {time.monotonic() - began:.1f}s")
    return found


def group_instances(world: World) -> dict[str, dict[str, Any]]:
    """The node group's members by instance id."""
    (group,) = world.aws("autoscaling").describe_auto_scaling_groups(
        AutoScalingGroupNames=[NODE_GROUP]
    )["AutoScalingGroups"]
    return {i["InstanceId"]: i for i in group["Instances"]}


def group_after_replacements(
    world: World, replaced: set[str], timeout: float = DEADLINE
) -> dict[str, dict[str, Any]]:
    """``group_instances`` once the node group has finished replacing ``replaced``.

    A remediation ends when its instance starts terminating; the Auto Scaling group then
    terminates it and launches its successor a moment later (``start.TERMINATE_SECONDS``
    locally, minutes on AWS). Asserting on the group right after the last remediation
    raced that: wait until every replaced instance has left the group and is terminated
    and every member is InService. ``timeout`` only bounds a broken run."""
    deadline = time.monotonic() + timeout
    while True:
        members = group_instances(world)
        if (
            not replaced & set(members)
            and all(world.instance_state(i) == "terminated" for i in replaced)
            and {m["LifecycleState"] for m in members.values()} == {"InService"}
        ):
            return members
        assert time.monotonic() < deadline, (replaced, members)
        time.sleep(0.2)


def workers_by_node(world: World) -> dict[str, list[str]]:
    """Node → phases of the training workers bound to it (terminating pods excluded)."""
    found: dict[str, list[str]] = {}
    for pod in world.job.pods():
        if pod.metadata.deletion_timestamp is None and pod.spec.node_name:
            found.setdefault(pod.spec.node_name, []).append(pod.status.phase)
    return found


def workers_running_again(world: World, timeout: float = DEADLINE) -> dict[str, list[str]]:
    """``workers_by_node`` once every training worker runs again, one per node; the job's
    controllers reschedule within a few passes, so ``timeout`` only bounds a broken run."""
    deadline = time.monotonic() + timeout
    while True:
        placed = workers_by_node(world)
        if sum(len(p) for p in placed.values()) == world.job.workers and all(
            p == ["Running"] for p in placed.values()
        ):
            return placed
        assert time.monotonic() < deadline, placed
        time.sleep(0.2)
