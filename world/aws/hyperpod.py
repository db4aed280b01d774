"""SageMaker HyperPod clusters in the local world: moto's clusters with the calls nodemedic
repairs through.

moto 5.2.5 has ``CreateCluster``, ``DescribeCluster``, ``ListClusterNodes`` and
``DescribeClusterNode``, but not ``BatchRebootClusterNodes`` nor ``BatchReplaceClusterNodes``;
its nodes' ids are made up (``<instance group>-<n>``), where HyperPod's are the EC2 instance
ids; a node it does not know is a ``ValidationException``, where HyperPod answers
``ResourceNotFound``; and ``DescribeCluster`` says nothing of ``NodeRecovery``. While
``hyperpod_calls`` is active:

- ``BatchRebootClusterNodes`` reboots each named node's EC2 instance (so the machine under
  it reboots, ``hypervisor.py``); ``BatchReplaceClusterNodes`` terminates it and launches
  another in its place: the cluster's node gets a new instance id, the old one is
  ``ResourceNotFound``. Both answer as botocore's service model says (``Successful``, and
  ``Failed`` with ``InstanceIdNotFound`` for a node the cluster does not have);
- ``DescribeClusterNode`` of an unknown node or cluster is ``ResourceNotFound``;
- ``DescribeCluster`` carries the ``NodeRecovery`` given to ``create_hyperpod_cluster``.

``hyperpod_machines`` starts a world whose machines are a cluster's nodes, in no Auto
Scaling group, as HyperPod's instances are.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import boto3

from nodemedic.contracts.substrates import hyperpod_log_group
from world.aws.motopatch import DESCRIBE_CLUSTER, DESCRIBE_CLUSTER_NODE, replaced
from world.aws.stack import IMAGE_ID

Launched = Callable[[str, str], None]
"""``launched(old_instance_id, new_instance_id)``: HyperPod replaced a node."""
BATCH_CALLS = ("batch_reboot_cluster_nodes", "batch_replace_cluster_nodes")
"""The responses moto lacks, added to ``SageMakerResponse`` while the calls are active."""
NOT_FOUND = "InstanceIdNotFound"
GROUP = "workers"
"""The instance group of a world's HyperPod cluster (``hyperpod_machines``)."""
_recovery: dict[str, str] = {}


def create_hyperpod_cluster(
    sagemaker: Any,
    name: str,
    nodes: Mapping[str, Sequence[str]],
    *,
    instance_type: str = "ml.p5.48xlarge",
    node_recovery: str = "Automatic",
) -> str:
    """A HyperPod cluster whose instance groups (``nodes``: group → EC2 instance ids) are the
    given instances, as HyperPod's node ids are; its ARN."""
    arn: str = sagemaker.create_cluster(
        ClusterName=name,
        InstanceGroups=[
            {
                "InstanceGroupName": group,
                "InstanceType": instance_type,
                "InstanceCount": 0,
                "LifeCycleConfig": {"SourceS3Uri": "s3://sagemaker-lifecycle/", "OnCreate": "x"},
                "ExecutionRole": "arn:aws:iam::123456789012:role/hyperpod",
                "ThreadsPerCore": 1,
            }
            for group in nodes
        ],
        VpcConfig={"SecurityGroupIds": ["sg-0"], "Subnets": ["subnet-0"]},
    )["ClusterArn"]
    cluster = _cluster(_backend(sagemaker.meta.region_name), name)
    for group, instance_ids in nodes.items():
        for instance_id in instance_ids:
            _add_node(cluster, group, instance_id)
    _recovery[name] = node_recovery
    return arn


def hyperpod_machines(
    ec2: Any,
    sagemaker: Any,
    cluster: str,
    count: int,
    *,
    instance_type: str,
    availability_zone: str,
    node_recovery: str,
) -> list[str]:
    """``count`` running instances in no Auto Scaling group, made the nodes of the HyperPod
    cluster ``cluster`` (one instance group, ``GROUP``): how a world whose machines
    HyperPod owns starts; their instance ids, sorted."""
    found = ec2.run_instances(
        ImageId=IMAGE_ID,
        InstanceType=instance_type,
        MinCount=count,
        MaxCount=count,
        Placement={"AvailabilityZone": availability_zone},
    )["Instances"]
    instance_ids = sorted(i["InstanceId"] for i in found)
    create_hyperpod_cluster(sagemaker, cluster, {GROUP: instance_ids}, node_recovery=node_recovery)
    return instance_ids


def create_log_groups(logs: Any, clusters: Iterable[tuple[str, str]]) -> None:
    """The clusters' log groups, which HyperPod makes with each cluster and nodemedic's stack
    subscribes the classifier to: they must exist before it is deployed."""
    for name, cluster_id in clusters:
        logs.create_log_group(logGroupName=hyperpod_log_group(name, cluster_id))


