"""The time at the head of a node's log line, on the wall clock or not at all.

Most formats stamp the wall clock. ``dmesg`` without ``-T`` and raw ``/dev/kmsg`` records
count seconds since the node booted: such a line has a place on the wall clock only
through that node's boot time, given (``--boot-time NODE=TIME``) or stated by the file
itself (the kernel's ``setting system clock to ... (EPOCH)`` line at boot). Without one the
line is refused, never placed at 1970 or at another node's boot: uptimes of different
nodes put on one clock line up as a fleet event that never happened.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from console.inputs import InputError
from nodemedic.detect.heads import HEAD

_CLOCK = re.compile(r"setting system clock to .*\((?P<epoch>\d+)\)\s*$")
"""The RTC driver's line at boot: the wall clock (epoch seconds) at that uptime."""


def parse_time(text: str) -> float:
    """Epoch seconds of an ISO 8601 time; one without a zone is UTC."""
    try:
        at = datetime.fromisoformat(text.replace(",", "."))
    except ValueError as exc:
        raise InputError(f"not an ISO 8601 time: {text!r}") from exc
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp()


def stamp(line: str, year: int) -> tuple[float, bool] | None:
    """The time a line's head gives (``heads.HEAD``, the grammar its message is read with)
    and whether it counts since boot (else it is epoch seconds), or None."""
    head = HEAD.match(line)
    if head is None:
        return None
    iso = head["iso"] or head["talos_iso"]
    if iso:
        return parse_time(iso + (head["offset"] or "")), False
    ctime = head["ctime"] or head["dmesg_ctime"]
    if ctime:
        at = datetime.strptime(ctime, "%a %b %d %H:%M:%S %Y")
        return at.replace(tzinfo=UTC).timestamp(), False
    if head["short"]:
        at = datetime.strptime(f"{year} {head['short'].split('.')[0]}", "%Y %b %d %H:%M:%S")
        return at.replace(tzinfo=UTC).timestamp(), False
    uptime = _seconds(head)
    return None if uptime is None else (uptime, True)


def _seconds(head: re.Match[str]) -> float | None:
    """The seconds since boot ``head`` gives, if it gives those."""
    if head["mono"]:
        return float(head["mono"])
    return int(head["ts"]) / 1e6 if head["ts"] else None


def _uptime(line: str) -> float | None:
    head = HEAD.match(line)
    return None if head is None else _seconds(head)


@dataclass
class Uptime:
    """Places one file's lines timed since boot on the wall clock. Each boot of the file
    (its uptimes start again) needs its own boot time: ``given`` is the first boot's,
    a later boot's comes from its clock line, read ahead in ``ahead`` (a file is read again
    from there rather than held: a log of any length costs the same memory)."""

    ahead: Callable[[int], Iterable[str]]
    """The file's lines from a 0-based index on."""
    origin: str
    """The file, as error messages name it."""
    node: str
    given: float | None
    boot: float = 0.0
    boots: int = 0
    last: float = -1.0
    used_given: bool = False

    def place(self, index: int, uptime: float) -> float:
        """The wall clock of the line at ``index`` (0-based), ``uptime`` after its boot."""
        if uptime < self.last or self.boots == 0:
            self.boots += 1
            self.boot = self._boot_of(index)
        self.last = uptime
        return self.boot + uptime

    def _boot_of(self, index: int) -> float:
        if self.boots == 1 and self.given is not None:
            self.used_given = True
            return self.given
        last = -1.0
        for line in self.ahead(index):
            uptime = _uptime(line)
            if uptime is None:
                continue
            if uptime < last:
                break
            last = uptime
            clock = _CLOCK.search(line)
            if clock is not None:
                return int(clock["epoch"]) - uptime
        where = f"{self.origin}:{index + 1}"
        raise InputError(
            f"{where}: lines timed since boot and no boot time to place them on the wall "
            f"clock: give --boot-time {self.node}=TIME"
            + (" (this is a later boot of the file: split it per boot)" if self.boots > 1 else "")
        )
