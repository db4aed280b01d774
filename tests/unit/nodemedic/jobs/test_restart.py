"""HyperPod's restart policy: pods first, then the whole job, then failed."""

from __future__ import annotations

from functools import reduce

import pytest

from nodemedic.jobs.restart import (
    Action,
    RestartHistory,
    RunPolicy,
    after,
    next_action,
    parse_run_policy,
)
from nodemedic.jobs.rules import RuleError

HYPERPOD = """
jobMaxRetryCount: 50
restartPolicy:
  numRestartBeforeFullJobRestart: 3
  evalPeriodSeconds: 21600
  maxFullJobRestarts: 1
cleanPodPolicy: "All"
"""


def actions(policy: RunPolicy, times: list[float]) -> list[Action]:
    """The action of a verdict at each time, each done before the next."""
    done: list[Action] = []

    def step(history: RestartHistory, now: float) -> RestartHistory:
        done.append(next_action(policy, history, now))
        return after(history, done[-1], now)

    reduce(step, times, RestartHistory())
    return done


def test_hyperpods_example_restarts_pods_three_times_then_the_job_then_fails() -> None:
    policy = parse_run_policy(HYPERPOD)
    assert policy.clean_pod_policy == "All"
    assert actions(policy, [0, 10, 20, 30, 40, 50, 60, 70, 80]) == [
        *["restart-pods"] * 3,
        "restart-job",
        *["restart-pods"] * 3,
        "fail",
        "fail",
    ]


def test_pod_restarts_outside_the_evaluation_period_do_not_count() -> None:
    policy = parse_run_policy(HYPERPOD)
    assert actions(policy, [0, 10, 20, 21_700, 21_710]) == ["restart-pods"] * 5


def test_job_max_retry_count_bounds_every_restart() -> None:
    assert actions(parse_run_policy("jobMaxRetryCount: 2"), [0, 1, 2]) == [
        "restart-pods",
        "restart-pods",
        "fail",
    ]


def test_without_a_run_policy_a_verdict_never_restarts_anything() -> None:
    assert actions(parse_run_policy(None), [0]) == ["fail"]


def test_the_max_retry_annotation_gives_the_count_the_run_policy_leaves_out() -> None:
    assert parse_run_policy(None, "4").job_max_retry_count == 4
    assert parse_run_policy("jobMaxRetryCount: 1", "4").job_max_retry_count == 1


def test_the_history_survives_the_ledger() -> None:
    history = after(after(RestartHistory(), "restart-pods", 5.0), "restart-pods", 6.0)
    assert RestartHistory.from_item(history.as_item()) == history


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("- 1", "must be a mapping"),
        ("jobMaxRetryCount: -1", "jobMaxRetryCount must be an integer >= 0"),
        ("cleanPodPolicy: Running", "cleanPodPolicy must be one of All, OnlyComplete, None"),
        ("restartPolicy: {evalPeriodSeconds: 60}", "numRestartBeforeFullJobRestart"),
        ("jobMaxRetries: 3", "unknown field"),
    ],
)
def test_an_invalid_run_policy_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(RuleError, match=says):
        parse_run_policy(text)
    with pytest.raises(RuleError, match="jobMaxRetryCount"):
        parse_run_policy(None, "many")
