"""The cluster's breaker (nodemedic/remediate/breaker.py): the admission transaction's
rules on an in-memory ledger, the judgement of a refused admission, and the windows and
limits the policy Lambda computes. No AWS."""

from __future__ import annotations

from typing import Any

import pytest

from nodemedic.remediate import breaker, ledger
from nodemedic.remediate.breaker import Limits, admission, judge, state_of, windows
from nodemedic.remediate.errors import PolicyError
from tests.support.ledger import MemoryLedger

NOW = 1_800_000_000
"""2027-01-15T08:00:00Z, epoch seconds."""
LIMITS = Limits(
    max_in_flight=2,
    reboots_per_hour=3,
    reboots_per_day=5,
    replacements_per_hour=1,
    replacements_per_day=2,
    cooldown=600,
)
CLUSTER = ("cluster#demo", "breaker")


def _admit(
    table: MemoryLedger, instance: str, decision: str, *, action: str = "replace", now: int = NOW
) -> bool:
    """ "Admit": the cluster's breaker and the two rate windows in one transaction (the
    group's slots have their own tests): all conditions hold, or nothing changes."""
    plan = admission(now, action, LIMITS)
    me = {":me": frozenset({instance}), ":instance": instance}
    parts: list[tuple[Any, Any, Any, dict[str, Any]]] = [
        (
            CLUSTER,
            breaker.CLUSTER_ADMIT,
            breaker.CLUSTER_ADMISSIBLE,
            {**me, ":now": now, ":limit": plan["cap"]},
        )
    ]
    for window, limit in (("hour", "hourly"), ("day", "daily")):
        sk = breaker.RATE_SK.format("g", action, plan[window])
        values = {":limit": plan[limit], ":decision": decision, ":decisions": frozenset({decision})}
        parts.append((("cluster#demo", sk), breaker.COUNT_START, breaker.RATE_ROOM, values))
    if not all(c.holds(table.item(k), v) for k, _, c, v in parts):
        return False
    for k, change, _, v in parts:
        table.update(k, change, None, v)
    return True


def _release(table: MemoryLedger, instance: str) -> None:
    table.update(CLUSTER, ledger.RELEASE, None, {":me": frozenset({instance}), ":now": "t"})


def _started(
    table: MemoryLedger, action: str, now: int = NOW
) -> tuple[frozenset[str], frozenset[str]]:
    def counted(window: str) -> frozenset[str]:
        sk = breaker.RATE_SK.format("g", action, window)
        return frozenset(table.item(("cluster#demo", sk)).get(breaker.STARTED, frozenset()))

    hour, day = windows(now)
    return counted(hour), counted(day)


def _judge(
    table: MemoryLedger, instance: str, decision: str, action: str, *, group: str, now: int
) -> breaker.Judgement:
    """``breaker.judge`` of a refused admission, from what the ledger holds now."""
    return judge(
        table.item(CLUSTER),
        _started(table, action, now),
        instance=instance,
        decision=decision,
        action=action,
        group=group,
        now=now,
        limits=LIMITS,
    )


def test_the_hourly_replacement_limit_refuses_the_next_decision_and_says_why() -> None:
    table = MemoryLedger()
    assert _admit(table, "i-1", "d1")
    _release(table, "i-1")

    assert not _admit(table, "i-2", "d2")
    verdict = _judge(table, "i-2", "d2", "replace", group="g", now=NOW)
    assert verdict.verdict == "trip"
    assert verdict.reason == "1 replaces started in group g this hour (replace limit 1 per hour)"
    # Reboots have their own windows.
    assert _admit(table, "i-2", "d3", action="reboot")


def test_a_retried_or_redelivered_decision_is_counted_once() -> None:
    table = MemoryLedger()
    assert _admit(table, "i-1", "d1")
    assert _admit(table, "i-1", "d1"), "a retry of the same admission goes through"
    assert _started(table, "replace") == (frozenset({"d1"}), frozenset({"d1"}))


def test_the_daily_limit_holds_once_the_hours_have_spent_it() -> None:
    table = MemoryLedger()
    for hour, decision in enumerate(("d1", "d2", "d3")):
        now = NOW + hour * 3600
        admitted = _admit(table, f"i-{decision}", decision, now=now)
        _release(table, f"i-{decision}")
        assert admitted == (decision != "d3"), decision
    verdict = _judge(table, "i-d3", "d3", "replace", group="g", now=NOW + 7200)
    assert "this day (replace limit 2 per day)" in verdict.reason


