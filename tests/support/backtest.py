"""Histories for the backtest's tests, made of real kernel lines (tests/events/kmsg)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from console.backtest.read import History, read_lines
from tests.support.paths import EVENTS

START = datetime(2026, 11, 22, 18, 0, tzinfo=UTC).timestamp()
"""18:00 UTC: an hour begins, so the breaker's hourly window holds the whole of a test."""


def fault_line(fault_id: str) -> str:
    """The first real line of tests/events/kmsg/faults.txt that is ``fault_id``."""
    for entry in (EVENTS / "kmsg" / "faults.txt").read_text().splitlines():
        if entry.startswith(f"{fault_id}\t"):
            return entry.split("\t", 1)[1]
    raise LookupError(fault_id)


def benign_lines() -> list[str]:
    text = (EVENTS / "kmsg" / "benign.txt").read_text()
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def tail_line(seconds: float, instance: str, message: str, stream: str = "kmsg") -> str:
    """A line as ``aws logs tail`` prints it, ``seconds`` after ``START``."""
    at = datetime.fromtimestamp(START + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")
    return f"{at} {instance}/{stream} {message}"


def node(number: int) -> str:
    return f"i-0{number:016x}"


def history(entries: Iterable[tuple[float, str, str]]) -> History:
    """(seconds after START, instance, message) lines, with some benign chatter of a
    healthy node so the fleet is more than its sick nodes."""
    found = History()
    lines = [tail_line(at, instance, message) for at, instance, message in entries]
    lines += [tail_line(i, node(999), line) for i, line in enumerate(benign_lines()[:20])]
    read_lines(found, lines, "unused", boot=0.0, year=2026)
    return found
