"""A training job on the local cluster: one worker pod per node, a PodDisruptionBudget, and
the two controllers the local control plane leaves out, reduced to what the job needs.

- the Job controller: a worker pod that is gone (evicted, deleted) is created again;
- the scheduler: a pending worker is bound (``pods/binding``, as kube-scheduler does) to a
  Ready node that is not cordoned, has no ``NoSchedule`` taint and runs no other worker.

So a drained node's workers come back on healthy nodes, or wait Pending until a
replacement joins, which is what a person watching the job sees on EKS.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.dynamic import DynamicClient

from world.passes import Passes

WORKER_LABEL = "training.nodemedic.io/worker"
JOB_LABEL = "job-name"


@dataclass(frozen=True)
class Placement:
    """A worker bound to a node at ``at`` (epoch seconds)."""

    worker: int
    pod: str
    node: str
    at: float


@dataclass
class TrainingJob:
    api: client.ApiClient
    name: str = "llm-pretrain"
    namespace: str = "training"
    workers: int = 6
    interval: float = 0.2
    placements: list[Placement] = field(default_factory=list)
    _passes: Passes = field(default_factory=lambda: Passes("training-job"))
    _owner: dict[str, Any] = field(default_factory=dict)

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)

    @property
    def selector(self) -> str:
        return f"{JOB_LABEL}={self.name}"

    def create(self, nodes: list[str]) -> None:
        """The namespace, the Job (no controller acts on it: it owns the pods), the budget
        (at most one worker down at a time) and the workers, on ``nodes`` in order."""
        core = self.core
        core.create_namespace({"metadata": {"name": self.namespace}})
        dynamic = DynamicClient(self.api)
        template = {
            "metadata": {"labels": {JOB_LABEL: self.name}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "trainer", "image": "trainer:1"}],
            },
        }
        job = dynamic.resources.get(api_version="batch/v1", kind="Job").create(
            namespace=self.namespace,
            body={
                "metadata": {"name": self.name},
                "spec": {
                    # 0: where the real Job controller runs (the jobs scenario), it makes
                    # none of this job's pods, which the controller here owns.
                    "parallelism": 0,
                    "completions": self.workers,
                    "template": template,
                },
            },
        )
        self._owner = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": self.name,
            "uid": job.metadata.uid,
            "controller": True,
        }
        dynamic.resources.get(api_version="policy/v1", kind="PodDisruptionBudget").create(
            namespace=self.namespace,
            body={
                "metadata": {"name": self.name},
                "spec": {
                    "minAvailable": self.workers - 1,
                    "selector": {"matchLabels": {JOB_LABEL: self.name}},
                },
            },
        )
        for worker, node in enumerate(nodes[: self.workers]):
            self._create_worker(worker, node)

    def start(self) -> TrainingJob:
        self._passes.start(self.sync, self.interval)
        return self

    def stop(self) -> None:
        self._passes.stop()

    def pods(self) -> list[client.V1Pod]:
        pods: list[client.V1Pod] = self.core.list_namespaced_pod(
            self.namespace, label_selector=self.selector
        ).items
        return pods

    def nodes_running_workers(self) -> dict[str, int]:
        """Node → worker, for the workers bound to a node and not being deleted."""
        return {
            p.spec.node_name: int(p.metadata.labels[WORKER_LABEL])
            for p in self.pods()
            if p.spec.node_name and p.metadata.deletion_timestamp is None
        }

    def sync(self) -> None:
        """One pass of both controllers."""
        pods = [p for p in self.pods() if p.metadata.deletion_timestamp is None]
        present = {int(p.metadata.labels[WORKER_LABEL]) for p in pods}
        for worker in sorted(set(range(self.workers)) - present):
            self._create_worker(worker, None)
        pending = [p for p in pods if not p.spec.node_name]
        if not pending:
            # Freshly created pods of this pass are bound on the next one.
            return
        busy = {p.spec.node_name for p in pods if p.spec.node_name}
        free = [n for n in schedulable_nodes(self.core) if n not in busy]
        for pod, node in zip(pending, free, strict=False):
            if bind(self.core, pod, node):
                worker = int(pod.metadata.labels[WORKER_LABEL])
                self.placements.append(Placement(worker, pod.metadata.name, node, time.time()))

    def _create_worker(self, worker: int, node: str | None) -> None:
        spec: dict[str, Any] = {
            "restartPolicy": "Never",
            "containers": [{"name": "trainer", "image": "trainer:1"}],
        }
        if node is not None:
            spec["nodeName"] = node
        pod = self.core.create_namespaced_pod(
            self.namespace,
            {
                "metadata": {
                    "generateName": f"{self.name}-worker-{worker}-",
                    "labels": {JOB_LABEL: self.name, WORKER_LABEL: str(worker)},
                    "ownerReferences": [self._owner],
                },
                "spec": spec,
            },
        )
        if node is not None:
            self.placements.append(Placement(worker, pod.metadata.name, node, time.time()))


def bind(core: client.CoreV1Api, pod: client.V1Pod, node: str) -> bool:
    """Bind ``pod`` to ``node`` as kube-scheduler does; False when it is gone or bound."""
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name=pod.metadata.name),
        target=client.V1ObjectReference(api_version="v1", kind="Node", name=node),
    )
    try:
        # The response is a Status the client cannot read back into a V1Binding.
        core.create_namespaced_pod_binding(
            pod.metadata.name, pod.metadata.namespace, body, _preload_content=False
        )
    except client.ApiException as exc:
        if exc.status in (404, 409):  # gone, or bound meanwhile
            return False
        raise
    return True


def schedulable_nodes(core: client.CoreV1Api) -> list[str]:
    found = []
    for node in core.list_node().items:
        if node.spec.unschedulable:
            continue
        if any(t.effect in ("NoSchedule", "NoExecute") for t in node.spec.taints or []):
            continue
        conditions = node.status.conditions or []
        if any(c.type == "Ready" and c.status == "True" for c in conditions):
            found.append(node.metadata.name)
    return sorted(found)
