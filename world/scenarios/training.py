"""Simulated training for the demo's jobs scenario, on ``batch/v1`` Jobs that the real
kube-controller-manager runs (it makes and remakes their pods; ``start.local_world`` starts
its Job controller when the cluster monitors jobs).

The real kube-scheduler places the pods, a rank per node (``workload.one_per_node``), on
the nodes a job prefers where it names some. One pass loop plays the training: each pass,
every job whose ranks all run takes one step: each rank prints an epoch/step line with loss
and throughput, and every ``checkpoint_every`` steps the job writes its step to a file under
the world's workdir (standing for shared storage). When every rank is new (the job restarted
whole) it resumes from that checkpoint. When only some are new (a rank replaced under a
running job) it hangs, as a collective with a lost peer does, until something restarts it
whole. One thread does all of it, so a job's lines, checkpoints and resumes never race.

Stdout goes where Fluent Bit (Container Insights) ships it on EKS: the group
``/aws/containerinsights/<cluster>/application``, a stream per container named as Fluent Bit
names it, each line a JSON record with ``log``, ``stream``, ``time`` and ``kubernetes``.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client

from nodemedic.contracts.jobs import application_log_group
from world.kube.kubelet import HOSTNAME_LABEL
from world.kube.passes import Passes
from world.kube.workload import JOB_LABEL, one_per_node

SIMULATED_LABEL = "training.nodemedic.io/simulated"
CONTAINER = "trainer"
NAMESPACE = "training-jobs"
STEPS_PER_EPOCH = 100
Line = Callable[[int, int], str | None]
"""(run, step) → what every rank prints at that step, None for nothing: ``run`` counts the
job's starts from 1, so a fault can be played in the first run only."""


def progress(step: int, loss: float) -> str:
    """The line a rank prints each step (HyperPod's examples match ``training_loss_step``)."""
    throughput = 0.0 if math.isnan(loss) else 1850.0 + (step % 7) * 3.5
    return (
        f"epoch {step // STEPS_PER_EPOCH} step {step} training_loss_step {loss:.4f} "
        f"samples_per_second {throughput:.1f}"
    )


def healthy_loss(step: int) -> float:
    return round(1.2 / math.sqrt(1 + step / 20), 4)


def steady(run: int, step: int) -> str | None:
    return progress(step, healthy_loss(step))


@dataclass(frozen=True)
class Plan:
    """A simulated training job: its name, ranks, annotations and what it prints."""

    name: str
    line: Line = steady
    workers: int = 1
    checkpoint_every: int = 10
    annotations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Start:
    """A job's run began at epoch ``at``: its ranks are all new; ``step`` is its checkpoint."""

    job: str
    run: int
    step: int
    last_step: int
    """Where the run before it had got to (0 for the first run)."""
    at: float
    last_line_at: float | None
    """When the run before it printed its last step line."""


@dataclass
class _Job:
    plan: Plan
    run: int = 0
    step: int = 0
    ranks: frozenset[str] = frozenset()


