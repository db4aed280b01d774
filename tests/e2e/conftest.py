"""The whole local world: moto server with the synthesized stack, the real kube-apiserver,
simulated kubelets, one agent process per node (``nodemedic.local.world``).

One world serves the session: the default scenario leaves every node healthy again (the
replaced one has a successor), so the storm runs on it next; the storm's checks look only
at what its own faults caused. The scenarios are the demo's own; the tests then read the
final state through the APIs themselves (Kubernetes, Auto Scaling, EC2, SQS, CloudWatch,
DynamoDB).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from nodemedic.local.world import NODE_GROUP, World, local_world


@pytest.fixture(scope="package")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    workdir: Path = tmp_path_factory.mktemp("world")
    with local_world(workdir) as running:
        yield running


def node_or_none(world: World, name: str) -> client.V1Node | None:
    try:
        node: client.V1Node = client.CoreV1Api(world.api).read_node(name)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return node


def group_instances(world: World) -> dict[str, dict[str, Any]]:
    """The node group's members by instance id."""
    (group,) = world.aws("autoscaling").describe_auto_scaling_groups(
        AutoScalingGroupNames=[NODE_GROUP]
    )["AutoScalingGroups"]
    return {i["InstanceId"]: i for i in group["Instances"]}


def instance_state(world: World, instance_id: str) -> str:
    reservations = world.aws("ec2").describe_instances(InstanceIds=[instance_id])["Reservations"]
    return str(reservations[0]["Instances"][0]["State"]["Name"])


def workers_by_node(world: World) -> dict[str, list[str]]:
    """Node → phases of the training workers bound to it (terminating pods excluded)."""
    found: dict[str, list[str]] = {}
    for pod in world.job.pods():
        if pod.metadata.deletion_timestamp is None and pod.spec.node_name:
            found.setdefault(pod.spec.node_name, []).append(pod.status.phase)
    return found
