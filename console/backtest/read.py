"""History as people keep it → each node's lines with their times, as the agent ships them.

Three shapes of input (docs/backtest.md has examples of each):

- A node's own log (``dmesg``, ``journalctl -k``, syslog, raw ``/dev/kmsg`` records, agent
  health results; gzipped or not): the file is the node, named after the file (less
  ``.gz`` and a log suffix). Times come from each line's
  prefix: ISO 8601 (``journalctl -o short-iso``, ``dmesg --time-format=iso``), ``dmesg -T``,
  the journal's short form (no year: ``year``), or seconds since boot (``dmesg``, raw
  records: placed by the node's own boot time, ``stamps.Uptime``); a line without one
  takes the time of the line before, or of the file's first time.
- Lines tagged with their node's log stream, as ``aws logs tail`` prints a log group:
  ``<ISO time> <instance-id>/<kmsg|health> <message>``, or a SageMaker HyperPod group:
  ``<ISO time> SagemakerHealthMonitoringAgent/<group>/<instance-id> <message>``.
- JSON: one object a line (or one ``aws logs filter-log-events`` document) with the
  stream (``logStreamName``) or the node (``instance_id``, ``node``, ``_HOSTNAME``), the time
  (``timestamp`` in epoch ms or ISO, ``__REALTIME_TIMESTAMP`` in µs, ``ts``, ``time``) and
  the ``message`` (``MESSAGE``: a journal record, ``journalctl -o json``, whose facility
  marks it injected when it is not the kernel's); an object with a ``check`` is a health
  result of the file's node, one with ``HealthMonitoringAgentDetectionEvent`` a HyperPod
  agent's detection of it (source ``hyperpod``).

A syslog line that stands for N (``message repeated N times: [...]``) is N events, as the
agent would have shipped them, so it counts N times towards a rule's threshold.

The node of a CloudWatch Logs event is its stream's, never its text's (``contracts``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple

from console.backtest.stamps import Uptime, parse_time, stamp
from console.findings import message_source
from console.inputs import InputError
from nodemedic.catalog import Source
from nodemedic.contracts.logs import KERNEL_FACILITY, STREAM_RE, shipped_message
from nodemedic.contracts.substrates import (
    HYPERPOD_AGENT_STREAM_PREFIX,
    HYPERPOD_DEEP_HEALTH_STREAM_PREFIX,
)
from nodemedic.detect.classifier import MAX_LINE
from nodemedic.detect.hyperpod import AGENT_MARK, instance_of_result, instance_of_stream
from nodemedic.detect.logformat import journal_message, log_line


class Event(NamedTuple):
    """One line as CloudWatch Logs would hold it."""

    at: float
    """Epoch seconds."""
    message: str
    event_id: str
    ingested: float | None = None
    """When CloudWatch Logs took the line in (its ``ingestionTime``), where the history says:
    the earliest the classifier could have heard it."""


Stream = tuple[str, Source]
"""(node, source): what one log stream of the agent holds."""


TimedEvent = tuple[Stream, Event]
"""One event of one stream."""


@dataclass
class History:
    """Events held in memory: a log group's, as its API hands them over, or a test's lines.
    (Log files are streamed instead: ``console.backtest.files``.)"""

    streams: dict[Stream, list[Event]] = field(default_factory=dict)
    lines: int = 0
    refused: list[str] = field(default_factory=list)
    """Files left out: none here, where no file is read (``files.Files`` has some)."""

    def add(self, node: str, source: Source, event: Event) -> None:
        self.streams.setdefault((node, source), []).append(event)
        self.lines += 1

    def nodes(self) -> set[str]:
        return {node for node, _ in self.streams}

    def events(self) -> Iterator[TimedEvent]:
        """Every event in time order; a stream's events of one time in the order added."""
        timed = [(stream, event) for stream, events in self.streams.items() for event in events]
        timed.sort(key=event_time)
        return iter(timed)


def event_time(timed: TimedEvent) -> float:
    return timed[1].at


_TAGGED = re.compile(
    r"^(?P<at>\d{4}-\d\d-\d\dT\S+) "
    rf"(?P<stream>(?:i-[0-9a-f]{{8,17}}/|{re.escape(HYPERPOD_AGENT_STREAM_PREFIX)}"
    rf"|{re.escape(HYPERPOD_DEEP_HEALTH_STREAM_PREFIX)})\S+) (?P<msg>.*)$"
)
_NODE_FIELDS = ("instance_id", "instanceId", "node", "_HOSTNAME")
_SUFFIXES = {".log", ".txt", ".json", ".jsonl", ".kmsg", ".dmesg"}


