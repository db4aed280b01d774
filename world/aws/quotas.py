"""What AWS does at its limits that moto does not: Step Functions refuses a ``StartExecution``
past its token bucket, and Lambda retries an asynchronous invocation that failed, then
sends its event to the function's dead-letter queue.

The bucket (``start_execution_quota``) is Step Functions' quota for Standard workflows:
1,300 starts at once, refilled at 300 a second in us-east-1, us-west-2 and eu-west-1 (800
and 150 elsewhere; docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html). Past
it the call fails with ``ThrottlingException``, which the SDK retries with backoff before
the caller sees it. A world may shrink the bucket to make a small storm meet it.

CloudWatch Logs invokes the classifier asynchronously. moto calls it once and drops what
it answers; Lambda runs a function that failed two more times, about a minute and then two
minutes later, and then sends the event to the dead-letter queue with the error
(docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html). While
``asynchronous_retries`` is active, subscription deliveries are retried so, after
``delays`` (AWS's by default), and the queue the function's ``DeadLetterConfig`` names
(``DEAD_LETTERS``, which the world's CloudFormation fills: moto drops the setting) gets
what failed every time.

Public interface: ``AwsLimits`` and ``aws_limits()`` (both limits), ``TokenBucket``,
``Deliveries``, ``subscription_event()``, ``DEAD_LETTERS``, ``START_EXECUTION_QUOTA``,
``AWS_DELAYS``.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from moto.core.exceptions import JsonRESTError

from nodemedic.contracts.stack import DEAD_LETTER_ATTRIBUTES
from world.aws.motopatch import SEND_LOG_EVENT, START_EXECUTION, replaced

START_EXECUTION_QUOTA = (1300.0, 300.0)
"""Step Functions' bucket of ``StartExecution`` calls and its refill a second (us-east-1)."""
AWS_DELAYS = (60.0, 120.0)
"""Lambda's waits before the second and the third run of a failed asynchronous invocation."""
DEAD_LETTERS: dict[str, str] = {}
"""Function name → the ARN of its dead-letter queue, as its ``DeadLetterConfig`` names it."""


@dataclass
class TokenBucket:
    """``size`` tokens at most, ``refill`` more each second; a call takes one or is refused."""

    size: float
    refill: float
    throttled: int = 0
    """Calls refused so far."""
    _tokens: float = field(init=False)
    _at: float = field(init=False, default_factory=time.monotonic)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._tokens = self.size

    def take(self) -> bool:
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self.size, self._tokens + (now - self._at) * self.refill)
            self._at = now
            if self._tokens >= 1:
                self._tokens -= 1
                return True
            self.throttled += 1
            return False


class _Throttled(JsonRESTError):
    code = 400

    def __init__(self) -> None:
        super().__init__("ThrottlingException", "Rate exceeded")


@contextlib.contextmanager
def start_execution_quota(bucket: TokenBucket) -> Iterator[None]:
    """``StartExecution`` takes a token from ``bucket`` or fails as AWS's throttled one does."""
    original = START_EXECUTION.current()

    def start_execution(self: Any) -> Any:
        if not bucket.take():
            raise _Throttled()
        return original(self)

    with replaced({START_EXECUTION: start_execution}):
        yield


@dataclass
class Deliveries:
    """What the subscription deliveries came to, as Lambda's own metrics would count them."""

    delays: tuple[float, ...] = AWS_DELAYS
    failed: int = 0
    """Runs of the function that failed, retried ones included (Lambda's ``Errors``)."""
    dead_lettered: int = 0
    """Events sent to a dead-letter queue after their last run failed."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _timers: set[threading.Timer] = field(default_factory=set)

    def deliver(self, function: Any, event: dict[str, Any], attempt: int = 0) -> None:
        body, errored, _ = function._invoke_lambda(event=event)
        if not errored:
            return
        with self._lock:
            self.failed += 1
        if attempt < len(self.delays):
            self._later(self.delays[attempt], function, event, attempt + 1)
            return
        queue = DEAD_LETTERS.get(function.function_name)
        if queue is not None:
            _dead_letter(queue, event, body)
            with self._lock:
                self.dead_lettered += 1

    def _later(self, delay: float, function: Any, event: dict[str, Any], attempt: int) -> None:
        def run() -> None:
            with self._lock:
                self._timers.discard(timer)
            self.deliver(function, event, attempt)

        timer = threading.Timer(delay, run)
        timer.daemon = True
        with self._lock:
            self._timers.add(timer)
        timer.start()

    def cancel(self) -> None:
        """Retries not yet run are dropped: the world they would run in is going."""
        with self._lock:
            timers, self._timers = self._timers, set()
        for timer in timers:
            timer.cancel()


@contextlib.contextmanager
def asynchronous_retries(deliveries: Deliveries) -> Iterator[None]:
    """Subscription deliveries whose run failed are run again after ``deliveries.delays``,
    then sent to the function's dead-letter queue."""

    def send_log_event(  # noqa: PLR0917 (moto's signature)
        self: Any,
        function_arn: str,
        filter_name: str,
        log_group_name: str,
        log_stream_name: str,
        log_events: Any,
    ) -> None:
        payload = {
            "messageType": "DATA_MESSAGE",
            "owner": self.account_id,
            "logGroup": log_group_name,
            "logStream": log_stream_name,
            "subscriptionFilters": [filter_name],
            "logEvents": log_events,
        }
        deliveries.deliver(self._lambdas.get_arn(function_arn), subscription_event(payload))

    try:
        with replaced({SEND_LOG_EVENT: send_log_event}):
            yield
    finally:
        deliveries.cancel()
        DEAD_LETTERS.clear()


def subscription_event(payload: dict[str, Any]) -> dict[str, Any]:
    """A subscription's payload as CloudWatch Logs hands it to a function: compact JSON,
    gzipped, base64 under ``awslogs.data``."""
    packed = gzip.compress(json.dumps(payload, separators=(",", ":")).encode())
    return {"awslogs": {"data": base64.b64encode(packed).decode()}}


@dataclass
class AwsLimits:
    """The limits a world's AWS keeps, and what they came to: AWS's own unless a world
    shrinks them (``bench/scale.py``'s storm meets a smaller bucket)."""

    starts: TokenBucket = field(default_factory=lambda: TokenBucket(*START_EXECUTION_QUOTA))
    deliveries: Deliveries = field(default_factory=Deliveries)


@contextlib.contextmanager
def aws_limits(limits: AwsLimits) -> Iterator[None]:
    with start_execution_quota(limits.starts), asynchronous_retries(limits.deliveries):
        yield


def _dead_letter(queue_arn: str, event: dict[str, Any], body: str) -> None:
    """As Lambda sends it: the event as it was; the request's id, the invocation's status
    (200: the function failed, not the call) and the error's message beside it."""
    from moto.sqs.models import sqs_backends

    _, _, _, region, account, name = queue_arn.split(":")
    try:
        message = str(json.loads(body).get("errorMessage", body))
    except (ValueError, AttributeError):
        message = body
    values = (str(uuid.uuid4()), "200", message[:1000])
    sqs_backends[account][region].send_message(
        name,
        json.dumps(event),
        message_attributes={
            key: {"DataType": "String", "StringValue": value}
            for key, value in zip(DEAD_LETTER_ATTRIBUTES, values, strict=True)
        },
    )
