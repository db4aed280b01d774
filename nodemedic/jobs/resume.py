"""Auto-resume after a node repair, HyperPod's way: a job that opted in and had pods on a
node nodemedic drained is restarted whole once the node is rebooted and back, or replaced,
so every rank starts again from its last checkpoint together; past its
``jobMaxRetryCount`` restarts it is failed instead. Plain arithmetic on the job's
annotations: the Kubernetes calls are lambdas/kube/resume.py's."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, Literal

from nodemedic.contracts.jobs import (
    JOB_AUTO_RESUME_ANNOTATIONS,
    JOB_FAILED_ANNOTATION,
    JOB_MAX_RETRY_ANNOTATIONS,
    JOB_RESTARTS_ANNOTATION,
    RUN_POLICY_ANNOTATION,
)
from nodemedic.jobs.restart import RunPolicy, parse_run_policy

Step = Literal["resume", "fail"]
_RESTARTS_RE: Final = re.compile(r"^\s*(?P<total>\d+)\s*\((?P<full>\d+) full\)\s*$")


def opted_in(annotations: Mapping[str, str]) -> bool:
    """``"true"`` in either spelling; anything else (absent, ``false``, a typo) leaves the
    job alone: restarting a whole job is never done on a guess."""
    return any(
        annotations.get(k, "").strip().lower() == "true" for k in JOB_AUTO_RESUME_ANNOTATIONS
    )


def run_policy(annotations: Mapping[str, str]) -> RunPolicy:
    """The job's run policy, ``job-max-retry-count`` standing for its ``jobMaxRetryCount``
    where it names none (0 without either: the first repair fails the job, restarts
    nothing). Raises ``RuleError`` on an invalid one."""
    retry = next((annotations[k] for k in JOB_MAX_RETRY_ANNOTATIONS if k in annotations), None)
    return parse_run_policy(annotations.get(RUN_POLICY_ANNOTATION), retry)


def restarts_text(total: int, full: int) -> str:
    """The ``job-restarts`` annotation's value."""
    return f"{total} ({full} full)"


def restarts_of(annotations: Mapping[str, str]) -> tuple[int, int]:
    """(total, full) restarts the job's annotation counts; (0, 0) without one."""
    found = _RESTARTS_RE.match(annotations.get(JOB_RESTARTS_ANNOTATION, ""))
    return (int(found["total"]), int(found["full"])) if found else (0, 0)


def next_step(policy: RunPolicy, annotations: Mapping[str, str]) -> Step:
    """Resume while restarts are left, fail once they are spent (or the job already failed)."""
    total, _ = restarts_of(annotations)
    if JOB_FAILED_ANNOTATION in annotations or total >= policy.job_max_retry_count:
        return "fail"
    return "resume"
