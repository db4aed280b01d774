"""Ships batches to CloudWatch Logs, oldest first, and rides out throttling and outages.

Throttling, 5xx answers, timeouts and unreachable endpoints are retried with exponential
backoff and full jitter. After a few failed attempts the shipper declares an outage: the
outbox then keeps every batch on disk, and the oldest one is retried until the service
answers again, at which point the spool drains in order. Only a batch the service calls
invalid is not retried as is: its timestamps are renewed once, then it is dropped and
counted, so one bad batch cannot block a node's evidence forever.

Credentials refused or expired are told apart from throttling and the network: retrying
is still all the agent can do (a role fixed or a token renewed lets the spool drain), but
the failure is counted, shown as a gauge and logged at each change, because waiting does
not end it. Centrally the node falls silent, and the reconcile reports it.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    CredentialRetrievalError,
    NoCredentialsError,
    PartialCredentialsError,
)

from agent.batch import Batch
from agent.liveness import Liveness
from agent.metrics import Metrics
from agent.outbox import Outbox
from nodemedic.backoff import backoff

log = logging.getLogger(__name__)
SHIPPER_LOOP = "shipper"


class RetryLater(Exception):
    """The batch is fine; the service or the network is not (yet)."""


class CredentialsFailed(RetryLater):
    """The service refuses who the agent is, or the agent cannot say who it is."""


class Invalid(Exception):
    """The service refuses the batch itself."""


CREDENTIAL_CODES = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidClientTokenId",
        "InvalidIdentityToken",
        "InvalidSignatureException",
        "MissingAuthenticationToken",
        "SignatureDoesNotMatch",
        "UnrecognizedClientException",
    }
)
"""Error codes that say the credentials are refused, expired or missing (the STS ones come
from the credential provider renewing a web identity or Pod Identity token)."""
_CREDENTIAL_ERRORS = (NoCredentialsError, PartialCredentialsError, CredentialRetrievalError)


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def retry_later(what: str, exc: ClientError | BotoCoreError) -> RetryLater:
    """The failure to retry, as ``CredentialsFailed`` when it is the credentials'."""
    if isinstance(exc, ClientError):
        code = _code(exc)
        kind = CredentialsFailed if code in CREDENTIAL_CODES else RetryLater
        return kind(f"{what}: {code or exc}")
    return (CredentialsFailed if isinstance(exc, _CREDENTIAL_ERRORS) else RetryLater)(
        f"{what}: {exc}"
    )


