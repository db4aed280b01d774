"""What a drain round does with one pod under its drain policy (docs/deploy.md, "Drain
policies"): evict it, wait for it, or first ask its job for a checkpoint.

Every wait is bounded twice: by the pod's grace (``nodemedic.io/drain-grace-seconds``) and
by half of the drain timeout, so the evictions that follow still fit in the drain's rounds
and a policy never turns into a ``DrainTimeout``.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from nodemedic.contracts.kube import (
    CHECKPOINT_RULE_KEY,
    DEFAULT_CHECKPOINT_RULE,
    DRAIN_GRACE_KEY,
    DRAIN_POLICIES,
    DRAIN_POLICY_KEY,
    DrainPolicy,
)

Step = Literal["evict", "wait", "request"]
"""``request``: ask the job for a checkpoint (annotation and Event), then wait."""


def chosen(pod: Mapping[str, str], job: Mapping[str, str] | None) -> Mapping[str, str]:
    """The policy keys in force: the pod's own (labels and annotations merged) when it names
    a policy, else its job's annotations, else none (``immediate``)."""
    if DRAIN_POLICY_KEY in pod or job is None:
        return pod
    return job


def policy_of(notes: Mapping[str, str]) -> DrainPolicy:
    """An unknown value is today's ``immediate``: a typo never keeps a node from draining."""
    value = notes.get(DRAIN_POLICY_KEY, "immediate")
    return next((p for p in DRAIN_POLICIES if p == value), "immediate")


def checkpoint_rule(notes: Mapping[str, str]) -> str:
    return notes.get(CHECKPOINT_RULE_KEY) or DEFAULT_CHECKPOINT_RULE


@dataclass(frozen=True)
class Grace:
    until: datetime.datetime
    """When waiting for the pod ends."""
    ignored: str | None = None
    """The pod's grace annotation where it is no finite number of seconds >= 0 (``nan``,
    ``inf``, ``-4``, ``soon``): the default grace applies instead, and the drain says so."""


def grace_of(
    notes: Mapping[str, str], started_at: datetime.datetime, timeout_seconds: int
) -> Grace:
    """The pod's grace, at most half the drain timeout (also the default). A pod may shorten
    it; a value that is no number of seconds is the default, never an error: an annotation
    anyone who may create a pod can write must not fail the drain and strand the node."""
    longest = timeout_seconds / 2
    raw = notes.get(DRAIN_GRACE_KEY, "")
    if not raw:
        return Grace(started_at + datetime.timedelta(seconds=longest))
    try:
        grace = float(raw)
    except ValueError:
        grace = math.nan
    if not math.isfinite(grace) or grace < 0:
        return Grace(started_at + datetime.timedelta(seconds=longest), ignored=raw)
    return Grace(started_at + datetime.timedelta(seconds=min(grace, longest)))


def next_step(
    policy: DrainPolicy,
    *,
    now: datetime.datetime,
    until: datetime.datetime,
    started_at: datetime.datetime,
    finished: bool,
    requested: datetime.datetime | None,
    saved: datetime.datetime | None,
) -> Step:
    """``requested``/``saved``: the job's checkpoint request and checkpoint line times; a
    request older than this drain belongs to an earlier one and is made again."""
    if policy == "immediate" or finished or now >= until:
        return "evict"
    if policy == "allow-completion":
        return "wait"
    if requested is None or requested < started_at:
        return "request"
    return "evict" if saved is not None and saved >= requested else "wait"
