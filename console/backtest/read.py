"""History as people keep it → each node's lines with their times, as the agent ships them.

Three shapes of input (docs/backtest.md has examples of each):

- A node's own log (``dmesg``, ``journalctl -k``, syslog, raw ``/dev/kmsg`` records, agent
  health results; gzipped or not): the file is the node, named after the file (less
  ``.gz`` and a log suffix). Times come from each line's
  prefix: ISO 8601 (``journalctl -o short-iso``, ``dmesg --time-format=iso``), ``dmesg -T``,
  the journal's short form (no year: ``year``), or seconds since boot (``dmesg``, raw
  records: counted from ``boot``); a line without one takes the time of the line before.
- Lines tagged with their node's log stream, as ``aws logs tail`` prints a log group:
  ``<ISO time> <instance-id>/<kmsg|health> <message>``.
- JSON: one object a line (or one ``aws logs filter-log-events`` document) with the
  stream (``logStreamName``) or the node (``instance_id``, ``node``, ``_HOSTNAME``), the time
  (``timestamp`` in epoch ms or ISO, ``__REALTIME_TIMESTAMP`` in µs, ``ts``, ``time``) and
  the ``message`` (``MESSAGE``: a journal record, ``journalctl -o json``, whose facility
  marks it injected when it is not the kernel's); an object with a ``check`` is a health
  result of the file's node.

A syslog line that stands for N (``message repeated N times: [...]``) is N events, as the
agent would have shipped them, so it counts N times towards a rule's threshold.

The node of a CloudWatch Logs event is its stream's, never its text's (``contracts``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from console.inputs import InputError, read_text
from nodemedic.catalog import Source
from nodemedic.contracts.logs import KERNEL_FACILITY, STREAM_RE, shipped_message
from nodemedic.detect.logformat import journal_message, message_of


class Event(NamedTuple):
    """One line as CloudWatch Logs would hold it."""

    at: float
    """Epoch seconds."""
    message: str
    event_id: str


Stream = tuple[str, Source]
"""(node, source): what one log stream of the agent holds."""


@dataclass
class History:
    streams: dict[Stream, list[Event]] = field(default_factory=dict)
    lines: int = 0

    def add(self, node: str, source: Source, event: Event) -> None:
        self.streams.setdefault((node, source), []).append(event)
        self.lines += 1


_STAMP = re.compile(
    r"^(?:<\d+>)?(?:[a-z]+\d? *:[a-z]+ *: )?(?:"
    r"(?P<iso>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)"
    r"|\[(?P<ctime>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\]"
    r"|(?P<short>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d)"
    r"|\[\s*(?P<mono>\d+\.\d+)\]"
    r"|\d+,\d+,(?P<us>\d+),)"
)
"""The time at the head of a line in each format ``logformat.message_of`` reads."""
_TAGGED = re.compile(r"^(?P<at>\d{4}-\d\d-\d\dT\S+) (?P<stream>i-[0-9a-f]{8,17}/\S+) (?P<msg>.*)$")
_NODE_FIELDS = ("instance_id", "instanceId", "node", "_HOSTNAME")
_SUFFIXES = {".log", ".txt", ".json", ".jsonl", ".kmsg", ".dmesg"}


def parse_time(text: str) -> float:
    """Epoch seconds of an ISO 8601 time; one without a zone is UTC."""
    try:
        at = datetime.fromisoformat(text.replace(",", "."))
    except ValueError as exc:
        raise InputError(f"not an ISO 8601 time: {text!r}") from exc
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp()


def _stamp(line: str, boot: float, year: int) -> float | None:
    """The time a node's log line gives itself, or None."""
    found = _STAMP.match(line)
    if found is None:
        return None
    iso, ctime, short, mono, us = found.groups()
    if iso:
        return parse_time(iso)
    if ctime:
        return datetime.strptime(ctime, "%a %b %d %H:%M:%S %Y").replace(tzinfo=UTC).timestamp()
    if short:
        at = datetime.strptime(f"{year} {short}", "%Y %b %d %H:%M:%S")
        return at.replace(tzinfo=UTC).timestamp()
    return boot + (float(mono) if mono else int(us) / 1e6)


def node_of(path: Path) -> str:
    """The node a file of one node's log is named after: its name less ``.gz`` and a log
    suffix."""
    name = Path(path.name.removesuffix(".gz"))
    return name.stem if name.suffix in _SUFFIXES else name.name


def _json_time(record: Mapping[str, Any], fallback: float) -> float:
    stamp = record.get("timestamp", record.get("ts", record.get("time")))
    if isinstance(stamp, int | float) and not isinstance(stamp, bool):
        return stamp / 1000
    if isinstance(stamp, str):
        return parse_time(stamp)
    realtime = record.get("__REALTIME_TIMESTAMP")
    return int(realtime) / 1e6 if isinstance(realtime, str | int) else fallback


