"""The timeline's axis: round ticks inside the history's own range, a handful of them."""

from __future__ import annotations

import pytest

from console.backtest.axis import MOST, ticks
from tests.support.backtest import START


@pytest.mark.parametrize(
    ("span", "first", "second"),
    [
        (90, "11-22 18:00:00", "18:00:15"),
        (4800, "11-22 18:00", "18:15"),
        (3 * 86400, "11-23 00:00", "12:00"),
        (200 * 86400, "2026-12-17", "2027-01-14"),
    ],
)
def test_ticks_are_round_times_within_the_range(span: int, first: str, second: str) -> None:
    found = ticks(START, START + span)
    assert 2 <= len(found) <= MOST
    assert all(START <= at <= START + span for at, _ in found)
    assert [label for _, label in found[:2]] == [first, second]


def test_one_instant_has_one_tick() -> None:
    assert ticks(START, START) == [(START, "11-22 18:00:00")]
