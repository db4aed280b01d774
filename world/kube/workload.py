"""A training job on the local cluster: one worker pod per node, a PodDisruptionBudget, and
the Job controller the local control plane leaves out, reduced to what the job needs: a
worker pod that is gone (evicted, deleted) is created again.

The workers start on the nodes ``create`` is given (``spec.nodeName``); the ones created
again are placed by the real kube-scheduler, which their anti-affinity keeps to one worker
per node, off cordoned nodes and nodes with a taint they do not tolerate. So a drained
node's workers come back on healthy nodes, or wait Pending until a replacement joins, which
is what a person watching the job sees on EKS.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.dynamic import DynamicClient

from agent.poddevices import GPU_RESOURCE
from world.kube.kubelet import HOSTNAME_LABEL
from world.kube.passes import Passes

WORKER_LABEL = "training.nodemedic.io/worker"
JOB_LABEL = "job-name"


ONE_GPU = {"limits": {GPU_RESOURCE: "1"}}
TRAINER = {"name": "trainer", "image": "trainer:1", "resources": ONE_GPU}
"""A worker's container: it holds a GPU, which the simulated kubelet's device manager gives it
(the Node's device record says which)."""


@dataclass(frozen=True)
class Placement:
    """A worker bound to a node, seen at ``at`` (epoch seconds): when it was created there,
    or the pass after the scheduler bound it."""

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
    node_selector: dict[str, str] = field(default_factory=dict)
    """The nodes its workers may run on (none: any), as a ``nodeSelector``: a Karpenter
    NodePool's label, where the workers are what Karpenter provisions nodes for."""
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
                "containers": [TRAINER],
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
        """One pass of the controller; the workers the scheduler bound since are placed."""
        pods = [p for p in self.pods() if p.metadata.deletion_timestamp is None]
        present = {int(p.metadata.labels[WORKER_LABEL]) for p in pods}
        for worker in sorted(set(range(self.workers)) - present):
            self._create_worker(worker, None)
        placed = {p.pod for p in self.placements}
        for pod in pods:
            if pod.spec.node_name and pod.metadata.name not in placed:
                worker = int(pod.metadata.labels[WORKER_LABEL])
                self.placements.append(
                    Placement(worker, pod.metadata.name, pod.spec.node_name, time.time())
                )

    def _create_worker(self, worker: int, node: str | None) -> None:
        spec: dict[str, Any] = {
            "restartPolicy": "Never",
            "containers": [TRAINER],
            "affinity": one_per_node(self.name),
        }
        if self.node_selector:
            spec["nodeSelector"] = self.node_selector
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


def one_per_node(job: str) -> dict[str, Any]:
    """A pod's affinity that keeps the scheduler from putting two pods of ``job`` on a node,
    as distributed training asks (a rank per node)."""
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {JOB_LABEL: job}},
                    "topologyKey": HOSTNAME_LABEL,
                }
            ]
        }
    }
