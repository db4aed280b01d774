"""Manual decisions (``nodemedic.remediate.manual``): what a person's request becomes, and
the plan that refuses it where nodemedic does not act."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nodemedic.remediate.decision import REQUIRED_FIELDS
from nodemedic.remediate.manual import RequestError, manual_decision
from nodemedic.remediate.policy import Group, Policy, plan

AT = datetime(2026, 11, 22, 18, 30, tzinfo=UTC)
INSTANCE = "i-0123456789abcdef0"


def _asked(action: str = "replace", **overrides: object) -> dict[str, object]:
    values: dict[str, object] = {"requested_by": "alice", "reason": "bad ECC", "requested_at": AT}
    return manual_decision("prod", INSTANCE, action, **(values | overrides))  # type: ignore[arg-type]


def test_a_request_is_a_full_decision_record_that_names_who_asked_and_why() -> None:
    made = _asked()

    assert set(made) >= set(REQUIRED_FIELDS)
    assert (made["source"], made["fault_id"], made["action"]) == (
        "manual",
        "manual-replace",
        "replace",
    )
    assert made["health_status"] == "UnschedulablePendingReplacement"
    assert (made["requested_by"], made["request_reason"]) == ("alice", "bad ECC")
    assert made["evidence_line"] == "replace requested by alice: bad ECC"
    # The same request seen again names the same execution; a later one another.
    assert _asked()["decision_id"] == made["decision_id"]
    assert _asked(requested_at=AT.replace(minute=31))["decision_id"] != made["decision_id"]


@pytest.mark.parametrize(
    ("action", "overrides", "says"),
    [
        ("notify", {}, "reboot or replace"),
        ("replace", {"reason": "  "}, "a reason"),
        ("replace", {"requested_by": ""}, "who asked"),
    ],
)
def test_a_bad_request_is_refused_with_what_is_wrong(
    action: str, overrides: dict[str, object], says: str
) -> None:
    with pytest.raises(RequestError, match=says):
        _asked(action, **overrides)


def test_control_characters_in_a_reason_cannot_rewrite_what_people_see() -> None:
    made = _asked(reason="ok\x1b[2Jgone")

    assert made["request_reason"] == "ok\\x1b[2Jgone"


@pytest.mark.parametrize(
    ("group", "settings", "says"),
    [
        (Group("other", 4), {"node_groups": ("g",)}, "node group other is not in node_groups"),
        (None, {"node_groups": ("g",)}, "in no Auto Scaling group"),
        (Group("g", 4), {"node_groups": ("g",), "recovery_mode": "None"}, "recovery_mode"),
        (Group("g", 4), {"node_groups": ("g",), "dry_run": True}, "dry run"),
    ],
)
def test_a_manual_request_is_refused_where_an_automatic_one_would_only_be_watched(
    group: Group | None, settings: dict[str, object], says: str
) -> None:
    made = plan(_asked(), group, None, AT, Policy(**settings))  # type: ignore[arg-type]

    assert (made.mode, made.outcome) == ("notify", "refused")
    assert says in made.reason and "refused" in made.reason


def test_a_manual_request_acts_like_an_automatic_one_where_nodemedic_acts() -> None:
    made = plan(_asked(), Group("g", 4), None, AT, Policy(node_groups=("g",)))

    assert (made.mode, made.action, made.limit) == ("act", "replace", 1)
    assert made.purge_at == int(AT.timestamp()) + 90 * 86400
