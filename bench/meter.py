"""What the local world consumes, counted where moto serves it: CloudWatch Logs events and
bytes by log group and stream kind, Lambda invocations with their measured durations and
the log bytes their handlers print, and every AWS API call by service and action with the
DynamoDB request units it takes. ``bench/cost.py`` prices what this counts.

Installed around ``local_world`` (the hooks must be in place before moto starts) and read
as differences of snapshots, one per phase of a run.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import json
import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

from moto.core.responses import BaseResponse
from moto.logs.models import LogsBackend

from world.aws import lambdacall
from world.aws.lambdaworkers import Called, LambdaWorkers

EVENT_OVERHEAD = 26
"""CloudWatch Logs bills each event's UTF-8 message plus 26 bytes."""
PLATFORM_LOG_BYTES = 74 + 51 + 165 + 3 * EVENT_OVERHEAD
"""Lambda's own START, END and REPORT lines per invocation (their documented formats)."""
_DYNAMODB_WRITES = {"PutItem": 1, "UpdateItem": 1, "DeleteItem": 1}
_DYNAMODB_READS = {"GetItem", "Query", "Scan"}


class Meter:
    """Counters, safe to bump from moto's threads; ``counts()`` is a snapshot."""

    def __init__(self, matches: Callable[[str], bool]) -> None:
        self.matches = matches
        """Whether a line passes the subscription filter (moto delivers every line)."""
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.sample: list[str] = []
        """Messages the agents shipped, for the compression ratio of stored logs."""
        self.emf: set[tuple[str, str, str]] = set()
        """(namespace, metric, dimension names) published as embedded metric format."""

    def add(self, **amounts: float) -> None:
        with self._lock:
            for key, amount in amounts.items():
                self._counts[key] += amount  # type: ignore[assignment]

    def counts(self) -> Counter[str]:
        with self._lock:
            return Counter(self._counts)

    def logged(self, group: str, stream: str, events: list[dict[str, Any]]) -> None:
        kind = stream.rsplit("/", 1)[-1] if group.startswith("/nodemedic/") else "other"
        size = sum(len(str(e["message"]).encode()) + EVENT_OVERHEAD for e in events)
        self.add(
            **{f"log_bytes:{kind}": size, f"log_events:{kind}": len(events), f"log_puts:{kind}": 1}
        )
        if kind != "other" and len(self.sample) < 20_000:
            self.sample.extend(str(e["message"]) for e in events)

    def called(self, service: str, action: str, body: Any) -> None:
        """``body``: the request's JSON text, or moto's parsed parameters (its DynamoDB
        handler replaces the text with them before the action runs)."""
        self.add(**{f"call:{service}:{action}": 1})
        if service != "dynamodb":
            return
        request = body if isinstance(body, dict) else json.loads(body or "{}")
        if action in _DYNAMODB_WRITES:
            item = json.dumps(request.get("Item") or request.get("Key") or {})
            self.add(write_units=max(1, math.ceil(len(item.encode()) / 1024)))
        elif action == "TransactWriteItems":
            self.add(write_units=2 * len(request.get("TransactItems", [])))
        elif action in _DYNAMODB_READS:
            self.add(read_units=1.0 if request.get("ConsistentRead") else 0.5)

    def invoked(self, function: str, memory_mb: int, seconds: float, event: Any) -> None:
        """One invocation; a subscription delivery counts only if a line passes the filter."""
        kind = "invocation"
        if isinstance(event, dict) and "awslogs" in event:
            data = json.loads(gzip.decompress(base64.b64decode(event["awslogs"]["data"])))
            if not any(self.matches(e["message"]) for e in data.get("logEvents", [])):
                kind = "filtered"
            else:
                kind = "delivery"
        billed = math.ceil(seconds * 1000) / 1000
        self.add(
            **{
                f"lambda:{kind}": 1,
                f"gb_seconds:{kind}": billed * memory_mb / 1024,
                f"seconds:{kind}": seconds,
                f"lambda:{kind}:{function.rsplit('-', 1)[0]}": 1,
            }
        )

    def printed(self, text: str) -> None:
        lines = [line for line in text.splitlines() if line.strip()]
        size = sum(len(line.encode()) + EVENT_OVERHEAD for line in lines) + PLATFORM_LOG_BYTES
        self.add(lambda_log_bytes=size)
        for line in lines:
            with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
                record = json.loads(line)
                for directive in record["_aws"]["CloudWatchMetrics"]:
                    dimensions = ",".join(sorted(d for ds in directive["Dimensions"] for d in ds))
                    for metric in directive["Metrics"]:
                        self.emf.add((directive["Namespace"], metric["Name"], dimensions))


@contextlib.contextmanager
def metering(meter: Meter) -> Iterator[None]:
    """While active, moto's Logs ingestion, its API calls and the Lambda handlers, in this
    process or in workers (which time their own calls), report to ``meter``."""
    put_log_events = LogsBackend.put_log_events
    call_action = BaseResponse.call_action
    resolve = lambdacall.resolve_handler
    worker_calls = LambdaWorkers.call

    def logs(self: Any, group: str, stream: str, events: list[dict[str, Any]]) -> Any:
        meter.logged(group, stream, events)
        return put_log_events(self, group, stream, events)

    def action(self: Any) -> Any:
        with contextlib.suppress(Exception):  # counting never changes what moto answers
            target = str(self.headers.get("X-Amz-Target", "")).rpartition(".")[2]
            name = target or str(self.querystring.get("Action", [""])[0])
            meter.called(str(self.service_name), name, self.body or "")
        return call_action(self)

    def handler(spec: str) -> lambdacall.Handler:
        run = resolve(spec)

        def timed(event: Any, context: Any) -> Any:
            printed = io.StringIO()
            began = time.perf_counter()
            try:
                with _printing_to(printed):
                    return run(event, context)
            finally:
                seconds = time.perf_counter() - began
                meter.invoked(context.function_name, context.memory_limit_in_mb, seconds, event)
                meter.printed(printed.getvalue())

        return timed

    def worker_call(self: LambdaWorkers, function: Any, event: Any) -> Called:
        called = worker_calls(self, function, event)
        meter.invoked(function.function_name, int(function.memory_size), called.seconds, event)
        meter.printed(called.printed)
        return called

    with (
        mock.patch.object(LogsBackend, "put_log_events", logs),
        mock.patch.object(BaseResponse, "call_action", action),
        mock.patch.object(lambdacall, "resolve_handler", handler),
        mock.patch.object(LambdaWorkers, "call", worker_call),
    ):
        yield


@contextlib.contextmanager
def _printing_to(buffer: io.StringIO) -> Iterator[None]:
    """What the handler prints (Powertools' JSON log lines and its embedded metrics) goes
    to ``buffer``: Lambda ships a function's standard output to its log group."""
    from lambdas.observability import logger

    handler = logger.registered_handler
    if not isinstance(handler, logging.StreamHandler):
        raise TypeError("Powertools' handler is not a stream handler any more")
    previous = handler.setStream(buffer)
    try:
        with contextlib.redirect_stdout(buffer):
            yield
    finally:
        if previous is not None:
            handler.setStream(previous)
