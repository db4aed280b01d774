"""locate / mark / node_status / clear / delete_node / fail / tainted against the real API
server."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes import client

from lambdas.kube.handler import BadRequest
from nodemedic.contracts.kube import (
    FAILED_CONDITION,
    FAULT_REASON_LABEL,
    FAULT_TYPE_LABEL,
    HEALTH_LABEL,
    TAINT_KEY,
)
from tests.support.kube import Invoke, Node, wait_for
from world.kube.kubelet import SimulatedKubelet

pytestmark = pytest.mark.kube

USER_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def mark_event(node: str, **overrides: object) -> dict[str, object]:
    event: dict[str, object] = {
        "op": "mark",
        "node": node,
        "fault_id": "nvidia-xid-79",
        "condition": "AcceleratedHardwareReady",
        "condition_status": "False",
        "reason": "NvidiaXid_79",
        "message": "NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.",
        "health_status": "UnschedulablePendingReplacement",
        "cordon": True,
        "taint": True,
    }
    return event | overrides


def condition(core: client.CoreV1Api, node: str, kind: str) -> client.V1NodeCondition:
    found = core.read_node(node).status.conditions
    return next(c for c in found if c.type == kind)


def test_locate_goes_by_provider_id_not_by_name(
    invoke: Invoke, new_node: Callable[..., Node], kubelet: SimulatedKubelet
) -> None:
    wanted = new_node(az="us-east-1b")
    # A node whose *name* is the instance id is not that instance's node.
    kubelet.register(wanted.instance_id, "i-0ffffffffffffffff")

    found = invoke({"op": "locate", "instance_id": wanted.instance_id})

    assert found["node"] == wanted.name
    assert found["ready"] is True
    assert found["boot_id"]
    missing = invoke({"op": "locate", "instance_id": "i-0000000000000dead"})
    assert missing.pop("nodes") >= 1, "the cluster's Nodes, counted for the quarantine's share"
    assert missing == {"node": None, "boot_id": None, "ready": False}


def test_mark_sets_condition_label_taint_and_cordons(
    invoke: Invoke, node: Node, core: client.CoreV1Api
) -> None:
    core.patch_node(node.name, {"spec": {"taints": [USER_TAINT]}})

    assert invoke(mark_event(node.name)) == {"node": node.name, "marked": True}

    seen = core.read_node(node.name)
    assert seen.spec.unschedulable is True
    assert seen.metadata.labels[HEALTH_LABEL] == "UnschedulablePendingReplacement"
    taints = {(t.key, t.value, t.effect) for t in seen.spec.taints}
    assert taints == {
        (TAINT_KEY, "nvidia-xid-79", "NoSchedule"),
        ("nvidia.com/gpu", "present", "NoSchedule"),
    }
    hardware = condition(core, node.name, "AcceleratedHardwareReady")
    assert (hardware.status, hardware.reason) == ("False", "NvidiaXid_79")
    assert "fallen off the bus" in hardware.message
    assert condition(core, node.name, "Ready").status == "True"  # the kubelet's stays
    labels = seen.metadata.labels
    assert (labels[FAULT_TYPE_LABEL], labels[FAULT_REASON_LABEL]) == (
        "nvidia-xid-79",
        "NvidiaXid_79",
    )


def test_fault_reason_is_a_valid_label_value_whatever_the_metric_says(
    invoke: Invoke, node: Node, core: client.CoreV1Api
) -> None:
    """A user's catalog may name a metric with characters a label value may not hold."""
    invoke(mark_event(node.name, reason="Disk Error! " + "x" * 80))

    labels = core.read_node(node.name).metadata.labels
    assert labels[FAULT_REASON_LABEL] == ("Disk-Error--" + "x" * 80)[:63]


def test_mark_again_changes_nothing(invoke: Invoke, node: Node, core: client.CoreV1Api) -> None:
    invoke(mark_event(node.name))
    first = condition(core, node.name, "AcceleratedHardwareReady").last_transition_time

    invoke(mark_event(node.name))

    seen = core.read_node(node.name)
    assert [t.key for t in seen.spec.taints] == [TAINT_KEY]
    assert condition(core, node.name, "AcceleratedHardwareReady").last_transition_time == first


def test_mark_for_notify_leaves_the_node_schedulable(
    invoke: Invoke, node: Node, core: client.CoreV1Api
) -> None:
    invoke(
        mark_event(
            node.name,
            fault_id="nvidia-xid-13",
            message="",
            health_status="Schedulable",
            cordon=False,
            taint=False,
        )
    )

    seen = core.read_node(node.name)
    assert not seen.spec.unschedulable
    assert not seen.spec.taints
    assert seen.metadata.labels[HEALTH_LABEL] == "Schedulable"
    assert FAULT_TYPE_LABEL not in seen.metadata.labels
    assert condition(core, node.name, "AcceleratedHardwareReady").status == "False"


def test_bad_mark_is_refused_before_the_node_changes(
    invoke: Invoke, node: Node, core: client.CoreV1Api
) -> None:
    with pytest.raises(ValueError, match="health_status"):
        invoke(mark_event(node.name, health_status="Broken"))
    with pytest.raises(BadRequest, match="'cordon' must be bool"):
        invoke(mark_event(node.name, cordon="yes"))
    with pytest.raises(BadRequest, match="needs field 'fault_id'"):
        invoke({k: v for k, v in mark_event(node.name).items() if k != "fault_id"})

    seen = core.read_node(node.name)
    assert HEALTH_LABEL not in seen.metadata.labels
    assert not seen.spec.unschedulable
    assert {c.type for c in seen.status.conditions} == {"Ready"}


