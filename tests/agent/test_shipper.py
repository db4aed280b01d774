"""Throttling, 5xx and refused batches: retried with backoff, never reordered, never lost
silently. (Real outages against a CloudWatch Logs server are in test_agent.py.)"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError, EndpointConnectionError

from agent.batch import Batch
from agent.metrics import Metrics
from agent.outbox import Outbox
from agent.shipper import Shipper, backoff
from agent.spool import Spool


def error(code: str, status: int = 400) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "PutLogEvents",
    )


class ScriptedLogs:
    """A CloudWatch Logs client whose PutLogEvents answers follow a script."""

    def __init__(self, script: list[Exception | None]) -> None:
        self.script = script
        self.accepted: list[list[dict[str, Any]]] = []
        self.streams: list[str] = []

    def create_log_stream(self, logGroupName: str, logStreamName: str) -> None:
        self.streams.append(logStreamName)

    def put_log_events(
        self, logGroupName: str, logStreamName: str, logEvents: list[dict[str, Any]]
    ) -> dict[str, Any]:
        step = self.script.pop(0) if self.script else None
        if step is not None:
            raise step
        self.accepted.append(logEvents)
        return {}


def ship(
    tmp_path: Path, client: ScriptedLogs, batches: list[Batch], grace: float = 10.0
) -> tuple[Metrics, Outbox]:
    metrics = Metrics()
    outbox = Outbox(Spool(tmp_path, 64 * 1024 * 1024), metrics)
    for batch in batches:
        outbox.put(batch)
    done = threading.Event()
    done.set()  # producers finished: ship what is there, then stop
    shipper = Shipper(
        client, "/nodemedic/demo/nodes", outbox, metrics, base_delay=0.001, max_delay=0.01
    )
    shipper.run(done, grace)
    return metrics, outbox


def batch(*messages: str) -> Batch:
    return Batch("i-0abc/kmsg", [(1_700_000_000_000, m) for m in messages], 0)


def test_throttling_and_server_errors_are_retried_in_order(tmp_path: Path) -> None:
    client = ScriptedLogs(
        [
            error("ThrottlingException"),
            error("ServiceUnavailableException", 503),
            None,
            EndpointConnectionError(endpoint_url="https://logs.us-east-1.amazonaws.com"),
            None,
        ]
    )
    metrics, outbox = ship(tmp_path, client, [batch("a", "b"), batch("c")])
    assert [[e["message"] for e in events] for events in client.accepted] == [["a", "b"], ["c"]]
    assert client.streams == ["i-0abc/kmsg"]
    assert metrics.put_failures == 3 and metrics.events_shipped["i-0abc/kmsg"] == 3
    assert len(outbox) == 0


def test_an_outage_moves_everything_to_disk_in_order(tmp_path: Path) -> None:
    down = [EndpointConnectionError(endpoint_url="x")] * 100_000
    metrics, outbox = ship(
        tmp_path, ScriptedLogs(down), [batch("a"), batch("b"), batch("c")], grace=0.3
    )
    assert metrics.events_spooled == 3 and len(outbox) == 3
    client = ScriptedLogs([])
    ship(tmp_path, client, [batch("d")])  # the service is back (and the agent restarted)
    assert [[e["message"] for e in events] for events in client.accepted] == [
        ["a"],
        ["b"],
        ["c"],
        ["d"],
    ]


def test_a_refused_batch_is_restamped_once_then_dropped_and_counted(tmp_path: Path) -> None:
    client = ScriptedLogs([error("InvalidParameterException"), None])
    metrics, _ = ship(tmp_path, client, [batch("a")])
    assert client.accepted and client.accepted[0][0]["timestamp"] > 1_700_000_000_000
    client = ScriptedLogs(
        [error("InvalidParameterException"), error("InvalidParameterException"), None]
    )
    metrics, outbox = ship(tmp_path, client, [batch("refused"), batch("next")])
    assert metrics.events_dropped == 1 and len(outbox) == 0
    assert [[e["message"] for e in events] for events in client.accepted] == [["next"]]


def test_backoff_is_jittered_and_capped() -> None:
    assert backoff(1, 0.2, 30.0, lambda: 1.0) == 0.4
    assert backoff(10, 0.2, 30.0, lambda: 1.0) == 30.0
    assert backoff(10, 0.2, 30.0, lambda: 0.5) == 15.0
