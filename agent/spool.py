"""A bounded on-disk queue of batches, for when CloudWatch Logs is away or slow.

One file per batch, named by batch id, written atomically: the oldest id is the next to
ship, and a crash leaves whole batches only. When the spool would outgrow its bound the
oldest batches go, and the caller learns which, so it can ship the count of dropped
events as a line of its own.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path

from agent.batch import EVENT_OVERHEAD, Batch, utf8_size
from agent.checkpoint import Checkpoint, write_atomically

log = logging.getLogger(__name__)
SUFFIX = ".batch"


class Damaged(Exception):
    """A spooled batch that cannot be read back (its ``Entry`` is the argument)."""

    def __init__(self, entry: Entry) -> None:
        super().__init__(entry)
        self.entry = entry


@dataclass(frozen=True)
class Entry:
    stream: str
    count: int
    size: int
    cursor: Checkpoint | None
    reports: int = 0
    """A note's count of events dropped before it (0 for a batch of evidence)."""


class Spool:
    def __init__(self, directory: Path, max_bytes: int) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        directory.mkdir(parents=True, exist_ok=True)
        for leftover in directory.glob("*.tmp"):
            leftover.unlink()
        self._index: dict[int, Entry] = {}
        for path in sorted(directory.glob(f"*{SUFFIX}")):
            entry = self._read_header(path)
            if entry is not None:
                self._index[int(path.stem)] = entry
        self.bytes = sum(e.size for e in self._index.values())

    def _path(self, batch_id: int) -> Path:
        return self.directory / f"{batch_id:020d}{SUFFIX}"

    def _read_header(self, path: Path) -> Entry | None:
        try:
            with path.open("rb") as handle:
                header = json.loads(handle.readline())
            cursor = header.get("cursor")
            return Entry(
                str(header["stream"]),
                int(header["count"]),
                path.stat().st_size,
                Checkpoint(**cursor) if cursor else None,
                int(header.get("reports", 0)),
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.error("spool: %s is unreadable (%s); set aside as .corrupt", path.name, exc)
            path.rename(path.with_suffix(".corrupt"))
            return None

    def __len__(self) -> int:
        return len(self._index)

    def head(self) -> int | None:
        return min(self._index) if self._index else None

    def max_id(self) -> int:
        return max(self._index, default=0)

    def cursors(self) -> list[Checkpoint]:
        return [e.cursor for e in self._index.values() if e.cursor is not None]

    def put(self, batch: Batch, keep: int | None = None) -> list[Entry]:
        """Store ``batch``; returns the batches dropped, oldest first, to stay in bound.

        Batch ``keep`` is never dropped: it is on its way to the service, and counting it
        as dropped would report a loss that did not happen."""
        header = {
            "id": batch.id,
            "stream": batch.stream,
            "count": len(batch.events),
            "cursor": asdict(batch.cursor) if batch.cursor else None,
            "reports": batch.reports,
        }
        head = json.dumps(header).encode() + b"\n"
        body = json.dumps(batch.events).encode()
        write_atomically(self._path(batch.id), head, body)
        size = len(head) + len(body)
        del body
        self._index[batch.id] = Entry(
            batch.stream, len(batch.events), size, batch.cursor, batch.reports
        )
        self.bytes += size
        dropped: list[Entry] = []
        if self.bytes <= self.max_bytes:  # nearly always: no need to order the index
            return dropped
        for oldest in sorted(self._index):
            if self.bytes <= self.max_bytes or oldest == batch.id:
                break
            if oldest != keep:
                dropped.append(self.remove(oldest))
        return dropped

    def load(self, batch_id: int) -> Batch:
        """The batch; raises Damaged (and sets the file aside) if it cannot be read."""
        entry = self._index[batch_id]
        path = self._path(batch_id)
        try:
            with path.open("rb") as handle:
                handle.readline()
                events = [(int(ts), str(msg)) for ts, msg in json.loads(handle.read())]
        except (OSError, ValueError, TypeError) as exc:
            log.error("spool: batch %s is damaged (%s); %d events lost", batch_id, exc, entry.count)
            path.rename(path.with_suffix(".corrupt"))
            raise Damaged(self._forget(batch_id)) from exc
        size = sum(utf8_size(m) + EVENT_OVERHEAD for _, m in events)
        return Batch(entry.stream, events, size, entry.cursor, batch_id)

    def notes(self, stream: str) -> list[int]:
        """The spool-full notes of ``stream`` waiting here."""
        return [i for i, e in self._index.items() if e.reports and e.stream == stream]

    def remove(self, batch_id: int) -> Entry:
        self._path(batch_id).unlink(missing_ok=True)
        return self._forget(batch_id)

    def _forget(self, batch_id: int) -> Entry:
        entry = self._index.pop(batch_id)
        self.bytes -= entry.size
        return entry
