"""A drain round's pod under its drain policy, on the cluster: the policy read from the pod
or from the job that controls it (by owner reference, as auto-resume finds jobs), the job
asked for a checkpoint with an annotation and an Event, its checkpoint line's time read back
from the annotation the job monitor puts on it (lambdas/jobs/checkpoint.py)."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from kubernetes import client

from lambdas.kube.jobs import Job, annotate, record_event
from lambdas.kube.resume import RESUMABLE, JobRef, read_job_ref
from nodemedic.contracts.kube import (
    CHECKPOINT_EVENT_REASON,
    CHECKPOINT_REQUESTED_ANNOTATION,
    CHECKPOINT_SAVED_ANNOTATION,
)
from nodemedic.remediate.drainpolicy import (
    Step,
    checkpoint_rule,
    chosen,
    grace_end,
    next_step,
    policy_of,
)

FINISHED = frozenset({"Succeeded", "Failed"})

Jobs = dict[str, Job | None]
"""A round's jobs read so far, by uid: each job is read once per round."""


def step(
    core: client.CoreV1Api,
    pod: Any,
    jobs: Jobs,
    *,
    node: str,
    started_at: datetime.datetime,
    timeout_seconds: int,
    now: datetime.datetime,
) -> Step:
    """``evict`` or ``wait`` (a checkpoint request is made here, then waited for)."""
    meta = pod.metadata
    own = {**(meta.labels or {}), **(meta.annotations or {})}
    job = _job(core, pod, jobs)
    notes = chosen(own, dict(job.annotations) if job else None)
    policy = policy_of(notes)
    if policy == "immediate":
        return "evict"
    held = job.annotations if job else {}
    found = next_step(
        policy,
        now=now,
        until=grace_end(notes, started_at, timeout_seconds),
        started_at=started_at,
        finished=(pod.status.phase if pod.status else None) in FINISHED,
        requested=parse_time(held.get(CHECKPOINT_REQUESTED_ANNOTATION)),
        saved=parse_time(held.get(CHECKPOINT_SAVED_ANNOTATION)),
    )
    if found != "request":
        return found
    if job is None:
        return "evict"  # no job to ask for a checkpoint: nothing to wait for
    jobs[job.uid] = _request(core, job, node=node, rule=checkpoint_rule(held), now=now)
    return "wait"


def _job(core: client.CoreV1Api, pod: Any, jobs: Jobs) -> Job | None:
    owners = pod.metadata.owner_references or []
    owner = next((o for o in owners if o.controller), None)
    if owner is None or (owner.api_version, owner.kind) not in RESUMABLE:
        return None
    if owner.uid not in jobs:
        ref = JobRef(owner.api_version, owner.kind, pod.metadata.namespace, owner.name, owner.uid)
        jobs[owner.uid] = read_job_ref(core, ref)
    return jobs[owner.uid]


def _request(
    core: client.CoreV1Api, job: Job, *, node: str, rule: str, now: datetime.datetime
) -> Job:
    """The job, as it is once asked: its annotation names the time, so the job monitor takes
    only a checkpoint line logged since as the answer."""
    at = now.isoformat()
    annotate(client.BatchV1Api(core.api_client), job, {CHECKPOINT_REQUESTED_ANNOTATION: at})
    record_event(
        core,
        job,
        CHECKPOINT_EVENT_REASON,
        f"node {node} is being drained: checkpoint now; nodemedic evicts this job's pods on it"
        f" once a line of rule {rule!r} is logged, or when the drain grace ends",
        warning=True,
    )
    return dataclasses.replace(
        job, annotations={**job.annotations, CHECKPOINT_REQUESTED_ANNOTATION: at}
    )


def parse_time(raw: str | None) -> datetime.datetime | None:
    if not raw:
        return None
    try:
        at = datetime.datetime.fromisoformat(raw)
    except ValueError:
        return None
    return at if at.tzinfo else at.replace(tzinfo=datetime.UTC)
