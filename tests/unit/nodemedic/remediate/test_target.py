"""The repair target: each substrate's rungs cap the plan before anything touches the node,
HyperPod's own recovery is deferred to, reserved capacity is never given up, and the
substrates' settings are checked at synth."""

from __future__ import annotations

from typing import Any

import pytest

from lambdas.policy.handler import handler
from nodemedic.settings import parse_cluster

XID_79 = {
    "action": "replace",
    "health_status": "UnschedulablePendingReplacement",
    "fault_id": "xid-79",
    "component": "gpu",
    "source": "kmsg",
}
DMA = {**XID_79, "action": "reboot", "health_status": "UnschedulablePendingReboot"}
HYPERPOD = {"name": "prod", "hyperpod_clusters": {"ml-cluster": "abcdef123456"}}


def _plan(
    raw: dict[str, Any],
    decision: dict[str, Any],
    target: dict[str, Any] | None,
    group: str,
    **more: Any,
) -> dict[str, Any]:
    """The policy Lambda's plan, as the state machine asks for it."""
    event = {
        "op": "plan",
        "decision": decision,
        "group": {"found": True, "name": group, "size": 8},
        "last_reboot": {},
        "now": "2026-11-29T12:00:00Z",
        "policy": parse_cluster(raw).policy.to_mapping(),
        **({"target": target} if target is not None else {}),
        **more,
    }
    return handler(event, None)


def test_hyperpod_defers_to_its_automatic_recovery_by_default() -> None:
    found = _plan(
        HYPERPOD, XID_79, {"substrate": "hyperpod", "node_recovery": "None"}, "ml-cluster"
    )
    assert (found["mode"], found["action"], found["outcome"]) == ("notify", "notify", "deferred")
    assert "hyperpod_repair is defer" in found["reason"]
    assert found["substrate"] == "hyperpod"


def test_hyperpod_acts_only_while_its_recovery_is_off() -> None:
    raw = {**HYPERPOD, "hyperpod_repair": "when_recovery_off"}
    off = _plan(raw, DMA, {"substrate": "hyperpod", "node_recovery": "None"}, "ml-cluster")
    assert (off["mode"], off["action"]) == ("act", "reboot")
    on = _plan(raw, DMA, {"substrate": "hyperpod", "node_recovery": "Automatic"}, "ml-cluster")
    assert (on["mode"], on["outcome"]) == ("notify", "deferred")
    assert "NodeRecovery Automatic" in on["reason"]


def test_a_gpu_reset_on_hyperpod_is_a_reboot() -> None:
    """A type and a line that would reset one GPU on an Auto Scaling node."""
    reset = {
        **DMA,
        "action": "reset",
        "health_status": "UnschedulablePendingReset",
        "evidence_line": "NVRM: Xid (PCI:0000:53:00): 119, pid=1, name=train",
    }
    raw = {**HYPERPOD, "hyperpod_repair": "when_recovery_off", "gpu_reset": True}
    recovery_off = {"substrate": "hyperpod", "node_recovery": "None"}
    found = _plan(raw, reset, recovery_off, "ml-cluster", instance_types=["g6.48xlarge"])
    assert (found["mode"], found["action"]) == ("act", "reboot")
    assert "hyperpod has no GPU reset rung" in found["reason"]


@pytest.mark.parametrize(
    ("setting", "mode", "action"), [("notify", "notify", "notify"), ("replace", "act", "replace")]
)
def test_an_auto_mode_reboot_becomes_the_documented_outcome(
    setting: str, mode: str, action: str
) -> None:
    raw = {"name": "prod", "karpenter_nodepools": ["general"], "auto_mode_reboot": setting}
    found = _plan(raw, DMA, {"substrate": "automode"}, "general")
    assert (found["mode"], found["action"]) == (mode, action)
    assert "EKS Auto Mode cannot reboot a node" in found["reason"]


def test_reserved_capacity_is_handed_off_never_replaced() -> None:
    raw = {"name": "prod", "node_groups": ["p5-cb"], "reserved_capacity": ["p5-cb"]}
    found = _plan(raw, XID_79, None, "p5-cb")
    assert (found["mode"], found["action"], found["hand_off"]) == ("act", "replace", True)
    assert "reserved capacity" in found["reason"]
    rebooted = _plan(raw, DMA, None, "p5-cb")
    assert (rebooted["action"], rebooted["hand_off"]) == ("reboot", False)


def test_an_auto_scaling_node_plans_as_before() -> None:
    found = _plan({"name": "prod", "node_groups": ["p5"]}, XID_79, None, "p5")
    assert (found["mode"], found["action"], found["hand_off"]) == ("act", "replace", False)
    assert found["substrate"] == "autoscaling"
    assert not found["reason"].startswith("replace deferred")


def test_the_hyperpod_cluster_is_the_breaker_s_group() -> None:
    description = {
        "InstanceGroups": [{"CurrentCount": 6}, {"CurrentCount": 2}],
        "NodeRecovery": "None",
    }
    found = handler({"op": "hyperpod", "cluster": "ml-cluster", "description": description}, None)
    assert found == {
        "group": {"name": "ml-cluster", "size": 8, "found": True},
        "node_recovery": "None",
    }
    unsaid = handler(
        {"op": "hyperpod", "cluster": "ml-cluster", "description": {"InstanceGroups": []}}, None
    )
    assert unsaid["node_recovery"] == "Automatic"


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ({"karpenter_nodepools": ["Gpu*"]}, "karpenter_nodepools: 'Gpu*' is not a NodePool name"),
        ({"hyperpod_clusters": {"ml_cluster": "abcdef123456"}}, "'ml_cluster' is not a HyperPod"),
        ({"hyperpod_clusters": {"ml": "arn:aws:x"}}, "'arn:aws:x' is not a cluster id"),
        ({"reserved_capacity": ["p5-cb"]}, "reserved_capacity: 'p5-cb' is in none of"),
        ({"auto_mode_reboot": "reboot"}, "auto_mode_reboot must be notify or replace"),
        ({"hyperpod_clusters": ["ml"]}, "hyperpod_clusters must map HyperPod cluster names"),
    ],
)
def test_a_substrate_name_that_does_not_validate_is_named_at_synth(
    raw: dict[str, Any], says: str
) -> None:
    with pytest.raises(ValueError) as caught:
        parse_cluster({"name": "prod", **raw})
    assert says in str(caught.value)


def test_the_default_policy_bakes_in_no_substrate_setting() -> None:
    mapping = parse_cluster({"name": "prod", "node_groups": ["p5"]}).policy.to_mapping()
    assert not {"auto_mode_reboot", "hyperpod_repair", "reserved_capacity"} & set(mapping)
