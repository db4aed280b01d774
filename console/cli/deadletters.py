"""The dead-letter queue as ``nodemedic dlq`` reads and redrives it.

Lambda sends an event its function failed on, after its retries, to the function's queue
as it was (the message body) with the error in message attributes (``RequestID``,
``ErrorCode``, ``ErrorMessage``), never the function's name: one queue serves the
classifier and the job monitor, so the function is found from the payload's source, a
subscription filter's destination (a log batch) or an EventBridge rule's target (a
scheduled run), as AWS itself routed it.

SQS shows a message only to one reader at a time: ``receive_all`` takes every message out
of sight for ``seconds`` and the caller gives each back (``release``) or deletes it once its
replay succeeded; a reader that dies leaves them to reappear by themselves.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from nodemedic.contracts.stack import DEAD_LETTER_ATTRIBUTES

FIRST_LINE_CHARS = 120
"""A log batch's first line, as the summary shows it."""
SCHEDULED = "Scheduled Event"


@dataclass(frozen=True)
class Payload:
    """What a dead letter carried, in short."""

    kind: str
    """``awslogs`` (a subscription delivery), ``scheduled`` (an EventBridge run) or
    ``unknown`` (anything else, a malformed payload among them)."""
    source: str | None
    """The log group, or the rule's ARN."""
    log_stream: str | None
    subscription_filter: str | None
    events: int | None
    first_line: str | None
    size: int
    """The body's length in characters."""


@dataclass(frozen=True)
class DeadLetter:
    id: str
    receipt: str
    body: str
    sent_at: float
    """Epoch seconds the message entered the queue (Lambda sends it after its retries)."""
    receive_count: int
    request_id: str | None
    error_code: str | None
    error: str | None
    payload: Payload


def payload_of(body: str) -> Payload:
    """The summary of a message body; a body no function would take is ``unknown``."""
    unknown = Payload("unknown", None, None, None, None, None, len(body))
    try:
        event = json.loads(body)
    except ValueError:
        return unknown
    if not isinstance(event, dict):
        return unknown
    if event.get("detail-type") == SCHEDULED:
        rules = [r for r in event.get("resources") or [] if isinstance(r, str)]
        return Payload("scheduled", rules[0] if rules else None, None, None, None, None, len(body))
    data = _logs_data(event)
    if data is None:
        return unknown
    lines = data.get("logEvents")
    lines = lines if isinstance(lines, list) else []
    first = next((_text(e.get("message")) for e in lines if isinstance(e, dict)), None)
    filters = data.get("subscriptionFilters")
    return Payload(
        "awslogs",
        _text(data.get("logGroup")),
        _text(data.get("logStream")),
        _text(filters[0]) if isinstance(filters, list) and filters else None,
        len(lines),
        None if first is None else first[:FIRST_LINE_CHARS],
        len(body),
    )


def _logs_data(event: dict[str, Any]) -> dict[str, Any] | None:
    try:
        raw = gzip.decompress(base64.b64decode(event["awslogs"]["data"]))
        data = json.loads(raw)
    except (KeyError, TypeError, ValueError, binascii.Error, zlib.error, EOFError, OSError):
        return None
    return data if isinstance(data, dict) else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _attribute(message: dict[str, Any], name: str) -> str | None:
    found = message.get("MessageAttributes", {}).get(name)
    return None if found is None else str(found.get("StringValue"))


def dead_letter(message: dict[str, Any]) -> DeadLetter:
    request_id, error_code, error = (_attribute(message, n) for n in DEAD_LETTER_ATTRIBUTES)
    attributes = message.get("Attributes", {})
    body = str(message.get("Body", ""))
    return DeadLetter(
        id=message["MessageId"],
        receipt=message["ReceiptHandle"],
        body=body,
        sent_at=int(attributes.get("SentTimestamp", 0)) / 1000,
        receive_count=int(attributes.get("ApproximateReceiveCount", 0)),
        request_id=request_id,
        error_code=error_code,
        error=error,
        payload=payload_of(body),
    )


def receive_all(sqs: Any, queue: str, seconds: int) -> Iterator[DeadLetter]:
    """Every message of the queue, each out of others' sight for ``seconds``, until a long
    poll (which asks every SQS server, unlike a short one) finds no more."""
    while True:
        found = sqs.receive_message(
            QueueUrl=queue,
            MaxNumberOfMessages=10,
            VisibilityTimeout=seconds,
            WaitTimeSeconds=1,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not found:
            return
        yield from (dead_letter(m) for m in found)


def release(sqs: Any, queue: str, letter: DeadLetter) -> None:
    """Back in sight at once, for the next reader."""
    sqs.change_message_visibility(QueueUrl=queue, ReceiptHandle=letter.receipt, VisibilityTimeout=0)


def function_of(clients: Any, payload: Payload) -> str | None:
    """The ARN of the function AWS delivered the payload to: the destination of the
    subscription filter that sent a log batch, the Lambda target of the rule that sent a
    scheduled event; None where the payload does not say (``clients(service)`` gives a
    boto3 client)."""
    if payload.kind == "awslogs" and payload.source and payload.subscription_filter:
        filters = clients("logs").describe_subscription_filters(
            logGroupName=payload.source, filterNamePrefix=payload.subscription_filter
        )["subscriptionFilters"]
        return next(
            (
                str(f["destinationArn"])
                for f in filters
                if f.get("filterName") == payload.subscription_filter
            ),
            None,
        )
    if payload.kind == "scheduled" and payload.source and ":rule/" in payload.source:
        # arn:aws:events:<region>:<account>:rule/[<bus>/]<name>
        path = payload.source.split(":rule/", 1)[1].split("/")
        bus = {"EventBusName": path[0]} if len(path) > 1 else {}
        targets = clients("events").list_targets_by_rule(Rule=path[-1], **bus)["Targets"]
        return next((str(t["Arn"]) for t in targets if ":lambda:" in t["Arn"]), None)
    return None


def replay(functions: Any, function: str, letter: DeadLetter) -> str | None:
    """Invokes ``function`` with the message's body as it was and waits for its result:
    None when it succeeded, else its error."""
    response = functions.invoke(
        FunctionName=function, InvocationType="RequestResponse", Payload=letter.body.encode()
    )
    result = response["Payload"].read().decode(errors="replace")
    if "FunctionError" not in response:
        return None
    try:
        error = json.loads(result)
        return f"{error.get('errorType')}: {error.get('errorMessage')}"
    except (ValueError, AttributeError):
        return result or str(response["FunctionError"])


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
