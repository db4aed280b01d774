"""The recorder's marker (``nodemedic.remediate.recorded``): which partition a decision's
source is recorded in, and every field the state machine compares, typed as it reads them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nodemedic.remediate.decision import Decision
from nodemedic.remediate.manual import manual_decision
from nodemedic.remediate.recorded import (
    KEPT_DAYS,
    NUMBERS,
    OPTIONAL_TEXTS,
    TEXTS,
    marker,
    recorder,
)

RECORD = Decision(
    decision_id="i-0123456789abcdef0-0a1b2c3d4e5f-nvidia-xid-79",
    cluster="demo",
    instance_id="i-0123456789abcdef0",
    fault_id="nvidia-xid-79",
    component="gpu",
    action="replace",
    severity="fatal",
    condition="AcceleratedHardwareReady",
    condition_status="False",
    metric="NvidiaXid_79",
    metric_namespace="NodeMedic",
    health_status="UnschedulablePendingReplacement",
    evidence_line="NVRM: Xid (PCI:0000:2b:00): 79, pid=1, GPU has fallen off the bus.",
    source="kmsg",
    first_seen="2026-11-22T18:30:01Z",
    count=2,
).to_record()


def test_each_source_is_recorded_by_the_process_that_makes_its_decisions() -> None:
    assert {s: recorder(s) for s in ("kmsg", "health", "deep-check", "planned", "manual")} == {
        "kmsg": "recorded#classifier",
        "health": "recorded#classifier",
        "deep-check": "recorded#classifier",
        "planned": "recorded#planned",
        "manual": None,
    }


def test_a_marker_keeps_every_field_the_state_machine_compares() -> None:
    item = marker(RECORD, starts_at=1_000_000.5)

    assert (item["pk"], item["sk"]) == ({"S": "recorded#classifier"}, {"S": RECORD["decision_id"]})
    assert set(TEXTS) | set(NUMBERS) == set(RECORD)
    assert {name: item[name] for name in TEXTS} == {name: {"S": RECORD[name]} for name in TEXTS}
    assert (item["count"], item["schema"]) == ({"N": "2"}, {"N": "1"})
    assert item["purge_at"] == {"N": str(1_000_000 + KEPT_DAYS * 86400)}
    assert "replaceable" not in item
    planned = marker(RECORD | {"source": "planned", "replaceable": False}, starts_at=0)
    assert (planned["pk"], planned["replaceable"]) == ({"S": "recorded#planned"}, {"BOOL": False})


def test_a_manual_decision_has_no_marker() -> None:
    request = manual_decision(
        "demo",
        "i-0123456789abcdef0",
        "reboot",
        requested_by="arn:aws:iam::123456789012:user/ops",
        reason="hung NCCL",
        requested_at=datetime(2026, 11, 22, tzinfo=UTC),
    )
    with pytest.raises(ValueError, match="manual"):
        marker(request, starts_at=0)


def test_a_pass_keeps_the_boot_that_proved_it_and_other_decisions_have_none() -> None:
    """``key_boot_id`` is on a deep check's pass only: a marker of any other decision must
    not need it, and a pass's marker keeps it, so the state machine compares it too."""
    assert "key_boot_id" not in RECORD and "key_boot_id" not in marker(RECORD, starts_at=0)
    passed = RECORD | {"source": "deep-check", "key_boot_id": "e2dc7a0e-e8e8-4bbb-b54d"}
    assert marker(passed, starts_at=0)["key_boot_id"] == {"S": "e2dc7a0e-e8e8-4bbb-b54d"}
    assert OPTIONAL_TEXTS == ("key_boot_id",)
