"""Spares on the Kubernetes side: which Standby instance's Node may be trusted with work,
bringing one into service, and holding a newly launched one back as the group's next spare.

A spare is in Auto Scaling ``Standby`` and a joined Node behind ``nodemedic.io/spare``
(label and ``NoSchedule`` taint). Auto Scaling runs no health checks on a Standby instance,
so nothing here trusts the group's word alone: a spare is used only if its Node is Ready,
carries no nodemedic fault taint and no deep-check verdict other than ``Passed``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubernetes import client

from lambdas.kube.nodes import each_node, find_node, instance_of, is_ready, update_node
from nodemedic.contracts import (
    DEEP_CHECK_LABEL,
    DEEP_CHECK_TAINT_KEY,
    NODEGROUP_LABEL,
    SPARE_LABEL,
    SPARE_TAINT_KEY,
    TAINT_EFFECT,
    TAINT_KEY,
)

STANDBY = "Standby"
_NONE: dict[str, Any] = {"instance_id": None, "node": None}


def _trusted(node: Any) -> bool:
    """Ready, held back as a spare, and neither in remediation nor unproven by a deep check."""
    labels = node.metadata.labels or {}
    taints = {t.key for t in node.spec.taints or []}
    return (
        is_ready(node)
        and labels.get(SPARE_LABEL) == "true"
        and labels.get(DEEP_CHECK_LABEL, "Passed") == "Passed"
        and not taints & {TAINT_KEY, DEEP_CHECK_TAINT_KEY}
    )


def pick_spare(core: client.CoreV1Api, instances: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The first of the group's Standby, Healthy ``instances`` (DescribeAutoScalingGroups'
    shape) whose Node is trusted: ``{instance_id, node}``, both null when there is none."""
    standby = sorted(
        str(i["InstanceId"])
        for i in instances
        if i.get("LifecycleState") == STANDBY and i.get("HealthStatus") == "Healthy"
    )
    for instance_id in standby:
        node = find_node(core, instance_id)
        if node is not None and _trusted(node):
            return {"instance_id": instance_id, "node": node.metadata.name}
    return dict(_NONE)


def admit_spare(core: client.CoreV1Api, name: str) -> dict[str, Any]:
    """Into service: the spare label and taint off, every other taint kept."""

    def change(node: Any) -> dict[str, Any]:
        kept = [t for t in node.spec.taints or [] if t.key != SPARE_TAINT_KEY]
        return {
            "metadata": {"labels": {SPARE_LABEL: None}},
            "spec": {"taints": core.api_client.sanitize_for_serialization(kept) or None},
        }

    update_node(core, name, change)
    return {"node": name, "admitted": True}


def mark_spare(core: client.CoreV1Api, name: str) -> bool:
    """Hold the Node back as a spare; False when another execution already did."""
    taken = True

    def change(node: Any) -> dict[str, Any]:
        nonlocal taken
        if (node.metadata.labels or {}).get(SPARE_LABEL) == "true":
            taken = False
            return {"metadata": {}}
        taint = {"key": SPARE_TAINT_KEY, "effect": TAINT_EFFECT}
        taints = core.api_client.sanitize_for_serialization(node.spec.taints or [])
        return {
            "metadata": {"labels": {SPARE_LABEL: "true"}},
            "spec": {"taints": [*taints, taint]},
        }

    update_node(core, name, change)
    return taken


def hold_spare(core: client.CoreV1Api, nodegroup: str, known: Sequence[str]) -> dict[str, Any]:
    """The group's first Node of an instance not in ``known`` (those the group had when the
    replace began: a newcomer is the launch that replaced the broken one) held back as a
    spare; ``{instance_id, node}``, both null while none has joined."""
    newcomers = sorted(
        each_node(core, f"{NODEGROUP_LABEL}={nodegroup}"), key=lambda n: n.metadata.name
    )
    for node in newcomers:
        instance_id = instance_of(node.spec.provider_id or "")
        if instance_id and instance_id not in known and mark_spare(core, node.metadata.name):
            return {"instance_id": instance_id, "node": node.metadata.name}
    return dict(_NONE)
