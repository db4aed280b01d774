"""SageMaker HyperPod (``hyperpod_clusters``): a node of a listed cluster is found by its
instance id, rebooted through ``BatchRebootClusterNodes`` and replaced through
``BatchReplaceClusterNodes`` (HyperPod gives the node a new instance id); a cluster whose own
recovery is ``Automatic`` is deferred to; an instance no listed substrate owns is only
reported."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from kubernetes import client

from nodemedic.contracts.jobs import JOB_RESTARTS_ANNOTATION
from nodemedic.contracts.metrics import METRICS_NAMESPACE, REMEDIATIONS_METRIC, SUBSTRATE_DIMENSION
from nodemedic.settings import ClusterSettings
from tests.support.flow import GPU, World
from tests.support.kube import bind_pod, exists, job_notes, owner, wait_for
from tests.support.remediation import FAST, REGION, decision
from world.aws.hyperpod import create_hyperpod_cluster, hyperpod_calls

pytestmark = [pytest.mark.kube, pytest.mark.usefixtures("own_nodes")]
HYPER = ClusterSettings(
    name="hyper",
    hyperpod_clusters=(("ml-cluster", "abcdef123456"), ("ml-auto", "bcdef1234567")),
    hyperpod_repair="when_recovery_off",
    **FAST,
)
"""HyperPod's recovery is off in ``ml-cluster`` (nodemedic acts) and on in ``ml-auto``."""
INSTANCE_TYPE = "p5.48xlarge"


@pytest.fixture(scope="module")
def extra_clusters() -> tuple[ClusterSettings, ...]:
    return (HYPER,)


@pytest.fixture(scope="module")
def hyperpod(world: World) -> Iterator[dict[str, list[str]]]:
    """Both clusters, four nodes each, their Nodes joined; cluster → instance ids."""
    with hyperpod_calls(launched=lambda old, new: world.join("workers", [new], **GPU)):
        sagemaker = boto3.client("sagemaker", region_name=REGION)
        nodes = {}
        for cluster, recovery in (("ml-cluster", "None"), ("ml-auto", "Automatic")):
            ids = _machines(4)
            world.join("workers", ids, **GPU)
            create_hyperpod_cluster(sagemaker, cluster, {"workers": ids}, node_recovery=recovery)
            nodes[cluster] = ids
        yield nodes


def _machines(count: int) -> list[str]:
    """EC2 instances in no Auto Scaling group, as HyperPod's are."""
    ec2 = boto3.client("ec2", region_name=REGION)
    found = ec2.run_instances(
        ImageId="ami-0a1b2c3d4e5f60718", InstanceType=INSTANCE_TYPE, MinCount=count, MaxCount=count
    )
    return sorted(i["InstanceId"] for i in found["Instances"])


def _run(world: World, record: dict[str, Any]) -> dict[str, Any]:
    pipeline = world.pipelines[HYPER.name]
    result = pipeline.finish(pipeline.start(record))
    assert result["status"] == "SUCCEEDED", result
    found = pipeline.ledger(record)
    assert found is not None
    return found


def _cluster_nodes(cluster: str) -> set[str]:
    sagemaker = boto3.client("sagemaker", region_name=REGION)
    listed = sagemaker.list_cluster_nodes(ClusterName=cluster)["ClusterNodeSummaries"]
    return {node["InstanceId"] for node in listed}


def test_a_reboot_fault_reboots_the_hyperpod_node_through_hyperpod(
    world: World, hyperpod: dict[str, list[str]]
) -> None:
    sick = hyperpod["ml-cluster"][0]
    record = decision(sick, "nvidia-xid-48", cluster=HYPER.name)
    found = _run(world, record)
    assert found["outcome"] == "rebooted-awaiting-deep-check"
    assert found["node_group"] == "ml-cluster"
    assert found["substrate"] == "hyperpod"
    assert sick in world.hypervisor.reboots
    assert sick in _cluster_nodes("ml-cluster")
    (mail,) = world.pipelines[HYPER.name].messages(sick)
    assert (mail["outcome"], mail["substrate"]) == ("rebooted-awaiting-deep-check", "hyperpod")
    counted = boto3.client("cloudwatch", region_name=REGION).list_metrics(
        Namespace=METRICS_NAMESPACE,
        MetricName=REMEDIATIONS_METRIC,
        Dimensions=[
            {"Name": "Outcome", "Value": "rebooted-awaiting-deep-check"},
            {"Name": SUBSTRATE_DIMENSION, "Value": "hyperpod"},
        ],
    )["Metrics"]
    assert counted, "the remediation is counted with its substrate"


