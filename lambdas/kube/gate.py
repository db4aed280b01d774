"""The deep check as a gate: its verdict on a node (``deep_check_verdict``), a rebooted node
held behind it (``hold_for_deep_check``), and the nodes that waited behind it longer than
``deep_check_timeout`` (``overdue``).

A boot id that changed says the machine restarted, not that its accelerators work: with
``post_reboot_deep_check`` the reboot leaves its node cordoned, behind the health-check
taint, until the agent's deep check after the boot passes (the kube ``deep_check`` op then
uncordons it). A node whose verdict never comes (an agent without ``--deep-check-at-start``,
a check that hangs, a check that found nothing it could run) would wait unseen; the
reconcile asks for the overdue ones, and each wait is told once: the node's own annotation
remembers it, so no ledger item outlives a deleted node. A node a reboot held is given back
then, ``Unchecked``: its reboot cleared the fault, and a check that never comes must not
keep it out of service for good. A new node, never in service, stays out for people to
decide.

A held node is admitted only by a pass of its current boot (``not_its_boot``): between the
reboot and the new boot's registration, the previous boot's key still proves lines, and
whoever kept it could otherwise sign a pass for a node whose check never ran.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from lambdas.kube.gate_record import Noted, record_hold, record_pass
from lambdas.kube.listing import each_node, find_node, instance_of
from lambdas.kube.nodes import (
    boot_id_of,
    clear_condition,
    cordoned,
    given_back,
    other_taints,
    taints_without,
    uncordoned,
    update_node,
)
from lambdas.kube.silence import summary
from lambdas.observability import logger
from nodemedic.contracts.kube import (
    DEEP_CHECK_HELD_ANNOTATION,
    DEEP_CHECK_LABEL,
    DEEP_CHECK_OVERDUE_ANNOTATION,
    DEEP_CHECK_SINCE_ANNOTATION,
    DEEP_CHECK_TAINT_KEY,
    DEEP_CHECK_UNCHECKED,
    FAULT_REASON_LABEL,
    FAULT_TYPE_LABEL,
    HEALTH_LABEL,
    SCHEDULABLE,
    TAINT_KEY,
    UNSCHEDULABLE,
)
from nodemedic.remediate.decision import iso

VERDICTS = ("Passed", "Failed")


def not_its_boot(key_boot_id: str | None, *current: str | None) -> str | None:
    """Why a pass whose key is of boot ``key_boot_id`` may not admit a held node whose
    current boot each of ``current`` names (None: that source does not know it), or None
    when it may. Every source that knows must agree with the key: the boot the reboot's
    watch saw come back cannot be the old one, the Node's bootID is the kubelet's now. A
    pass that names no boot (an older classifier's, docs/upgrade.md) is judged on its time
    only, as before."""
    if key_boot_id is None:
        return None
    known = {boot for boot in current if boot}
    if known == {key_boot_id}:
        return None
    now = ", ".join(sorted(known)) or "unknown"
    return f"the pass is signed with the key of boot {key_boot_id}, the node's boot is {now}"


@dataclass(frozen=True)
class Overdue:
    node: str
    instance_id: str
    waited: int
    """Seconds behind the health-check taint without a verdict."""
    since: str
    """When the wait began (ISO 8601 UTC): what the told annotation remembers."""
    told: bool
    held: bool
    """A reboot held the node for this check (``DEEP_CHECK_HELD_ANNOTATION``)."""


def deep_check_verdict(
    core: client.CoreV1Api,
    instance_id: str,
    *,
    passed: bool,
    at: datetime.datetime,
    ledger: str,
    release_hold: bool = False,
    key_boot_id: str | None = None,
) -> dict[str, Any]:
    """The deep check's verdict on the instance's Node. Passed admits it: label ``Passed``,
    health ``Schedulable``, the health-check taint off, but only a Node that still carries
    that taint and not nodemedic's own (a pass never gives back a node in remediation, nor
    one an operator already let in), and only a pass logged (``at``) after the node's last
    hold began, as the gate's record in ``ledger`` says (``gate_record``): a pass from
    before says nothing of the node since. Its cordon goes only with ``release_hold`` (no
    other remediation holds the node's lock) on a node a reboot held for this check
    (``DEEP_CHECK_HELD_ANNOTATION``), and only where nodemedic put it: anyone else's cordon
    is theirs. A held node only by a pass whose key is of its current boot (``key_boot_id``,
    ``not_its_boot``; ``refused`` says why not). Every pass is noted in the record first,
    admitted or not: a hold that comes later reads it there. Failed labels it ``Failed``;
    its replacement is the decision's normal path. ``changed`` False: labels, taints and
    cordon are as they were; ``uncordoned``: the hold's cordon was lifted; ``kept_cordon``:
    the node was admitted but the hold's cordon stays (no ``release_hold``). A pass asked
    again with ``release_hold`` lifts that cordon then: the node it admitted is ``Passed``,
    out of the health-check taint, still held."""
    hold = record_pass(ledger, instance_id, at, key_boot_id) if passed else Noted(None, None)
    node = find_node(core, instance_id)
    if node is None:
        return {
            "node": None,
            "changed": False,
            "uncordoned": False,
            "kept_cordon": False,
            "refused": None,
        }
    changed = lifted_cordon = kept_cordon = False
    refused: str | None = None

    def change(now: Any) -> dict[str, Any]:
        nonlocal changed, lifted_cordon, kept_cordon, refused
        keys = {t.key for t in now.spec.taints or []}
        if not passed:
            changed = True
            return {"metadata": {"labels": {DEEP_CHECK_LABEL: "Failed"}}}
        fresh = hold.at is None or at >= hold.at
        if fresh and hold.at is not None:
            refused = not_its_boot(key_boot_id, hold.boot, boot_id_of(now))
        admissible = fresh and refused is None
        held = DEEP_CHECK_HELD_ANNOTATION in (now.metadata.annotations or {})
        waiting = DEEP_CHECK_TAINT_KEY in keys
        admitted_held = (
            not waiting
            and held
            and release_hold
            and (now.metadata.labels or {}).get(DEEP_CHECK_LABEL) == "Passed"
        )
        changed = admissible and TAINT_KEY not in keys and (waiting or admitted_held)
        if not changed:
            return {"metadata": {}}
        released_hold = release_hold and held
        kept_cordon = held and not released_hold
        kept = taints_without(core, now, DEEP_CHECK_TAINT_KEY)
        lifted, released = uncordoned(now) if released_hold else ({}, {})
        lifted_cordon = bool(released)
        return {
            "metadata": {
                "labels": {DEEP_CHECK_LABEL: "Passed", HEALTH_LABEL: SCHEDULABLE},
                # The wait is over; the hold's mark stays with a cordon it did not lift.
                "annotations": {DEEP_CHECK_SINCE_ANNOTATION: None}
                | lifted
                | ({DEEP_CHECK_HELD_ANNOTATION: None} if released_hold else {}),
            },
            "spec": {"taints": kept or None} | released,
        }

    update_node(core, node.metadata.name, change)
    if refused:
        logger.warning(
            "deep check pass refused",
            extra={"instance_id": instance_id, "node": node.metadata.name, "reason": refused},
        )
    return {
        "node": node.metadata.name,
        "changed": changed,
        "uncordoned": lifted_cordon,
        "kept_cordon": kept_cordon,
        "refused": refused,
    }


def hold_for_deep_check(
    core: client.CoreV1Api,
    name: str,
    *,
    fault_id: str,
    condition: str,
    decision_id: str,
    rebooted_at: datetime.datetime,
    ledger: str,
    boot_id: str | None = None,
) -> tuple[str, bool]:
    """The rebooted node's fault cleared, but not given back: nodemedic's taint and fault
    labels off, the health-check taint on, ``InProgress``, still cordoned, the wait's start
    and the holding decision annotated, and the hold noted in the gate's record in
    ``ledger`` as begun at ``rebooted_at`` for boot ``boot_id`` (the one the reboot's watch
    saw come back; the Node's when not given). Unless the record says its deep check already
    passed after ``rebooted_at`` with the key of that boot (the pass came before the watch
    saw the node back, and could admit nothing then): the node is then given back,
    ``Passed``. Returns when the wait began, and whether the node waits."""
    since = iso(datetime.datetime.now(datetime.UTC))
    instance_id = ""
    node_boot: str | None = None

    def hold(node: Any) -> dict[str, Any]:
        nonlocal instance_id, node_boot
        instance_id = instance_of(node.spec.provider_id or "")
        node_boot = boot_id_of(node)
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
                "annotations": {
                    DEEP_CHECK_HELD_ANNOTATION: decision_id,
                    DEEP_CHECK_SINCE_ANNOTATION: since,
                    DEEP_CHECK_OVERDUE_ANNOTATION: None,
                }
                | ours,
            },
            "spec": cordon | {"taints": taints},
        }

    def admit(node: Any) -> dict[str, Any]:
        # A pass that came meanwhile may have admitted the node already.
        if (node.metadata.annotations or {}).get(DEEP_CHECK_HELD_ANNOTATION) != decision_id:
            return {"metadata": {}}
        passed = {HEALTH_LABEL: SCHEDULABLE, DEEP_CHECK_LABEL: "Passed"}
        admitted = given_back(core, node, passed, DEEP_CHECK_TAINT_KEY)
        admitted["metadata"]["annotations"] |= {
            DEEP_CHECK_HELD_ANNOTATION: None,
            DEEP_CHECK_SINCE_ANNOTATION: None,
        }
        return admitted

    # Held first, noted second: a pass noted after this note finds the node held.
    update_node(core, name, hold)
    passed = record_hold(ledger, instance_id, rebooted_at, decision_id, boot_id or node_boot)
    refused = None
    if passed.at is not None and passed.at >= rebooted_at:
        refused = not_its_boot(passed.boot, boot_id, node_boot)
        if refused:
            logger.warning(
                "deep check pass refused",
                extra={"instance_id": instance_id, "node": name, "reason": refused},
            )
    held = passed.at is None or passed.at < rebooted_at or refused is not None
    if not held:
        update_node(core, name, admit)
    then = "awaiting the post-repair deep check" if held else "its deep check since passed"
    clear_condition(
        core, name, condition=condition, message=f"nodemedic rebooted for {fault_id}; {then}"
    )
    return since, held


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


def _give_back(core: client.CoreV1Api, late: Overdue) -> bool:
    """The overdue node a reboot held, back in service, ``Unchecked``; False when it is no
    longer that wait's (a verdict came, someone let it in) or a remediation has it since
    (nodemedic's taint, or a health label other than the hold's): that one is not ours to
    give back. The check and the patch are one write, so a remediation's taint and cordon
    land either before it (the node stays) or after it (they hold)."""
    gave = False

    def change(node: Any) -> dict[str, Any]:
        nonlocal gave
        annotations = node.metadata.annotations or {}
        labels = node.metadata.labels or {}
        gave = (
            DEEP_CHECK_HELD_ANNOTATION in annotations
            and annotations.get(DEEP_CHECK_SINCE_ANNOTATION) == late.since
            and waiting_since(node) is not None
            and not any(t.key == TAINT_KEY for t in node.spec.taints or [])
            and labels.get(HEALTH_LABEL) == UNSCHEDULABLE
        )
        if not gave:
            return {"metadata": {}}
        patch = given_back(
            core,
            node,
            {HEALTH_LABEL: SCHEDULABLE, DEEP_CHECK_LABEL: DEEP_CHECK_UNCHECKED},
            DEEP_CHECK_TAINT_KEY,
        )
        patch["metadata"]["annotations"] |= {
            DEEP_CHECK_HELD_ANNOTATION: None,
            DEEP_CHECK_SINCE_ANNOTATION: None,
        }
        return patch

    update_node(core, late.node, change)
    return gave


def overdue(core: client.CoreV1Api, timeout_seconds: int, now: datetime.datetime) -> dict[str, Any]:
    """``{count, nodes, new: {count, message}, given_back}``: every node waiting for its deep
    check longer than ``timeout_seconds``, and the ones not told of this wait before, marked
    told now (``message`` names them and how long each waited, for SNS); ``given_back``:
    those a reboot held, back in service now (``_give_back``)."""
    found = []
    for node in each_node(core):
        since = waiting_since(node)
        if since is None or (now - since).total_seconds() < timeout_seconds:
            continue
        mark = iso(since)
        annotations = node.metadata.annotations or {}
        found.append(
            Overdue(
                node=node.metadata.name,
                instance_id=instance_of(node.spec.provider_id or ""),
                waited=int((now - since).total_seconds()),
                since=mark,
                told=annotations.get(DEEP_CHECK_OVERDUE_ANNOTATION) == mark,
                held=DEEP_CHECK_HELD_ANNOTATION in annotations,
            )
        )
    found.sort(key=lambda o: o.node)
    back = {o.node for o in found if o.held and _give_back(core, o)}
    new = [o for o in found if not o.told and (o.node in back or _tell(core, o))]

    def line(o: Overdue) -> str:
        then = f"given back, {DEEP_CHECK_UNCHECKED}" if o.node in back else "still out"
        return f"{o.node} ({o.instance_id}): waiting since {o.since}, {o.waited} s; {then}"

    told = summary(
        [o.node for o in found],
        [line(o) for o in new],
        f"{len(new)} node(s) had no deep check verdict within deep_check_timeout "
        f"({timeout_seconds} s). A node a reboot held is given back, its deep check "
        f"label {DEEP_CHECK_UNCHECKED}: the reboot cleared its fault. A new node stays behind "
        f"the {DEEP_CHECK_TAINT_KEY} taint, out of service. Its agent may lack "
        "--deep-check-at-start, may not run, may have found no tool to check with, or its "
        "check may hang (docs/deploy.md). Each wait is told once.",
    )
    return told | {"given_back": sorted(back)}
