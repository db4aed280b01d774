"""Karpenter (``karpenter_nodepools``) in the executing state machine: a node found through
its NodeClaim is cordoned and drained, its NodeClaim deleted, and the remediation parked as
failed when the NodeClaim never goes, its record, mail and ``history`` naming the substrate;
a node no NodeClaim names is only reported; an EKS Auto Mode node's reboot is only notified,
never a failed execution.

Karpenter's CRDs are served (as its build ships them) with no controller running: the test
writes the NodeClaim and its status as Karpenter would, with a finalizer of its own that
keeps it in the API, as a stuck termination does. Its Node is an EC2 instance's
(``aws:///``), as on EKS; ``tests/integration/lambdas/kube/test_nodeclaims.py`` runs the
ops against the real controller."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from kubernetes import client

from console.cli.remediations import entry, lines
from nodemedic.contracts.substrates import (
    AUTO_MODE_NODECLASS_GROUP,
    KARPENTER_GROUP,
    NODECLAIM_PLURAL,
    NODECLAIM_VERSION,
    NODEPOOL_LABEL,
)
from nodemedic.settings import ClusterSettings
from tests.support.flow import GPU, World, our_taints
from tests.support.remediation import FAST, REGION, decision
from world.kube.karpenter import (
    BINARY,
    BUILD_SCRIPT,
    NODECLASS_GROUP,
    NODECLASS_KIND,
    apply_crds,
)
from world.kube.kubeapi import ensure_binaries

pytestmark = [pytest.mark.kube, pytest.mark.controllers, pytest.mark.usefixtures("own_nodes")]
POOLS = ClusterSettings(name="pools", karpenter_nodepools=("gpu",), **FAST)
HELD = "nodemedic.test/held"
"""A finalizer of the test's own: the NodeClaim stays in the API once deleted, as one whose
instance Karpenter cannot terminate does."""


@pytest.fixture(scope="module")
def extra_clusters() -> tuple[ClusterSettings, ...]:
    return (POOLS,)


@pytest.fixture(scope="module")
def custom(admin: client.ApiClient) -> client.CustomObjectsApi:
    apply_crds(admin, ensure_binaries(BUILD_SCRIPT, (BINARY,)) / "crds", time.monotonic() + 60)
    return client.CustomObjectsApi(admin)


@pytest.fixture
def claims(custom: client.CustomObjectsApi) -> Iterator[list[str]]:
    """The NodeClaims a test made, released and deleted after it."""
    made: list[str] = []
    yield made
    for name in made:
        try:
            custom.patch_cluster_custom_object(
                KARPENTER_GROUP,
                NODECLAIM_VERSION,
                NODECLAIM_PLURAL,
                name,
                {"metadata": {"finalizers": []}},
            )
            custom.delete_cluster_custom_object(
                KARPENTER_GROUP, NODECLAIM_VERSION, NODECLAIM_PLURAL, name
            )
        except client.ApiException as exc:
            if exc.status != 404:
                raise


def _machine(world: World) -> str:
    """An EC2 instance in no Auto Scaling group, joined as a Node, as Karpenter's are."""
    ec2 = boto3.client("ec2", region_name=REGION)
    (instance,) = ec2.run_instances(
        ImageId="ami-0a1b2c3d4e5f60718", InstanceType="p5.48xlarge", MinCount=1, MaxCount=1
    )["Instances"]
    world.join("gpu", [instance["InstanceId"]], **GPU)
    return str(instance["InstanceId"])


def _claim(
    custom: client.CustomObjectsApi,
    world: World,
    instance_id: str,
    name: str,
    nodeclass: str = NODECLASS_GROUP,
) -> None:
    """The NodeClaim Karpenter would have written for the instance's Node, held; its node
    class of the API group ``nodeclass`` (``eks.amazonaws.com``: EKS Auto Mode's)."""
    node = world.node(instance_id)
    assert node is not None
    custom.create_cluster_custom_object(
        KARPENTER_GROUP,
        NODECLAIM_VERSION,
        NODECLAIM_PLURAL,
        {
            "apiVersion": f"{KARPENTER_GROUP}/{NODECLAIM_VERSION}",
            "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {NODEPOOL_LABEL: "gpu"}, "finalizers": [HELD]},
            "spec": {
                "nodeClassRef": {"group": nodeclass, "kind": NODECLASS_KIND, "name": "gpu"},
                "requirements": [],
            },
        },
    )
    custom.patch_cluster_custom_object_status(
        KARPENTER_GROUP,
        NODECLAIM_VERSION,
        NODECLAIM_PLURAL,
        name,
        {"status": {"nodeName": node.metadata.name, "providerID": node.spec.provider_id}},
    )


