"""A pod's drain policy (nodemedic/remediate/drainpolicy.py): which keys are in force, the
grace and its bound, and the step each policy takes."""

from __future__ import annotations

import datetime

import pytest

from nodemedic.contracts.kube import DRAIN_GRACE_KEY, DRAIN_POLICY_KEY
from nodemedic.remediate.drainpolicy import Grace, chosen, grace_of, next_step, policy_of

START = datetime.datetime(2026, 11, 27, 12, 0, tzinfo=datetime.UTC)


def at(seconds: float) -> datetime.datetime:
    return START + datetime.timedelta(seconds=seconds)


def test_the_pods_own_policy_wins_over_its_jobs() -> None:
    pod = {DRAIN_POLICY_KEY: "allow-completion"}
    job = {DRAIN_POLICY_KEY: "checkpoint"}

    assert policy_of(chosen(pod, job)) == "allow-completion"
    assert policy_of(chosen({"app": "x"}, job)) == "checkpoint"
    assert policy_of(chosen({"app": "x"}, None)) == "immediate"


def test_an_unknown_policy_is_immediate() -> None:
    assert policy_of({DRAIN_POLICY_KEY: "checkpoint-please"}) == "immediate"
    assert policy_of({}) == "immediate"


@pytest.mark.parametrize(
    ("grace", "end"), [("30", 30), ("5000", 300), ("1e300", 300), (None, 300), ("0", 0)]
)
def test_the_grace_is_at_most_half_the_drain_timeout(grace: str | None, end: float) -> None:
    notes = {} if grace is None else {DRAIN_GRACE_KEY: grace}

    assert grace_of(notes, START, 600) == Grace(at(end))


@pytest.mark.parametrize(
    "grace", ["nan", "NaN", "inf", "-inf", "1e400", "-4", "-0.5", "soon", "30s", " ", "\x00"]
)
def test_a_grace_that_is_no_number_of_seconds_is_the_default_and_said(grace: str) -> None:
    """A pod may shorten its wait, never break the drain: ``nan`` once raised ValueError in
    every round and stranded the node at ``draining``."""
    assert grace_of({DRAIN_GRACE_KEY: grace}, START, 600) == Grace(at(300), ignored=grace)


def step(policy: str, now: float, **kwargs: object) -> str:
    fields: dict[str, object] = {
        "now": at(now),
        "until": at(60),
        "started_at": START,
        "finished": False,
        "requested": None,
        "saved": None,
    }
    return next_step(policy, **(fields | kwargs))  # type: ignore[arg-type]


def test_immediate_evicts_at_once() -> None:
    assert step("immediate", 0) == "evict"


def test_allow_completion_waits_until_the_pod_finishes_or_the_grace_ends() -> None:
    assert step("allow-completion", 10) == "wait"
    assert step("allow-completion", 10, finished=True) == "evict"
    assert step("allow-completion", 60) == "evict"


def test_a_checkpoint_is_asked_for_then_awaited_then_evicted_once_saved() -> None:
    assert step("checkpoint", 0) == "request"
    assert step("checkpoint", 5, requested=at(1)) == "wait"
    assert step("checkpoint", 9, requested=at(1), saved=at(8)) == "evict"
    # A checkpoint saved before the request is older work, not the answer.
    assert step("checkpoint", 9, requested=at(1), saved=at(0.5)) == "wait"
    assert step("checkpoint", 60, requested=at(1)) == "evict"


def test_a_request_of_an_earlier_drain_is_made_again() -> None:
    assert step("checkpoint", 2, requested=at(-3600), saved=at(-3500)) == "request"
