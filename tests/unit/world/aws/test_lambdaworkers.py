"""Lambda handlers in warm worker processes: what an invocation returns, logs and prints
comes back whole; invocations of one function run side by side; a handler's failure and a
worker's death are Lambda's errors, and the function goes on."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.worker_handlers import function
from world.aws.lambdaworkers import LambdaWorkers


@pytest.fixture
def workers() -> Iterator[LambdaWorkers]:
    running = LambdaWorkers(per_function=3)
    yield running
    running.close()


def test_an_invocation_returns_its_result_logs_and_prints(workers: LambdaWorkers) -> None:
    body, is_error, logs = workers.invoke(function("echo", SETTING="on"), '{"node": "i-0a"}')

    assert not is_error
    result = json.loads(body)
    assert (result["event"], result["setting"], result["function"]) == (
        {"node": "i-0a"},
        "on",
        "nodemedic-test",
    )
    assert "logged to the log group" in logs and '{"printed": "to the log group"}' in logs


def test_a_warm_worker_serves_the_next_invocation(workers: LambdaWorkers) -> None:
    pids = {json.loads(workers.invoke(function("echo"), "{}")[0])["pid"] for _ in range(3)}

    assert len(pids) == 1


def test_invocations_of_one_function_run_side_by_side(
    workers: LambdaWorkers, tmp_path: Path
) -> None:
    event = {"folder": str(tmp_path), "expected": 3}
    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(lambda _: workers.invoke(function("meet"), event), range(3)))

    assert [is_error for _, is_error, _ in answers] == [False] * 3
    assert len({body for body, _, _ in answers}) == 3  # three processes


def test_a_handlers_exception_is_an_error_body_step_functions_can_match(
    workers: LambdaWorkers,
) -> None:
    body, is_error, _ = workers.invoke(function("fail"), {"why": "no such node"})

    assert is_error
    assert json.loads(body)["errorType"] == "ValueError"
    assert json.loads(body)["errorMessage"] == "no such node"


def test_a_worker_that_dies_is_an_exit_error_and_the_function_goes_on(
    workers: LambdaWorkers,
) -> None:
    body, is_error, _ = workers.invoke(function("die", name="nodemedic-same"), {})
    assert is_error and json.loads(body)["errorType"] == "Runtime.ExitError"

    again = function("echo", name="nodemedic-same")
    for _ in range(4):  # past the limit of three: a dead worker's place is given back
        assert not workers.invoke(again, {})[1]


def test_a_workers_start_is_not_timed_against_the_functions_timeout(
    workers: LambdaWorkers,
) -> None:
    """Lambda times the init phase apart: a handler that takes longer to import than its
    function may run still answers, on a machine too busy to start Python quickly too."""
    slow_start = function(
        "tests.support.slow_start_handler.ready",
        name="nodemedic-slow-start",
        timeout=1,
        IMPORT_SECONDS="2",
    )
    body, is_error, _ = workers.invoke(slow_start, {})
    assert not is_error, body


def test_the_context_tells_the_time_left_as_the_invocation_runs(workers: LambdaWorkers) -> None:
    """A handler bounds its own retries by it (the classifier's throttled starts)."""
    body, is_error, _ = workers.invoke(function("time_left", timeout=5), {"seconds": 1})

    assert not is_error, body
    assert 0 < int(body) <= 4000


def test_an_invocation_past_its_functions_timeout_is_ended_as_lambda_ends_it(
    workers: LambdaWorkers,
) -> None:
    """Lambda stops the invocation and answers ``Sandbox.Timedout``, which Step Functions
    retries and catches like any other error of the task; the function goes on."""
    slow = function("linger", name="nodemedic-slow", timeout=1)
    began = time.monotonic()
    body, is_error, _ = workers.invoke(slow, {"seconds": 30})

    assert time.monotonic() - began < 20, "ended at the timeout, not when the handler was done"
    answer = json.loads(body)
    assert is_error and answer["errorType"] == "Sandbox.Timedout"
    assert answer["errorMessage"].endswith("Task timed out after 1.00 seconds")
    body, is_error, _ = workers.invoke(slow, {"seconds": 0})
    assert not is_error, body