class Shipper:
    def __init__(
        self,
        client: Any,
        group: str,
        outbox: Outbox,
        metrics: Metrics,
        *,
        base_delay: float,
        max_delay: float,
        create_group: bool = False,
        attempts_before_outage: int = 3,
        rng: Callable[[], float] = random.random,
        liveness: Liveness | None = None,
    ) -> None:
        self._client = client
        self._group = group
        self._outbox = outbox
        self._metrics = metrics
        self._create_group = create_group
        self._base = base_delay
        self._cap = max_delay
        self._attempts_before_outage = attempts_before_outage
        self._rng = rng
        self._liveness = liveness
        self._streams: set[str] = set()

    def _ensure_stream(self, stream: str) -> None:
        if stream in self._streams:
            return
        try:
            self._client.create_log_stream(logGroupName=self._group, logStreamName=stream)
        except ClientError as exc:
            code = _code(exc)
            if code == "ResourceNotFoundException" and self._create_group:
                self._create_log_group()
                return self._ensure_stream(stream)
            if code == "ResourceNotFoundException":
                raise RetryLater(f"log group {self._group} does not exist (yet)") from exc
            if code != "ResourceAlreadyExistsException":
                raise retry_later(f"CreateLogStream {stream}", exc) from exc
        except BotoCoreError as exc:
            raise retry_later(f"CreateLogStream {stream}", exc) from exc
        self._streams.add(stream)

    def _create_log_group(self) -> None:
        try:
            self._client.create_log_group(logGroupName=self._group)
        except ClientError as exc:
            if _code(exc) != "ResourceAlreadyExistsException":
                raise retry_later(f"CreateLogGroup {self._group}", exc) from exc

    def put(self, batch: Batch) -> None:
        """One PutLogEvents call for ``batch``; raises RetryLater or Invalid."""
        self._ensure_stream(batch.stream)
        # A generator: botocore builds its own copy of every event, so ours need not exist.
        events = ({"timestamp": ts, "message": message} for ts, message in batch.events)
        try:
            response = self._client.put_log_events(
                logGroupName=self._group, logStreamName=batch.stream, logEvents=events
            )
        except ClientError as exc:
            code = _code(exc)
            if code == "ResourceNotFoundException":
                self._streams.discard(batch.stream)
            if code == "InvalidParameterException":
                raise Invalid(str(exc)) from exc
            raise retry_later("PutLogEvents", exc) from exc
        except BotoCoreError as exc:
            raise retry_later("PutLogEvents", exc) from exc
        rejected = response.get("rejectedLogEventsInfo")
        if rejected:
            log.warning("CloudWatch Logs rejected some events of batch %s: %s", batch.id, rejected)
            self._metrics.events_rejected += _rejected_count(rejected, len(batch.events))

    def _put_or_restamp(self, batch: Batch) -> None:
        try:
            self.put(batch)
        except Invalid as exc:
            log.error(
                "batch %s refused (%s); retrying it stamped with the current time", batch.id, exc
            )
            now = int(time.time() * 1000)
            batch.events = [(now, message) for _, message in batch.events]
            try:
                self.put(batch)
            except Invalid as again:
                log.error(
                    "batch %s refused again (%s): %d events dropped",
                    batch.id,
                    again,
                    len(batch.events),
                )
                self._metrics.events_dropped += len(batch.events)
                return
        self._metrics.events_shipped[batch.stream] += len(batch.events)

    def run(self, stop: threading.Event, grace: float) -> None:
        """Ship until ``stop`` is set, then for at most ``grace`` seconds more; whatever is
        left goes to the spool."""
        failures = 0
        outage = False
        deadline: float | None = None
        while True:
            if self._liveness is not None:
                self._liveness.beat(SHIPPER_LOOP)
            if stop.is_set() and deadline is None:
                deadline = time.monotonic() + grace
            if deadline is not None and time.monotonic() >= deadline:
                break
            batch = self._outbox.peek(0 if deadline is not None else 1.0)
            if batch is None:
                if deadline is not None:
                    break
                continue
            try:
                self._put_or_restamp(batch)
            except RetryLater as exc:
                self._outbox.release()
                failures += 1
                self._metrics.put_failures += 1
                self._credentials(exc)
                if failures >= self._attempts_before_outage and not outage:
                    outage = True
                    log.warning("CloudWatch Logs unreachable (%s); spooling to disk", exc)
                    self._outbox.to_disk(True)
                delay = backoff(failures, self._base, self._cap, self._rng)
                if deadline is None:
                    stop.wait(delay)
                else:
                    time.sleep(max(0.0, min(delay, deadline - time.monotonic())))
                continue
            self._outbox.acked(batch)
            self._credentials(None)
            failures = 0
            if outage:
                outage = False
                log.warning("CloudWatch Logs reachable again; draining the spool")
                self._outbox.to_disk(False)
        self._outbox.flush_to_disk()

    def _credentials(self, failure: RetryLater | None) -> None:
        """Count a credential failure, and say so on stderr when they start and stop."""
        refused = isinstance(failure, CredentialsFailed)
        if refused:
            self._metrics.credential_failures += 1
        if refused == bool(self._metrics.credentials_refused):
            return
        self._metrics.credentials_refused = int(refused)
        if refused:
            log.error(
                "credentials refused (%s): still spooling every line, but nothing ships until "
                "the role or its token is fixed; nodemedic will report this node silent",
                failure,
            )
        else:
            log.warning("credentials accepted again; draining the spool")


def _rejected_count(info: dict[str, int], total: int) -> int:
    """Events named by ``rejectedLogEventsInfo`` (index ranges into the batch)."""
    old_end = max(info.get("tooOldLogEventEndIndex", -1), info.get("expiredLogEventEndIndex", -1))
    new_start = info.get("tooNewLogEventStartIndex", total)
    return min(total, old_end + 1 + total - new_start)
