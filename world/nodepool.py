"""A Karpenter NodePool in the local world: the real controller (``world.kube.karpenter``)
provisions the nodes the training job's workers ask for, and the world plays the cloud
behind its KWOK provider.

Each Node the provider creates names its instance in its provider ID (the patched provider
of build revision 2, ``aws:///<zone>/i-<17 hex>``). Once its kubelet runs it, that instance
runs in moto, tagged as Karpenter tags the instances it launches, and becomes a machine of
the world with an agent of its own (``World.joined``), so that a fault on it reaches
nodemedic as on any EC2 node. Once Karpenter has deleted the Node (its NodeClaim
terminated), the instance is terminated, as Karpenter's termination of an EC2 NodeClaim
terminates it, and its agent stops with it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from kubernetes import client

from nodemedic.contracts.substrates import NODEPOOL_LABEL
from world.aws.instances import chosen_instance_ids, launch_as
from world.kube.karpenter import Karpenter, karpenter
from world.world import Machine, World

NODEPOOL = "gpu"
"""The world's NodePool (``karpenter_nodepools`` lists it)."""
CLUSTER_TAG = "eks:eks-cluster-name"
"""With ``karpenter.sh/nodepool``, the tag nodemedic's IAM scopes Karpenter's EC2 calls by."""
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
PROVIDER_PREFIX = "aws:///"


@contextlib.contextmanager
def karpenter_pool(world: World, nodepool: str = NODEPOOL) -> Iterator[Karpenter]:
    """Karpenter running with the NodePool ``nodepool``, its Nodes the world's machines;
    stopped on the way out."""
    ec2 = world.aws("ec2")

    def joined(node: client.V1Node) -> None:
        zone, instance_id = instance_of(node.spec.provider_id)
        launch_as(
            ec2,
            instance_id,
            zone=zone,
            instance_type=node.metadata.labels[INSTANCE_TYPE_LABEL],
            tags={NODEPOOL_LABEL: nodepool, CLUSTER_TAG: world.settings.name},
        )
        machine = Machine(instance_id=instance_id, node=node.metadata.name, zone=zone)
        world.karpenter.add(instance_id)
        world.joined(machine, node.status.node_info.boot_id)

    def gone(name: str) -> None:
        for machine in list(world.machines.values()):
            if machine.node == name:
                ec2.terminate_instances(InstanceIds=[machine.instance_id])

    with (
        chosen_instance_ids(),
        karpenter(
            world.cluster,
            world.kubelet,
            world.workdir / "karpenter",
            nodepool=nodepool,
            joined=joined,
            gone=gone,
        ) as running,
    ):
        yield running


def instance_of(provider_id: str) -> tuple[str, str]:
    """``aws:///us-east-1a/i-0abc`` → ``("us-east-1a", "i-0abc")``; a provider ID of any
    other form is an error: the controller is not the patched build."""
    zone, _, instance_id = provider_id.removeprefix(PROVIDER_PREFIX).partition("/")
    if not provider_id.startswith(PROVIDER_PREFIX) or not instance_id.startswith("i-"):
        raise ValueError(f"{provider_id!r} names no EC2 instance (aws:///<zone>/<instance id>)")
    return zone, instance_id


def provisioned(world: World, count: int, timeout: float) -> list[str]:
    """The instances of the first ``count`` nodes of the pool that run a training worker,
    once there are that many: Karpenter launches one per pending worker."""
    deadline = time.monotonic() + timeout
    while True:
        bound = world.job.nodes_running_workers()
        found = [m.instance_id for m in world.live_machines() if m.node in bound]
        if len(found) >= count:
            return found[:count]
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"Karpenter ran {len(found)} of {count} training workers in {timeout:.0f}s; "
                f"see {world.workdir}/karpenter/karpenter.log"
            )
        time.sleep(0.25)
