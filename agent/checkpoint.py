"""Where the kernel log reader resumes: the boot id and the last record that is safe.

A record is safe once the batch holding it was acknowledged by CloudWatch Logs or written
to the spool. Batches are acknowledged out of step with reading, so ``Progress`` keeps
the batches in the order they were made and advances the checkpoint only over the
longest prefix of safe ones: a restart never skips a record that was still in flight,
and re-sends at most what was in flight.
"""

from __future__ import annotations

import json
import os
import threading
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Checkpoint:
    boot_id: str
    seq: int
    """Last safe sequence number (device) or line number (file); -1/0: nothing yet."""
    offset: int = 0
    """File reader only: byte offset just after line ``seq``."""


def write_atomically(path: Path, *parts: bytes) -> None:
    """Write ``parts`` so that a crash leaves the old file or the new one, never a mix."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as handle:
        handle.writelines(parts)
        handle.flush()
        os.fsync(handle.fileno())
    tmp.replace(path)


class CheckpointStore:
    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> Checkpoint | None:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            return Checkpoint(str(raw["boot_id"]), int(raw["seq"]), int(raw.get("offset", 0)))
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{self.path}: unreadable checkpoint ({exc}); move it away") from exc

    def save(self, checkpoint: Checkpoint) -> None:
        write_atomically(self.path, json.dumps(asdict(checkpoint)).encode())


def resume_point(saved: Checkpoint | None, boot_id: str, new_boot_seq: int) -> Checkpoint:
    """Where to start: after the saved record on the same boot, else from the beginning."""
    if saved is not None and saved.boot_id == boot_id:
        return saved
    return Checkpoint(boot_id, new_boot_seq, 0)


class Progress:
    """Advances and saves the checkpoint as batches of records become safe."""

    def __init__(self, store: CheckpointStore, start: Checkpoint) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._pending: deque[tuple[int, Checkpoint]] = deque()
        self._safe: set[int] = set()
        self.current = start

    def issued(self, batch_id: int, cursor: Checkpoint) -> None:
        """A batch ending at ``cursor`` exists; ids must increase."""
        with self._lock:
            self._pending.append((batch_id, cursor))

    def safe(self, batch_id: int) -> None:
        with self._lock:
            self._safe.add(batch_id)
            advanced = None
            while self._pending and self._pending[0][0] in self._safe:
                done, advanced = self._pending.popleft()
                self._safe.discard(done)
            if advanced is None:
                return
            self.current = advanced
            self._store.save(advanced)
