"""Log files and folders → one timeline of their events in time order, read as it is replayed.

A fleet's history is larger than the memory of the machine that replays it, so no file is
held. Each is read twice, a line at a time:

- first on its own (``read_sources``), so that a file that cannot be read is refused before
  any of its lines counts (a bad file adds nothing), its lines and nodes are counted, and
  whether its times only go forward is known;
- then as the replay asks (``Files.events``), every file at once, merged by time: of equal
  times, the earlier file's line first, then the earlier line, as one stream's stable sort
  by time would have them.

What still costs memory: a file whose times go back (shuffled lines, a journal across the
new year) is sorted in memory on its second read, as is an ``aws logs filter-log-events``
document (one JSON text); each file open at once keeps a read buffer (``_READ``).
"""

from __future__ import annotations

import heapq
import json
import resource
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any

from console.backtest.read import (
    FileLines,
    History,
    Stream,
    TimedEvent,
    event_time,
    node_of,
    read_events,
)
from console.inputs import InputError, LogFile

_READ = 1 << 16
"""Bytes read at a time from a file: all are open at once while they are merged."""
_SPARE_FILES = 64
"""Descriptors left to the rest of the process while files are merged."""


def _files(source: str) -> Iterator[Path]:
    path = Path(source)
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
        if not found:
            raise InputError(f"{source}: no log files in this directory")
        yield from found
    elif path.exists():
        yield path
    else:
        raise InputError(f"{source}: no such file or directory")


@dataclass
class _Reader:
    """One file's events; once read, whether it was a log group's events (no node's own
    log) and whether the boot time given placed a line."""

    path: Path
    boot: float | None
    year: int
    document: bool = False
    used_boot: bool = False

    def events(self) -> Iterator[TimedEvent]:
        """InputError where a line cannot be read; NUL runs and lines that are not text are
        passed over (``inputs.LogFile``)."""
        with self._open() as log:
            head = log.head().lstrip()
            if head.startswith("{") and _may_be_document(head):
                text = log.text()
                log.refuse_binary()
                yield from self._whole(text)
                return
            lines = FileLines(self._ahead, node_of(self.path), str(self.path), self.boot, self.year)
            yield from lines.events(log.lines())
            log.refuse_binary()
            self.used_boot = lines.used_boot

    def _open(self) -> LogFile:
        return LogFile(str(self.path), _READ)

    def _ahead(self, index: int) -> Iterator[str]:
        with self._open() as again:
            yield from islice(again.lines(), index, None)

    def _whole(self, text: str) -> Iterator[TimedEvent]:
        """A file read whole: a log group's events document, or lines after all."""
        document = _events_document(text)
        if document is not None:
            self.document = True
            found = History()
            read_events(found, document)
            yield from found.events()
            return
        lines = text.split("\n")
        read = FileLines(
            lambda index: islice(lines, index, None),
            node_of(self.path),
            str(self.path),
            self.boot,
            self.year,
        )
        yield from read.events(lines)
        self.used_boot = read.used_boot


def _may_be_document(head: str) -> bool:
    """Whether a file that starts as JSON may be one document rather than an object a line:
    its first line is no JSON text alone, or is a document's object."""
    try:
        first = json.loads(head.split("\n", 1)[0])
    except ValueError:
        return True
    return isinstance(first, dict) and isinstance(first.get("events"), list)


def _events_document(text: str) -> list[Any] | None:
    """The events of an ``aws logs filter-log-events`` (or ``get-log-events``) answer."""
    try:
        document = json.loads(text)
    except ValueError:
        return None
    events = document.get("events") if isinstance(document, dict) else None
    return events if isinstance(events, list) else None


@dataclass(frozen=True)
class _Accepted:
    path: Path
    boot: float | None
    ordered: bool
    """Its times never go back: it is merged as it is read."""


@dataclass
class Files:
    """The history of log files, read again each time its events are asked for."""

    year: int
    accepted: list[_Accepted] = field(default_factory=list)
    lines: int = 0
    streams: dict[Stream, int] = field(default_factory=dict)
    """Each stream's number of events."""
    refused: list[str] = field(default_factory=list)
    """Why each file that could not be read was left out (the others are replayed)."""

    def nodes(self) -> set[str]:
        return {node for node, _ in self.streams}

    def events(self) -> Iterator[TimedEvent]:
        """Every event in time order; of one time, the earlier file's and line's first."""
        budget = _open_files(len(self.accepted))
        readers: list[Iterable[TimedEvent]] = []
        for number, file in enumerate(self.accepted):
            events = _Reader(file.path, file.boot, self.year).events()
            if not file.ordered or number >= budget:
                readers.append(sorted(events, key=event_time))
            else:
                readers.append(events)
        return heapq.merge(*readers, key=event_time)

    def survey(self, path: Path, boot: float | None) -> bool | None:
        """Read ``path`` through once; whether ``boot`` placed a line of it (None: a log
        group's events, no node's own log). InputError where it cannot be read, and then
        it adds nothing."""
        reader = _Reader(path, boot, self.year)
        streams: dict[Stream, int] = {}
        last, ordered = float("-inf"), True
        for stream, event in reader.events():
            streams[stream] = streams.get(stream, 0) + 1
            ordered = ordered and event.at >= last
            last = event.at
        self.accepted.append(_Accepted(path, boot, ordered))
        for stream, count in streams.items():
            self.streams[stream] = self.streams.get(stream, 0) + count
            self.lines += count
        return None if reader.document else reader.used_boot


def _open_files(wanted: int) -> int:
    """How many files may be open at once to merge ``wanted``: the process's limit is
    raised as far as the system lets; the rest are sorted in memory."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = wanted + _SPARE_FILES
    if soft != resource.RLIM_INFINITY and soft < need:
        raised = need if hard == resource.RLIM_INFINITY else min(hard, need)
        resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
        soft = raised
    return wanted if soft == resource.RLIM_INFINITY else max(0, soft - _SPARE_FILES)


def read_sources(
    sources: Iterable[str],
    *,
    boots: Mapping[str, float] | None = None,
    boot: float | None = None,
    year: int | None = None,
) -> Files:
    """Every file of ``sources`` (files or directories) as one history. ``boots``: boot
    times by node; ``boot``: the boot time of the one node that has none there (given to
    several nodes, it would line their uptimes up as one fleet event: refused)."""
    boots = boots or {}
    history = Files(year or datetime.now(UTC).year)
    files: set[str] = set()
    shared: list[str] = []
    for source in sources:
        for path in _files(source):
            node = node_of(path)
            try:
                used_boot = history.survey(path, boots.get(node, boot))
            except InputError as exc:
                history.refused.append(str(exc))
                continue
            if used_boot is not None:
                files.add(node)
                if used_boot and node not in boots:
                    shared.append(str(path))
    if len(shared) > 1:
        raise InputError(
            f"{', '.join(shared)}: lines timed since boot, and one --boot-time for all of "
            "them would line their nodes' uptimes up as one fleet event: give "
            "--boot-time NODE=TIME for each"
        )
    unknown = sorted(boots.keys() - files)
    if unknown:
        raise InputError(f"--boot-time {unknown[0]}=...: no file of that node in the input")
    if not history.lines:
        raise InputError("; ".join(history.refused) or "no log lines in the input")
    return history
