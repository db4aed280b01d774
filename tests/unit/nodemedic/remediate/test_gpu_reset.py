"""The GPU reset rung: which instance types can reset one GPU, and how a ``reset`` rule's
fault acts with the cluster's ``gpu_reset`` off (a reboot, as always) and on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from nodemedic.catalog import acted, builtin_rules
from nodemedic.detect.classifier import default_classifier
from nodemedic.health.instance_types import gpu_reset_of
from nodemedic.remediate.breaker import Limits
from nodemedic.remediate.decision import Identity, decide
from nodemedic.remediate.ledger import RESET_AT, RESET_FRESH
from nodemedic.remediate.policy import Group, Policy, plan

NOW = datetime(2026, 11, 22, 18, 30, tzinfo=UTC)
XID_46 = "NVRM: Xid (PCI:0000:2b:00): 46, pid='<unknown>', name=<unknown>, GPU stopped processing"
RESET = {"action": "reset", "health_status": "Unschedulable", "evidence_line": XID_46}
ACTING = Policy(node_groups=("g",))
NODE = Identity(cluster="demo", instance_id="i-0123456789abcdef0", source="kmsg")
RESET_GPU_XIDS = {46, 62, 64, 95, 109, 110, 119, 120, 136, 140, 143, 155, 156, 158}
"""The codes whose immediate action in NVIDIA's Xid catalog is RESET_GPU."""


@pytest.mark.parametrize(
    ("instance_type", "capability"),
    [
        ("g5.48xlarge", "one"),
        ("g6e.12xlarge", "one"),
        ("p4d.24xlarge", "none"),
        ("p5en.48xlarge", "none"),
        ("p6-b200.48xlarge", "none"),
        ("trn2.48xlarge", "none"),
        ("inf2.xlarge", "none"),
        ("m5.large", "none"),
        ("", "none"),
    ],
)
def test_only_types_a_source_says_can_reset_one_gpu_offer_the_rung(
    instance_type: str, capability: str
) -> None:
    assert gpu_reset_of(instance_type) == capability


def test_the_xid_rules_nvidia_heals_with_a_gpu_reset_say_reset() -> None:
    reset = {r.id for r in builtin_rules() if r.action == "reset"}
    assert reset == {f"nvidia-xid-{code}" for code in RESET_GPU_XIDS}


def test_with_gpu_reset_off_a_reset_fault_reboots_as_it_always_did() -> None:
    fault = default_classifier().classify(XID_46)
    assert fault is not None
    assert fault.rule.action == "reset"
    assert fault.action == "reboot", "triage answers as a cluster with the defaults"
    off = decide(fault, NODE, first_seen=NOW)
    on = decide(fault, NODE, first_seen=NOW, gpu_reset=True)
    assert off is not None and on is not None
    assert (off.action, off.health_status) == ("reboot", "UnschedulablePendingReboot")
    assert (on.action, on.health_status) == ("reset", "Unschedulable")
    assert acted("replace", gpu_reset=False) == "replace"


def test_a_reset_stays_a_reset_only_where_the_instance_type_can_reset_one_gpu() -> None:
    group = Group("g", 4)
    on_g6 = plan(RESET, group, None, NOW, ACTING, instance_type="g6.12xlarge")
    assert (on_g6.action, on_g6.health_status, on_g6.mode) == ("reset", "Unschedulable", "act")
    for instance_type in ("p5.48xlarge", None):
        result = plan(RESET, group, None, NOW, ACTING, instance_type=instance_type)
        assert (result.action, result.health_status) == ("reboot", "UnschedulablePendingReboot")
        assert result.reason.startswith(f"instance type {instance_type or 'unknown'} cannot")


def test_a_reset_names_its_gpu_and_since_when_a_reset_of_it_would_be_a_second_one() -> None:
    result = plan(RESET, Group("g", 4), None, NOW, ACTING, instance_type="g6.12xlarge")
    assert (result.gpu, result.reset_since) == (
        "00000000:2B:00.0",
        int(NOW.timestamp()) - ACTING.escalation_window,
    )
    rebooted = plan(RESET, Group("g", 4), None, NOW, ACTING, instance_type="p5.48xlarge")
    assert rebooted.gpu == ""


def test_a_reset_whose_line_names_no_gpu_is_a_reboot() -> None:
    nameless = {**RESET, "evidence_line": "NVRM: GPU has fallen off the bus"}
    result = plan(nameless, Group("g", 4), None, NOW, ACTING, instance_type="g6.12xlarge")
    assert (result.action, result.gpu) == ("reboot", "")
    assert result.reason.startswith("the fault's line names no GPU to reset; ")


def test_a_reset_counts_against_the_reboot_rate() -> None:
    limits = Limits(
        max_in_flight=2,
        reboots_per_hour=3,
        reboots_per_day=7,
        replacements_per_hour=1,
        replacements_per_day=2,
        cooldown=60,
    )
    assert limits.rate("reset") == limits.rate("reboot") == (3, 7)


def test_a_gpu_reset_again_within_the_window_is_refused() -> None:
    since = {":since": 1000}
    assert RESET_FRESH.holds({}, since), "never reset"
    assert RESET_FRESH.holds({RESET_AT: 999}, since), "reset before the window"
    assert not RESET_FRESH.holds({RESET_AT: 1000}, since)
    assert not RESET_FRESH.holds({RESET_AT: 1500}, since)


def test_a_reset_turned_reboot_escalates_like_any_reboot() -> None:
    last = NOW - timedelta(seconds=600)
    result = plan(RESET, Group("g", 4), last, NOW, ACTING, instance_type="p5.48xlarge")
    assert (result.action, result.escalated) == ("replace", True)
