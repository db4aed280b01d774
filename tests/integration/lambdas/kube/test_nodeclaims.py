"""The kube Lambda's NodeClaim ops against the real Karpenter controller (its KWOK provider,
``world.kube.karpenter``): a training pod's node is found through its NodeClaim, deleting
the NodeClaim has Karpenter terminate the node and launch another for the pod left pending,
and nothing is found or deleted through anything but what Karpenter wrote."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from nodemedic.contracts.substrates import (
    DELETE_NODECLAIM_OP,
    KARPENTER_GROUP,
    NODECLAIM_GONE_OP,
    NODECLAIM_OF_OP,
    NODECLAIM_PLURAL,
    NODECLAIM_VERSION,
    NODEPOOL_LABEL,
)
from tests.support.kube import Invoke, Node, wait_for
from world.kube.karpenter import NODECLASS_GROUP, Karpenter, karpenter
from world.kube.kubeapi import LocalCluster
from world.kube.kubelet import SimulatedKubelet

pytestmark = [pytest.mark.kube, pytest.mark.controllers]

# Karpenter batches pending pods, launches, registers and initializes a NodeClaim, and the
# scheduler binds the pod: seconds when idle, far longer on a loaded 2-core machine.
LAUNCH = 180.0
HELD = "nodemedic.test/held"
"""A finalizer of the test's own, which keeps a NodeClaim in the API after Karpenter is done."""


@pytest.fixture(scope="module")
def pool(
    cluster: LocalCluster, kubelet: SimulatedKubelet, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Karpenter]:
    with karpenter(cluster, kubelet, tmp_path_factory.mktemp("karpenter")) as running:
        yield running


@pytest.fixture
def custom(admin: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(admin)


@dataclass(frozen=True)
class Trainer:
    """Training workers that each want a whole p5.48xlarge of the pool (its 8 GPUs)."""

    core: client.CoreV1Api
    custom: client.CustomObjectsApi
    namespace: str
    pool: Karpenter

    def create(self, name: str) -> None:
        self.core.create_namespaced_pod(self.namespace, _worker(name, self.pool.nodepool))

    def node_of(self, name: str) -> str:
        """The node the worker runs on, once Karpenter launched one, the worker runs there
        and the node's NodeClaim says it is initialized (Karpenter writes the NodeClaim's
        status after it lets pods onto the Node)."""

        def placed() -> str:
            pod = self.core.read_namespaced_pod(name, self.namespace)
            node = str(pod.spec.node_name) if pod.status.phase == "Running" else ""
            return node if node and _initialized(self.custom, node) else ""

        return wait_for(placed, timeout=LAUNCH, what=f"{name} running on a NodeClaim's node")

    def start(self, name: str) -> str:
        self.create(name)
        return self.node_of(name)

    def stop(self, name: str) -> None:
        self.core.delete_namespaced_pod(name, self.namespace, grace_period_seconds=0)


@pytest.fixture
def trainer(
    core: client.CoreV1Api, custom: client.CustomObjectsApi, namespace: str, pool: Karpenter
) -> Trainer:
    return Trainer(core, custom, namespace, pool)


def _worker(name: str, nodepool: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"job-name": "train"}},
        "spec": {
            "nodeSelector": {NODEPOOL_LABEL: nodepool},
            "containers": [
                {
                    "name": "worker",
                    "image": "trainer:1",
                    "resources": {
                        "requests": {"nvidia.com/gpu": "8", "cpu": "1"},
                        "limits": {"nvidia.com/gpu": "8"},
                    },
                }
            ],
        },
    }


def _initialized(custom: client.CustomObjectsApi, node: str) -> bool:
    return any(
        c.get("status", {}).get("nodeName") == node
        and any(
            k["type"] == "Initialized" and k["status"] == "True"
            for k in c["status"].get("conditions", [])
        )
        for c in _claims(custom).values()
    )


def _claims(custom: client.CustomObjectsApi) -> dict[str, dict[str, Any]]:
    listed = custom.list_cluster_custom_object(KARPENTER_GROUP, NODECLAIM_VERSION, NODECLAIM_PLURAL)
    return {c["metadata"]["name"]: c for c in listed["items"]}


