"""The job breaker's arithmetic: a wave of verdicts or a silent log group holds restarts,
one page per trip, and the breaker closes again once it cooled down with room."""

from __future__ import annotations

import pytest

from nodemedic.jobs.breaker import BreakerState, JobLimits, judge

LIMITS = JobLimits(restarts_per_window=2, window=600, cooldown=1800, silence=300)


def test_a_wave_trips_the_breaker_once_and_it_closes_after_the_cooldown() -> None:
    state = BreakerState()
    verdicts = []
    pages = 0
    for i, now in enumerate((0.0, 1.0, 2.0, 3.0)):
        judged = judge(
            state, decision=f"j{i}", now=now, limits=LIMITS, heard_at=now, by_schedule=False
        )
        verdicts.append(judged.verdict)
        pages += judged.page
        state = judged.state
    assert verdicts == ["admit", "admit", "trip", "hold"] and pages == 1
    # A redelivered admitted decision is counted once, even while tripped it is held.
    assert (
        judge(state, decision="j0", now=4.0, limits=LIMITS, heard_at=4.0, by_schedule=False).verdict
        == "hold"
    )
    cooled = judge(
        state, decision="j9", now=2.0 + 1801, limits=LIMITS, heard_at=None, by_schedule=False
    )
    assert (cooled.verdict, cooled.state.tripped_at) == ("admit", None)


def test_a_silent_group_trips_only_the_schedules_verdicts() -> None:
    quiet = {"now": 1000.0, "limits": LIMITS, "heard_at": 600.0}
    assert judge(BreakerState(), decision="a", by_schedule=True, **quiet).verdict == "trip"  # type: ignore[arg-type]
    assert judge(BreakerState(), decision="a", by_schedule=False, **quiet).verdict == "admit"  # type: ignore[arg-type]
    never = judge(
        BreakerState(), decision="a", now=1000.0, limits=LIMITS, heard_at=None, by_schedule=True
    )
    assert never.verdict == "admit", "before any line there is no pipe to lose"


def test_monitor_only_holds_without_tripping() -> None:
    held = judge(
        BreakerState(),
        decision="a",
        now=0.0,
        limits=JobLimits(monitor_only=True),
        heard_at=0.0,
        by_schedule=False,
    )
    assert (held.verdict, held.page, held.state) == ("hold", False, BreakerState())


@pytest.mark.parametrize(
    "raw",
    [{"restarts_per_window": 0}, {"window": "600"}, {"monitor_only": "false"}, {"windows": 600}],
)
def test_bad_limits_are_a_clear_error(raw: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="job breaker"):
        JobLimits.from_mapping(raw)