def test_the_cluster_cap_counts_holders_across_groups_and_trips() -> None:
    table = MemoryLedger()
    assert _admit(table, "i-1", "d1", action="reboot")
    assert _admit(table, "i-2", "d2", action="reboot")
    assert not _admit(table, "i-3", "d3", action="reboot")
    verdict = _judge(table, "i-3", "d3", "reboot", group="other", now=NOW)
    assert (verdict.verdict, verdict.reason) == (
        "trip",
        "2 nodes of the cluster in remediation or left out (max_in_flight 2)",
    )


def test_a_tripped_breaker_holds_everything_until_its_cooldown_then_an_admission_closes_it() -> (
    None
):
    table = MemoryLedger()
    values = {":now": NOW, ":until": NOW + LIMITS.cooldown, ":reason": "why"}
    assert table.update(CLUSTER, breaker.TRIP, breaker.NOT_TRIPPED, values)
    assert not table.update(CLUSTER, breaker.TRIP, breaker.NOT_TRIPPED, values), "one page"
    assert state_of(table.item(CLUSTER), NOW) == "tripped"

    assert not _admit(table, "i-1", "d1", action="reboot", now=NOW + 10)
    verdict = _judge(table, "i-1", "d1", "reboot", group="g", now=NOW + 10)
    assert verdict.verdict == "tripped" and "(why); cooling down until" in verdict.reason

    later = NOW + LIMITS.cooldown + 1
    assert state_of(table.item(CLUSTER), later) == "cooled"
    assert _admit(table, "i-1", "d1", action="reboot", now=later)
    assert state_of(table.item(CLUSTER), later) == "closed"


def test_a_limit_still_hit_after_the_cooldown_extends_it_without_a_new_trip() -> None:
    table = MemoryLedger()
    table.update(
        CLUSTER, breaker.TRIP, breaker.NOT_TRIPPED, {":now": NOW, ":until": NOW + 1, ":reason": "a"}
    )
    assert not table.update(
        CLUSTER,
        breaker.TRIP,
        breaker.NOT_TRIPPED,
        {":now": NOW + 5, ":until": NOW + 9, ":reason": "b"},
    )
    assert table.update(
        CLUSTER, breaker.EXTEND, breaker.TRIPPED, {":until": NOW + 605, ":reason": "b"}
    )
    assert state_of(table.item(CLUSTER), NOW + 5) == "tripped"


def test_a_reset_closes_the_breaker() -> None:
    table = MemoryLedger()
    table.update(CLUSTER, breaker.TRIP, None, {":now": NOW, ":until": NOW + 600, ":reason": "a"})
    table.update(CLUSTER, breaker.RESET, None, {})
    assert state_of(table.item(CLUSTER), NOW) == "closed"
    assert breaker.RESET.text == "REMOVE tripped_at, cooled_until, trip_reason"


def test_a_group_without_a_free_slot_is_paced_not_tripped() -> None:
    verdict = judge(
        {},
        (frozenset(), frozenset()),
        instance="i-1",
        decision="d1",
        action="replace",
        group="g",
        now=NOW,
        limits=LIMITS,
    )
    assert verdict.verdict == "paced"


def test_windows_and_limits_for_an_admission() -> None:
    assert windows(NOW) == ("2027-01-15T08", "2027-01-15")
    assert admission(NOW, "reboot", LIMITS) == {
        "epoch": NOW,
        "hour": "2027-01-15T08",
        "day": "2027-01-15",
        "until": NOW + 600,
        "hourly": 3,
        "daily": 5,
        "cap": 2,
    }
    with pytest.raises(PolicyError, match="no rate limit for action 'notify'"):
        admission(NOW, "notify", LIMITS)


@pytest.mark.parametrize("field", ["max_in_flight", "cooldown", "replacements_per_day"])
def test_limits_refuse_nonsense(field: str) -> None:
    raw = {**vars(LIMITS), field: 0}
    with pytest.raises(PolicyError, match="at least 1"):
        Limits.from_mapping(raw)
    with pytest.raises(PolicyError, match="bad breaker limits"):
        Limits.from_mapping({k: v for k, v in raw.items() if k != field})
