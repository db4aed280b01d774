"""Kernel log records: the ``/dev/kmsg`` record parser and the two readers built on it.

A record is ``priority,sequence,timestamp_us,flags[,...];message`` followed by
continuation lines that start with a space and hold ``KEY=value`` metadata. The kernel
escapes non-printable bytes (and ``\\``) in the message as ``\\xNN``.

``DevKmsgReader`` reads the device itself and accounts for every sequence number: records
the kernel overwrote before we read them (``EPIPE``, or a gap after a restart) become one
line of their own, so a loss is evidence too. ``FileKmsgReader`` follows a file the way
``tail -f`` does, for the local mode and tests; it accepts raw records and plain lines
(a message, or a line of dmesg or syslog, shipped without its head: ``heads``), and numbers
lines by position so the checkpoint works the same way.

Each line ships with what its record's priority says about who wrote it
(``contracts.shipped_message``): a record the kernel logged (facility 0) as its bare
message, any other behind the injected mark. A plain line of a file has no priority, so
nothing says the kernel wrote it: it is marked injected too (``facility=none``). A file's
records carry the facility their writer put in them; only the device's are the kernel's
word.
"""

from __future__ import annotations

import errno
import os
import re
import select
import stat
import time
from pathlib import Path
from typing import NamedTuple, Protocol

from nodemedic.contracts.logs import shipped_message
from nodemedic.detect.heads import KMSG_PREFIX, strip_head

_RECORD = re.compile(KMSG_PREFIX.encode())
_ESCAPE = re.compile(rb"\\x([0-9a-fA-F]{2})")
_CONTINUATION = re.compile(rb" [A-Z0-9_]+=")
MAX_RECORD_BYTES = 8192
"""``CONSOLE_EXT_LOG_MAX``: a read buffer smaller than a record fails with ``EINVAL``."""
MAX_LINE_BYTES = 4 * 1024 * 1024
"""A file line longer than this is cut (and shipped truncated); the rest of it is skipped,
so one runaway line cannot take the agent's memory."""


class Record(NamedTuple):
    seq: int
    ts_us: int
    message: str
    facility: int
    """The syslog facility of the record's priority (``priority >> 3``)."""


class Line(NamedTuple):
    """One thing to ship from the kernel log, with the position the checkpoint keeps."""

    seq: int
    ts_us: int | None
    """Microseconds since boot, or None for a plain line (shipped with the time it was read)."""
    message: str
    """The event text: the message, behind the injected mark unless the kernel logged it."""
    offset: int
    """File readers: the byte offset just after this line; 0 for the device."""
    lost: int = 0
    """Records the kernel overwrote before this point; ``message`` then says so."""


def lost_message(count: int) -> str:
    return f"nodemedic: kmsg ring buffer overwritten, {count} records lost"


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")


def unescape(message: bytes) -> bytes:
    """The message as the kernel printed it (what ``dmesg`` shows and the rules match)."""
    if b"\\x" not in message:
        return message
    return _ESCAPE.sub(lambda m: bytes((int(m[1], 16),)), message)


def parse_record(data: bytes) -> Record | None:
    """The record in ``data`` (continuation lines ignored), or None if it is not one."""
    head = _RECORD.match(data)
    if head is None:
        return None
    end = data.find(b"\n", head.end())
    message = data[head.end() :] if end < 0 else data[head.end() : end]
    return Record(
        int(head["seq"]), int(head["ts"]), _text(unescape(message)), int(head["pri"]) >> 3
    )


class Reader(Protocol):
    def read(self, timeout: float) -> list[Line]:
        """Lines available now or within ``timeout`` seconds (an empty list on timeout)."""

    def close(self) -> None: ...


