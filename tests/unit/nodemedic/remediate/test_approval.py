"""Approval and hand-off, as rules on an in-memory ledger: who is asked, and a handed-off
node's lock that no decision, sweep or lease takes from the vendor until it is taken back."""

from __future__ import annotations

from typing import Any

import pytest

from lambdas.policy.handler import handler as policy_handler
from nodemedic.remediate import approval, handoff, ledger, parking
from nodemedic.remediate.policy import Policy
from nodemedic.settings import ClusterSettings, parse_cluster
from nodemedic.settings.groups import asks_approval, group_policies

PARKED_LOCK = {
    "pk": "i-0abc",
    "sk": "inflight",
    "decision_id": "d-1",
    parking.FAILED_AT: "2026-11-27T10:00:00Z",
    ledger.EXPIRES_AT: 1_000,
}
HANDED = {
    ":now": "2026-11-27T11:00:00Z",
    ":to": "acme",
    ":ticket": "RMA-1",
    ":by": "arn:aws:iam::1:user/alice",
    ":record": "decision#i-0abc-handoff-1",
}


@pytest.mark.parametrize(
    ("setting", "action", "asked"),
    [
        ("none", "replace", False),
        ("replace", "replace", True),
        ("replace", "reboot", False),
        ("any", "reboot", True),
        ("any", "reset", True),
    ],
)
def test_who_is_asked(setting: str, action: str, asked: bool) -> None:
    assert approval.asks(setting, action) is asked


def test_a_handed_off_lock_is_never_free_nor_stale_until_taken_back() -> None:
    assert handoff.HANDABLE.holds(PARKED_LOCK, {})
    handed = handoff.HAND_OFF.apply(PARKED_LOCK, HANDED)

    far_future = {":now": 10**12}
    assert not ledger.LOCK_FREE.holds(handed, far_future), "no decision takes it"
    assert not ledger.STALE.holds(handed, far_future), "no sweep drops it from the breaker"
    assert not handoff.HANDABLE.holds(handed, {}), "handed off once"

    back = handoff.TAKE_BACK.apply(handed, {":until": 2_000})

    assert not handoff.HANDED_OFF.holds(back, {})
    assert parking.PARKED.holds(back, {}), "parked again, as the hand-off found it"
    assert ledger.LOCK_FREE.holds(back, {":now": 2_001}), "free once its lease runs out"


def test_a_live_or_free_lock_cannot_be_handed_off() -> None:
    live = {k: v for k, v in PARKED_LOCK.items() if k != parking.FAILED_AT}
    assert not handoff.HANDABLE.holds(live, {})
    assert not handoff.HANDABLE.holds({}, {})


def test_asking_lengthens_the_lock_by_the_approval_timeout_only_where_it_asks() -> None:
    plain = ClusterSettings(name="c")
    asking = ClusterSettings(name="c", approval="replace", approval_timeout=7200)
    unasked = ClusterSettings(name="c", approval="none", approval_timeout=7200)

    assert asking.lock_seconds == plain.lock_seconds + 7200
    assert unasked.lock_seconds == plain.lock_seconds


CAREFUL = {
    "name": "c",
    "node_groups": ["p5-careful", "p5-other"],
    "group_overrides": {
        "p5-careful": {
            "approval": "replace",
            "approval_timeout": 7200,
            "approval_timeout_default": "proceed",
        }
    },
}
"""A cluster that asks no one, but one group that has its replacements approved."""
REPLACE = {"action": "replace", "health_status": "UnschedulablePendingReplacement"}


def _planned(settings: ClusterSettings, group: str, **decision: Any) -> dict[str, Any]:
    event = {
        "op": "plan",
        "decision": {**REPLACE, "fault_id": "edac-uncorrectable", **decision},
        "group": {"found": True, "name": group, "size": 8},
        "last_reboot": {},
        "now": "2026-11-27T10:00:00Z",
        "policy": settings.policy.to_mapping(),
        "group_policies": group_policies(settings),
    }
    return policy_handler(event, None)


def test_the_plan_carries_the_group_s_own_approval() -> None:
    settings = parse_cluster(CAREFUL)

    careful = _planned(settings, "p5-careful")
    assert (careful["approval"], careful["approval_timeout"]) == (True, 7200)
    assert careful["approval_timeout_default"] == "proceed"
    assert _planned(settings, "p5-other")["approval"] is False
    rebooted = _planned(settings, "p5-careful", action="reboot", health_status="x")
    assert rebooted["approval"] is False, "replace asks before replacements only"
    assert asks_approval(settings) and not asks_approval(ClusterSettings(name="c"))


def test_a_group_may_ask_no_one_where_the_cluster_asks() -> None:
    settings = parse_cluster(
        {**CAREFUL, "approval": "any", "group_overrides": {"p5-careful": {"approval": "none"}}}
    )
    assert _planned(settings, "p5-careful")["approval"] is False
    assert _planned(settings, "p5-other", action="reboot", health_status="x")["approval"] is True


@pytest.mark.parametrize(("setting", "asked"), [("replace", False), ("any", True)])
def test_a_planned_end_without_replacement_is_asked_only_where_any_action_is(
    setting: str, asked: bool
) -> None:
    settings = parse_cluster({**CAREFUL, "approval": setting, "group_overrides": {}})
    assert _planned(settings, "p5-other", replaceable=False)["approval"] is asked


def test_a_monitor_only_plan_asks_no_one() -> None:
    settings = parse_cluster({**CAREFUL, "dry_run": True})
    assert _planned(settings, "p5-careful")["approval"] is False


def test_the_lock_covers_the_longest_wait_of_any_group_s_approval() -> None:
    plain = ClusterSettings(name="c", node_groups=("p5-careful", "p5-other"))
    assert parse_cluster(CAREFUL).lock_seconds == plain.lock_seconds + 7200


def test_a_cluster_that_asks_no_one_bakes_in_the_policy_it_always_did() -> None:
    """The state machine's template stays as it was before approval existed."""
    mapping = ClusterSettings(name="c").policy.to_mapping()
    assert not {"approval", "approval_timeout", "approval_timeout_default"} & set(mapping)
    assert Policy.from_mapping(mapping) == ClusterSettings(name="c").policy