def node_of(path: Path) -> str:
    """The node a file of one node's log is named after: its name less ``.gz`` and a log
    suffix."""
    name = Path(path.name.removesuffix(".gz"))
    return name.stem if name.suffix in _SUFFIXES else name.name


def _json_time(record: Mapping[str, Any]) -> float | None:
    value = record.get("timestamp", record.get("ts", record.get("time")))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value / 1000
    if isinstance(value, str):
        return parse_time(value)
    realtime = record.get("__REALTIME_TIMESTAMP")
    return int(realtime) / 1e6 if isinstance(realtime, str | int) else None


@dataclass
class _File:
    """One file's events on their way out, in ``out``. An event without a time of its own
    takes the time of the line before; those before the file's first time wait for it,
    and a file that never gives one is refused (1970 is no time of a fleet's)."""

    origin: str
    at: float | None = None
    out: list[TimedEvent] = field(default_factory=list)
    waiting: list[tuple[str, Source, str, str]] = field(default_factory=list)

    def time(self, at: float) -> None:
        self.at = at
        if self.waiting:
            for node, source, message, event_id in self.waiting:
                self.out.append(((node, source), Event(at, message, event_id)))
            self.waiting.clear()

    def add(self, node: str, source: Source, message: str, event_id: str) -> None:
        if self.at is not None:
            self.out.append(((node, source), Event(self.at, message, event_id)))
        else:
            self.waiting.append((node, source, message, event_id))

    def close(self) -> None:
        if self.waiting:
            raise InputError(f"{self.origin}: no line gives a time")


def _add_json(file: _File, record: Any, node: str, event_id: str) -> None:
    if not isinstance(record, dict):
        raise InputError(f"{event_id}: a JSON line must be an object")
    at = _json_time(record)
    if at is not None:
        file.time(at)
    if "check" in record:
        file.add(node, "health", json.dumps(record), event_id)
        return
    if AGENT_MARK in record:
        file.add(node, "hyperpod", json.dumps(record), event_id)
        return
    journal = journal_message(record)
    message = (
        record.get("message") if journal is None else _as_shipped(journal.text, journal.facility)
    )
    if not isinstance(message, str):
        raise InputError(f"{event_id}: a JSON event needs a message")
    stream = _stream(str(record.get("logStreamName", "")), message)
    if stream is not None:
        file.add(*stream, message, event_id)
        return
    named = next((str(record[f]) for f in _NODE_FIELDS if record.get(f)), node)
    file.add(named, message_source(message), message, event_id)


def _stream(name: str, message: str) -> tuple[str, Source] | None:
    """(the node, the source) of a log stream's ``message``: a nodemedic agent's kmsg or
    health stream, a SageMaker HyperPod stream that names its instance, or a deep health
    check result that names it itself, as the classifier places them
    (``nodemedic.remediate.hyperpod.hyperpod_nodes``); None for any other."""
    found = _named(name)
    if found is None and name.startswith(HYPERPOD_DEEP_HEALTH_STREAM_PREFIX):
        instance = instance_of_result(message, MAX_LINE)
        return None if instance is None else (instance, "hyperpod")
    return found


@lru_cache(maxsize=1 << 16)
def _named(name: str) -> tuple[str, Source] | None:
    """The node and source a stream's name alone tells. Remembered: a fleet's history names
    its few streams on every line, and is read twice."""
    stream = STREAM_RE.match(name)
    if stream is not None:
        return stream["instance"], "health" if stream["source"] == "health" else "kmsg"
    instance = instance_of_stream(name)
    return None if instance is None else (instance, "hyperpod")


def _as_shipped(message: str, facility: int | None) -> str:
    """The message as the agent ships it: marked injected where the line's own priority
    names another facility than the kernel's."""
    if facility is None or facility == KERNEL_FACILITY:
        return message
    return shipped_message(message, facility)


