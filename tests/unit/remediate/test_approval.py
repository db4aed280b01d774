"""Approval and hand-off, as rules on an in-memory ledger: who is asked, and a handed-off
node's lock that no decision, sweep or lease takes from the vendor until it is taken back."""

from __future__ import annotations

import pytest

from nodemedic.remediate import approval, handoff, ledger, parking
from nodemedic.settings import ClusterSettings

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
