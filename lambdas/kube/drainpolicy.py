"""A drain round's pod under its drain policy, on the cluster: the policy read from the pod
or from the job that controls it (by owner reference, as auto-resume finds jobs), the job
asked for a checkpoint with an annotation and an Event, its checkpoint line's time read back
from the annotation the job monitor puts on it (lambdas/jobs/checkpoint.py)."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from kubernetes import client

from lambdas.kube.jobs import Job, annotate, post_event, record_event
from lambdas.kube.resume import RESUMABLE, JobRef, read_job_ref
from lambdas.observability import logger
from nodemedic.contracts.kube import (
    CHECKPOINT_EVENT_REASON,
    CHECKPOINT_REQUESTED_ANNOTATION,
    CHECKPOINT_SAVED_ANNOTATION,
    DRAIN_GRACE_EVENT_REASON,
    DRAIN_GRACE_KEY,
)
from nodemedic.remediate.drainpolicy import (
    Step,
    checkpoint_rule,
    chosen,
    grace_of,
    next_step,
    policy_of,
)

FINISHED = frozenset({"Succeeded", "Failed"})

Jobs = dict[str, Job | None]
"""A round's jobs read so far, by uid: each job is read once per round."""


@dataclasses.dataclass(frozen=True)
class Verdict:
    step: Step
    ignored: str | None = None
    """The pod's grace annotation where it is no number of seconds: the default applied."""


def step(
    core: client.CoreV1Api,
    pod: Any,
    jobs: Jobs,
    *,
    node: str,
    started_at: datetime.datetime,
    timeout_seconds: int,
    now: datetime.datetime,
) -> Verdict:
    """``evict`` or ``wait`` (a checkpoint request is made here, then waited for)."""
    meta = pod.metadata
    own = {**(meta.labels or {}), **(meta.annotations or {})}
    job = _job(core, pod, jobs)
    notes = chosen(own, dict(job.annotations) if job else None)
    policy = policy_of(notes)
    if policy == "immediate":
        return Verdict("evict")
    grace = grace_of(notes, started_at, timeout_seconds)
    if grace.ignored is not None:
        _tell_ignored(core, pod, grace.ignored, started_at)
    held = job.annotations if job else {}
    found = next_step(
        policy,
        now=now,
        until=grace.until,
        started_at=started_at,
        finished=(pod.status.phase if pod.status else None) in FINISHED,
        requested=parse_time(held.get(CHECKPOINT_REQUESTED_ANNOTATION)),
        saved=parse_time(held.get(CHECKPOINT_SAVED_ANNOTATION)),
    )
    if found == "request":
        if job is None:
            found = "evict"  # no job to ask for a checkpoint: nothing to wait for
        else:
            jobs[job.uid] = _request(core, job, node=node, rule=checkpoint_rule(held), now=now)
            found = "wait"
    return Verdict(found, grace.ignored)


def _tell_ignored(
    core: client.CoreV1Api, pod: Any, raw: str, started_at: datetime.datetime
) -> None:
    """A Warning Event on the pod, once per drain (named for the pod and the drain's start:
    a later round's create is a 409). Telling is no part of draining: a refused Event is
    logged and the drain goes on."""
    meta = pod.metadata
    involved = {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": meta.name,
        "namespace": meta.namespace,
        "uid": meta.uid,
    }
    message = (
        f"{DRAIN_GRACE_KEY}={raw[:64]!r} is no number of seconds >= 0: nodemedic's drain"
        " waits for this pod the default grace (half of the drain timeout)"
    )
    try:
        post_event(
            core,
            involved,
            DRAIN_GRACE_EVENT_REASON,
            message,
            warning=True,
            name=f"{meta.uid}.drain-grace.{int(started_at.timestamp())}",
        )
    except client.ApiException as exc:
        if exc.status != 409:
            logger.warning("drain grace Event refused", extra={"status": exc.status})


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