def _kernel_events(line: str, event_id: str) -> Iterator[tuple[Source, str, str]]:
    """A node's own log line as its agent ships it: the bare message, as many times as the
    line stands for (the first under the line's own id)."""
    parsed = log_line(0, line)
    if parsed is None:
        return
    message, facility, repeats = parsed.message, parsed.facility, parsed.repeats
    source = message_source(message)
    text = message if source != "kmsg" else _as_shipped(message, facility)
    for copy in range(repeats):
        yield source, text, event_id if copy == 0 else f"{event_id}+{copy}"


def read_lines(
    history: History,
    lines: Iterable[str],
    node: str,
    *,
    boot: float | None = None,
    year: int,
) -> None:
    """Add one file's lines (``node`` the file's node; ``boot`` its boot time, if known) to
    ``history``."""
    lines = lines if isinstance(lines, Sequence) else list(lines)
    file = FileLines(lambda index: islice(lines, index, None), node, node, boot, year)
    for (stream_node, source), event in file.events(lines):
        history.add(stream_node, source, event)


@dataclass
class FileLines:
    """How one file's lines are read: its node, the file as messages name it (``origin``),
    its node's boot time if known, and its lines again from an index on (``ahead``: a boot
    time stated further down the file is read ahead there)."""

    ahead: Callable[[int], Iterable[str]]
    node: str
    origin: str
    boot: float | None
    year: int
    uptime: Uptime = field(init=False)

    def events(self, lines: Iterable[str]) -> Iterator[TimedEvent]:
        """The file's events, in the order of its lines; afterwards ``used_boot`` says
        whether ``boot`` placed a line. InputError where a line cannot be read."""
        node = self.node
        file = _File(self.origin)
        self.uptime = Uptime(self.ahead, self.origin, node, self.boot)
        out = file.out
        for index, line in enumerate(lines):
            event_id = f"{node}:{index + 1}"
            if line[:1] == "{":
                try:
                    record = json.loads(line)
                except ValueError as exc:
                    raise InputError(f"{event_id}: not a JSON object: {exc}") from None
                _add_json(file, record, node, event_id)
            else:
                self._add_line(file, index, line, event_id)
            if out:
                yield from out
                out.clear()
        file.close()

    def _add_line(self, file: _File, index: int, line: str, event_id: str) -> None:
        tagged = _TAGGED.match(line)
        stream = None if tagged is None else _stream(tagged["stream"], tagged["msg"])
        if tagged is not None and stream is not None:
            file.time(parse_time(tagged["at"]))
            file.add(*stream, tagged["msg"], event_id)
            return
        found = stamp(line, self.year)
        if found is not None:
            at, since_boot = found
            file.time(self.uptime.place(index, at) if since_boot else at)
        for source, message, each_id in _kernel_events(line, event_id):
            file.add(self.node, source, message, each_id)

    @property
    def used_boot(self) -> bool:
        return self.uptime.used_given


def read_events(history: History, events: Iterable[Mapping[str, Any]]) -> None:
    """CloudWatch Logs events (``logStreamName``, ``timestamp``, ``message``, ``eventId``,
    ``ingestionTime``) into ``history``; events of streams that are no node's kmsg or
    health, nor a HyperPod stream naming its instance, are skipped (the agents' identity
    registrations)."""
    for event in events:
        name = str(event.get("logStreamName", ""))
        stream = _stream(name, str(event.get("message", "")))
        if stream is None:
            continue
        history.add(
            *stream,
            Event(
                int(event["timestamp"]) / 1000,
                str(event["message"]),
                str(event.get("eventId") or f"{name}:{history.lines}"),
                _ingested(event),
            ),
        )


def _ingested(event: Mapping[str, Any]) -> float | None:
    """The event's ``ingestionTime`` in epoch seconds; None where it has none."""
    at = event.get("ingestionTime")
    return int(at) / 1000 if isinstance(at, int | float) and not isinstance(at, bool) else None


def log_group_events(
    logs: Any, log_group: str, start: float, end: float
) -> Iterator[Mapping[str, Any]]:
    """Every event of ``log_group`` from ``start`` to ``end`` (epoch seconds), through a
    CloudWatch Logs client's FilterLogEvents pages (``logs`` is a boto3 client)."""
    paginator = logs.get_paginator("filter_log_events")
    for page in paginator.paginate(
        logGroupName=log_group, startTime=int(start * 1000), endTime=int(end * 1000)
    ):
        yield from page.get("events", [])