def test_deleting_the_nodeclaim_has_karpenter_replace_the_node_for_the_pending_worker(
    invoke: Invoke, core: client.CoreV1Api, custom: client.CustomObjectsApi, trainer: Trainer
) -> None:
    broken = trainer.start("worker-0")
    found = invoke({"op": NODECLAIM_OF_OP, "node": broken})
    claim = _claims(custom)[found["nodeclaim"]]
    assert found == {
        "nodeclaim": claim["metadata"]["name"],
        "nodepool": trainer.pool.nodepool,
        "nodeclass_group": NODECLASS_GROUP,
        "provider_id": core.read_node(broken).spec.provider_id,
    }
    assert claim["status"]["nodeName"] == broken
    # The patched provider names the instance as EC2's Nodes do: how nodemedic finds it.
    assert re.fullmatch(r"aws:///us-east-1a/i-[0-9a-f]{17}", found["provider_id"]), found

    # What nodemedic does before: cordon and drain; the worker's successor is left pending.
    core.patch_node(broken, {"spec": {"unschedulable": True}})
    trainer.stop("worker-0")
    trainer.create("worker-0-retry")
    answer = invoke({"op": DELETE_NODECLAIM_OP, "node": broken, "nodeclaim": found["nodeclaim"]})
    assert answer == {"deleted": True}

    gone = {"op": NODECLAIM_GONE_OP, "node": broken, "nodeclaim": found["nodeclaim"]}
    wait_for(lambda: invoke(gone)["gone"], timeout=LAUNCH, what="the NodeClaim and its Node gone")
    new_node = trainer.node_of("worker-0-retry")
    assert new_node != broken
    replacement = invoke({"op": NODECLAIM_OF_OP, "node": new_node})
    assert replacement["nodeclaim"] not in ("", found["nodeclaim"])
    assert replacement["nodepool"] == trainer.pool.nodepool


def test_a_node_without_a_nodeclaim_has_none_even_when_labelled_as_karpenters(
    invoke: Invoke,
    new_node: Callable[..., Node],
    custom: client.CustomObjectsApi,
    trainer: Trainer,
) -> None:
    """A label anyone who may patch a node can set points at nothing: only the NodeClaim's
    own status names its node."""
    launched = trainer.start("worker-1")
    (claim,) = [c for c in _claims(custom).values() if c["status"].get("nodeName") == launched]
    plain = new_node(labels={NODEPOOL_LABEL: trainer.pool.nodepool, "karpenter.sh/nodeclaim": "x"})

    answer = invoke({"op": NODECLAIM_OF_OP, "node": plain.name})

    assert answer == {"nodeclaim": "", "nodepool": "", "nodeclass_group": "", "provider_id": ""}
    refused = {
        "op": DELETE_NODECLAIM_OP,
        "node": plain.name,
        "nodeclaim": claim["metadata"]["name"],
    }
    assert invoke(refused) == {"deleted": False}
    assert claim["metadata"]["name"] in _claims(custom)
    assert (
        invoke({"op": NODECLAIM_OF_OP, "node": f"gone-{secrets.token_hex(3)}"})["nodeclaim"] == ""
    )


def test_a_nodeclaim_that_never_goes_is_never_gone(
    invoke: Invoke,
    custom: client.CustomObjectsApi,
    trainer: Trainer,
) -> None:
    node = trainer.start("worker-2")
    name = invoke({"op": NODECLAIM_OF_OP, "node": node})["nodeclaim"]
    custom.patch_cluster_custom_object(
        KARPENTER_GROUP,
        NODECLAIM_VERSION,
        NODECLAIM_PLURAL,
        name,
        {"metadata": {"finalizers": [*_claims(custom)[name]["metadata"]["finalizers"], HELD]}},
    )
    trainer.stop("worker-2")
    assert invoke({"op": DELETE_NODECLAIM_OP, "node": node, "nodeclaim": name}) == {"deleted": True}
    # Repeated, as a retried state may: still the node's NodeClaim, being deleted.
    assert invoke({"op": DELETE_NODECLAIM_OP, "node": node, "nodeclaim": name}) == {"deleted": True}

    # Karpenter has done all it will: its own finalizer is off, ours holds the NodeClaim.
    wait_for(
        lambda: _claims(custom)[name]["metadata"]["finalizers"] == [HELD],
        timeout=LAUNCH,
        what="Karpenter done with the NodeClaim",
    )
    gone = {"op": NODECLAIM_GONE_OP, "node": node, "nodeclaim": name}
    assert invoke(gone) == {"gone": False}

    custom.patch_cluster_custom_object(
        KARPENTER_GROUP, NODECLAIM_VERSION, NODECLAIM_PLURAL, name, {"metadata": {"finalizers": []}}
    )
    wait_for(lambda: invoke(gone)["gone"], timeout=LAUNCH, what="the NodeClaim gone once released")
