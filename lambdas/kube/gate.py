"""The deep check as a gate: its verdict on a node (``deep_check_verdict``), a rebooted node
held behind it (``hold_for_deep_check``), and the nodes that waited behind it longer than
``deep_check_timeout`` (``overdue``).

A boot id that changed says the machine restarted, not that its accelerators work: with
``post_reboot_deep_check`` the reboot leaves its node cordoned, behind the health-check
taint, until the agent's deep check after the boot passes (the kube ``deep_check`` op then
uncordons it). A node whose verdict never comes (an agent without ``--deep-check-at-start``,
a check that hangs) would wait unseen; the reconcile asks for the overdue ones, and each
wait is told once: the node's own annotation remembers it, so no ledger item outlives a
deleted node.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from lambdas.kube.nodes import (
    clear_condition,
    cordoned,
    each_node,
    find_node,
    given_back,
    instance_of,
    other_taints,
    taints_without,
    uncordoned,
    update_node,
)
from lambdas.kube.silence import summary
from nodemedic.contracts.kube import (
    DEEP_CHECK_HELD_ANNOTATION,
    DEEP_CHECK_LABEL,
    DEEP_CHECK_OVERDUE_ANNOTATION,
    DEEP_CHECK_PASSED_AT_ANNOTATION,
    DEEP_CHECK_SINCE_ANNOTATION,
    DEEP_CHECK_TAINT_KEY,
    FAULT_REASON_LABEL,
    FAULT_TYPE_LABEL,
    HEALTH_LABEL,
    SCHEDULABLE,
    TAINT_KEY,
    UNSCHEDULABLE,
)
from nodemedic.remediate.decision import iso

VERDICTS = ("Passed", "Failed")


@dataclass(frozen=True)
class Overdue:
    node: str
    instance_id: str
    waited: int
    """Seconds behind the health-check taint without a verdict."""
    since: str
    """When the wait began (ISO 8601 UTC): what the told annotation remembers."""
    told: bool


def deep_check_verdict(
    core: client.CoreV1Api,
    instance_id: str,
    *,
    passed: bool,
    at: datetime.datetime,
    release_hold: bool = False,
) -> dict[str, Any]:
    """The deep check's verdict on the instance's Node. Passed admits it: label ``Passed``,
    health ``Schedulable``, the health-check taint off, but only a Node that still carries
    that taint and not nodemedic's own (a pass never gives back a node in remediation, nor
    one an operator already let in). Its cordon goes only with ``release_hold`` (no other
    remediation holds the node's lock) on a node a reboot held for this check
    (``DEEP_CHECK_HELD_ANNOTATION``), and only where nodemedic put it: anyone else's cordon
    is theirs. Failed labels it
    ``Failed``; its replacement is the decision's normal path. Every pass stamps ``at`` (its
    line's time) on the node, admitted or not: a reboot's hold reads it. ``changed`` False:
    labels, taints and cordon are as they were; ``uncordoned``: the hold's cordon was lifted."""
    node = find_node(core, instance_id)
    if node is None:
        return {"node": None, "changed": False, "uncordoned": False}
    changed = lifted_cordon = False

    def change(now: Any) -> dict[str, Any]:
        nonlocal changed, lifted_cordon
        keys = {t.key for t in now.spec.taints or []}
        if not passed:
            changed = True
            return {"metadata": {"labels": {DEEP_CHECK_LABEL: "Failed"}}}
        stamp = {DEEP_CHECK_PASSED_AT_ANNOTATION: iso(at)}
        changed = DEEP_CHECK_TAINT_KEY in keys and TAINT_KEY not in keys
        if not changed:
            return {"metadata": {"annotations": stamp}}
        held = DEEP_CHECK_HELD_ANNOTATION in (now.metadata.annotations or {})
        released_hold = release_hold and held
        kept = taints_without(core, now, DEEP_CHECK_TAINT_KEY)
        lifted, released = uncordoned(now) if released_hold else ({}, {})
        lifted_cordon = bool(released)
        return {
            "metadata": {
                "labels": {DEEP_CHECK_LABEL: "Passed", HEALTH_LABEL: SCHEDULABLE},
                # The wait is over; the hold's mark stays with a cordon it did not lift.
                "annotations": {DEEP_CHECK_SINCE_ANNOTATION: None}
                | stamp
                | lifted
                | ({DEEP_CHECK_HELD_ANNOTATION: None} if released_hold else {}),
            },
            "spec": {"taints": kept or None} | released,
        }

    update_node(core, node.metadata.name, change)
    return {"node": node.metadata.name, "changed": changed, "uncordoned": lifted_cordon}


def hold_for_deep_check(
    core: client.CoreV1Api,
    name: str,
    *,
    fault_id: str,
    condition: str,
    decision_id: str,
    rebooted_at: datetime.datetime,
) -> tuple[str, bool]:
    """The rebooted node's fault cleared, but not given back: nodemedic's taint and fault
    labels off, the health-check taint on, ``InProgress``, still cordoned, the wait's start
    and the holding decision annotated. Unless its deep check already passed after
    ``rebooted_at`` (the pass came before the watch saw the node back, and could admit
    nothing then): the node is given back, ``Passed``. Returns when the wait began, and
    whether the node waits."""
    since = iso(datetime.datetime.now(datetime.UTC))
    held = True

    def change(node: Any) -> dict[str, Any]:
        nonlocal held
        held = not _passed_after(node, rebooted_at)
        annotations: dict[str, str | None] = {
            DEEP_CHECK_HELD_ANNOTATION: decision_id if held else None,
            DEEP_CHECK_SINCE_ANNOTATION: since if held else None,
            DEEP_CHECK_OVERDUE_ANNOTATION: None,
        }
        if not held:
            passed = {HEALTH_LABEL: SCHEDULABLE, DEEP_CHECK_LABEL: "Passed"}
            admitted = given_back(core, node, passed, DEEP_CHECK_TAINT_KEY)
            admitted["metadata"]["annotations"] |= annotations
            return admitted
        taints = other_taints(core, node)
        if not any(t["key"] == DEEP_CHECK_TAINT_KEY for t in taints):
            taints.append({"key": DEEP_CHECK_TAINT_KEY, "effect": "NoSchedule"})
        ours, cordon = cordoned(node)
        return {
            "metadata": {
                "labels": {
                    FAULT_TYPE_LABEL: None,
                    FAULT_REASON_LABEL: None,
                    HEALTH_LABEL: UNSCHEDULABLE,
                    DEEP_CHECK_LABEL: "InProgress",
                },
                "annotations": annotations | ours,
            },
            "spec": cordon | {"taints": taints},
        }

    update_node(core, name, change)
    then = "awaiting the post-repair deep check" if held else "its deep check since passed"
    clear_condition(
        core, name, condition=condition, message=f"nodemedic rebooted for {fault_id}; {then}"
    )
    return since, held


def _passed_after(node: Any, rebooted_at: datetime.datetime) -> bool:
    """Whether the node's last pass (``DEEP_CHECK_PASSED_AT_ANNOTATION``) was logged after
    the reboot began: a pass from before it says nothing of the node since. The verdict's
    time is kept to the second (the decision's ``first_seen``), so one logged in the
    reboot's own second does not count: a boot takes longer than that."""
    at = _stamped(node, DEEP_CHECK_PASSED_AT_ANNOTATION)
    return at is not None and at >= rebooted_at


def _stamped(node: Any, annotation: str) -> datetime.datetime | None:
    """The time in one of nodemedic's annotations; None without one, or for one someone
    mangled (not ISO 8601, or without its zone): it then proves nothing."""
    stamped = (node.metadata.annotations or {}).get(annotation)
    try:
        at = datetime.datetime.fromisoformat(stamped) if stamped else None
    except ValueError:
        return None
    return at if at and at.tzinfo else None


def waiting_since(node: Any) -> datetime.datetime | None:
    """When the node began waiting for a verdict (nodemedic's stamp, else its creation);
    None when it waits for none."""
    if not any(t.key == DEEP_CHECK_TAINT_KEY for t in node.spec.taints or []):
        return None
    if (node.metadata.labels or {}).get(DEEP_CHECK_LABEL) in VERDICTS:
        return None
    # Without nodemedic's stamp, or with a mangled one, the node's age bounds the wait.
    created: datetime.datetime = node.metadata.creation_timestamp
    return _stamped(node, DEEP_CHECK_SINCE_ANNOTATION) or created


def _tell(core: client.CoreV1Api, late: Overdue) -> bool:
    """Remember on the node that its wait was told; False when a concurrent run did."""
    told = False

    def change(node: Any) -> dict[str, Any]:
        nonlocal told
        annotations = node.metadata.annotations or {}
        told = annotations.get(DEEP_CHECK_OVERDUE_ANNOTATION) != late.since
        return {"metadata": {"annotations": {DEEP_CHECK_OVERDUE_ANNOTATION: late.since}}}

    update_node(core, late.node, change)
    return told


def overdue(core: client.CoreV1Api, timeout_seconds: int, now: datetime.datetime) -> dict[str, Any]:
    """``{count, nodes, new: {count, message}}``: every node waiting for its deep check
    longer than ``timeout_seconds``, and the ones not told of this wait before, marked told
    now (``message`` names them and how long each waited, for SNS)."""
    found = []
    for node in each_node(core):
        since = waiting_since(node)
        if since is None or (now - since).total_seconds() < timeout_seconds:
            continue
        mark = iso(since)
        found.append(
            Overdue(
                node=node.metadata.name,
                instance_id=instance_of(node.spec.provider_id or ""),
                waited=int((now - since).total_seconds()),
                since=mark,
                told=(node.metadata.annotations or {}).get(DEEP_CHECK_OVERDUE_ANNOTATION) == mark,
            )
        )
    found.sort(key=lambda o: o.node)
    new = [o for o in found if not o.told and _tell(core, o)]
    return summary(
        [o.node for o in found],
        [f"{o.node} ({o.instance_id}): waiting since {o.since}, {o.waited} s" for o in new],
        f"{len(new)} node(s) had no deep check verdict within deep_check_timeout "
        f"({timeout_seconds} s): each stays behind the {DEEP_CHECK_TAINT_KEY} taint, out of "
        "service. Its agent may lack --deep-check-at-start, may not run, or its check may "
        "hang (docs/deploy.md). Each wait is told once.",
    )
