"""Kernel log text as people paste it → the bare message the rules are written against.

``dmesg``, ``journalctl -k`` (short forms or ``-o json``), syslog files, Talos, raw
``/dev/kmsg`` records wrap the same message in different heads (``heads``, the grammar of
them); rules match the message alone, from its start, so the head must go first. A head
(``dmesg -r``'s ``<priority>``, a facility by name, a journal record's ``SYSLOG_FACILITY``)
may also say who logged the line: its syslog facility is 0 only for the kernel's own
records. Syslog daemons fold a run of the
same line into ``message repeated N times: [ ... ]``: the message is the line inside, and
it stands for N lines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import NamedTuple

from nodemedic.detect.heads import FACILITIES, strip_head

_REPEATED = re.compile(r"^message repeated (?P<times>\d+) times: \[ ?(?P<message>.*)\]$")
"""rsyslog's (and syslog-ng's) fold of a run of one line: ``message repeated 9 times: [
<the line's message>]`` (rsyslog prints the message with the space that led it)."""
_CONTINUATION = re.compile(r"^ [A-Z][A-Z0-9_]*=")
"""A ``/dev/kmsg`` continuation line: `` SUBSYSTEM=pci``, metadata of the record before."""

_PSTORE_HEADER = re.compile(r"^(?:[A-Z][a-z]+#\d+ Part\d+|====\d+\.\d+(?:-[CD])?)$")
"""The line pstore puts before each record of a dump (``Panic#2 Part1``), and the
``====<seconds>.<nanoseconds>-<C|D>`` header a ramoops record keeps: no kernel message."""


class LogLine(NamedTuple):
    """One line of an input with its message: a named tuple, as triage and backtest make
    one a line, and a tuple is built in a fraction of a frozen dataclass's time."""

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
    return Message(text, FACILITIES["kern" if transport == "kernel" else "user"])


def _journal_line(line: str) -> Message | None:
    if not line.startswith("{") or '"MESSAGE"' not in line:
        return None
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return journal_message(record) if isinstance(record, dict) else None


def log_line(line_no: int, line: str) -> LogLine | None:
    """``line`` (numbered ``line_no``) with the kernel message it carries, the facility its
    head gives, if any, and how many lines it stands for; None for lines that carry no
    message (a journal banner, a kmsg continuation line holding ``KEY=value`` metadata, a
    blank line, a head alone such as a paste's elided ``[...]``, a pstore record's header).
    Whitespace around a line is no part of it (a pasted, indented log; the trailing space
    of a kernel that printed one). Built in one step, as a storm's every line is."""
    text = line.strip()
    if not text or line.startswith("-- ") or (line[0] == " " and _CONTINUATION.match(line)):
        return None
    # Each test after the first characters' only where they allow it: a storm's lines
    # cost one match (the head's) each.
    if (text[0] == "=" or " Part" in text) and _PSTORE_HEADER.match(text):
        return None
    if text[0] == "{" and (journal := _journal_line(text)) is not None:
        return LogLine(line_no, line, *journal)
    text, named = strip_head(text)
    if not text:
        return None
    repeated = _REPEATED.match(text) if text.startswith("message repeated ") else None
    if repeated is None:
        # Every field given, without the named tuple's Python-level ``__new__``: a third
        # of what making one costs, once a line.
        return tuple.__new__(LogLine, (line_no, line, text, named, 1))
    inner, _ = strip_head(repeated["message"].strip())
    return LogLine(line_no, line, inner, named, int(repeated["times"]))


def message_of(line: str) -> Message | None:
    """The kernel message in ``line``, the facility its head gives and how many lines it
    stands for (``log_line``); None for a line that carries no message."""
    entry = log_line(0, line)
    return None if entry is None else Message(entry.message, entry.facility, entry.repeats)


def messages(lines: Iterable[str]) -> Iterator[LogLine]:
    for line_no, line in enumerate(lines, start=1):
        entry = log_line(line_no, line.rstrip("\r\n"))
        if entry is not None:
            yield entry
