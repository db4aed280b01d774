"""A CloudWatch Logs subscription payload, decoded: the classifier's and the job monitor's
input alike.

Both functions receive the same envelope (gzipped, base64-encoded JSON) and send a payload
they cannot read to their dead-letter queue whole, so they must fail on the same mistakes
in the same way; neither handler imports the other (a handler imports no handler).
"""

from __future__ import annotations

import binascii
import zlib
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools.utilities.data_classes import CloudWatchLogsEvent
from aws_lambda_powertools.utilities.data_classes.cloud_watch_logs_event import (
    CloudWatchLogsLogEvent,
)

from nodemedic.remediate.batch import LogEvent


class MalformedPayload(ValueError):
    """The event is not a CloudWatch Logs subscription payload from a nodemedic agent."""


MESSAGE_TYPES = ("DATA_MESSAGE", "CONTROL_MESSAGE")
LATEST_MS = int(datetime(9999, 12, 31, tzinfo=UTC).timestamp() * 1000)
"""Event times past this cannot be dates (a decision's ``first_seen`` is one)."""


def _log_event(raw: CloudWatchLogsLogEvent) -> LogEvent:
    timestamp = raw.timestamp
    if type(timestamp) is not int or not 0 <= timestamp <= LATEST_MS:
        raise ValueError(f"event timestamp {timestamp!r} is not epoch milliseconds")
    event_id: object = raw.get_id
    # CloudWatch Logs sends the id as a string of digits; moto sends the number.
    if not isinstance(raw.message, str) or type(event_id) not in (str, int):
        raise TypeError(f"event id and message must be text: {event_id!r}, {raw.message!r}")
    return LogEvent(str(event_id), timestamp, raw.message)


def decode_payload(event: dict[str, Any]) -> tuple[str, str, str, list[LogEvent]]:
    try:
        data = CloudWatchLogsEvent(event).parse_logs_data()
        if not isinstance(data.raw_event["logEvents"], list):
            raise TypeError("logEvents is not a list")
        events = [_log_event(e) for e in data.log_events]
        if data.message_type not in MESSAGE_TYPES:
            raise ValueError(f"messageType {data.message_type!r} is not one of {MESSAGE_TYPES}")
        if not isinstance(data.log_group, str) or not isinstance(data.log_stream, str):
            raise TypeError(f"logGroup and logStream must be text: {data.log_group!r}")
        return data.message_type, data.log_group, data.log_stream, events
    except (
        KeyError,
        TypeError,
        ValueError,
        AttributeError,
        binascii.Error,
        zlib.error,
        EOFError,
        # JSON nested past the parser's recursion limit: no payload CloudWatch Logs makes
        # (its own JSON nests three deep), and the parser unwinds cleanly.
        RecursionError,
    ) as exc:
        raise MalformedPayload(f"not a CloudWatch Logs subscription payload: {exc!r}") from exc
