"""The real Karpenter controller in the local world: the ``sigs.k8s.io/karpenter`` controller
with its KWOK cloud provider (built and cached by build-karpenter.sh beside this module),
run against the local kube-apiserver with its CRDs, a NodePool and the pool's KWOK node class.

Karpenter provisions a NodeClaim for each pending pod its NodePool fits, and its KWOK
provider "launches" the NodeClaim by creating a Node with no kubelet behind it; in a KWOK
cluster the KWOK controller then plays that Node's kubelet. Here the simulated kubelet
(``world.kube.kubelet``) does it: ``KwokNodes`` hands it every Node the provider makes (the
provider labels them ``kwok.x-k8s.io/node=fake``, what KWOK selects them by) and drops each
once it is gone. Everything else is Karpenter's own code: registration, initialization, the
termination finalizer that drains and deletes a Node when its NodeClaim is deleted, and the
new NodeClaim for the pods left pending.

The instance types are ``karpenter-instance-types.json`` beside this module, in the KWOK
provider's format: one, p5.48xlarge (192 vCPUs, 2048 GiB, 8 ``nvidia.com/gpu``: EC2's
figures), on demand in us-east-1a at a nominal price (the provider needs one; nothing here
compares prices). The world plays the node class's controller too: a KWOK node class has
none, and a NodePool whose node class is not Ready provisions nothing.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, utils

from nodemedic.contracts.substrates import (
    KARPENTER_GROUP,
    NODECLAIM_PLURAL,
    NODECLAIM_VERSION,
    NODEPOOL_LABEL,
)
from world.kube.kubeapi import (
    ClusterError,
    LocalCluster,
    ensure_binaries,
    free_ports,
    spawn,
    stop,
    wait_ready,
)
from world.kube.kubelet import SimulatedKubelet
from world.kube.passes import Passes

BUILD_SCRIPT = Path(__file__).with_name("build-karpenter.sh")
BINARY = "karpenter"
INSTANCE_TYPES = Path(__file__).with_name("karpenter-instance-types.json")
NODECLASS_GROUP = "karpenter.kwok.sh"
NODECLASS_VERSION = "v1alpha1"
NODECLASS_KIND = "KWOKNodeClass"
NODECLASS_PLURAL = "kwoknodeclasses"
KWOK_NODE_LABEL = "kwok.x-k8s.io/node"
"""The label (``fake``) the KWOK provider puts on the Nodes it creates."""
NODEPOOL_PLURAL = "nodepools"
TERMINATION_GRACE = "10s"
"""The NodePool's bound on a deleted NodeClaim's drain (``_create_nodepool``)."""
Joined = Callable[[client.V1Node], None]
"""``joined(node)``: a Node the provider created is Ready and its pods run (its kubelet
adopted it)."""
Gone = Callable[[str], None]
"""``gone(node_name)``: a Node the provider created is gone (its NodeClaim terminated)."""
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Karpenter:
    """A running controller: its NodePool (its KWOK node class has the same name), its log."""

    nodepool: str
    log: Path


@contextlib.contextmanager
def karpenter(
    cluster: LocalCluster,
    kubelet: SimulatedKubelet,
    workdir: Path,
    *,
    nodepool: str = "gpu",
    timeout: float = 120.0,
    joined: Joined | None = None,
    gone: Gone | None = None,
) -> Iterator[Karpenter]:
    """Karpenter running against ``cluster`` with a NodePool ``nodepool`` of p5.48xlarge, its
    Nodes run by ``kubelet``; stopped on the way out, whatever ends the block. The NodePool
    never consolidates nor expires a node, so every NodeClaim that goes is one a test or
    nodemedic deleted. Feature gates are Karpenter's defaults (``NodeRepair`` off). The CRDs
    stay (the apiserver may be a session's); the pool's NodeClaims, the NodePool and the
    node class go with the controller. ``joined`` and ``gone`` hear of each Node the
    provider creates once its kubelet runs it, and once it is deleted: where the world
    plays the cloud behind the provider's instances."""
    bins = ensure_binaries(BUILD_SCRIPT, (BINARY,))
    workdir.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    with cluster.api_client() as api:
        apply_crds(api, bins / "crds", began + timeout)
        custom = client.CustomObjectsApi(api)
        metrics_port, health_port = free_ports(2)
        env = {
            "KUBECONFIG": str(cluster.kubeconfig),  # Karpenter's own role is cluster-wide
            "DISABLE_LEADER_ELECTION": "true",
            "METRICS_PORT": str(metrics_port),
            "HEALTH_PROBE_PORT": str(health_port),
            "INSTANCE_TYPES_FILE_PATH": str(INSTANCE_TYPES),
            "LOG_LEVEL": "debug",
            # Its default batching waits up to 10 s for more pods; one pod is a batch here.
            "BATCH_IDLE_DURATION": "1s",
            "BATCH_MAX_DURATION": "2s",
        }
        processes: list[subprocess.Popen[bytes]] = []
        nodes = KwokNodes(kubelet, joined=joined, gone=gone)
        try:
            _create_nodeclass(custom, nodepool)
            _create_nodepool(custom, nodepool, nodepool)
            processes.append(spawn(BINARY, [str(bins / BINARY)], workdir, env))
            wait_ready(processes, workdir, health_port, None, began + timeout)
            nodes.start()
            yield Karpenter(nodepool, workdir / f"{BINARY}.log")
        finally:
            # The NodePool first: while it lives, Karpenter launches a NodeClaim for each
            # pod of a node being released, and the release chases them to its deadline.
            _delete_quietly(custom, KARPENTER_GROUP, NODECLAIM_VERSION, NODEPOOL_PLURAL, nodepool)
            if processes and processes[0].poll() is None:
                _release(custom, nodepool, time.monotonic() + timeout)
            stop(processes)
            nodes.stop()
            _delete_quietly(custom, NODECLASS_GROUP, NODECLASS_VERSION, NODECLASS_PLURAL, nodepool)


def apply_crds(api: client.ApiClient, crds: Path, deadline: float) -> None:
    """Karpenter's CRDs, as the build copied them from its module; each Established before
    the controller starts (its readiness check asks for every kind it serves)."""
    extensions = client.ApiextensionsV1Api(api)
    for path in sorted(crds.glob("*.yaml")):
        document = yaml.safe_load(path.read_text())
        try:
            utils.create_from_dict(api, document)
        except utils.FailToCreateError as exc:
            if any(e.status != 409 for e in exc.api_exceptions):  # 409: already there
                raise
        _wait_established(extensions, document["metadata"]["name"], deadline)


class KwokNodes:
    """What KWOK does for the Nodes the KWOK provider creates, with the simulated kubelet
    as their kubelet: each new one adopted (Ready, its pods run), each gone one forgotten;
    ``joined`` and ``gone`` told of each."""

    def __init__(
        self,
        kubelet: SimulatedKubelet,
        *,
        interval: float = 0.5,
        joined: Joined | None = None,
        gone: Gone | None = None,
    ) -> None:
        self.kubelet = kubelet
        self.interval = interval
        self.joined = joined
        self.gone = gone
        self._passes = Passes("kwok-nodes")
        self._ours: set[str] = set()

    def sync(self) -> None:
        listed = self.kubelet.core.list_node(label_selector=f"{KWOK_NODE_LABEL}=fake").items
        for node in listed:
            if node.metadata.name not in self._ours:
                adopted = self.kubelet.adopt(node)
                self._ours.add(node.metadata.name)
                if self.joined is not None:
                    self.joined(adopted)
        for name in self._ours - {n.metadata.name for n in listed}:
            self.kubelet.forget(name)
            self._ours.discard(name)
            if self.gone is not None:
                self.gone(name)

    def start(self) -> None:
        self._passes.start(self.sync, self.interval)

    def stop(self) -> None:
        self._passes.stop()


def _create_nodeclass(custom: client.CustomObjectsApi, name: str) -> None:
    """The pool's KWOK node class, Ready as its controller would report it."""
    made: dict[str, Any] = custom.create_cluster_custom_object(
        NODECLASS_GROUP,
        NODECLASS_VERSION,
        NODECLASS_PLURAL,
        {
            "apiVersion": f"{NODECLASS_GROUP}/{NODECLASS_VERSION}",
            "kind": NODECLASS_KIND,
            "metadata": {"name": name},
        },
    )
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "Ready",
        "message": "",
        "lastTransitionTime": now,
        "observedGeneration": made["metadata"].get("generation", 1),
    }
    custom.patch_cluster_custom_object_status(
        NODECLASS_GROUP,
        NODECLASS_VERSION,
        NODECLASS_PLURAL,
        name,
        {"status": {"conditions": [ready]}},
    )


