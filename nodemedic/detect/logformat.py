"""Kernel log text as people paste it → the bare message the rules are written against.

``dmesg``, ``journalctl -k`` and raw ``/dev/kmsg`` records wrap the same message in
different prefixes; rules match the message alone, from its start, so the prefix must go
first. A raw record (and ``dmesg -r``'s ``<priority>``) also says who logged the line: its
syslog facility is 0 only for the kernel's own records.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

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
    r"^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?"
    r"|\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:?\d\d)?|\[\s*\d+\.\d+\])"
    r" \S+ kernel: "
)
"""The journal's (and syslog's) ``<time> <host> kernel: ``: ``short``, ``short-precise``,
``short-iso`` or ``short-monotonic`` time."""

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


def message_of(line: str) -> tuple[str, int | None] | None:
    """The kernel message in ``line`` and the facility its priority gives, if any; None for
    lines that carry no message (a journal banner, a kmsg continuation line holding
    ``KEY=value`` metadata, a blank line, a pstore record's header)."""
    if not line.strip() or line.startswith(("-- ", " ")) or _PSTORE_HEADER.match(line):
        return None
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
    found = _DMESG.match(line)
    if found:
        priority = priority or found["pri"]
        line = line[found.end() :]
    if priority is not None:
        facility = int(priority) >> 3
    return line.rstrip("\r\n"), facility


def messages(lines: Iterable[str]) -> Iterator[LogLine]:
    for line_no, line in enumerate(lines, start=1):
        raw = line.rstrip("\r\n")
        parsed = message_of(raw)
        if parsed is not None:
            yield LogLine(line_no=line_no, raw=raw, message=parsed[0], facility=parsed[1])
