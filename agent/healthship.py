"""Which health results a check run ships. A result that is not ``ok`` ships every run (the
classifier's thresholds count repeats), one whose status or reason changed ships at once
(a recovery is evidence too), and a healthy one that did not change ships again once per
``healthy_every`` seconds. A healthy node's results pass no subscription filter and act on
nothing, and shipped every minute they were nearly all of a node's CloudWatch Logs bill
(``bench.cost`` on 2026-11-29: 2,988 KiB a node-day, $65.81 per 1,000 nodes a month); that
the checks still turn in between is the heartbeat's to say."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from agent.batch import Batch, Batcher, add_all
from nodemedic.health.result import Result

HEALTHY_EVERY = 900.0
"""Seconds between two shipments of an unchanged healthy result: 16 a day, not 1,440."""


@dataclass
class Changes:
    """The last result shipped per check and device, and when (monotonic seconds)."""

    every: float
    _shipped: dict[tuple[str, str], tuple[str, str, float]] = field(default_factory=dict)

    def to_ship(self, results: Sequence[Result], now: float) -> list[Result]:
        found = []
        for result in results:
            key, state = (result.check, result.device), (result.status, result.reason)
            last = self._shipped.get(key)
            if (
                result.status != "ok"
                or last is None
                or last[:2] != state
                or now - last[2] >= self.every
            ):
                found.append(result)
                self._shipped[key] = (*state, now)
        return found


def ship(
    batcher: Batcher,
    results: Sequence[Result],
    commits: list[Callable[[], None]],
    ts_ms: int,
    put: Callable[[Batch], None],
) -> None:
    """``results`` into ``batcher``; the checks' ``commits`` run once what was shipped is
    safe, at once where nothing was."""
    last = add_all(batcher, ts_ms, (result.to_json() for result in results), put)
    if last is None:
        _call_all(commits)()
        return
    last.on_safe = _call_all(commits)
    put(last)


def _call_all(commits: list[Callable[[], None]]) -> Callable[[], None]:
    def call() -> None:
        for commit in commits:
            commit()

    return call
