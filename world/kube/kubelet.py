"""Simulated kubelets for the local control plane, in the manner of kwok: Nodes that report
what an EKS accelerator node reports, bound pods turn Running and Ready, deletions finish,
and a reboot shows as NotReady, then Ready with a new boot id. No container runs: the real
kube-scheduler binds pods to these Nodes (or a caller sets ``spec.nodeName``); a pod no
scheduler bound stays Pending. The device manager hands each running pod the devices its
limits ask for (ids ``0``, ``1``, ... as the NVIDIA device plugin's ``index`` strategy) and
serves them over the PodResources API on a unix socket per Node (``world.kube.podresources``,
from a process of its own)
for the world's agents; where no agent runs it publishes ``nodemedic.io/pod-devices`` itself
with the agent's own code (``agent.poddevices``; GPU ``i``'s bus id is ``gpus.bus_id(i)``).
"""

from __future__ import annotations

import datetime
import itertools
import json
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from kubernetes import client

from agent.poddevices import GPU_RESOURCE, record
from agent.podresources import Allocation
from nodemedic.contracts.kube import NODEGROUP_LABEL, POD_DEVICES_KEY
from world.aws.gpus import bus_id
from world.kube.kubeapi import KUBE_VERSION
from world.kube.passes import Passes
from world.kube.podresources import Host, socket_path

STRATEGIC = "application/strategic-merge-patch+json"
HOSTNAME_LABEL = "kubernetes.io/hostname"


@dataclass
class _Node:
    name: str
    index: int
    ip: str
    pod_ips: itertools.count[int]
    devices: Mapping[str, int]
    """Extended resource → how many devices of it the Node has."""
    held: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    """``<namespace>/<pod>`` → resource → the device ids the pod was given."""
    back_at: float | None = None  # monotonic time a reboot ends

    def allocate(self, pod: client.V1Pod) -> bool:
        """Gives the pod the devices its containers' limits ask for, once; True when it
        got any (the record changed)."""
        key = _key(pod)
        if key in self.held:
            return False
        given: dict[str, list[str]] = {}
        for container in pod.spec.containers:
            for resource, amount in (
                (container.resources and container.resources.limits) or {}
            ).items():
                if resource not in self.devices:
                    continue
                taken = {i for held in self.held.values() for i in held.get(resource, [])}
                taken |= set(given.get(resource, []))
                free = [str(i) for i in range(self.devices[resource]) if str(i) not in taken]
                given.setdefault(resource, []).extend(free[: int(amount)])
        self.held[key] = given
        return any(given.values())

    def release(self, key: str) -> bool:
        return any(self.held.pop(key, {}).values())

    def record(self) -> str:
        """The Node's device record, as the node's agent makes it from the kubelet's
        allocation (``agent.poddevices``): each GPU by its index and its bus id."""
        allocations = []
        for key, held in self.held.items():
            namespace, _, pod = key.partition("/")
            allocations += [Allocation(namespace, pod, r, tuple(ids)) for r, ids in held.items()]
        gpus = range(self.devices.get(GPU_RESOURCE, 0))
        return json.dumps(record(allocations, {str(i): bus_id(i) for i in gpus}))


def provider_id(az: str, instance_id: str) -> str:
    return f"aws:///{az}/{instance_id}"


