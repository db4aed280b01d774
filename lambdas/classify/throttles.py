"""AWS's throttling of the classifier, counted where it happens.

botocore retries a throttled call before the classifier sees it, and past its attempts
Lambda runs the whole batch again (``errors.Retryable``): a count of the calls that failed
would miss every throttle ridden over, and those are how close a storm came to the quota
(Step Functions' ``StartExecution`` bucket first: docs/scale.md). So each throttled answer
is published as it arrives (``AwsThrottled``, by cluster and by ``service.Operation``),
whatever the retry then does. Only the clients of boto3's default session are counted:
the classifier makes its own there; Powertools' idempotency store makes its own session.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

import boto3

from lambdas.classify.errors import THROTTLING_CODES
from lambdas.observability import publish_count
from nodemedic.contracts.metrics import AWS_THROTTLED_METRIC, CLUSTER_DIMENSION, REASON_DIMENSION

CLUSTER: ContextVar[str] = ContextVar("nodemedic_cluster", default="")
"""The cluster the invocation classifies for: the count's ``Cluster``."""
_HANDLER_ID = "nodemedic-throttles"


def count_throttles() -> None:
    """Count the throttled answers to every client boto3's default session makes from now
    on; once, however often called."""
    if boto3.DEFAULT_SESSION is None:
        boto3.setup_default_session()
    session: Any = boto3.DEFAULT_SESSION
    session.events.register("needs-retry", _answered, unique_id=_HANDLER_ID)


def _answered(*, operation: Any = None, response: Any = None, **_: Any) -> None:
    """botocore's question before each retry decision: the answer is counted if AWS
    throttled; returning None leaves the decision to botocore."""
    if operation is None or response is None:
        return
    code = response[1].get("Error", {}).get("Code")
    if code in THROTTLING_CODES:
        api = f"{operation.service_model.endpoint_prefix}.{operation.name}"
        publish_count(
            AWS_THROTTLED_METRIC, 1, {CLUSTER_DIMENSION: CLUSTER.get(), REASON_DIMENSION: api}
        )
