"""Nodes by instance id: find one, mark it unhealthy, clear it, watch it reboot, delete it;
mark a failed remediation on it; list those nodemedic took out of service.

A Node is found by ``spec.providerID`` (``listing.py``). Every op is idempotent; the state
machine may repeat any of them.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from lambdas.kube.listing import each_node, instance_of, scan
from nodemedic.catalog import healthy_status
from nodemedic.contracts.kube import (
    CLEARED_REASON,
    CORDONED_ANNOTATION,
    FAILED_CONDITION,
    FAULT_REASON_LABEL,
    FAULT_TYPE_LABEL,
    FIELD_MANAGER,
    FLEET_CONDITION,
    FLEET_LABEL,
    HEALTH_LABEL,
    HEALTH_STATUSES,
    SCHEDULABLE,
    TAINT_EFFECT,
    TAINT_KEY,
)
from nodemedic.remediate.decision import iso
from nodemedic.remediate.silence import ReadyNode

_MERGE = "application/merge-patch+json"
_STRATEGIC = "application/strategic-merge-patch+json"
_CONFLICT_RETRIES = 5
CONDITION_STATUSES = ("True", "False", "Unknown")
"""What a Node condition's status may be (Kubernetes' ``ConditionStatus``)."""


class NodeNotFound(LookupError):
    """The named Node does not exist (deleted, or replaced under another name)."""


@dataclass(frozen=True)
class Located:
    node: str | None
    boot_id: str | None
    ready: bool
    nodes: int
    """The cluster's Nodes, counted on the same listing: the quarantine limit's share of the
    cluster (``nodemedic.remediate.quarantine``)."""


@dataclass(frozen=True)
class BootState:
    ready: bool
    boot_id: str | None
    rebooted: bool


def tainted(core: client.CoreV1Api, only: str | None = None) -> list[dict[str, str]]:
    """The Nodes carrying nodemedic's taint, the ones it took out of service: ``node``,
    ``instance_id`` and ``fault_id`` (the taint's value) each. ``only``: that Node, read now
    (none where it is gone or carries no taint any more)."""
    found = []
    for node in each_node(core) if only is None else _alone(core, only):
        ours = next((t for t in node.spec.taints or [] if t.key == TAINT_KEY), None)
        if ours is not None:
            found.append(
                {
                    "node": node.metadata.name,
                    "instance_id": instance_of(node.spec.provider_id or ""),
                    "fault_id": ours.value or "",
                }
            )
    return found


def _alone(core: client.CoreV1Api, name: str) -> list[Any]:
    try:
        return [_read(core, name)]
    except NodeNotFound:
        return []


def ready_nodes(core: client.CoreV1Api) -> list[ReadyNode]:
    """The Ready Nodes of EC2 instances, each with when it last became Ready."""
    found = []
    for node in each_node(core):
        instance_id = instance_of(node.spec.provider_id or "")
        ready = next(
            (
                c
                for c in (node.status.conditions if node.status else None) or []
                if c.type == "Ready"
            ),
            None,
        )
        if instance_id and ready is not None and ready.status == "True":
            since = ready.last_transition_time or node.metadata.creation_timestamp
            found.append(ReadyNode(node.metadata.name, instance_id, since.timestamp()))
    return found


def locate(core: client.CoreV1Api, instance_id: str) -> Located:
    node, count = scan(core, instance_id, count=True)
    if node is None:
        return Located(node=None, boot_id=None, ready=False, nodes=count)
    return Located(
        node=node.metadata.name, boot_id=boot_id_of(node), ready=is_ready(node), nodes=count
    )


def mark(
    core: client.CoreV1Api,
    name: str,
    *,
    fault_id: str,
    condition: str,
    condition_status: str,
    reason: str,
    message: str,
    health_status: str,
    cordon: bool,
    taint: bool,
) -> None:
    """Condition and label always; the taint and the cordon only when asked, and a mark
    without them never undoes an earlier cordon or taint."""
    if health_status not in HEALTH_STATUSES:
        raise ValueError(f"health_status {health_status!r} is not one of {HEALTH_STATUSES}")
    if condition_status not in CONDITION_STATUSES:
        raise ValueError(f"condition_status {condition_status!r} is not True/False/Unknown")
    _set_condition(
        core, name, kind=condition, status=condition_status, reason=reason, message=message
    )

    def change(node: Any) -> dict[str, Any]:
        annotations, spec = cordoned(node) if cordon else ({}, {})
        labels: dict[str, str] = {HEALTH_LABEL: health_status}
        if taint:
            ours = {"key": TAINT_KEY, "value": fault_id, "effect": TAINT_EFFECT}
            spec["taints"] = [*other_taints(core, node), ours]
            # The fault is open while nodemedic holds the node: say which, as HyperPod does.
            labels |= {
                FAULT_TYPE_LABEL: _label_value(fault_id),
                FAULT_REASON_LABEL: _label_value(reason),
            }
        return {"metadata": {"labels": labels, "annotations": annotations}, "spec": spec}

    update_node(core, name, change)


Fragments = tuple[dict[str, str | None], dict[str, Any]]
"""A patch's annotations and spec fields."""


def cordoned(node: Any) -> Fragments:
    """The cordon, and nodemedic's mark that it put it there where the node was
    schedulable: a cordon someone else put there before is theirs to lift."""
    ours: dict[str, str | None] = {} if node.spec.unschedulable else {CORDONED_ANNOTATION: "true"}
    return ours, {"unschedulable": True}


def uncordoned(node: Any) -> Fragments:
    """nodemedic's own cordon lifted, with its mark; nothing for a node it did not cordon
    (an operator's maintenance cordon outlives a fault handled meanwhile)."""
    if CORDONED_ANNOTATION not in (node.metadata.annotations or {}):
        return {}, {}
    return {CORDONED_ANNOTATION: None}, {"unschedulable": None}


def hold_for_fleet(
    core: client.CoreV1Api,
    name: str,
    *,
    fault_id: str,
    condition: str,
    condition_status: str,
    reason: str,
    message: str,
    health_status: str,
    why: str,
) -> None:
    """A node whose fault is part of a fleet event, given back: marked as a monitor-only
    decision leaves it (condition and health label), the fleet label and condition saying
    why nodemedic held its hand, our taint gone and uncordoned (it may have been cordoned
    and drained before the pattern showed)."""
    mark(
        core,
        name,
        fault_id=fault_id,
        condition=condition,
        condition_status=condition_status,
        reason=reason,
        message=message,
        health_status=health_status,
        cordon=False,
        taint=False,
    )
    _set_condition(core, name, kind=FLEET_CONDITION, status="True", reason=reason, message=why)
    update_node(
        core, name, lambda node: given_back(core, node, {FLEET_LABEL: _label_value(fault_id)})
    )


_NOT_IN_LABEL = re.compile(r"[^A-Za-z0-9._-]")


def _label_value(text: str) -> str:
    """A valid label value (63 characters at most of ``[A-Za-z0-9._-]``, alphanumeric at both
    ends): a rule id or metric name from a user's catalog may hold anything."""
    return _NOT_IN_LABEL.sub("-", text)[:63].strip("-_.")


def given_back(
    core: client.CoreV1Api, node: Any, labels: dict[str, str], *taints: str
) -> dict[str, Any]:
    """The patch that puts ``labels`` on the node, takes the open fault's labels, our taint
    (and those with the keys ``taints``) and our cordon off: only the taints and labels of
    nodemedic's names, and only a cordon nodemedic put there."""
    closed: dict[str, str | None] = {FAULT_TYPE_LABEL: None, FAULT_REASON_LABEL: None}
    kept = taints_without(core, node, TAINT_KEY, *taints)
    annotations, spec = uncordoned(node)
    return {
        "metadata": {"labels": closed | labels, "annotations": annotations},
        "spec": {"taints": kept or None} | spec,
    }


def clear_condition(core: client.CoreV1Api, name: str, *, condition: str, message: str) -> None:
    """The fault's condition back to its healthy status, nodemedic's reason on it."""
    _set_condition(
        core,
        name,
        kind=condition,
        status=healthy_status(condition),
        reason=CLEARED_REASON,
        message=message,
    )


def clear(core: client.CoreV1Api, name: str, *, fault_id: str, condition: str) -> None:
    """Back to service: condition healthy, label Schedulable, our taint and cordon gone."""
    clear_condition(core, name, condition=condition, message=f"nodemedic remediated {fault_id}")
    lift(core, name)


def lift(core: client.CoreV1Api, name: str) -> None:
    """Back to work, the fault's condition kept: label Schedulable, our taint and our own
    cordon gone (a quarantine whose repair the breaker held too long)."""
    update_node(core, name, lambda node: given_back(core, node, {HEALTH_LABEL: SCHEDULABLE}))


def mark_failed(
    core: client.CoreV1Api, name: str, *, fault_id: str, step: str, error: str, message: str
) -> bool:
    """What a failed remediation leaves on its Node for people and tools: the fault and the
    step it stopped at as labels, the error as a condition. The cordon and the taint stay as
    they are: a failure neither takes out a node its remediation had not, nor gives back one
    it had. False when the Node is gone."""
    try:
        _set_condition(
            core, name, kind=FAILED_CONDITION, status="True", reason=error, message=message
        )
    except NodeNotFound:
        return False
    labels = {FAULT_TYPE_LABEL: fault_id, FAULT_REASON_LABEL: f"{step}-failed"}
    update_node(core, name, lambda node: {"metadata": {"labels": labels}})
    return True


def boot_state(core: client.CoreV1Api, name: str, boot_id: str | None) -> BootState:
    """``rebooted``: Ready again with a boot id other than the one seen before the reboot."""
    try:
        node = _read(core, name)
    except NodeNotFound:
        return BootState(ready=False, boot_id=None, rebooted=False)
    ready = is_ready(node)
    now = boot_id_of(node)
    return BootState(ready=ready, boot_id=now, rebooted=ready and now != boot_id)


def delete_node(core: client.CoreV1Api, name: str) -> bool:
    """True when this call deleted the Node, False when it was already gone."""
    try:
        core.delete_node(name)
    except client.ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def _read(core: client.CoreV1Api, name: str) -> Any:
    try:
        return core.read_node(name)
    except client.ApiException as exc:
        if exc.status == 404:
            raise NodeNotFound(f"no Node named {name!r}") from exc
        raise


def _set_condition(
    core: client.CoreV1Api, name: str, *, kind: str, status: str, reason: str, message: str
) -> None:
    """Strategic merge on ``type`` keeps the kubelet's and other agents' conditions; the
    transition time moves only when the status does."""
    node = _read(core, name)
    now = iso(datetime.datetime.now(datetime.UTC))
    before = next((c for c in node.status.conditions or [] if c.type == kind), None)
    transition = now
    if before is not None and before.status == status:
        transition = _timestamp(before.last_transition_time) or now
    condition = {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastHeartbeatTime": now,
        "lastTransitionTime": transition,
    }
    core.patch_node_status(name, {"status": {"conditions": [condition]}}, _content_type=_STRATEGIC)


def update_node(core: client.CoreV1Api, name: str, change: Callable[[Any], dict[str, Any]]) -> None:
    """Read, change, write with the read's resourceVersion: taints are one list, and a
    concurrent writer (the node lifecycle controller, an operator) must not be overwritten."""
    for attempt in range(_CONFLICT_RETRIES):
        node = _read(core, name)
        patch = change(node)
        patch["metadata"]["resourceVersion"] = node.metadata.resource_version
        try:
            # As nodemedic: the request reconcile reads who set the health label.
            core.patch_node(name, patch, _content_type=_MERGE, field_manager=FIELD_MANAGER)
            return
        except client.ApiException as exc:
            if exc.status != 409 or attempt == _CONFLICT_RETRIES - 1:
                raise


def taints_without(core: client.CoreV1Api, node: Any, *keys: str) -> list[dict[str, Any]]:
    """The node's taints but those with ``keys``, as a patch writes them: the list is
    replaced whole, so every taint someone else put there must be in it."""
    taints = [t for t in node.spec.taints or [] if t.key not in keys]
    serialized: list[dict[str, Any]] = core.api_client.sanitize_for_serialization(taints)
    return serialized


def other_taints(core: client.CoreV1Api, node: Any) -> list[dict[str, Any]]:
    return taints_without(core, node, TAINT_KEY)


def is_ready(node: Any) -> bool:
    conditions = node.status.conditions if node.status else None
    return any(c.type == "Ready" and c.status == "True" for c in conditions or [])


def boot_id_of(node: Any) -> str | None:
    """The boot the kubelet reports (``status.nodeInfo.bootID``, the kernel's boot_id)."""
    info = node.status.node_info if node.status else None
    return info.boot_id if info else None


def _timestamp(value: datetime.datetime | None) -> str | None:
    return iso(value) if value else None