class SimulatedKubelet:
    """Plays the kubelet of every Node it registered. ``sync`` does one pass; ``start``
    runs passes on a thread every ``interval`` seconds until ``stop``."""

    kwok = False  # KWOK makes Nodes Ready and runs pods (world.kube.kwok): only reboots here

    def __init__(
        self, api: client.ApiClient, *, interval: float = 0.1, pod_resources: Path | None = None
    ) -> None:
        """``pod_resources``: a folder for each Node's PodResources socket (``socket``),
        which the Node's agent reads and publishes from; None: no socket, and the kubelet
        publishes the record itself (worlds without agents)."""
        self.core = client.CoreV1Api(api)
        self.interval = interval
        self._nodes: dict[str, _Node] = {}
        self._indexes = itertools.count(1)
        self._lock = threading.Lock()
        self._passes = Passes("simulated-kubelet")
        self._pod_resources = pod_resources
        self._host: Host | None = None

    def register(
        self,
        name: str,
        instance_id: str,
        *,
        az: str = "us-east-1a",
        nodegroup: str = "accelerated",
        instance_type: str = "p4d.24xlarge",
        devices: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
        taints: Sequence[Mapping[str, str]] = (),
    ) -> client.V1Node:
        """Create a Ready Node for an instance; ``devices`` are extended resources such as
        ``{"nvidia.com/gpu": "8"}`` or ``{"aws.amazon.com/neuron": "16"}``; ``labels`` and
        ``taints`` as the kubelet's ``--node-labels`` and ``--register-with-taints`` give."""
        counts = {resource: int(n) for resource, n in (devices or {}).items()}
        ip = self._track(name, counts).ip
        resources = {"cpu": "96", "memory": "1152Gi", "pods": "110", **(devices or {})}
        node: dict[str, Any] = {
            "metadata": {
                "name": name,
                "labels": {
                    HOSTNAME_LABEL: name,
                    "kubernetes.io/os": "linux",
                    "topology.kubernetes.io/zone": az,
                    "node.kubernetes.io/instance-type": instance_type,
                    NODEGROUP_LABEL: nodegroup,
                    **(labels or {}),
                },
            },
            "spec": {"providerID": provider_id(az, instance_id), "taints": list(taints) or None},
            "status": {
                "capacity": resources,
                "allocatable": resources,
                "addresses": [
                    {"type": "InternalIP", "address": ip},
                    {"type": "Hostname", "address": name},
                ],
                "conditions": [] if self.kwok else [_ready_condition(ready=True)],
                "nodeInfo": _node_info(),
            },
        }
        if self._pod_resources is not None:
            self._publish_devices(self._nodes[name])
        elif devices:
            # An accelerator node's agent publishes its (empty) device record at once.
            node["metadata"]["annotations"] = {POD_DEVICES_KEY: self._nodes[name].record()}
        return self.core.create_node(node)

    def adopt(self, node: client.V1Node) -> client.V1Node:
        """Become the kubelet of a Node another component created with none behind it, as
        KWOK does for the Nodes Karpenter's KWOK provider makes for its NodeClaims: report it
        Ready, with addresses and node info, and run the pods bound to it; its devices are
        its allocatable extended resources. Karpenter initializes the NodeClaim from there;
        nothing here touches labels or taints. Once per Node; the Node as it reports it."""
        name = node.metadata.name
        allocatable = (node.status and node.status.allocatable) or {}
        counts = {r: int(n) for r, n in allocatable.items() if "/" in r and n.isdigit()}
        with self._lock:
            if name in self._nodes:
                return node
        tracked = self._track(name, counts)
        status = {
            "conditions": [_ready_condition(ready=True)],
            "addresses": [
                {"type": "InternalIP", "address": tracked.ip},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": _node_info(),
        }
        try:
            adopted: client.V1Node = self.core.patch_node_status(
                name, {"status": status}, _content_type=STRATEGIC
            )
        except BaseException:
            self.forget(name)  # else the next pass takes it for adopted: never Ready
            raise
        if counts or self._pod_resources is not None:
            self._publish_devices(tracked)
        return adopted

    def forget(self, name: str) -> None:
        """Stop playing the kubelet of a Node that is gone (its instance terminated)."""
        with self._lock:
            gone = self._nodes.pop(name, None)
        if gone is not None and self._host is not None:
            self._host.withdraw(gone.index)

    def _track(self, name: str, devices: Mapping[str, int]) -> _Node:
        with self._lock:
            # Never reused: a forgotten Node's socket and IP stay its own.
            index = next(self._indexes)
            ip = f"10.0.{index // 250}.{index % 250 + 1}"
            self._nodes[name] = _Node(name, index, ip, itertools.count(), devices)
            return self._nodes[name]

    def reboot(self, name: str, *, down_seconds: float = 1.0) -> None:
        """Report the Node NotReady now; a later pass brings it back with a new boot id."""
        with self._lock:
            self._nodes[name].back_at = time.monotonic() + down_seconds
        self._patch_node_status(name, ready=False)

    def sync(self) -> None:
        """One kubelet pass over every registered Node and the pods bound to them."""
        nodes = self._wake_rebooted()
        if self.kwok:
            return
        pods = self.core.list_pod_for_all_namespaces().items
        changed: set[str] = set()
        for pod in pods:
            bound = nodes.get(pod.spec.node_name or "")
            if bound is None:
                continue
            if pod.metadata.deletion_timestamp is not None:
                self._finish_deletion(pod)
            if pod.metadata.deletion_timestamp is not None or _finished(pod):
                # A kubelet frees a pod's devices once its containers are gone.
                if bound.release(_key(pod)):
                    changed.add(bound.name)
                continue
            if bound.allocate(pod):
                changed.add(bound.name)
            if not _is_running_and_ready(pod):
                self._run(pod, bound)
        listed = {_key(pod) for pod in pods}
        for node in nodes.values():
            # A pod deleted at once (grace period 0) is gone before any pass saw it go.
            if any([node.release(key) for key in set(node.held) - listed]):
                changed.add(node.name)
        for name in sorted(changed):
            self._publish_devices(nodes[name])

    def _wake_rebooted(self) -> dict[str, _Node]:
        """Nodes whose reboot is over come back Ready with a new boot id; all of them."""
        with self._lock:
            nodes = dict(self._nodes)
        for node in nodes.values():
            if node.back_at is not None and time.monotonic() >= node.back_at:
                self._patch_node_status(node.name, ready=True, boot_id=str(uuid.uuid4()))
                node.back_at = None
        return nodes

    def start(self) -> SimulatedKubelet:
        if self._pod_resources is not None:
            self._host = Host(self._pod_resources)
        self._passes.start(self.sync, self.interval)
        return self

    def stop(self) -> None:
        self._passes.stop()
        if self._host is not None:
            self._host.close()

    def socket(self, name: str) -> Path:
        """Node ``name``'s PodResources socket."""
        assert self._pod_resources is not None, "a kubelet without sockets"
        return socket_path(self._pod_resources, self._nodes[name].index)

    def __enter__(self) -> SimulatedKubelet:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _patch_node_status(self, name: str, *, ready: bool, boot_id: str | None = None) -> None:
        status: dict[str, Any] = {"conditions": [_ready_condition(ready=ready)]}
        if boot_id is not None:
            status["nodeInfo"] = {"bootID": boot_id}
        self.core.patch_node_status(name, {"status": status}, _content_type=STRATEGIC)

    def _publish_devices(self, node: _Node) -> None:
        """What the node's agent does with the kubelet's PodResources list, where no agent
        reads it from a socket (``pod_resources``): there the agents publish what the
        socket's host answers."""
        if self._pod_resources is not None:
            assert self._host is not None, "a kubelet with sockets serves them once started"
            self._host.publish(node.index, dict(node.held))
            return
        body = {"metadata": {"annotations": {POD_DEVICES_KEY: node.record()}}}
        try:
            self.core.patch_node(node.name, body)
        except client.ApiException as exc:
            if exc.status != 404:  # the Node was deleted (its instance replaced)
                raise

    def _finish_deletion(self, pod: client.V1Pod) -> None:
        try:
            self.core.delete_namespaced_pod(
                pod.metadata.name,
                pod.metadata.namespace,
                # In the body: the API server ignores query options when a body is sent.
                body=client.V1DeleteOptions(
                    grace_period_seconds=0, preconditions={"uid": pod.metadata.uid}
                ),
            )
        except client.ApiException as exc:
            if exc.status not in (404, 409):  # already gone, or a newer pod by that name
                raise

    def _run(self, pod: client.V1Pod, node: _Node) -> None:
        now = _now()
        ip = f"10.{100 + node.index // 250}.{node.index % 250}.{next(node.pod_ips) % 250 + 1}"
        conditions = [
            {"type": kind, "status": "True", "lastTransitionTime": now}
            for kind in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
        ]
        containers = [
            {
                "name": container.name,
                "image": container.image or "",
                "imageID": "",
                "ready": True,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": now}},
            }
            for container in pod.spec.containers
        ]
        status = {
            "phase": "Running",
            "hostIP": node.ip,
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": now,
            "conditions": conditions,
            "containerStatuses": containers,
        }
        try:
            self.core.patch_namespaced_pod_status(
                pod.metadata.name,
                pod.metadata.namespace,
                {"status": status},
                _content_type=STRATEGIC,
            )
        except client.ApiException as exc:
            if exc.status != 404:
                raise


def _key(pod: client.V1Pod) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


def _finished(pod: client.V1Pod) -> bool:
    """Its containers exited (a test says so): a kubelet never runs a finished pod again,
    and frees its devices."""
    return pod.status is not None and pod.status.phase in ("Succeeded", "Failed")


def _is_running_and_ready(pod: client.V1Pod) -> bool:
    if pod.status is None or pod.status.phase != "Running":
        return False
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def _ready_condition(*, ready: bool) -> dict[str, str]:
    now = _now()
    return {
        "type": "Ready",
        "status": "True" if ready else "False",
        "reason": "KubeletReady" if ready else "KubeletNotReady",
        "message": "kubelet is posting ready status" if ready else "node is rebooting",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }


def _node_info() -> dict[str, str]:
    return {
        "bootID": str(uuid.uuid4()),
        "machineID": uuid.uuid4().hex,
        "systemUUID": str(uuid.uuid4()),
        # EKS publishes no Amazon Linux 2 AMI past Kubernetes 1.32: AL2023's kernel and runtime.
        "kernelVersion": "6.12.46-66.121.amzn2023.x86_64",
        "osImage": "Amazon Linux 2023.9.20251117",
        "containerRuntimeVersion": "containerd://2.1.4",
        "kubeletVersion": f"v{KUBE_VERSION}",
        "operatingSystem": "linux",
        "architecture": "amd64",
    }


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
