"""Kernel log text as people paste it → the bare message the rules are written against.

``dmesg``, ``journalctl -k`` (short forms or ``-o json``), syslog files and raw
``/dev/kmsg`` records wrap the same message in different prefixes; rules match the message
alone, from its start, so the prefix must go first. A raw record (``dmesg -r``'s
``<priority>``, a journal record's ``SYSLOG_FACILITY``) also says who logged the line: its
syslog facility is 0 only for the kernel's own records. Syslog daemons fold a run of the
same line into ``message repeated N times: [ ... ]``: the message is the line inside, and
it stands for N lines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple

KMSG_PREFIX = r"^(?P<pri>\d+),(?P<seq>\d+),(?P<ts>\d+),[^;]*;"
"""The ``priority,sequence,timestamp_us,flags;`` head of a /dev/kmsg record (the agent
matches it on raw bytes, before the ``\\xNN`` escapes are decoded)."""
_KMSG = re.compile(KMSG_PREFIX)
_DMESG = re.compile(
    r"^(?:<(?P<pri>\d+)>)?\[\s*(?:\d+\.\d+|[A-Z][a-z]{2} [^\]]+)\]\s?(?:\[\s*[TC]\d+\]\s?)?"
)
"""``[ 12.345678] `` or ``[Sun Nov 22 18:30:01 2026] ``, after ``dmesg -r``'s ``<priority>``
and before the caller id (``[    T123] ``) of a kernel built with CONFIG_PRINTK_CALLER."""
_JOURNAL = re.compile(
    r"^(?:(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?"
    r"|\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:?\d\d)?|\[\s*\d+\.\d+\])"
    r" \S+ )?kernel: "
)
"""The journal's (and syslog's) ``<time> <host> kernel: ``: ``short``, ``short-precise``,
``short-iso`` or ``short-monotonic`` time; or the bare ``kernel: `` a tool leaves when it
cuts the time and host (``grep``-ed syslog, a peer's test data)."""
_CALLER = re.compile(r"^\[\s*[TC]\d+\]\s?")
"""The caller id of a kernel built with CONFIG_PRINTK_CALLER where no time precedes it: a
syslog daemon reading the kernel's buffer writes ``kernel: [T92772] nfs: ...``."""
_REPEATED = re.compile(r"^message repeated (?P<times>\d+) times: \[ ?(?P<message>.*)\]$")
"""rsyslog's (and syslog-ng's) fold of a run of one line: ``message repeated 9 times: [
<the line's message>]`` (rsyslog prints the message with the space that led it)."""
_CONTINUATION = re.compile(r"^ [A-Z][A-Z0-9_]*=")
"""A ``/dev/kmsg`` continuation line: `` SUBSYSTEM=pci``, metadata of the record before."""

_DECODED = re.compile(
    r"^(?:(?P<facility>[a-z]+[0-7]?) *:(?P<level>[a-z]+) *: )?"
    r"(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[,.]\d+(?:Z|[+-]\d\d:?\d\d) )?"
)
"""``dmesg --decode``'s ``kern  :warn  : `` (facility and level by name) and
``--time-format=iso``'s ``2025-01-02T03:04:05,123456+00:00 ``, alone or together."""
_FACILITIES = {
    name: number
    for number, name in enumerate(
        [
            "kern",
            "user",
            "mail",
            "daemon",
            "auth",
            "syslog",
            "lpr",
            "news",
            "uucp",
            "cron",
            "authpriv",
            "ftp",
        ]
    )
} | {f"local{n}": 16 + n for n in range(8)}
_LEVELS = {"emerg", "alert", "crit", "err", "warn", "notice", "info", "debug"}

_PSTORE_HEADER = re.compile(r"^(?:[A-Z][a-z]+#\d+ Part\d+|====\d+\.\d+(?:-[CD])?)$")
"""The line pstore puts before each record of a dump (``Panic#2 Part1``), and the
``====<seconds>.<nanoseconds>-<C|D>`` header a ramoops record keeps: no kernel message."""


@dataclass(frozen=True, slots=True)
class LogLine:
    line_no: int
    """1-based line number in the input, for people to find the line again."""
    raw: str
    message: str
    facility: int | None
    """The syslog facility a raw record or ``dmesg -r`` gives; None where the format does
    not say (dmesg, the journal's ``kernel:`` lines)."""
    repeats: int = 1
    """How many lines this one stands for: N of ``message repeated N times``, else 1."""


class Message(NamedTuple):
    text: str
    facility: int | None
    repeats: int = 1


def journal_message(record: Mapping[str, object]) -> Message | None:
    """The message of a journal record (``journalctl -o json``) and the facility journald
    recorded; None without a ``MESSAGE``. A record of another transport than the kernel's
    that names no facility is taken for a user's (it is no kernel line), and a ``MESSAGE``
    journald kept as bytes (not UTF-8) is decoded with replacements."""
    text = record.get("MESSAGE")
    if isinstance(text, list) and all(isinstance(b, int) and 0 <= b < 256 for b in text):
        text = bytes(text).decode("utf-8", errors="replace")
    if not isinstance(text, str):
        return None
    named = str(record.get("SYSLOG_FACILITY", ""))
    if named.isdigit():
        return Message(text, int(named))
    transport = record.get("_TRANSPORT")
    if transport is None:
        return Message(text, None)
    return Message(text, _FACILITIES["kern" if transport == "kernel" else "user"])


def _journal_line(line: str) -> Message | None:
    if not line.startswith("{") or '"MESSAGE"' not in line:
        return None
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return journal_message(record) if isinstance(record, dict) else None


def _without_head(line: str) -> tuple[str, str | None]:
    """``line`` without dmesg's time (and the priority before it, returned) or a caller id."""
    found = _DMESG.match(line) or _CALLER.match(line)
    if found is None:
        return line, None
    return line[found.end() :], found.groupdict().get("pri")


def message_of(line: str) -> Message | None:
    """The kernel message in ``line``, the facility its priority gives, if any, and how
    many lines it stands for; None for lines that carry no message (a journal banner, a
    kmsg continuation line holding ``KEY=value`` metadata, a blank line, a pstore record's
    header). Whitespace before a line is no part of it (a pasted, indented log)."""
    if not line.strip() or line.startswith("-- ") or _CONTINUATION.match(line):
        return None
    line = line.lstrip()
    if _PSTORE_HEADER.match(line):
        return None
    journal = _journal_line(line)
    if journal is not None:
        return journal
    priority = None
    for prefix in (_KMSG, _JOURNAL):
        found = prefix.match(line)
        if found:
            priority = found.groupdict().get("pri")
            line = line[found.end() :]
            break
    facility = None
    decoded = _DECODED.match(line)
    named = decoded["facility"] if decoded else None
    if (
        decoded
        and decoded.end()
        and (not named or (named in _FACILITIES and decoded["level"] in _LEVELS))
    ):
        facility = _FACILITIES.get(named or "")
        line = line[decoded.end() :]
    line, dmesg_priority = _without_head(line)
    priority = priority or dmesg_priority
    if priority is not None:
        facility = int(priority) >> 3
    line = line.rstrip("\r\n")
    repeated = _REPEATED.match(line)
    if repeated is None:
        return Message(line, facility)
    inner, _ = _without_head(repeated["message"].lstrip())
    return Message(inner, facility, int(repeated["times"]))


def messages(lines: Iterable[str]) -> Iterator[LogLine]:
    for line_no, line in enumerate(lines, start=1):
        raw = line.rstrip("\r\n")
        parsed = message_of(raw)
        if parsed is not None:
            yield LogLine(line_no, raw, *parsed)