@dataclass
class Training:
    """The simulated jobs of one namespace; ``start`` runs a pass every ``interval`` s."""

    api: client.ApiClient
    logs: Any
    cluster: str
    checkpoints: Path
    namespace: str = NAMESPACE
    interval: float = 0.5
    starts: list[Start] = field(default_factory=list)
    last_line: dict[str, float] = field(default_factory=dict)
    """Job → epoch of the last step line its ranks printed."""
    _jobs: dict[str, _Job] = field(default_factory=dict)
    _streams: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _passes: Passes = field(default_factory=lambda: Passes("simulated-training"))

    @property
    def group(self) -> str:
        return application_log_group(self.cluster)

    def create(self, plan: Plan, prefer: Sequence[str] = ()) -> None:
        """The Job, as a user would create it: the Job controller makes its pods, the
        scheduler puts them on the nodes named in ``prefer`` while they can take them."""
        core, batch = client.CoreV1Api(self.api), client.BatchV1Api(self.api)
        if not any(n.metadata.name == self.namespace for n in core.list_namespace().items):
            core.create_namespace({"metadata": {"name": self.namespace}})
        batch.create_namespaced_job(
            self.namespace,
            {
                "metadata": {"name": plan.name, "annotations": dict(plan.annotations)},
                "spec": {
                    "parallelism": plan.workers,
                    "completions": plan.workers,
                    # The pods nodemedic deletes to restart a job count as failures here.
                    "backoffLimit": 100,
                    "template": {
                        "metadata": {"labels": {SIMULATED_LABEL: "true"}},
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": CONTAINER, "image": "trainer:1"}],
                            "affinity": _affinity(plan.name, prefer),
                        },
                    },
                },
            },
        )
        with self._lock:
            self._jobs[plan.name] = _Job(plan)

    def start(self) -> Training:
        self._passes.start(self.sync, self.interval)
        return self

    def stop(self) -> None:
        self._passes.stop()

    def finish(self, job: str) -> None:
        """The job's ranks exit 0 after their last step: the Job controller completes the
        Job, and a job monitor watches no finished job. A scenario ends the jobs whose
        outcome it has judged, so that a pass the busy machine delays cannot read to the
        monitor as one more silence."""
        with self._lock:
            del self._jobs[job]
        core = client.CoreV1Api(self.api)
        for pod in core.list_namespaced_pod(
            self.namespace, label_selector=f"{JOB_LABEL}={job}"
        ).items:
            if pod.metadata.deletion_timestamp is None:
                core.patch_namespaced_pod_status(
                    pod.metadata.name, self.namespace, {"status": {"phase": "Succeeded"}}
                )

    def checkpoint(self, job: str) -> int:
        """The step of the job's last checkpoint, 0 before its first."""
        path = self.checkpoints / self.namespace / job
        return int(path.read_text()) if path.exists() else 0

    def step(self, job: str) -> int:
        with self._lock:
            return self._jobs[job].step

    def runs(self, job: str) -> list[Start]:
        with self._lock:
            return [s for s in self.starts if s.job == job]

    def sync(self) -> None:
        """One pass: a step of every job whose ranks all run."""
        core = client.CoreV1Api(self.api)
        pods = core.list_namespaced_pod(
            self.namespace, label_selector=f"{SIMULATED_LABEL}=true"
        ).items
        live = [p for p in pods if p.metadata.deletion_timestamp is None]
        with self._lock:
            jobs = list(self._jobs.values())
        records: dict[str, list[dict[str, Any]]] = {}
        for job in jobs:
            ranks = [p for p in live if p.metadata.labels.get(JOB_LABEL) == job.plan.name]
            running = {p.metadata.uid: p for p in ranks if _running(p)}
            for pod, text in self._advance(job, running):
                records.setdefault(_stream(pod), []).append(_record(pod, text))
        for stream, batch in records.items():
            self._ship(stream, batch)

    def _advance(self, job: _Job, running: dict[str, client.V1Pod]) -> list[tuple[Any, str]]:
        """What the job's ranks print this pass; its step and checkpoint move on."""
        if len(running) < job.plan.workers:
            return []  # ranks missing: the others wait in their collective
        ranks = [running[uid] for uid in sorted(running)]
        if job.ranks.isdisjoint(running):
            resumed = self.checkpoint(job.plan.name)
            with self._lock:
                self.starts.append(
                    Start(
                        job.plan.name,
                        job.run + 1,
                        resumed,
                        job.step,
                        time.time(),
                        self.last_line.get(job.plan.name),
                    )
                )
                job.run, job.step, job.ranks = job.run + 1, resumed, frozenset(running)
            said = "resuming from checkpoint" if resumed else "starting at"
            return [(pod, f"{said} step {resumed}") for pod in ranks]
        if job.ranks != frozenset(running):
            return []  # a rank replaced under a running job: its collective hangs
        with self._lock:
            job.step += 1
        if job.step % job.plan.checkpoint_every == 0:
            self._save(job.plan.name, job.step)
        text = job.plan.line(job.run, job.step)
        if text is None:
            return []
        self.last_line[job.plan.name] = time.time()
        return [(pod, text) for pod in ranks]

    def _save(self, job: str, step: int) -> None:
        path = self.checkpoints / self.namespace / job
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.write_text(str(step))
        partial.replace(path)  # a reader never sees half a checkpoint

    def _ship(self, stream: str, records: list[dict[str, Any]]) -> None:
        if stream not in self._streams:
            self.logs.create_log_stream(logGroupName=self.group, logStreamName=stream)
            self._streams.add(stream)
        now = int(time.time() * 1000)
        self.logs.put_log_events(
            logGroupName=self.group,
            logStreamName=stream,
            logEvents=[{"timestamp": now, "message": json.dumps(r)} for r in records],
        )


def _affinity(job: str, prefer: Sequence[str]) -> dict[str, Any]:
    """A rank per node; ``prefer``: nodes that outweigh every other score of the scheduler."""
    affinity = one_per_node(job)
    if prefer:
        term = {
            "matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": list(prefer)}]
        }
        affinity["nodeAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": term}]
        }
    return affinity


def _running(pod: client.V1Pod) -> bool:
    return bool(pod.status and pod.status.phase == "Running" and pod.spec.node_name)


def _container_id(pod: client.V1Pod) -> str:
    return hashlib.sha256(pod.metadata.uid.encode()).hexdigest()


def _stream(pod: client.V1Pod) -> str:
    """Fluent Bit's name for the container's stream: ``<host>-`` and the tag of the file
    the container runtime writes, ``/var/log/containers/<pod>_<namespace>_<container>-<id>.log``."""
    meta = pod.metadata
    return (
        f"{pod.spec.node_name}-application.var.log.containers."
        f"{meta.name}_{meta.namespace}_{CONTAINER}-{_container_id(pod)}.log"
    )


def _record(pod: client.V1Pod, text: str) -> dict[str, Any]:
    """A line as Fluent Bit ships it (tests/events/containerinsights/application-record.json)."""
    meta = pod.metadata
    now = datetime.datetime.now(datetime.UTC)
    return {
        "log": text + "\n",
        "stream": "stdout",
        "time": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "kubernetes": {
            "annotations": dict(meta.annotations or {}),
            "container_hash": "trainer@sha256:" + _container_id(pod)[:64],
            "container_name": CONTAINER,
            "docker_id": _container_id(pod),
            "host": pod.spec.node_name,
            "labels": dict(meta.labels or {}),
            "namespace_name": meta.namespace,
            "pod_id": meta.uid,
            "pod_name": meta.name,
        },
    }
