"""The world the remediation flow tests run in: three clusters' pipelines (the synthesized
stacks) in one moto world, the Lambda handlers in-process, the kube Lambda against the real
local kube-apiserver, moto's reboots and instance health reaching the simulated machines,
SSM commands run by the simulated GPUs (the ``world`` fixture,
``tests/integration/stacks/remediation/conftest.py``); and what the tests read of a Node and an
instance."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, cast

import boto3
from kubernetes import client

from nodemedic.contracts.health import DEEP_CHECK_VERDICT
from nodemedic.contracts.kube import TAINT_KEY
from nodemedic.contracts.logs import deep_check_stream, kmsg_stream
from nodemedic.origin.signing import sign
from tests.support.origin import put, register
from tests.support.remediation import REGION, Pipeline, instances
from world.aws.gpus import Gpus
from world.aws.hypervisor import Hypervisor
from world.kube.kubelet import SimulatedKubelet
from world.kube.watch import NodeSeen, NodeWatch

NEURON: dict[str, Any] = {
    "instance_type": "trn1.32xlarge",
    "devices": {"aws.amazon.com/neuron": "16"},
}
GPU: dict[str, Any] = {"instance_type": "p5.48xlarge", "devices": {"nvidia.com/gpu": "8"}}
REBOOT_SECONDS = 0.5
"""How long a rebooting machine's Node stays NotReady."""


@dataclass
class World:
    """Three clusters' pipelines in one moto world, one Kubernetes control plane."""

    pipelines: dict[str, Pipeline]
    core: client.CoreV1Api
    kubelet: SimulatedKubelet
    hypervisor: Hypervisor
    watch: NodeWatch
    nodes: dict[str, str] = field(default_factory=dict)
    """Instance id → Node name."""
    keys: dict[tuple[str, str, str], bytes] = field(default_factory=dict)
    """(cluster, instance id, boot id) → the key its agent registered (``key``)."""
    gpus: Gpus = field(default_factory=Gpus)
    """The instances' GPUs, as the SSM commands sent to them find them."""

    def group(
        self, name: str, size: int, *, instance_type: str, devices: dict[str, str]
    ) -> list[str]:
        """An Auto Scaling group whose instances joined the cluster as Nodes named, as on
        EKS, by their private DNS names."""
        ids = instances(name, size, instance_type=instance_type)
        self.join(name, ids, instance_type=instance_type, devices=devices)
        return ids

    def join(
        self, group: str, ids: list[str], *, instance_type: str, devices: dict[str, str]
    ) -> None:
        """The instances' Nodes register, as EKS nodes of ``group`` do once launched."""
        ec2 = boto3.client("ec2", region_name=REGION)
        for reservation in ec2.describe_instances(InstanceIds=ids)["Reservations"]:
            for instance in reservation["Instances"]:
                node = instance["PrivateDnsName"]
                self.nodes[instance["InstanceId"]] = node
                self.kubelet.register(
                    node,
                    instance["InstanceId"],
                    az=instance["Placement"]["AvailabilityZone"],
                    nodegroup=group,
                    instance_type=instance_type,
                    devices=devices,
                )

    def node(self, instance_id: str) -> client.V1Node | None:
        try:
            return self.core.read_node(self.nodes[instance_id])
        except client.ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def key(self, cluster: str, instance_id: str) -> bytes:
        """The signing key the instance's agent registered for its current boot with the
        cluster (registered on first use, as the agent does at start): after a reboot, the
        new boot's key."""
        node = self.node(instance_id)
        assert node is not None, f"{instance_id} has no Node"
        boot_id = node.status.node_info.boot_id
        known = self.keys.get((cluster, instance_id, boot_id))
        if known is None:
            known = register(
                boto3.client("logs", region_name=REGION),
                boto3.client("kms", region_name=REGION),
                cluster,
                instance_id,
                boot_id,
            )
            self.keys[(cluster, instance_id, boot_id)] = known
        return known

    def ship(self, cluster: str, instance_id: str, line: str) -> None:
        """What the node's agent does with a kernel line: sign it with its key and put it
        in the cluster's log group, whose subscription filter hands it to the classifier."""
        key = self.key(cluster, instance_id)
        now_ms = int(time.time() * 1000)
        self.put(cluster, instance_id, sign(key, instance_id, now_ms, line), now_ms)

    def put(self, cluster: str, instance_id: str, message: str, timestamp_ms: int = 0) -> None:
        """``message`` written as it is into the instance's kernel log stream, as anyone
        holding the agents' shared credential can."""
        logs = boto3.client("logs", region_name=REGION)
        put(logs, cluster, kmsg_stream(instance_id), message, timestamp_ms)

    def seen(self, instance_id: str, since: float) -> list[NodeSeen]:
        return self.watch.history(instance_id, since)


def condition(node: client.V1Node, kind: str) -> client.V1NodeCondition:
    (found,) = [c for c in node.status.conditions if c.type == kind]
    return found


def our_taints(node: client.V1Node) -> list[str]:
    return [f"{t.key}={t.value}:{t.effect}" for t in node.spec.taints or [] if t.key == TAINT_KEY]


def asg_instance(instance_id: str) -> dict[str, Any]:
    autoscaling = boto3.client("autoscaling", region_name=REGION)
    (found,) = autoscaling.describe_auto_scaling_instances(InstanceIds=[instance_id])[
        "AutoScalingInstances"
    ]
    return cast(dict[str, Any], found)


def neuron_line(instance_id: str, error: str = "DMA_ERROR") -> str:
    return (
        f"NEURON_HW_ERR={error} instance-id={instance_id} hostname=ip-10-0-3-17 nd-id=0 "
        "nc-id=3 serial-num=19fcda00f5ff6eb9 action=TERMINATE_INSTANCE"
    )


def ship_verdict(
    world: World,
    instance_id: str,
    status: str,
    reason: str,
    *,
    signed: bool,
    key: bytes | None = None,
) -> None:
    """The deep check's verdict line as the agent ships it (agent.deepcheck.verdict), signed
    with the key its node registered for its current boot (or with ``key``, one kept from
    an earlier boot), or written unsigned by anyone holding the agents' credential."""
    line = json.dumps(
        {"check": DEEP_CHECK_VERDICT, "device": "node", "status": status, "reason": reason}
        | {"figures": {"passed": 3}, "ts": "2026-11-22T18:30:00Z"}
    )
    now_ms = int(time.time() * 1000)
    key = key or world.key("demo", instance_id)
    message = sign(key, instance_id, now_ms, line) if signed else line
    logs = boto3.client("logs", region_name=REGION)
    put(logs, "demo", deep_check_stream(instance_id), message, now_ms)
