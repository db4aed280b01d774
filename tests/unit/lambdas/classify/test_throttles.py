"""Step Functions throttling the classifier's starts, as its ``StartExecution`` quota does
in a storm (``world.aws.quotas``): each throttled answer is counted, the ones tried again
included; a throttled start is tried again within the invocation while it has time, and
one still throttled past that fails the invocation so that Lambda runs the batch again,
which then starts the remediation: nothing is lost, nothing is started twice."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest
from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig
from botocore.exceptions import ClientError, EndpointConnectionError

from lambdas.classify.aws import START_ATTEMPTS, START_RESERVE, start_while_time_left
from lambdas.classify.errors import Retryable
from nodemedic.contracts.metrics import AWS_THROTTLED_METRIC
from tests.support.classify import CONTEXT, World, executions
from tests.support.lambda_context import lambda_context
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


def two_nodes_faults() -> tuple[dict[str, Any], dict[str, Any]]:
    first = decoded("xid79-with-noise.json")
    second = {**first, "logStream": first["logStream"].replace(first["logStream"][:19], OTHER_NODE)}
    assert second["logStream"].startswith(OTHER_NODE)
    return first, second


def test_a_throttled_start_is_tried_again_within_the_invocation_and_counted_each_time(
    aws: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # botocore's own retries do not ride it over
    first, second = two_nodes_faults()
    with start_execution_quota(TokenBucket(size=1, refill=2)):
        aws["handler"](wrap(first), CONTEXT)
        capsys.readouterr()
        began = time.monotonic()
        summary = aws["handler"](wrap(second), CONTEXT)  # throttled, then a token refills

    assert summary["started"], summary
    assert time.monotonic() - began < START_RESERVE
    assert sorted(d["instance_id"] for d in executions(aws)) == sorted(
        [first["logStream"][:19], OTHER_NODE]
    )
    counted = throttled(capsys)
    assert set(counted) == {(("Cluster", "trn-prod"), ("Reason", "states.StartExecution"))}
    assert 1 <= sum(counted.values()) < START_ATTEMPTS


def test_a_throttled_start_with_too_little_time_left_is_started_when_lambda_runs_it_again(
    aws: World, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = two_nodes_faults()
    ending = lambda_context("classify", memory_mb=256, timeout_seconds=int(START_RESERVE))
    with start_execution_quota(TokenBucket(size=1, refill=0)):
        aws["handler"](wrap(first), CONTEXT)
        capsys.readouterr()
        with pytest.raises(Retryable, match="ThrottlingException"):
            aws["handler"](wrap(second), ending)
    assert throttled(capsys) == {(("Cluster", "trn-prod"), ("Reason", "states.StartExecution")): 1}
    assert [d["instance_id"] for d in executions(aws)] == [first["logStream"][:19]]

    aws["handler"](wrap(second), CONTEXT)  # Lambda's retry, the bucket refilled

    assert sorted(d["instance_id"] for d in executions(aws)) == sorted(
        [first["logStream"][:19], OTHER_NODE]
    )
    assert throttled(capsys) == {}


def test_a_start_whose_connection_dropped_is_tried_again_and_a_refused_one_is_not() -> None:
    """botocore's retries are off for the starts, so the classifier's own tries must take
    a connection that failed on the way, as botocore's would have."""
    sent: list[dict[str, str]] = []

    class Flaky:
        def start_execution(self, **request: str) -> None:
            sent.append(request)
            if len(sent) == 1:
                raise EndpointConnectionError(endpoint_url="https://states.us-east-1.amazonaws.com")

    config = IdempotencyConfig()
    config.register_lambda_context(CONTEXT)

    assert start_while_time_left(Flaky(), config, name="d-1", input="{}")
    assert [r["name"] for r in sent] == ["d-1", "d-1"]

    class Refusing:
        def start_execution(self, **request: str) -> None:
            sent.append(request)
            raise ClientError({"Error": {"Code": "AccessDeniedException"}}, "StartExecution")

    sent.clear()
    with pytest.raises(ClientError, match="AccessDenied"):
        start_while_time_left(Refusing(), config, name="d-2", input="{}")
    assert len(sent) == 1
