"""The job monitor's part in a checkpoint drain: a job a drain asked for a checkpoint
(``nodemedic.io/checkpoint-requested``) that logs its checkpoint rule's line gets the line's
time as ``nodemedic.io/checkpoint-saved``, which the drain round reads to evict its pods
(lambdas/kube/drainpolicy.py)."""

from __future__ import annotations

import datetime
from collections.abc import Sequence

from kubernetes import client

from lambdas.jobs.service import config_of
from lambdas.kube.drainpolicy import parse_time
from lambdas.kube.jobs import Job, annotate
from nodemedic.contracts.kube import CHECKPOINT_REQUESTED_ANNOTATION, CHECKPOINT_SAVED_ANNOTATION
from nodemedic.jobs.checkpoint import saved_at
from nodemedic.jobs.rules import RuleError
from nodemedic.remediate.drainpolicy import checkpoint_rule


def record_checkpoint(
    batch: client.BatchV1Api, job: Job, lines: Sequence[tuple[float, str]]
) -> float | None:
    """The checkpoint line's log time, once recorded on the job; None when the job was not
    asked, already answered, or ``lines`` hold no answer."""
    notes = job.annotations
    requested = parse_time(notes.get(CHECKPOINT_REQUESTED_ANNOTATION))
    if requested is None or not lines:
        return None
    saved = parse_time(notes.get(CHECKPOINT_SAVED_ANNOTATION))
    if saved is not None and saved >= requested:
        return None
    try:
        config = config_of(job)
    except RuleError:
        return None  # the job monitor tells the job its rules are invalid
    if config is None:
        return None
    at = saved_at(config[0], checkpoint_rule(notes), lines, requested.timestamp())
    if at is not None:
        stamp = datetime.datetime.fromtimestamp(at, datetime.UTC).isoformat()
        annotate(batch, job, {CHECKPOINT_SAVED_ANNOTATION: stamp})
    return at
