"""Objects the kube tests put on the cluster: pods bound to nodes, their owners, PDBs."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from kubernetes import client
from kubernetes.dynamic import DynamicClient

from nodemedic.contracts.kube import POD_DEVICES_KEY

T = TypeVar("T")
Invoke = Callable[[dict[str, Any]], dict[str, Any]]
"""The kube Lambda handler, bound to the remediator's kubeconfig and a context."""


@dataclass(frozen=True)
class Node:
    name: str
    instance_id: str


def wait_for(check: Callable[[], T], *, timeout: float = 60.0, what: str = "condition") -> T:
    """``check()`` once it is truthy; the simulated kubelet, the scheduler and the
    controllers act within a second on an idle machine and within tens of seconds on a
    busy one, so the timeout only bounds a broken run."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)


def owner(
    api: client.ApiClient,
    namespace: str,
    kind: str,
    name: str,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Create a real Job / ReplicaSet / DaemonSet (no controller acts on it) and return an
    ownerReference to it."""
    labels = {"owner": name}
    template: dict[str, Any] = {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "main", "image": "trainer:1"}]},
    }
    spec: dict[str, Any] = {"template": template}
    if kind == "Job":
        template["spec"]["restartPolicy"] = "Never"
    else:
        spec["selector"] = {"matchLabels": labels}
    version = "batch/v1" if kind == "Job" else "apps/v1"
    made = (
        DynamicClient(api)
        .resources.get(api_version=version, kind=kind)
        .create(
            namespace=namespace,
            body={"metadata": {"name": name, "annotations": dict(annotations or {})}, "spec": spec},
        )
    )
    return {
        "apiVersion": version,
        "kind": kind,
        "name": name,
        "uid": made.metadata.uid,
        "controller": True,
    }


def job_notes(admin: client.ApiClient, namespace: str, name: str) -> dict[str, str]:
    """The Job's annotations: what auto-resume wrote on it."""
    meta = client.BatchV1Api(admin).read_namespaced_job(name, namespace).metadata
    return dict(meta.annotations or {})


def bind_pod(
    core: client.CoreV1Api,
    namespace: str,
    name: str,
    node: str,
    *,
    labels: Mapping[str, str] | None = None,
    owner: Mapping[str, Any] | None = None,
    annotations: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
) -> client.V1Pod:
    """A pod created bound to ``node`` (``spec.nodeName``): the scheduler never sees it,
    so a test decides where each of its pods runs; ``limits`` such as ``{"nvidia.com/gpu":
    "2"}`` get it devices from the simulated kubelet."""
    metadata: dict[str, Any] = {"name": name, "labels": dict(labels or {})}
    if owner:
        metadata["ownerReferences"] = [dict(owner)]
    if annotations:
        metadata["annotations"] = dict(annotations)
    container: dict[str, Any] = {"name": "main", "image": "trainer:1"}
    if limits:
        container["resources"] = {"limits": dict(limits)}
    spec = {"nodeName": node, "containers": [container]}
    return core.create_namespaced_pod(namespace, {"metadata": metadata, "spec": spec})


def running(core: client.CoreV1Api, namespace: str, name: str) -> bool:
    pod = core.read_namespaced_pod(name, namespace)
    return bool(pod.status.phase == "Running")


def exists(core: client.CoreV1Api, namespace: str, name: str) -> bool:
    try:
        core.read_namespaced_pod(name, namespace)
    except client.ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def pdb(
    api: client.ApiClient, namespace: str, name: str, labels: Mapping[str, str], **spec: Any
) -> Any:
    """A PodDisruptionBudget; returns a function that reads its status."""
    budgets = DynamicClient(api).resources.get(api_version="policy/v1", kind="PodDisruptionBudget")
    body = {"metadata": {"name": name}, "spec": {"selector": {"matchLabels": dict(labels)}, **spec}}
    budgets.create(namespace=namespace, body=body)
    return lambda: budgets.get(namespace=namespace, name=name).status


def device_record(core: client.CoreV1Api, node: str) -> dict[str, list[str]]:
    """The Node's device record (``nodemedic.io/pod-devices``), empty while it has none."""
    notes = core.read_node(node).metadata.annotations or {}
    return dict(json.loads(notes.get(POD_DEVICES_KEY) or "{}"))


def holds(core: client.CoreV1Api, node: str, pod: str) -> bool:
    """Whether the Node's device record names ``pod`` (``<namespace>/<name>``) a holder."""
    return pod in device_record(core, node)
