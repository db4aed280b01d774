"""Step Functions throttling the classifier's starts, as its ``StartExecution`` quota does
in a storm (``world.aws.quotas``): each throttled answer is counted, the ones botocore
retried included, and a start still throttled fails the invocation so that Lambda runs
the batch again, which then starts the remediation: nothing is lost, nothing is started
twice."""

from __future__ import annotations

from collections import Counter

import pytest

from lambdas.classify.errors import Retryable
from nodemedic.contracts.metrics import AWS_THROTTLED_METRIC
from tests.support.classify import CONTEXT, World, executions
from tests.support.payloads import decoded, wrap
from world.aws import emf
from world.aws.quotas import TokenBucket, start_execution_quota

OTHER_NODE = "i-0fedcba9876543210"


def throttled(capsys: pytest.CaptureFixture[str]) -> Counter[tuple[tuple[str, str], ...]]:
    """``AwsThrottled`` by dimensions, from the EMF lines the handler printed."""
    found: Counter[tuple[tuple[str, str], ...]] = Counter()
    for line in capsys.readouterr().out.splitlines():
        extraction = emf.read(line)
        for datum in extraction.data if extraction else ():
            if datum.name == AWS_THROTTLED_METRIC:
                found[datum.dimensions] += int(sum(datum.values))
    return found


def test_a_throttled_start_is_counted_each_time_and_started_when_lambda_runs_it_again(
    aws: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")  # botocore's one retry, throttled too
    first = decoded("xid79-with-noise.json")
    second = {**first, "logStream": first["logStream"].replace(first["logStream"][:19], OTHER_NODE)}
    assert second["logStream"].startswith(OTHER_NODE)
    with start_execution_quota(TokenBucket(size=1, refill=0)):
        aws["handler"](wrap(first), CONTEXT)
        capsys.readouterr()
        with pytest.raises(Retryable, match="ThrottlingException"):
            aws["handler"](wrap(second), CONTEXT)
    assert throttled(capsys) == {(("Cluster", "trn-prod"), ("Reason", "states.StartExecution")): 2}
    assert [d["instance_id"] for d in executions(aws)] == [first["logStream"][:19]]

    aws["handler"](wrap(second), CONTEXT)  # Lambda's retry, the bucket refilled

    assert sorted(d["instance_id"] for d in executions(aws)) == sorted(
        [first["logStream"][:19], OTHER_NODE]
    )
    assert throttled(capsys) == {}