def test_node_status_sees_the_reboot(invoke: Invoke, node: Node, kubelet: SimulatedKubelet) -> None:
    before = invoke({"op": "locate", "instance_id": node.instance_id})["boot_id"]
    kubelet.reboot(node.name, down_seconds=0.5)
    event = {"op": "node_status", "node": node.name, "boot_id": before}

    down = invoke(event)
    up = wait_for(lambda: (s := invoke(event))["rebooted"] and s, what="a new boot id")

    assert down == {"ready": False, "boot_id": before, "rebooted": False}
    assert up["ready"] is True
    assert up["boot_id"] != before


def test_clear_puts_the_node_back_in_service(
    invoke: Invoke, node: Node, core: client.CoreV1Api
) -> None:
    core.patch_node(node.name, {"spec": {"taints": [USER_TAINT]}})
    invoke(mark_event(node.name))

    cleared = invoke(
        {
            "op": "clear",
            "node": node.name,
            "fault_id": "nvidia-xid-79",
            "condition": "AcceleratedHardwareReady",
        }
    )

    assert cleared == {"node": node.name, "cleared": True}
    seen = core.read_node(node.name)
    assert not seen.spec.unschedulable
    assert [t.key for t in seen.spec.taints] == ["nvidia.com/gpu"]
    assert seen.metadata.labels[HEALTH_LABEL] == "Schedulable"
    assert FAULT_TYPE_LABEL not in seen.metadata.labels
    assert FAULT_REASON_LABEL not in seen.metadata.labels
    hardware = condition(core, node.name, "AcceleratedHardwareReady")
    assert (hardware.status, hardware.reason) == ("True", "NodeMedicCleared")


def test_clear_of_an_error_condition_sets_it_false(
    invoke: Invoke, new_node: Callable[..., Node], core: client.CoreV1Api
) -> None:
    trn = new_node(devices={"aws.amazon.com/neuron": "16"}, instance_type="trn1.32xlarge")
    invoke(mark_event(trn.name, condition="NeuronHasError", condition_status="True"))
    assert condition(core, trn.name, "NeuronHasError").status == "True"

    invoke({"op": "clear", "node": trn.name, "fault_id": "x", "condition": "NeuronHasError"})

    assert condition(core, trn.name, "NeuronHasError").status == "False"
    assert core.read_node(trn.name).spec.taints is None


def test_delete_node(invoke: Invoke, node: Node) -> None:
    assert invoke({"op": "delete_node", "node": node.name}) == {
        "node": node.name,
        "deleted": True,
    }
    assert invoke({"op": "locate", "instance_id": node.instance_id})["node"] is None
    assert invoke({"op": "delete_node", "node": node.name})["deleted"] is False


def test_unknown_op_is_refused(invoke: Invoke) -> None:
    with pytest.raises(BadRequest, match="op one of"):
        invoke({"op": "reboot", "node": "x"})


def fail_event(node: str) -> dict[str, object]:
    return {
        "op": "fail",
        "node": node,
        "fault_id": "nvidia-xid-79",
        "step": "draining",
        "error": "DrainTimeout",
        "message": "nodemedic: remediation d-1 of nvidia-xid-79 stopped at draining: DrainTimeout",
    }


def test_fail_says_what_failed_and_leaves_the_node_out(
    invoke: Invoke, node: Node, core: client.CoreV1Api
) -> None:
    invoke(mark_event(node.name))

    assert invoke(fail_event(node.name)) == {"node": node.name, "marked": True}

    seen = core.read_node(node.name)
    assert seen.metadata.labels[FAULT_TYPE_LABEL] == "nvidia-xid-79"
    assert seen.metadata.labels[FAULT_REASON_LABEL] == "draining-failed"
    assert seen.metadata.labels[HEALTH_LABEL] == "UnschedulablePendingReplacement"
    assert seen.spec.unschedulable is True
    assert [t.key for t in seen.spec.taints] == [TAINT_KEY]
    failed = condition(core, node.name, FAILED_CONDITION)
    assert (failed.status, failed.reason) == ("True", "DrainTimeout")
    assert failed.message.endswith("stopped at draining: DrainTimeout")
    assert condition(core, node.name, "AcceleratedHardwareReady").status == "False"


def test_fail_neither_cordons_a_node_nor_minds_one_gone(
    invoke: Invoke, node: Node, core: client.CoreV1Api
) -> None:
    invoke(fail_event(node.name))

    seen = core.read_node(node.name)
    assert not seen.spec.unschedulable
    assert not seen.spec.taints
    core.delete_node(node.name)
    assert invoke(fail_event(node.name)) == {"node": node.name, "marked": False}


def test_tainted_lists_the_nodes_nodemedic_took_out(
    invoke: Invoke, new_node: Callable[..., Node], core: client.CoreV1Api
) -> None:
    out, marked_only, untouched = new_node(), new_node(), new_node()
    invoke(mark_event(out.name))
    invoke(mark_event(marked_only.name, cordon=False, taint=False))
    core.patch_node(untouched.name, {"spec": {"taints": [USER_TAINT]}})

    listed = invoke({"op": "tainted"})["nodes"]

    ours = {out.name, marked_only.name, untouched.name}
    assert [n for n in listed if n["node"] in ours] == [
        {"node": out.name, "instance_id": out.instance_id, "fault_id": "nvidia-xid-79"}
    ]
