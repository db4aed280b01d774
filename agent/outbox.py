"""Batches waiting to ship, strictly oldest first: a few in memory, the rest on disk.

Every batch gets an increasing id when it is made. The shipper always takes the lowest
id, whether it sits in memory or in the spool, so spilling to disk under a burst or an
outage never reorders a stream. Memory holds a handful of batches; when they are not
enough, they and the new one go to the spool, so a burst costs disk, not RAM. A batch
becomes *safe* (the checkpoint may move past it) when it is acknowledged or spooled.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque

from agent.batch import EVENT_OVERHEAD, Batch, utf8_size
from agent.checkpoint import Progress
from agent.metrics import Metrics
from agent.spool import Damaged, Entry, Spool


def dropped_message(count: int) -> str:
    return f"nodemedic: spool full, dropped {count} events"


class Outbox:
    def __init__(
        self,
        spool: Spool,
        metrics: Metrics,
        progress: Progress | None = None,
        max_memory_batches: int = 1,
    ) -> None:
        self._spool = spool
        self._metrics = metrics
        self._progress = progress
        self._max_memory = max_memory_batches
        self._memory: deque[Batch] = deque()
        self._cond = threading.Condition()
        self._next_id = spool.max_id() + 1
        self._to_disk = False
        self._in_flight: int | None = None
        """The batch ``peek`` handed out and not yet ``acked``."""
        metrics.spool_bytes = spool.bytes

    def put(self, batch: Batch) -> None:
        with self._cond:
            batch.id = self._next_id
            self._next_id += 1
            if batch.cursor is not None and self._progress is not None:
                self._progress.issued(batch.id, batch.cursor)
            if self._to_disk or len(self._memory) >= self._max_memory:
                # Older batches go to disk first: a batch on disk never has one that is
                # only in memory before it, so after a crash everything up to the newest
                # spooled batch is in the spool or was acknowledged (``start_position``).
                while self._memory:
                    self._store(self._memory.popleft())
                self._store(batch)
            else:
                self._memory.append(batch)
            self._cond.notify_all()

    def _store(self, batch: Batch) -> None:
        dropped = self._spool.put(batch, keep=self._in_flight)
        if not batch.reports:
            self._metrics.events_spooled += len(batch.events)
        self._safe(batch)
        self._lost(dropped)
        self._metrics.spool_bytes = self._spool.bytes

    def _lost(self, entries: list[Entry]) -> None:
        """Count the events of spooled batches that will never ship, and say so."""
        counts: Counter[str] = Counter()
        for entry in entries:
            # A lost note hands its count on: lost evidence is always counted once.
            counts[entry.stream] += entry.reports or entry.count
            self._metrics.events_dropped += 0 if entry.reports else entry.count
        for stream, count in counts.items():
            self._note(stream, count)

    def _note(self, stream: str, count: int) -> None:
        """Say that ``count`` events of ``stream`` were dropped, in a note placed after the
        newest batch. A note still waiting is folded into the new one, so an outage that
        drops a thousand batches ships one note, not a thousand."""
        for waiting in self._spool.notes(stream):
            if waiting != self._in_flight:
                count += self._spool.remove(waiting).reports
        message = dropped_message(count)
        note = Batch(stream, [(int(time.time() * 1000), message)], reports=count)
        note.size = utf8_size(message) + EVENT_OVERHEAD
        note.id = self._next_id
        self._next_id += 1
        self._store(note)

    def _safe(self, batch: Batch) -> None:
        if batch.cursor is not None and self._progress is not None:
            self._progress.safe(batch.id)
        if batch.on_safe is not None:
            batch.on_safe()
            batch.on_safe = None

    def peek(self, timeout: float) -> Batch | None:
        """The oldest batch (left in place until ``acked``), waiting up to ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                head = self._spool.head()
                if self._memory and (head is None or self._memory[0].id < head):
                    self._in_flight = self._memory[0].id
                    return self._memory[0]
                if head is not None:
                    try:
                        batch = self._spool.load(head)
                    except Damaged as damaged:
                        self._lost([damaged.entry])
                        self._metrics.spool_bytes = self._spool.bytes
                        continue
                    self._in_flight = batch.id
                    return batch
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._cond.wait(remaining)

    def release(self) -> None:
        """The batch from ``peek`` was not delivered; while the shipper waits to retry, it
        is the oldest in the spool like any other (and the first to go if the spool fills)."""
        with self._cond:
            self._in_flight = None

    def acked(self, batch: Batch) -> None:
        """``batch`` reached CloudWatch Logs (or can never be shipped): forget it."""
        with self._cond:
            self._in_flight = None
            if self._memory and self._memory[0] is batch:
                self._memory.popleft()
                self._safe(batch)
            else:
                self._spool.remove(batch.id)
                self._metrics.spool_bytes = self._spool.bytes

    def to_disk(self, on: bool) -> None:
        """While on, keep nothing in memory: an outage must not lose batches to a crash."""
        with self._cond:
            self._to_disk = on
            if on:
                while self._memory:
                    self._store(self._memory.popleft())

    def flush_to_disk(self) -> None:
        """Spool whatever is still in memory (at shutdown)."""
        self.to_disk(True)

    def __len__(self) -> int:
        with self._cond:
            return len(self._memory) + len(self._spool)
