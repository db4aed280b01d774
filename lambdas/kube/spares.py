"""Spares on the Kubernetes side: which Standby instance's Node may be trusted with work,
bringing one into service, and holding a newly launched one back as the group's next spare.

A spare is in Auto Scaling ``Standby`` and a joined Node behind ``nodemedic.io/spare``
(label and ``NoSchedule`` taint). Auto Scaling runs no health checks on a Standby instance,
so nothing here trusts the group's word alone: a spare is used only if its Node is Ready,
carries no nodemedic fault taint and no deep-check verdict other than ``Passed``.
"""

from __future__ import annotations

import datetime
from typing import Any

from kubernetes import client

from lambdas.kube.listing import each_node, instance_of
from lambdas.kube.nodes import is_ready, taints_without, update_node
from nodemedic.contracts.kube import (
    DEEP_CHECK_LABEL,
    DEEP_CHECK_TAINT_KEY,
    NODEGROUP_LABEL,
    SPARE_LABEL,
    SPARE_TAINT_KEY,
    TAINT_EFFECT,
    TAINT_KEY,
)

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


def pick_spare(core: client.CoreV1Api, nodegroup: str) -> dict[str, Any]:
    """The first of ``nodegroup``'s Nodes held back as spares that is trusted, by instance
    id: ``{instance_id, node}``, both null when there is none. Found through the spare label,
    not the group's instance list, which grows with the group; that the instance is still
    in Standby is ``ExitStandby``'s to check, which fails for any other."""
    held = each_node(core, f"{SPARE_LABEL}=true,{NODEGROUP_LABEL}={nodegroup}")
    trusted = sorted(
        (instance_of(n.spec.provider_id or ""), n.metadata.name) for n in held if _trusted(n)
    )
    instance_id, node = next(((i, n) for i, n in trusted if i), (None, None))
    return {"instance_id": instance_id, "node": node}


def admit_spare(core: client.CoreV1Api, name: str) -> dict[str, Any]:
    """Into service: the spare label and taint off, every other taint kept."""

    def change(node: Any) -> dict[str, Any]:
        return {
            "metadata": {"labels": {SPARE_LABEL: None}},
            "spec": {"taints": taints_without(core, node, SPARE_TAINT_KEY) or None},
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
        return {
            "metadata": {"labels": {SPARE_LABEL: "true"}},
            "spec": {"taints": [*taints_without(core, node), taint]},
        }

    update_node(core, name, change)
    return taken


def hold_spare(core: client.CoreV1Api, nodegroup: str, since: datetime.datetime) -> dict[str, Any]:
    """The group's first Node created after ``since`` (when the spare left Standby, before
    the broken instance was set Unhealthy: a newcomer is the launch that replaced it) held
    back as a spare; ``{instance_id, node}``, both null while none has joined. The API
    server keeps whole seconds, so a Node counts only from the second after ``since``'s."""
    after = since.replace(microsecond=0)
    newcomers = sorted(
        (
            n
            for n in each_node(core, f"{NODEGROUP_LABEL}={nodegroup}")
            if n.metadata.creation_timestamp > after
        ),
        key=lambda n: n.metadata.name,
    )
    for node in newcomers:
        instance_id = instance_of(node.spec.provider_id or "")
        if instance_id and mark_spare(core, node.metadata.name):
            return {"instance_id": instance_id, "node": node.metadata.name}
    return dict(_NONE)