def test_an_xid_79_replaces_the_hyperpod_node_with_a_new_instance(
    world: World, hyperpod: dict[str, list[str]]
) -> None:
    sick = hyperpod["ml-cluster"][1]
    before = _cluster_nodes("ml-cluster")
    found = _run(world, decision(sick, "nvidia-xid-79", cluster=HYPER.name))
    assert found["outcome"] == "replaced"
    after = _cluster_nodes("ml-cluster")
    assert sick not in after and len(after) == len(before)
    (newcomer,) = after - before
    assert newcomer.startswith("i-")
    assert world.node(sick) is None
    assert world.node(newcomer) is not None
    sagemaker = boto3.client("sagemaker", region_name=REGION)
    with pytest.raises(sagemaker.exceptions.ResourceNotFound):
        sagemaker.describe_cluster_node(ClusterName="ml-cluster", NodeId=sick)


def test_hyperpod_s_automatic_recovery_is_deferred_to(
    world: World, hyperpod: dict[str, list[str]]
) -> None:
    sick = hyperpod["ml-auto"][0]
    found = _run(world, decision(sick, "nvidia-xid-79", cluster=HYPER.name))
    assert found["outcome"] == "deferred"
    assert "NodeRecovery Automatic" in found["reason"]
    node = world.node(sick)
    assert node is not None and not node.spec.unschedulable
    assert sick in _cluster_nodes("ml-auto")
    (mail,) = world.pipelines[HYPER.name].messages(sick)
    assert mail["outcome"] == "deferred"


def test_an_instance_no_listed_substrate_owns_is_only_reported(
    world: World, hyperpod: dict[str, list[str]]
) -> None:
    (stray,) = _machines(1)
    world.join("elsewhere", [stray], **GPU)
    found = _run(world, decision(stray, "nvidia-xid-79", cluster=HYPER.name))
    assert found["outcome"] == "unmanaged"
    assert found["substrate"] == "none"
    node = world.node(stray)
    assert node is not None and not node.spec.unschedulable
    assert stray not in world.hypervisor.reboots


@pytest.mark.parametrize("repair", ["reboot", "replace"])
def test_a_deferred_node_s_jobs_resume_once_hyperpod_repaired_it(
    world: World,
    hyperpod: dict[str, list[str]],
    admin: client.ApiClient,
    namespace: str,
    repair: str,
) -> None:
    """nodemedic leaves the node to HyperPod's own recovery, but the training job it stops
    is restarted whole once HyperPod has rebooted or replaced the node, as after nodemedic's
    own repairs."""
    sick, peer = hyperpod["ml-auto"][1 if repair == "reboot" else 2], hyperpod["ml-auto"][3]
    name = f"train-{repair}"
    job = owner(
        admin,
        namespace,
        "Job",
        name,
        {
            "nodemedic.io/enable-job-auto-resume": "true",
            "nodemedic.io/job-max-retry-count": "3",
        },
    )
    for rank, instance in enumerate((sick, peer)):
        bind_pod(world.core, namespace, f"{name}-{rank}", world.nodes[instance], owner=job)
    pipeline = world.pipelines[HYPER.name]
    record = decision(sick, "nvidia-xid-79", cluster=HYPER.name)
    # Made before the watch begins: its few rounds are not spent on a busy machine's client.
    sagemaker = boto3.client("sagemaker", region_name=REGION)
    execution = pipeline.start(record)
    wait_for(
        lambda: (pipeline.ledger(record) or {}).get("jobs"),
        timeout=60,
        what="the jobs on the deferred node recorded",
    )
    # HyperPod's own recovery repairs the node, through the calls it answers.
    batch = (
        sagemaker.batch_reboot_cluster_nodes
        if repair == "reboot"
        else sagemaker.batch_replace_cluster_nodes
    )
    assert batch(ClusterName="ml-auto", NodeIds=[sick])["Successful"] == [sick]

    result = pipeline.finish(execution)

    assert result["status"] == "SUCCEEDED", result
    found = pipeline.ledger(record)
    assert found is not None and found["outcome"] == "deferred"
    assert json.loads(found["resumed"])["resumed"] == [f"{namespace}/{name}"]
    wait_for(lambda: not exists(world.core, namespace, f"{name}-1"), what=f"{name}-1 restarted")
    assert job_notes(admin, namespace, name)[JOB_RESTARTS_ANNOTATION] == "1 (1 full)"
