"""Auto-resume's Kubernetes side: which opted-in jobs had pods on a node about to be
drained (``jobs_on_node``), and, once the node is repaired, each restarted whole or failed
(``resume``), with the job monitor's restart, annotations and Events (lambdas/kube/jobs.py).

A job is found through its pods' controller owner reference (a batch/v1 Job, or Kubeflow's
PyTorchJob, whose pods carry ``training.kubeflow.org/job-name``) and acted on by uid, so a
job deleted and made again under the same name is left alone. One job's failure never
stops the others, nor the remediation: it is recorded and told.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from kubernetes import client

from lambdas.kube.devices import pods_holding
from lambdas.kube.jobs import Job, annotate, read_job, record_event, restart
from nodemedic.contracts.jobs import (
    JOB_EVENT_REASONS,
    JOB_FAILED_ANNOTATION,
    JOB_RESTARTS_ANNOTATION,
    JOB_RESUMED_BY_ANNOTATION,
    PYTORCHJOB_API,
)
from nodemedic.jobs.resume import next_step, opted_in, restarts_of, restarts_text, run_policy
from nodemedic.jobs.rules import RuleError

PYTORCHJOB = (f"{PYTORCHJOB_API[0]}/{PYTORCHJOB_API[1]}", "PyTorchJob")
RESUMABLE = frozenset({("batch/v1", "Job"), PYTORCHJOB})
"""(apiVersion, kind) of the controllers whose jobs auto-resume."""


@dataclass(frozen=True)
class JobRef:
    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str


JOB_FIELDS = tuple(JobRef.__dataclass_fields__)


@dataclass
class Resumed:
    """What ``resume`` did, by ``<namespace>/<name>``: ``tell`` when someone should hear of
    it (a job failed, or could not be resumed), ``message`` says what for the mail."""

    resumed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    tell: bool = False
    message: str = ""


def jobs_on_node(
    core: client.CoreV1Api, node: str, devices: Sequence[str] | None = None
) -> list[dict[str, str]]:
    """The opted-in jobs with pods on ``node``, as ``JobRef`` fields; with ``devices`` (a
    GPU-level rung), only those whose pods hold one of them: a job on the node's other GPUs
    is never drained, so it must not be restarted either."""
    owners: dict[str, JobRef] = {}
    found = core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}").items
    holders = None if devices is None else pods_holding(core, node, devices)
    for pod in found:
        if holders is not None and f"{pod.metadata.namespace}/{pod.metadata.name}" not in holders:
            continue
        for owner in pod.metadata.owner_references or []:
            if owner.controller and (owner.api_version, owner.kind) in RESUMABLE:
                owners[owner.uid] = JobRef(
                    owner.api_version, owner.kind, pod.metadata.namespace, owner.name, owner.uid
                )
    refs = sorted(owners.values(), key=lambda r: (r.namespace, r.name))
    return [asdict(r) for r in refs if (job := read_job_ref(core, r)) and opted_in(job.annotations)]


def read_job_ref(core: client.CoreV1Api, ref: JobRef) -> Job | None:
    """The job ``ref`` names, None once it is gone or another job took its name."""
    if ref.kind == "Job":
        job = read_job(client.BatchV1Api(core.api_client), ref.namespace, ref.name)
    else:
        job = _read_pytorchjob(client.CustomObjectsApi(core.api_client), ref)
    return job if job is not None and job.uid == ref.uid else None


def _read_pytorchjob(custom: client.CustomObjectsApi, ref: JobRef) -> Job | None:
    group, version, plural = PYTORCHJOB_API
    try:
        raw = custom.get_namespaced_custom_object(group, version, ref.namespace, plural, ref.name)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    meta, status = raw["metadata"], raw.get("status") or {}
    start = status.get("startTime") or meta.get("creationTimestamp")
    ended = {"Succeeded", "Failed"}
    return Job(
        namespace=meta["namespace"],
        name=meta["name"],
        uid=meta["uid"],
        annotations=dict(meta.get("annotations") or {}),
        started_at=datetime.datetime.fromisoformat(start).timestamp() if start else 0.0,
        finished=any(
            c.get("type") in ended and c.get("status") == "True"
            for c in status.get("conditions") or []
        ),
        api_version=ref.api_version,
        kind=ref.kind,
    )


def resume(
    core: client.CoreV1Api, jobs: Sequence[Mapping[str, Any]], *, node: str, decision_id: str
) -> Resumed:
    """Each job of ``jobs`` (``jobs_on_node``'s) restarted whole, or failed past its
    retries; once per decision, however often the state machine repeats the call."""
    done = Resumed()
    for raw in jobs:
        ref = JobRef(**{k: str(raw[k]) for k in JOB_FIELDS})
        key = f"{ref.namespace}/{ref.name}"
        try:
            job = read_job_ref(core, ref)
            if job is None or job.finished:
                continue
            if job.annotations.get(JOB_RESUMED_BY_ANNOTATION) == decision_id:
                done.resumed.append(key)
                continue
            failed = _resume_one(core, job, node=node, decision_id=decision_id)
            (done.failed if failed else done.resumed).append(key)
        except (client.ApiException, RuleError) as exc:
            done.errors.append(f"{key}: {exc}"[:300])
    done.tell = bool(done.failed or done.errors)
    done.message = "; ".join(
        f"{what}: {', '.join(keys)}"
        for what, keys in (
            ("restarted", done.resumed),
            ("failed (retries spent)", done.failed),
            ("not resumed", done.errors),
        )
        if keys
    )
    return done


def _resume_one(core: client.CoreV1Api, job: Job, *, node: str, decision_id: str) -> bool:
    """Restart ``job`` whole, or fail it; True when failed. An invalid run policy is a
    Warning Event on the job and an error, the job untouched."""
    batch = client.BatchV1Api(core.api_client)
    try:
        policy = run_policy(job.annotations)
    except RuleError as exc:
        record_event(core, job, JOB_EVENT_REASONS["invalid"], str(exc), warning=True)
        raise
    total, full = restarts_of(job.annotations)
    limit = f"of jobMaxRetryCount {policy.job_max_retry_count}"
    notes = {JOB_RESUMED_BY_ANNOTATION: decision_id}
    if next_step(policy, job.annotations) == "fail":
        message = f"node {node} repaired; {total} restart(s) {limit} spent: job failed"
        notes[JOB_FAILED_ANNOTATION] = message
        annotate(batch, job, notes)
        record_event(core, job, JOB_EVENT_REASONS["fail"], message, warning=True)
        return True
    # Counted before the pods go: a repeated call finds the decision and restarts nothing.
    notes[JOB_RESTARTS_ANNOTATION] = restarts_text(total + 1, full + 1)
    annotate(batch, job, notes)
    deleted = restart(core, job, "restart-job", policy.clean_pod_policy)
    message = (
        f"node {node} repaired: restarted the whole job from its last checkpoint"
        f" ({len(deleted)} pod(s) deleted; restart {total + 1} {limit})"
    )
    record_event(core, job, JOB_EVENT_REASONS["resume"], message, warning=False)
    return False