def _add_json(history: History, record: Any, node: str, at: float, event_id: str) -> float:
    """One JSON event; the time it had (``at``: the line before's when it has none)."""
    if not isinstance(record, dict):
        raise InputError(f"{event_id}: a JSON line must be an object")
    at = _json_time(record, at)
    if "check" in record:
        history.add(node, "health", Event(at, json.dumps(record), event_id))
        return at
    journal = journal_message(record)
    message = (
        record.get("message") if journal is None else _as_shipped(journal.text, journal.facility)
    )
    if not isinstance(message, str):
        raise InputError(f"{event_id}: a JSON event needs a message")
    stream = STREAM_RE.match(str(record.get("logStreamName", "")))
    if stream is not None:
        history.add(stream["instance"], _source(stream["source"]), Event(at, message, event_id))
        return at
    named = next((str(record[f]) for f in _NODE_FIELDS if record.get(f)), node)
    source: Source = "health" if _is_health(message) else "kmsg"
    history.add(named, source, Event(at, message, event_id))
    return at


def _source(name: str) -> Source:
    return "health" if name == "health" else "kmsg"


def _is_health(message: str) -> bool:
    return message.startswith("{") and '"check"' in message


def _as_shipped(message: str, facility: int | None) -> str:
    """The message as the agent ships it: marked injected where the line's own priority
    names another facility than the kernel's."""
    if facility is None or facility == KERNEL_FACILITY:
        return message
    return shipped_message(message, facility)


def _kernel_events(line: str, at: float, event_id: str) -> Iterator[tuple[Source, Event]]:
    """A node's own log line as its agent ships it: the bare message, as many times as the
    line stands for (the first under the line's own id)."""
    parsed = message_of(line)
    if parsed is None:
        return
    message, facility, repeats = parsed
    source: Source = "health" if _is_health(message) else "kmsg"
    text = message if source == "health" else _as_shipped(message, facility)
    for copy in range(repeats):
        yield source, Event(at, text, event_id if copy == 0 else f"{event_id}+{copy}")


def read_lines(
    history: History, lines: Iterable[str], node: str, *, boot: float, year: int
) -> None:
    """Add one file's lines (``node`` the file's node) to ``history``."""
    at = boot
    for number, line in enumerate(lines, start=1):
        event_id = f"{node}:{number}"
        if line[:1] == "{":
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise InputError(f"{event_id}: not a JSON object: {exc}") from None
            at = _add_json(history, record, node, at, event_id)
            continue
        tagged = _TAGGED.match(line)
        if tagged is not None and STREAM_RE.match(tagged["stream"]):
            instance, source = tagged["stream"].split("/", 1)
            at = parse_time(tagged["at"])
            history.add(instance, _source(source), Event(at, tagged["msg"], event_id))
            continue
        at = _stamp(line, boot, year) or at
        for source, event in _kernel_events(line, at, event_id):
            history.add(node, source, event)


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


def read_sources(sources: Iterable[str], *, boot: float = 0.0, year: int | None = None) -> History:
    """Every file of ``sources`` (files or directories) in one history."""
    history = History()
    year = year or datetime.now(UTC).year
    for source in sources:
        for path in _files(source):
            text = read_text(str(path))
            document = _events_document(text)
            if document is not None:
                read_events(history, document)
                continue
            read_lines(history, text.splitlines(), node_of(path), boot=boot, year=year)
    if not history.lines:
        raise InputError("no log lines in the input")
    return history


def _events_document(text: str) -> list[Any] | None:
    """The events of an ``aws logs filter-log-events`` (or ``get-log-events``) answer."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        document = json.loads(text)
    except ValueError:
        return None
    events = document.get("events") if isinstance(document, dict) else None
    return events if isinstance(events, list) else None


def read_events(history: History, events: Iterable[Mapping[str, Any]]) -> None:
    """CloudWatch Logs events (``logStreamName``, ``timestamp``, ``message``, ``eventId``)
    into ``history``; events of streams that are no node's kmsg or health are skipped
    (the agents' identity registrations)."""
    for event in events:
        stream = STREAM_RE.match(str(event.get("logStreamName", "")))
        if stream is None:
            continue
        history.add(
            stream["instance"],
            _source(stream["source"]),
            Event(
                int(event["timestamp"]) / 1000,
                str(event["message"]),
                str(event.get("eventId") or f"{stream[0]}:{history.lines}"),
            ),
        )


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
