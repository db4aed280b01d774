"""Spares in the local world: instances of a node group moved to Auto Scaling ``Standby``
and their Nodes held back, as an operator sets a group up for ``spares`` (docs/deploy.md)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubernetes import client

from lambdas.kube.listing import find_node
from lambdas.kube.spares import mark_spare


def chosen(serving: Iterable[str], count: int) -> list[str]:
    """Which of the in-service instances become the ``count`` spares: the last by id."""
    ordered = sorted(serving)
    return ordered[len(ordered) - count :] if count else []


def stand_by(autoscaling: Any, core: client.CoreV1Api, group: str, count: int) -> list[str]:
    """The last ``count`` in-service instances of ``group`` (whose Nodes have joined) made
    spares: Node held back, then Standby with the desired capacity decremented. The group's
    sizes are what a real one needs: ``MinSize`` at most the capacity left in service,
    ``MaxSize`` room for every spare brought back into service."""
    (found,) = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[group])[
        "AutoScalingGroups"
    ]
    spares = chosen(
        (i["InstanceId"] for i in found["Instances"] if i["LifecycleState"] == "InService"), count
    )
    left = found["DesiredCapacity"] - len(spares)
    autoscaling.update_auto_scaling_group(
        AutoScalingGroupName=group,
        MinSize=min(found["MinSize"], left),
        MaxSize=max(found["MaxSize"], found["DesiredCapacity"]),
    )
    for instance_id in spares:
        node = find_node(core, instance_id)
        if node is None:
            raise LookupError(f"spare {instance_id} of {group} has no Node")
        mark_spare(core, node.metadata.name)
    if spares:
        autoscaling.enter_standby(
            AutoScalingGroupName=group, InstanceIds=spares, ShouldDecrementDesiredCapacity=True
        )
    return spares