def _create_nodepool(custom: client.CustomObjectsApi, name: str, nodeclass: str) -> None:
    custom.create_cluster_custom_object(
        KARPENTER_GROUP,
        NODECLAIM_VERSION,
        NODEPOOL_PLURAL,
        {
            "apiVersion": f"{KARPENTER_GROUP}/{NODECLAIM_VERSION}",
            "kind": "NodePool",
            "metadata": {"name": name},
            "spec": {
                "template": {
                    "spec": {
                        "nodeClassRef": {
                            "group": NODECLASS_GROUP,
                            "kind": NODECLASS_KIND,
                            "name": nodeclass,
                        },
                        "requirements": [
                            {
                                "key": "karpenter.sh/capacity-type",
                                "operator": "In",
                                "values": ["on-demand"],
                            }
                        ],
                        "expireAfter": "Never",
                        # A deleted NodeClaim's drain gives up on PodDisruptionBudgets after
                        # this: the world's teardown deletes every NodeClaim at once, and
                        # the training job's budget would keep the last one for good.
                        # nodemedic drains before it deletes a NodeClaim, so its own
                        # replacements never meet the bound.
                        "terminationGracePeriod": TERMINATION_GRACE,
                    }
                },
                "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"},
            },
        },
    )


def _release(custom: client.CustomObjectsApi, nodepool: str, deadline: float) -> None:
    """Every NodeClaim of the pool deleted, and waited for while Karpenter still runs to
    terminate them: its finalizers would keep them, and their Nodes, in the API for good
    (the apiserver may be a session's, whose later tests list every Node)."""
    selector = f"{NODEPOOL_LABEL}={nodepool}"

    def claims() -> list[str]:
        listed = custom.list_cluster_custom_object(
            KARPENTER_GROUP, NODECLAIM_VERSION, NODECLAIM_PLURAL, label_selector=selector
        )
        return [c["metadata"]["name"] for c in listed["items"]]

    # Again each pass: a NodeClaim Karpenter was launching as its NodePool went may appear.
    while (left := claims()) and time.monotonic() < deadline:
        for name in left:
            _delete_quietly(custom, KARPENTER_GROUP, NODECLAIM_VERSION, NODECLAIM_PLURAL, name)
        time.sleep(0.5)
    if left:
        _log.warning("NodeClaims of %s left after %s stopped: %s", nodepool, BINARY, left)


def _delete_quietly(
    custom: client.CustomObjectsApi, group: str, version: str, plural: str, name: str
) -> None:
    try:
        custom.delete_cluster_custom_object(group, version, plural, name)
    except client.ApiException as exc:
        if exc.status != 404:
            raise


def _wait_established(extensions: client.ApiextensionsV1Api, name: str, deadline: float) -> None:
    while True:
        crd = extensions.read_custom_resource_definition(name)
        conditions = (crd.status and crd.status.conditions) or []
        if any(c.type == "Established" and c.status == "True" for c in conditions):
            return
        if time.monotonic() > deadline:
            raise ClusterError(f"CRD {name} not Established in time")
        time.sleep(0.1)