class DevKmsgReader:
    """``/dev/kmsg``, resumed after sequence number ``after`` (-1: from the start of the
    buffer, i.e. a new boot). Records at or before ``after`` were shipped already and are
    skipped; a jump in sequence numbers is reported as lost records."""

    def __init__(self, path: str, after: int, max_lines: int = 4096) -> None:
        self._fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        self._poll = select.poll()
        self._poll.register(self._fd, select.POLLIN)
        self._expected = after + 1
        self._max_lines = max_lines

    def read(self, timeout: float) -> list[Line]:
        lines: list[Line] = []
        if not self._poll.poll(max(0.0, timeout) * 1000):
            return lines
        while len(lines) < self._max_lines:
            try:
                data = os.read(self._fd, MAX_RECORD_BYTES)
            except BlockingIOError:
                break
            except BrokenPipeError:
                # The kernel overwrote records we had not read; the next read returns the
                # oldest record left, and its sequence number tells how many went.
                continue
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                raise
            if not data:
                break
            record = parse_record(data)
            if record is not None:
                self._track(record, lines)
        return lines

    def _track(self, record: Record, lines: list[Line]) -> None:
        if record.seq < self._expected:
            return
        if record.seq > self._expected:
            lost = record.seq - self._expected
            lines.append(Line(record.seq - 1, None, lost_message(lost), 0, lost))
        text = shipped_message(record.message, record.facility)
        lines.append(Line(record.seq, record.ts_us, text, 0))
        self._expected = record.seq + 1

    def close(self) -> None:
        os.close(self._fd)


class FileKmsgReader:
    """A file of kmsg records and/or plain lines, followed like ``tail -f``.

    ``seq`` is the 1-based line number; resuming needs the line number and byte offset of
    the last line shipped (``after``, ``offset``). Continuation lines are skipped. A file
    shorter than ``offset`` was truncated: it is read again from the start.
    """

    def __init__(
        self,
        path: str,
        after: int = 0,
        offset: int = 0,
        *,
        idle_sleep: float = 0.2,
        chunk: int = 256 * 1024,
        max_lines: int = 4096,
    ) -> None:
        self._file = Path(path).open("rb")  # noqa: SIM115 - held for the reader's life
        size = os.fstat(self._file.fileno()).st_size
        if offset > size:
            after, offset = 0, 0
        self._file.seek(offset)
        self._line_no = after
        self._offset = offset
        self._pending = b""
        self._skipping = False
        self._idle_sleep = idle_sleep
        self._chunk = chunk
        self._max_lines = max_lines

    def read(self, timeout: float) -> list[Line]:
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            lines = self._read_available()
            remaining = deadline - time.monotonic()
            if lines or remaining <= 0:
                return lines
            time.sleep(min(self._idle_sleep, remaining))

    def _read_available(self) -> list[Line]:
        lines: list[Line] = []
        while len(lines) < self._max_lines:
            data = self._file.read(self._chunk)
            if not data:
                break
            self._split(data, lines)
        return lines

    def _split(self, data: bytes, lines: list[Line]) -> None:
        whole = (self._pending + data).split(b"\n")
        self._pending = whole.pop()
        for raw in whole:
            self._offset += len(raw) + 1
            if self._skipping:
                self._skipping = False  # the end of a line that was cut
            else:
                self._line_no += 1
                self._emit(raw, lines)
        if len(self._pending) > MAX_LINE_BYTES and not self._skipping:
            # No newline in sight: ship what we have (the batcher truncates it visibly)
            # and drop the rest of this line as it arrives.
            self._line_no += 1
            self._offset += len(self._pending)
            self._emit(self._pending, lines)
            self._pending = b""
            self._skipping = True
        elif self._skipping:
            self._offset += len(self._pending)
            self._pending = b""

    def _emit(self, raw: bytes, lines: list[Line]) -> None:
        raw = raw.removesuffix(b"\r")
        # Blank and continuation lines start with a byte <= b" " (checked first: speed).
        if not raw or (raw[0] <= 32 and (raw.isspace() or _CONTINUATION.match(raw))):
            return
        record = parse_record(raw)
        if record is None:
            # A line a tool wrote (syslog, dmesg) ships as its message; whatever its head
            # says of its facility, nothing says the kernel wrote it.
            text = shipped_message(strip_head(_text(raw))[0], None)
            lines.append(Line(self._line_no, None, text, self._offset))
        else:
            text = shipped_message(record.message, record.facility)
            lines.append(Line(self._line_no, record.ts_us, text, self._offset))

    def close(self) -> None:
        self._file.close()


def is_device(path: str) -> bool:
    """True for a character device (the real ``/dev/kmsg``), False for a regular file."""
    return stat.S_ISCHR(Path(path).stat().st_mode)