@contextlib.contextmanager
def hyperpod_calls(launched: Launched | None = None) -> Iterator[None]:
    """While active, moto's SageMaker answers the HyperPod calls nodemedic makes."""
    from moto.sagemaker.exceptions import ResourceNotFound
    from moto.sagemaker.responses import SageMakerResponse
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_aws_sdk as sdk,
    )

    present = [name for name in BATCH_CALLS if hasattr(SageMakerResponse, name)]
    if present:
        raise RuntimeError(f"moto has {', '.join(present)} now: use its own")
    describe_node = DESCRIBE_CLUSTER_NODE.current()
    describe = DESCRIBE_CLUSTER.current()

    def describe_cluster_node(self: Any, cluster_name: str, node_id: str) -> Any:
        if node_id not in _cluster(self, cluster_name, ResourceNotFound).nodes:
            raise ResourceNotFound(f"Node {node_id} not found in cluster {cluster_name}")
        return describe_node(self, cluster_name, node_id)

    def describe_cluster(self: Any, cluster_name: str) -> Any:
        found = describe(self, cluster_name)
        recovery = _recovery.get(found["ClusterName"])
        return {**found, "NodeRecovery": recovery} if recovery else found

    def batch(act: Callable[[Any, str], None]) -> Callable[[Any], Any]:
        def respond(self: Any) -> Any:
            from moto.core.responses import ActionResult

            cluster = _cluster(self.sagemaker_backend, self._get_param("ClusterName"))
            done, failed = [], []
            for node_id in self._get_param("NodeIds") or []:
                if node_id not in cluster.nodes:
                    failed.append(
                        {"NodeId": node_id, "ErrorCode": NOT_FOUND, "Message": "no such node"}
                    )
                    continue
                act(cluster, node_id)
                done.append(node_id)
            return ActionResult({"Successful": done, "Failed": failed})

        return respond

    def replace(cluster: Any, node_id: str) -> None:
        new_id = _replace(cluster, node_id)
        if launched is not None:
            launched(node_id, new_id)

    sdk._SERVICE_ERROR_NAMES["sagemaker"] = "SageMaker"
    SageMakerResponse.batch_reboot_cluster_nodes = batch(_reboot)  # type: ignore[attr-defined]
    SageMakerResponse.batch_replace_cluster_nodes = batch(replace)  # type: ignore[attr-defined]
    try:
        with replaced(
            {DESCRIBE_CLUSTER_NODE: describe_cluster_node, DESCRIBE_CLUSTER: describe_cluster}
        ):
            yield
    finally:
        for name in BATCH_CALLS:
            delattr(SageMakerResponse, name)
        sdk._SERVICE_ERROR_NAMES.pop("sagemaker", None)
        _recovery.clear()


def _backend(region: str) -> Any:
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.sagemaker.models import sagemaker_backends

    return sagemaker_backends[DEFAULT_ACCOUNT_ID][region]


def _ec2(cluster: Any) -> Any:
    from moto.ec2.models import ec2_backends

    return ec2_backends[cluster.account_id][cluster.region_name]


def _cluster(backend: Any, name: str, missing: type[Exception] | None = None) -> Any:
    """moto's cluster by name or ARN; ``missing`` is raised for none (else KeyError)."""
    key = name.rsplit("/", maxsplit=1)[-1]
    found = backend.clusters.get(key)
    if found is None:
        raise (missing or KeyError)(f"Cluster {name} not found")
    return found


def _add_node(cluster: Any, group: str, instance_id: str) -> None:
    from moto.sagemaker.models import ClusterNode

    spec = next(g for g in cluster.instance_groups if g["InstanceGroupName"] == group)
    cluster.nodes[instance_id] = ClusterNode(
        region_name=cluster.region_name,
        account_id=cluster.account_id,
        cluster_name=cluster.cluster_name,
        instance_group_name=group,
        instance_type=spec["InstanceType"],
        life_cycle_config=spec["LifeCycleConfig"],
        execution_role=spec["ExecutionRole"],
        node_id=instance_id,
        threads_per_core=spec["ThreadsPerCore"],
    )
    spec["CurrentCount"] = spec["TargetCount"] = sum(
        1 for node in cluster.nodes.values() if node.instance_group_name == group
    )


def _reboot(cluster: Any, node_id: str) -> None:
    """The instance reboots as EC2's RebootInstances reboots it (the hypervisor hears it)."""
    _ec2(cluster).reboot_instances([node_id])


def _replace(cluster: Any, node_id: str) -> str:
    """The old instance terminates and a new one of its type takes its place in the group:
    the node's new instance id."""
    ec2 = _ec2(cluster)
    old = ec2.get_instance(node_id)
    (launched,) = boto3.client("ec2", region_name=cluster.region_name).run_instances(
        ImageId=old.image_id,
        InstanceType=old.instance_type,
        MinCount=1,
        MaxCount=1,
        Placement={"AvailabilityZone": old.availability_zone},
    )["Instances"]
    new_id: str = launched["InstanceId"]
    ec2.terminate_instances([node_id])
    group = cluster.nodes.pop(node_id).instance_group_name
    _add_node(cluster, group, new_id)
    return new_id
