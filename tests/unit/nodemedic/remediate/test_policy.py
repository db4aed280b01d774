"""The remediation policy: modes, escalation, the policy Lambda (lambdas/policy/handler.py).
The breaker's arithmetic: test_ledger.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lambdas.policy.handler import handler
from nodemedic.remediate import parking, policy
from nodemedic.remediate.errors import PolicyError
from nodemedic.remediate.policy import Group, Policy, plan

NOW = datetime(2026, 11, 22, 18, 30, tzinfo=UTC)
DECISION = {"action": "replace", "health_status": "UnschedulablePendingReplacement"}
REBOOT = {"action": "reboot", "health_status": "UnschedulablePendingReboot"}


@pytest.mark.parametrize(
    ("decision", "group", "settings", "mode", "outcome"),
    [
        ({**DECISION, "action": "notify", "health_status": "Schedulable"}, Group("g", 4), {},
         "notify", "notified"),
        (DECISION, None, {}, "monitor", "unmanaged"),
        (DECISION, Group("other", 4), {"node_groups": ("g",)}, "monitor", "unmanaged"),
        (DECISION, Group("g", 4), {"node_groups": ("g",)}, "act", ""),
        (DECISION, Group("g", 4), {"node_groups": ("g",), "recovery_mode": "None"},
         "monitor", "monitored"),
        (DECISION, Group("g", 4), {"node_groups": ("g",), "dry_run": True},
         "monitor", "dry-run"),
        (DECISION, Group("g", 4), {}, "monitor", "unmanaged"),  # no node_groups: none
    ],
)  # fmt: skip
def test_plan_mode(
    decision: dict[str, Any],
    group: Group | None,
    settings: dict[str, Any],
    mode: str,
    outcome: str,
) -> None:
    result = plan(decision, group, None, NOW, Policy(**settings))
    assert (result.mode, result.outcome) == (mode, outcome)


def test_dry_run_says_what_it_would_do() -> None:
    dry = Policy(dry_run=True, node_groups=("g",))
    result = plan(DECISION, Group("g", 4), None, NOW, dry)
    assert result.reason.startswith("dry run: would cordon, drain and replace the node")
    reboot = plan(REBOOT, Group("g", 4), None, NOW, dry)
    assert reboot.reason.startswith("dry run: would cordon, drain and reboot the node")


def test_a_reboot_within_the_escalation_window_becomes_a_replacement() -> None:
    last = NOW - timedelta(seconds=1800)
    result = plan(REBOOT, Group("g", 4), last, NOW, Policy(escalation_window=3600))
    assert result.action == "replace"
    assert result.escalated
    assert result.health_status == "UnschedulablePendingReplacement"
    assert "1800 s ago" in result.reason


def test_a_reboot_after_the_escalation_window_stays_a_reboot() -> None:
    last = NOW - timedelta(seconds=3601)
    result = plan(REBOOT, Group("g", 4), last, NOW, Policy(escalation_window=3600))
    assert (result.action, result.escalated) == ("reboot", False)
    assert result.health_status == "UnschedulablePendingReboot"


def test_the_lock_expires_after_the_lock_seconds() -> None:
    result = plan(DECISION, Group("g", 10), None, NOW, Policy(lock_seconds=900))
    assert result.lock_expires_epoch - result.now_epoch == 900
    assert result.now_epoch == int(NOW.timestamp())
    assert result.limit == 2


@pytest.mark.parametrize("decision", [{"action": "reboot"}, {**DECISION, "action": "format"}])
def test_plan_rejects_incomplete_decisions(decision: dict[str, Any]) -> None:
    with pytest.raises(PolicyError):
        plan(decision, Group("g", 4), None, NOW, Policy())


def test_execution_timeout_covers_every_wait_loop() -> None:
    timeout = policy.execution_timeout(
        breaker_hold=3600, drain_timeout=600, reboot_timeout=900, poll_seconds=15
    )
    assert timeout > 3600 + 2 * 600 + 2 * 900


def test_handler_plans_from_the_state_machine_payload() -> None:
    event = {
        "op": "plan",
        "decision": REBOOT,
        "group": {"name": "ng-1", "size": 10, "found": True},
        "last_reboot": {"at": "2026-11-22T18:20:00.000+00:00"},
        "now": "2026-11-22T18:30:00Z",
        "policy": Policy(node_groups=("ng-1",)).to_mapping(),
    }
    result = handler(event, None)
    assert result["mode"] == "act"
    assert result["action"] == "replace"
    assert result["limit"] == 2


def test_handler_treats_a_missing_group_and_reboot_record_as_none() -> None:
    event = {
        "op": "plan",
        "decision": REBOOT,
        "group": {"name": "none", "size": 0, "found": False},
        "last_reboot": {},
        "now": "2026-11-22T18:30:00.123456+00:00",
        "policy": Policy().to_mapping(),
    }
    result = handler(event, None)
    assert (result["mode"], result["outcome"], result["action"]) == (
        "monitor",
        "unmanaged",
        "reboot",
    )


def test_handler_measures_elapsed_seconds_across_time_formats() -> None:
    event = {
        "op": "elapsed",
        "since": "2026-11-22T18:30:00Z",
        "until": "2026-11-22T18:31:01.5+00:00",
    }
    assert handler(event, None) == {"seconds": 61.5}


@pytest.mark.parametrize(
    "event",
    [
        {"op": "reboot"},
        {"op": "elapsed", "since": "yesterday", "until": "2026-11-22T18:30:00Z"},
        {"op": "elapsed", "since": "2026-11-22T18:30:00", "until": "2026-11-22T18:30:00Z"},
        {"op": "plan", "decision": DECISION, "now": "2026-11-22T18:30:00Z", "policy": {}},
    ],
)
def test_handler_rejects_bad_input_with_a_policy_error(event: dict[str, Any]) -> None:
    with pytest.raises(PolicyError):
        handler(event, None)


@pytest.mark.parametrize(
    ("decision", "force_drain", "forced"),
    [(DECISION, True, True), (DECISION, False, False), (REBOOT, True, False)],
)
def test_a_drain_is_forced_only_before_a_replacement_and_only_when_allowed(
    decision: dict[str, Any], force_drain: bool, forced: bool
) -> None:
    allowed = Policy(node_groups=("g",), force_drain=force_drain)
    assert plan(decision, Group("g", 4), None, NOW, allowed).force_drain is forced


def test_a_reboot_escalated_to_a_replacement_may_be_forced() -> None:
    allowed = Policy(node_groups=("g",), force_drain=True)
    escalated = plan(REBOOT, Group("g", 4), NOW - timedelta(seconds=60), NOW, allowed)
    assert (escalated.action, escalated.force_drain) == ("replace", True)


def test_the_clock_reads_the_state_machine_s_time_in_epoch_seconds() -> None:
    entered = "2026-11-22T18:30:00.192Z"  # $$.State.EnteredTime
    now = int(NOW.timestamp())
    assert policy.clock(entered) == {"epoch": now, "lease_until": now + parking.LEASE_SECONDS}
    assert handler({"op": "clock", "at": entered}, None) == policy.clock(entered)
    with pytest.raises(PolicyError):
        handler({"op": "clock", "at": "2026-11-22T18:30:00"}, None)  # no time zone
