"""The job monitor's Kubernetes side: read a job and its annotations, restart it by deleting
its pods (its controller makes new ones), count and fail it with annotations and Events.

Pods are the job's by owner reference (the job's uid), never by name or by one label
spelling, so a pod of another job with the same name is never touched.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from nodemedic.contracts.jobs import (
    LOG_MONITORING_ANNOTATION,
    PYTORCHJOB_API,
    RUN_POLICY_ANNOTATION,
)
from nodemedic.jobs.latency import PodSeen
from nodemedic.jobs.restart import Action, CleanPodPolicy

ACTIVE_PHASES = frozenset({"Pending", "Running", "Unknown"})
FINISHED_CLEANED: Mapping[CleanPodPolicy, frozenset[str]] = {
    "All": frozenset({"Succeeded", "Failed"}),
    "OnlyComplete": frozenset({"Succeeded"}),
    "None": frozenset(),
}
"""Which finished pods a full job restart deletes with the active ones, by cleanPodPolicy."""


@dataclass(frozen=True)
class Job:
    namespace: str
    name: str
    uid: str
    annotations: Mapping[str, str]
    started_at: float
    """Epoch seconds of ``status.startTime`` (its creation while it has none)."""
    finished: bool
    api_version: str = "batch/v1"
    kind: str = "Job"
    """A Kubeflow ``PyTorchJob`` (``kubeflow.org/v1``) is read, annotated and told the same way."""


def _job(raw: Any) -> Job:
    meta, status = raw.metadata, raw.status
    start = (status.start_time if status else None) or meta.creation_timestamp
    finished = bool(status and (status.completion_time or _failed(status)))
    return Job(
        namespace=meta.namespace,
        name=meta.name,
        uid=meta.uid,
        annotations=dict(meta.annotations or {}),
        started_at=start.timestamp() if start else 0.0,
        finished=finished,
    )


def _failed(status: Any) -> bool:
    return any(c.type == "Failed" and c.status == "True" for c in status.conditions or [])


def read_job(batch: client.BatchV1Api, namespace: str, name: str) -> Job | None:
    try:
        return _job(batch.read_namespaced_job(name, namespace))
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def monitored_jobs(batch: client.BatchV1Api) -> list[Job]:
    """Running jobs that carry log monitoring rules: the schedule's work."""
    jobs = (_job(raw) for raw in batch.list_job_for_all_namespaces().items)
    return [
        job
        for job in jobs
        if not job.finished
        and (
            LOG_MONITORING_ANNOTATION in job.annotations or RUN_POLICY_ANNOTATION in job.annotations
        )
    ]


def restart(
    core: client.CoreV1Api,
    job: Job,
    action: Action,
    clean: CleanPodPolicy,
    pods: list[Any] | None = None,
) -> list[str]:
    """Delete the pods a restart replaces (of ``pods``, the job's as just listed; listed
    here without them); the names deleted."""
    phases = set(ACTIVE_PHASES)
    if action == "restart-job":
        phases |= FINISHED_CLEANED[clean]
    deleted = []
    for pod in pods_of(core, job) if pods is None else pods:
        if (pod.status.phase or "Pending") in phases:
            try:
                core.delete_namespaced_pod(pod.metadata.name, job.namespace)
            except client.ApiException as exc:
                if exc.status != 404:
                    raise
            deleted.append(pod.metadata.name)
    return sorted(deleted)


def pods_of(core: client.CoreV1Api, job: Job) -> list[Any]:
    """The job's pods, by owner uid."""
    return [
        pod
        for pod in core.list_namespaced_pod(job.namespace).items
        if any(o.uid == job.uid for o in pod.metadata.owner_references or [])
    ]


def pods_seen(core: client.CoreV1Api, job: Job) -> list[PodSeen]:
    """The job's pods as the restart latency reads them."""
    return [_seen(pod) for pod in pods_of(core, job)]


def _seen(pod: Any) -> PodSeen:
    status = pod.status
    ready = [c for c in (status.conditions or []) if c.type == "Ready" and c.status == "True"]
    since = ready[0].last_transition_time if ready else None
    phase = status.phase or "Pending"
    return PodSeen(
        uid=pod.metadata.uid,
        phase=phase,
        running_since=since.timestamp() if since and phase == "Running" else None,
    )


def annotate(batch: client.BatchV1Api, job: Job, annotations: Mapping[str, str]) -> None:
    body = {"metadata": {"annotations": dict(annotations)}}
    if job.kind == "Job":
        batch.patch_namespaced_job(job.name, job.namespace, body)
        return
    custom = client.CustomObjectsApi(batch.api_client)
    group, version, plural = PYTORCHJOB_API
    custom.patch_namespaced_custom_object(group, version, job.namespace, plural, job.name, body)


def record_event(
    core: client.CoreV1Api, job: Job, reason: str, message: str, *, warning: bool
) -> None:
    """A Kubernetes Event on the job: what ``kubectl describe job`` shows its owner."""
    involved = {
        "apiVersion": job.api_version,
        "kind": job.kind,
        "name": job.name,
        "namespace": job.namespace,
        "uid": job.uid,
    }
    post_event(core, involved, reason, message, warning=warning)


def post_event(
    core: client.CoreV1Api,
    involved: Mapping[str, str],
    reason: str,
    message: str,
    *,
    warning: bool,
    name: str | None = None,
) -> None:
    """A Kubernetes Event on ``involved`` (its ``apiVersion``, ``kind``, ``name``,
    ``namespace``, ``uid``), named ``name`` where one Event must be told once (a second
    create of it is a 409), else by the time."""
    now = datetime.datetime.now(datetime.UTC)
    namespace = involved["namespace"]
    body = {
        "metadata": {
            "name": name or f"{involved['name']}.nodemedic.{now.strftime('%Y%m%d%H%M%S%f')}",
            "namespace": namespace,
        },
        "involvedObject": dict(involved),
        "reason": reason,
        "message": message[:1024],
        "type": "Warning" if warning else "Normal",
        "source": {"component": "nodemedic"},
        "firstTimestamp": now.isoformat(),
        "lastTimestamp": now.isoformat(),
        "count": 1,
    }
    core.create_namespaced_event(namespace, body)
