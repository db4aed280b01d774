"""AWS errors the classifier meets, told apart: those that pass (throttling, a server
error, no answer) are retried by failing the invocation, every other one is an answer.

The subscription invokes the classifier asynchronously: a failed invocation is retried
twice by Lambda (about a minute, then two, later), then the batch goes to the dead-letter
queue whole. Every write the classifier makes is idempotent (threshold hits by line,
executions by decision id), so a batch retried after part of it went through does nothing
twice. A permanent error (a key of another account, a key disabled or pending deletion, an
access denied, a stream that is gone) would fail every retry alike: where it concerns one
line's evidence the caller turns it into a reason instead (``lambdas.classify.origin``).
"""

from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

THROTTLING_CODES = frozenset(
    {
        # botocore's standard retry mode's list, and KMS's and Logs' own
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "LimitExceededException",
        "RequestThrottled",
        "TransactionInProgressException",
    }
)
TRANSIENT_CODES = THROTTLING_CODES | {
    # the service failed, not the request
    "InternalFailure",
    "InternalServerError",
    "InternalServerException",
    "ServiceUnavailable",
    "ServiceUnavailableException",
    "RequestTimeout",
    "RequestTimeoutException",
    "KMSInternalException",
    "DependencyTimeoutException",
}


class Retryable(RuntimeError):
    """AWS was throttling, failing or away, even after the SDK's own retries: the
    invocation fails so that Lambda retries the batch."""


def is_transient(exc: ClientError | BotoCoreError) -> bool:
    """The call may succeed if made again later."""
    if isinstance(exc, ClientError):
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return error_code(exc) in TRANSIENT_CODES or status == 429 or status >= 500
    return isinstance(exc, BotoConnectionError | HTTPClientError)


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", "Unknown"))


def retryable(exc: ClientError | BotoCoreError, doing: str) -> Retryable:
    """The Retryable to raise for a transient ``exc`` met while ``doing`` something."""
    what = error_code(exc) if isinstance(exc, ClientError) else type(exc).__name__
    return Retryable(f"{doing}: {what}, retried by Lambda")
