"""Throttling, 5xx and refused batches: retried with exponential backoff and jitter, never
reordered, never lost silently. The shipper talks to the moto server through the agent's
own boto3 client; the failures are real HTTP error answers, in CloudWatch Logs' wire format,
put in front of chosen PutLogEvents calls (outages of the whole endpoint are in
test_agent.py)."""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from botocore.awsrequest import AWSResponse

from agent.batch import Batch
from agent.main import logs_client
from agent.metrics import Metrics
from agent.outbox import Outbox
from agent.shipper import Shipper
from agent.spool import Spool
from tests.support.agent import GROUP, REGION, messages

THROTTLED = (400, {"__type": "ThrottlingException", "message": "Rate exceeded"})
UNAVAILABLE = (503, None)
INTERNAL = (500, {"__type": "InternalFailure", "message": "internal error"})
REFUSED = (400, {"__type": "InvalidParameterException", "message": "log events too old"})


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self) -> Iterator[bytes]:
        yield self.data


class FailFirst:
    """Answers the next PutLogEvents calls with the scripted HTTP errors, then lets them
    through to the server; records when each call was made."""

    def __init__(self, client: Any, script: list[tuple[int, dict[str, str] | None]]) -> None:
        self.script = list(script)
        self.calls: list[float] = []
        client.meta.events.register("before-send.cloudwatch-logs.PutLogEvents", self)

    def __call__(self, request: Any, **_: Any) -> AWSResponse | None:
        self.calls.append(time.monotonic())
        if not self.script:
            return None
        status, body = self.script.pop(0)
        data = b"" if body is None else json.dumps(body).encode()
        headers = {"x-amzn-RequestId": "00000000-0000-0000-0000-000000000000"}
        if body is not None:
            headers["Content-Type"] = "application/x-amz-json-1.1"
        return AWSResponse(request.url, status, headers, _Body(data))


def ship(
    tmp_path: Path,
    client: Any,
    batches: list[Batch],
    *,
    grace: float = 10.0,
    rng: Callable[[], float] = random.random,
) -> tuple[Metrics, Outbox]:
    metrics = Metrics()
    outbox = Outbox(Spool(tmp_path / "spool", 64 * 1024 * 1024), metrics)
    for batch in batches:
        outbox.put(batch)
    done = threading.Event()
    done.set()  # producers finished: ship what is there, then stop
    shipper = Shipper(
        client, GROUP, outbox, metrics, create_group=True, base_delay=0.05, max_delay=2.0, rng=rng
    )
    shipper.run(done, grace)
    return metrics, outbox


def batch(stream: str, *texts: str, ts: int | None = None) -> Batch:
    stamp = int(time.time() * 1000) if ts is None else ts
    return Batch(stream, [(stamp, text) for text in texts])


def test_throttling_and_server_errors_are_retried_with_growing_delays(
    tmp_path: Path, moto_url: str, logs: Any, instance_id: str
) -> None:
    client = logs_client(REGION, moto_url)
    failures = FailFirst(client, [THROTTLED, UNAVAILABLE, INTERNAL, THROTTLED])
    stream = f"{instance_id}/kmsg"
    metrics, outbox = ship(
        tmp_path, client, [batch(stream, "a", "b"), batch(stream, "c")], rng=lambda: 1.0
    )
    assert messages(logs, stream) == ["a", "b", "c"]
    assert metrics.put_failures == 4 and metrics.events_shipped[stream] == 3
    assert len(outbox) == 0
    # Four failed attempts at the first batch, then it and the second one go through.
    # With the jitter pinned at its top, the waits double: 0.1, 0.2, 0.4, 0.8 s.
    gaps = [later - earlier for earlier, later in itertools.pairwise(failures.calls)]
    assert len(gaps) == 5
    for gap, delay in zip(gaps, (0.1, 0.2, 0.4, 0.8), strict=False):
        assert delay <= gap < delay + 1.0, gaps


