"""The agent registers its boot's key again on a timer, inside the log group's retention."""

from __future__ import annotations

from pathlib import Path

from agent.config import Config
from agent.origin import REGISTER_INTERVAL, keep_registered
from nodemedic.settings import LOG_RETENTION_DAYS

DAY = 86400.0


class Clock:
    """A stop event's ``wait`` on a clock that moves only when waited on, and says stop
    once it is past ``until``."""

    def __init__(self, until: float) -> None:
        self.now = 0.0
        self.until = until

    def wait(self, seconds: float) -> bool:
        self.now += seconds
        return self.now > self.until


def test_the_agent_registers_again_after_each_interval() -> None:
    clock = Clock(until=3 * DAY)
    times: list[float] = []

    def register() -> bool:
        times.append(clock.now)
        return True

    keep_registered(register, clock.wait, registered=True, interval=DAY / 4, retry=60.0)
    assert times == [DAY / 4 * n for n in range(1, 13)]


def test_a_failed_try_is_retried_soon_and_then_the_interval_resumes() -> None:
    clock = Clock(until=DAY)
    answers = iter([False, False, True, True])
    times: list[float] = []

    def register() -> bool:
        times.append(clock.now)
        return next(answers)

    keep_registered(register, clock.wait, registered=False, interval=DAY / 2, retry=60.0)
    assert times == [60.0, 120.0, 180.0, 180.0 + DAY / 2]


def test_the_default_keeps_two_registrations_within_the_shortest_retention() -> None:
    """CloudWatch deletes events older than the group's retention, 1 day at the least: even
    when one renewal fails and waits for its retry, a younger registration is there."""
    shortest = min(LOG_RETENTION_DAYS) * DAY
    config = Config("c", "i-0123456789abcdef0", "us-east-1", "boot", Path("state"))
    assert config.register_interval == REGISTER_INTERVAL
    assert 2 * REGISTER_INTERVAL + config.register_retry <= shortest
