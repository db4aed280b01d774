"""Planned decisions (``nodemedic.remediate.planned``): AWS's documented notices
(``tests/events/aws-notices``) become decision records with their deadline, and only for
the instances nodemedic may act on."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from nodemedic.remediate.decision import REQUIRED_FIELDS
from nodemedic.remediate.planned import (
    NoticeError,
    acts_on,
    notice_of,
    planned_decision,
)
from nodemedic.settings import parse_cluster
from tests.support.paths import ROOT

EVENTS = ROOT / "tests" / "events" / "aws-notices"
INSTANCE = "i-1234567890abcdef0"
NOW = datetime(2026, 8, 13, 13, 19, 3, tzinfo=UTC)


def _event(name: str, **filled: str) -> dict[str, Any]:
    """A documented payload, AWS's placeholders filled with ``filled`` (placeholder -> value)."""
    text = Path(EVENTS / name).read_text()
    for placeholder, value in filled.items():
        text = text.replace(placeholder, value)
    event: dict[str, Any] = json.loads(text)
    return event


def test_a_retirement_notice_names_its_instance_and_its_deadline_from_the_text_time() -> None:
    notice = notice_of(_event("aws-health-ec2-instance-retirement-scheduled.json"))

    assert notice is not None
    assert notice.instance_ids == (INSTANCE,)  # from the instance ARN
    assert notice.deadline == datetime(2026, 8, 27, 13, 19, 3, tzinfo=UTC)
    assert (notice.fault_id, notice.replaceable) == ("planned-instance-retirement", True)

    made = planned_decision("prod", INSTANCE, notice, lead_time=3600, now=NOW)

    assert set(made) >= set(REQUIRED_FIELDS)
    assert (made["source"], made["action"], made["fault_id"]) == (
        "planned",
        "replace",
        "planned-instance-retirement",
    )
    assert (made["deadline"], made["act_at"]) == ("2026-08-27T13:19:03Z", "2026-08-27T12:19:03Z")
    assert made["notice"] == "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"
    assert made["notice_id"].startswith("arn:aws:health:us-east-1::event/")
    # The same notice again (a backup event, a second delivery) is the same execution.
    again = planned_decision("prod", INSTANCE, notice, lead_time=60, now=NOW + timedelta(hours=1))
    assert again["decision_id"] == made["decision_id"]


def test_a_notice_whose_lead_time_has_passed_acts_at_once() -> None:
    notice = notice_of(_event("aws-health-ec2-instance-retirement-scheduled.json"))
    assert notice is not None
    late = notice.deadline - timedelta(minutes=10)

    assert planned_decision("prod", INSTANCE, notice, lead_time=3600, now=late)["act_at"] == (
        "2026-08-27T13:09:03Z"
    )


@pytest.mark.parametrize(
    "name",
    [
        "aws-health-ec2-instance-store-drive-performance-degraded-backup.json",
        "aws-health-public-ec2-operational-issue.json",
        "ec2-instance-rebalance-recommendation.json",
    ],
)
def test_notices_of_no_scheduled_end_are_not_planned(name: str) -> None:
    event = _event(name, **{"yyyy-mm-ddThh:mm:ssZ": "2026-08-13T13:19:03Z"})

    assert notice_of(event) is None


@pytest.mark.parametrize(
    "name",
    [
        "ec2-capacity-block-expiration-warning.json",
        "ec2-capacity-block-reservation-expiration-warning.json",
    ],
)
def test_both_spellings_of_the_capacity_block_warning_drain_before_the_terminations(
    name: str,
) -> None:
    event = _event(
        name,
        **{
            "[ODCR ID]": "cr-0123456789abcdef0",
            "[Current time]": "2026-08-13T13:19:03Z",
            "[ODCR End Date]": "2026-08-13T13:59:03Z",
        },
    )

    notice = notice_of(event)

    assert notice is not None
    assert (notice.reservation_id, notice.replaceable) == ("cr-0123456789abcdef0", False)
    # Terminations begin 10 minutes after the warning, 30 before the reservation ends.
    assert notice.deadline == datetime(2026, 8, 13, 13, 29, 3, tzinfo=UTC)
    made = planned_decision("prod", INSTANCE, notice, lead_time=3600, now=NOW)
    assert (made["replaceable"], made["act_at"]) == (False, "2026-08-13T13:19:03Z")
    assert "left to end" in made["evidence_line"]


def test_a_spot_warning_reads_the_detail_and_gives_two_minutes() -> None:
    event = _event(
        "ec2-spot-instance-interruption-warning.json",
        **{"yyyy-mm-ddThh:mm:ssZ": "2026-08-13T13:19:03Z"},
    )

    notice = notice_of(event)

    assert notice is not None
    assert (notice.fault_id, notice.instance_ids) == ("planned-spot-interruption", (INSTANCE,))
    assert notice.deadline == NOW + timedelta(minutes=2)
    # Spot only where the group is listed as Spot; nothing outside node_groups.
    assert acts_on(notice, "spot", ("spot", "p5"), ("spot",))
    assert not acts_on(notice, "p5", ("spot", "p5"), ("spot",))
    assert not acts_on(notice, "other", ("spot",), ("spot",))


def test_a_notice_of_a_kind_nodemedic_plans_for_with_no_deadline_is_refused() -> None:
    event = _event("aws-health-ec2-instance-retirement-scheduled.json")
    event["detail"]["startTime"] = "soon"

    with pytest.raises(NoticeError, match="startTime"):
        notice_of(event)


def test_the_settings_default_to_planning_with_an_hour_of_lead_time_and_no_spot() -> None:
    settings = parse_cluster({"name": "prod", "node_groups": ["p5"]})

    assert (settings.planned_repairs, settings.planned_lead_time) == (True, 3600)
    assert settings.spot_groups == ()
    assert parse_cluster({"name": "c", "node_groups": ["s"], "spot_groups": ["s"]}).spot_groups
    with pytest.raises(ValueError, match="spot_groups"):
        parse_cluster({"name": "prod", "node_groups": ["p5"], "spot_groups": ["other"]})
    with pytest.raises(ValueError, match="planned_lead_time"):
        parse_cluster({"name": "prod", "planned_lead_time": -1})