def _run(world: World, record: dict[str, Any]) -> dict[str, Any]:
    pipeline = world.pipelines[POOLS.name]
    pipeline.finish(pipeline.start(record))
    found = pipeline.ledger(record)
    assert found is not None
    return found


def test_a_nodeclaim_that_never_goes_parks_the_remediation_as_failed(
    world: World, custom: client.CustomObjectsApi, claims: list[str]
) -> None:
    sick = _machine(world)
    claims.append("gpu-held")
    _claim(custom, world, sick, "gpu-held")

    found = _run(world, decision(sick, "nvidia-xid-79", cluster=POOLS.name))

    assert (found["state"], found["substrate"]) == ("failed", "karpenter")
    assert json.loads(found["error"])["Error"] == "TerminationTimeout"
    claim = custom.get_cluster_custom_object(
        KARPENTER_GROUP, NODECLAIM_VERSION, NODECLAIM_PLURAL, "gpu-held"
    )
    assert claim["metadata"].get("deletionTimestamp"), "the NodeClaim was deleted"
    node = world.node(sick)
    assert node is not None and node.spec.unschedulable and our_taints(node)
    pipeline = world.pipelines[POOLS.name]
    assert pipeline.item(sick, "inflight") is not None, "parked: no new remediation starts"
    (mail,) = [m for m in pipeline.messages(sick) if m["outcome"] == "failed"]
    assert (mail["stopped_at"], mail["substrate"]) == ("replacing", "karpenter")
    assert mail["error"]["Cause"] == "NodeClaim gpu-held was still there after reboot_timeout"
    assert lines(entry(found))[0].endswith("nvidia-xid-79: replace -> failed (karpenter)")


@pytest.mark.usefixtures("custom")
def test_a_node_no_nodeclaim_names_is_only_reported(world: World) -> None:
    stray = _machine(world)

    found = _run(world, decision(stray, "nvidia-xid-79", cluster=POOLS.name))

    assert (found["outcome"], found["substrate"]) == ("unmanaged", "none")
    node = world.node(stray)
    assert node is not None and not node.spec.unschedulable and not our_taints(node)


def test_an_auto_mode_node_s_reboot_is_notified_never_a_failed_execution(
    world: World, custom: client.CustomObjectsApi, claims: list[str]
) -> None:
    """EKS Auto Mode's instances refuse EC2 actions: with ``auto_mode_reboot`` at its default
    (``notify``), a reboot-class fault is reported, the node left as it is."""
    sick = _machine(world)
    claims.append("auto-held")
    _claim(custom, world, sick, "auto-held", nodeclass=AUTO_MODE_NODECLASS_GROUP)

    found = _run(world, decision(sick, "nvidia-xid-48", cluster=POOLS.name))

    assert (found["state"], found["outcome"], found["substrate"]) == (
        "closed",
        "notified",
        "automode",
    ), found
    claim = custom.get_cluster_custom_object(
        KARPENTER_GROUP, NODECLAIM_VERSION, NODECLAIM_PLURAL, "auto-held"
    )
    assert not claim["metadata"].get("deletionTimestamp"), "the NodeClaim was deleted"
    node = world.node(sick)
    assert node is not None and not node.spec.unschedulable and not our_taints(node)
    (mail,) = [m for m in world.pipelines[POOLS.name].messages(sick)]
    assert (mail["outcome"], mail["substrate"]) == ("notified", "automode")
    assert "EKS Auto Mode cannot reboot a node" in mail["reason"], mail
