"""PutLogEvents batches that the service accepts as they are.

The limits (PutLogEvents API reference): a batch is at most 1,048,576 bytes counted as
the UTF-8 size of every message plus 26 bytes per event, at most 10,000 events, in
chronological order, spanning at most 24 hours; one event is at most 256 KB, its 26 bytes
included. A longer message is cut with a visible marker instead of being rejected with its
whole batch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from agent.checkpoint import Checkpoint

MAX_BATCH_BYTES = 1_048_576
EVENT_OVERHEAD = 26
MAX_BATCH_EVENTS = 10_000
DEFAULT_BATCH_EVENTS = 5_000
"""The agent's default: half the service's limit halves its peak memory in a flood (each
event costs about three times its text as Python objects, and botocore copies a batch
once more to send it) at the price of twice the calls, and only in a flood: at ~100-byte
kernel lines the 1 MB byte limit already stops a batch near 8,000 events."""
MAX_BATCH_SPAN_MS = 24 * 3600 * 1000
MAX_EVENT_BYTES = 256 * 1024
MAX_MESSAGE_BYTES = MAX_EVENT_BYTES - EVENT_OVERHEAD
MAX_AGE_MS = 13 * 24 * 3600 * 1000
"""Events older than 14 days are rejected; a record from early in a long boot is shipped
with this age instead (its text is what matters, and it is kept whole)."""

Event = tuple[int, str]


def utf8_size(message: str) -> int:
    return len(message) if message.isascii() else len(message.encode("utf-8", "surrogatepass"))


def truncate(message: str, limit: int = MAX_MESSAGE_BYTES) -> str:
    """``message`` cut to ``limit`` UTF-8 bytes, ending in a marker saying how much went."""
    size = utf8_size(message)
    if size <= limit:
        return message
    marker = f" [nodemedic: truncated, {size} bytes, first {{}} kept]"
    room = limit - len(marker.format(limit))
    cut = message.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
    return cut + marker.format(utf8_size(cut))


@dataclass
class Batch:
    stream: str
    events: list[Event] = field(default_factory=list)
    size: int = 0
    cursor: Checkpoint | None = None
    """Kernel log batches: the position after their last record."""
    id: int = 0
    on_safe: Callable[[], None] | None = None
    """Called once the batch is acknowledged or spooled (health checks keep state)."""
    reports: int = 0
    """A spool-full note: how many events were dropped before it (see ``outbox``)."""


class Batcher:
    """Collects one stream's events and closes a batch before it would break a limit.

    Timestamps never go backwards within the stream (the service wants chronological
    batches; the kernel's sequence order is the order that matters as evidence).
    """

    def __init__(
        self,
        stream: str,
        max_events: int = MAX_BATCH_EVENTS,
        max_bytes: int = MAX_BATCH_BYTES,
        clock: Callable[[], float] = time.monotonic,
        *,
        sign: Callable[[int, str], str] | None = None,
        sign_bytes: int = 0,
    ) -> None:
        """``sign`` (``agent.origin``) marks each event with its signature, which adds
        ``sign_bytes`` to it: a message is cut to leave room for them."""
        self.stream = stream
        self._sign = sign
        self._room = MAX_MESSAGE_BYTES - sign_bytes
        self._max_events = min(max_events, MAX_BATCH_EVENTS)
        self._max_bytes = min(max_bytes, MAX_BATCH_BYTES)
        self._clock = clock
        self._last_ts = 0
        self._batch = Batch(stream)
        self.opened_at = 0.0
        """Monotonic time the oldest event of the open batch arrived."""

    @property
    def pending(self) -> int:
        return len(self._batch.events)

    def add(self, ts_ms: int, message: str, cursor: Checkpoint | None = None) -> Batch | None:
        """Add an event; returns the batch it closed to make room, if any."""
        size = utf8_size(message)
        if size > self._room:
            message = truncate(message, self._room)
            size = utf8_size(message)
        ts_ms = max(ts_ms, self._last_ts)
        self._last_ts = ts_ms
        if self._sign is not None:
            # Signed with its final timestamp, which the signature covers.
            message = self._sign(ts_ms, message)
            size = utf8_size(message)
        closed = None
        batch = self._batch
        if batch.events and (
            len(batch.events) >= self._max_events
            or batch.size + size + EVENT_OVERHEAD > self._max_bytes
            or ts_ms - batch.events[0][0] > MAX_BATCH_SPAN_MS
        ):
            closed = self.flush()
            batch = self._batch
        if not batch.events:
            self.opened_at = self._clock()
        batch.events.append((ts_ms, message))
        batch.size += size + EVENT_OVERHEAD
        if cursor is not None:
            batch.cursor = cursor
        return closed

    def position(self, cursor: Checkpoint) -> None:
        """The open batch's last event came from ``cursor``."""
        self._batch.cursor = cursor

    def flush(self) -> Batch | None:
        if not self._batch.events:
            return None
        batch, self._batch = self._batch, Batch(self.stream)
        return batch


def clamp_ms(ts_ms: int, now_ms: int) -> int:
    """A timestamp the service accepts: not in the future, not older than 13 days."""
    return min(max(ts_ms, now_ms - MAX_AGE_MS), now_ms)


def add_all(
    batcher: Batcher, ts_ms: int, messages: Iterable[str], put: Callable[[Batch], None]
) -> Batch | None:
    """Every message into ``batcher``, each batch that fills up ``put``; the last, partial
    batch is returned instead, so its caller can say what its safety means (``on_safe``)."""
    for message in messages:
        full = batcher.add(ts_ms, message)
        if full is not None:
            put(full)
    return batcher.flush()