def test_a_refused_batch_is_restamped_once_then_dropped_and_counted(
    tmp_path: Path, moto_url: str, logs: Any, instance_id: str
) -> None:
    client = logs_client(REGION, moto_url)
    FailFirst(client, [REFUSED])
    stream = f"{instance_id}/kmsg"
    stale = int(time.time() * 1000) - 3_600_000
    ship(tmp_path, client, [batch(stream, "restamped", ts=stale)])
    (event,) = logs.get_log_events(logGroupName=GROUP, logStreamName=stream)["events"]
    assert event["message"] == "restamped" and event["timestamp"] > stale + 3_000_000

    FailFirst(client, [REFUSED, REFUSED])
    metrics, outbox = ship(tmp_path, client, [batch(stream, "refused"), batch(stream, "next")])
    assert metrics.events_dropped == 1 and len(outbox) == 0
    assert messages(logs, stream) == ["restamped", "next"]


def test_a_long_failure_moves_everything_to_disk_in_order(
    tmp_path: Path, moto_url: str, logs: Any, instance_id: str
) -> None:
    client = logs_client(REGION, moto_url)
    FailFirst(client, [UNAVAILABLE] * 1000)
    stream = f"{instance_id}/kmsg"
    metrics, outbox = ship(
        tmp_path, client, [batch(stream, "a"), batch(stream, "b"), batch(stream, "c")], grace=0.5
    )
    assert metrics.events_spooled == 3 and len(outbox) == 3
    assert messages(logs, stream) == []
    # The service answers again (and the agent was restarted meanwhile).
    ship(tmp_path, logs_client(REGION, moto_url), [batch(stream, "d")])
    assert messages(logs, stream) == ["a", "b", "c", "d"]


DENIED = (400, {"__type": "AccessDeniedException", "message": "not authorized"})
EXPIRED = (400, {"__type": "ExpiredTokenException", "message": "the security token expired"})


def test_refused_credentials_are_told_apart_counted_and_said_while_every_line_is_kept(
    tmp_path: Path, moto_url: str, logs: Any, instance_id: str, caplog: Any
) -> None:
    client = logs_client(REGION, moto_url)
    FailFirst(client, [DENIED, EXPIRED] * 50)
    stream = f"{instance_id}/kmsg"
    with caplog.at_level("WARNING", logger="agent.shipper"):
        metrics, outbox = ship(
            tmp_path, client, [batch(stream, "a"), batch(stream, "b")], grace=0.5
        )
    assert metrics.credential_failures >= 3 and metrics.credentials_refused == 1
    assert "nodemedic_agent_credentials_refused 1" in metrics.render()
    # Still spooled, none lost, and said once on stderr, not at every retry.
    assert metrics.events_spooled == 2 and len(outbox) == 2 and metrics.events_dropped == 0
    refused = [r for r in caplog.records if "credentials refused" in r.getMessage()]
    assert len(refused) == 1 and "AccessDeniedException" in refused[0].getMessage()
    # The role is fixed: the spool drains in order and the gauge falls.
    caplog.clear()
    with caplog.at_level("WARNING", logger="agent.shipper"):
        metrics, _ = ship(tmp_path, logs_client(REGION, moto_url), [batch(stream, "c")])
    assert messages(logs, stream) == ["a", "b", "c"]
    assert metrics.credentials_refused == 0 and metrics.credential_failures == 0


def test_throttling_is_no_credential_failure(
    tmp_path: Path, moto_url: str, logs: Any, instance_id: str
) -> None:
    client = logs_client(REGION, moto_url)
    FailFirst(client, [THROTTLED, UNAVAILABLE])
    stream = f"{instance_id}/kmsg"
    metrics, _ = ship(tmp_path, client, [batch(stream, "a")])
    assert metrics.put_failures == 2 and metrics.credential_failures == 0
    assert metrics.credentials_refused == 0 and messages(logs, stream) == ["a"]
