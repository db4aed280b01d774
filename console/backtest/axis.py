"""A time axis's ticks: round times within the data's own range, labelled for that range.

A reader of the timeline asks "when?": a handful of ticks at round times (every 10 min,
every 6 h, every day) answers, where two labels at the ends did not.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

_MINUTE, _HOUR, _DAY = 60, 3600, 86400
STEPS = tuple(
    unit * n
    for unit, counts in (
        (1, (1, 2, 5, 10, 15, 30)),
        (_MINUTE, (1, 2, 5, 10, 15, 30)),
        (_HOUR, (1, 2, 3, 6, 12)),
        (_DAY, (1, 2, 7, 14, 28, 91, 182, 364)),
    )
    for n in counts
)
"""Tick spacings in seconds, each at most 3.5 times the one before: the chosen one leaves
at least two ticks in a range."""
MOST = 8
"""At most this many ticks: their labels must fit side by side."""


def step(span: float) -> int:
    """The smallest spacing that puts at most ``MOST`` ticks in ``span`` seconds (a year
    apart beyond eight years)."""
    return next((s for s in STEPS if span / s < MOST), STEPS[-1])


def ticks(start: float, end: float) -> list[tuple[float, str]]:
    """(epoch seconds, label) of each tick from ``start`` to ``end``, UTC. A label names
    the date where it changes, and the time of day only where the spacing is below a day."""
    if end <= start:
        return [(start, _label(start, None, 1))]
    spacing = step(end - start)
    found: list[tuple[float, str]] = []
    at, previous = math.ceil(start / spacing) * spacing, None
    while at <= end:
        found.append((at, _label(at, previous, spacing)))
        previous = at
        at += spacing
    return found


def _label(at: float, previous: float | None, spacing: int) -> str:
    moment = datetime.fromtimestamp(at, UTC)
    if spacing >= _DAY:
        return moment.strftime("%Y-%m-%d")
    clock = moment.strftime("%H:%M:%S" if spacing < _MINUTE else "%H:%M")
    same_day = (
        previous is not None and datetime.fromtimestamp(previous, UTC).date() == moment.date()
    )
    return clock if same_day else f"{moment:%m-%d} {clock}"
