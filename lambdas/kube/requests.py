"""The kube Lambda's ``requested`` op: the Nodes whose health label asks for a reboot or a
replacement, each with the manual decision that answers it (``nodemedic.remediate.manual``).

HyperPod's way: an operator sets ``nodemedic.io/node-health-status`` to
``UnschedulablePendingReboot`` or ``UnschedulablePendingReplacement``, and with it
``nodemedic.io/requested-by`` to their own user name. EKS emits no event for a label change,
so the request reconcile asks every minute. Who asked is that annotation, not the write's
field manager (a name any writer picks): the chart's admission policy admits the pair only
from an allow-listed identity that is no node's and names itself there, so a label without
it, or naming a node, is no request. A label nodemedic wrote itself (its mark of a monitored
node says the same words; its writes use its own field manager) is no request either, and a
node carrying nodemedic's taint is nodemedic's already (at work, or left out and watched by
the reconcile). The decision's id comes from when the label was set, so the same request
seen at every tick starts one execution.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubernetes import client

from lambdas.kube.listing import each_node, instance_of
from lambdas.observability import logger
from nodemedic.contracts.kube import (
    FIELD_MANAGER,
    HEALTH_LABEL,
    NODE_USER_PREFIX,
    PENDING_STATUSES,
    REQUESTED_BY_ANNOTATION,
    TAINT_KEY,
)
from nodemedic.remediate.manual import RequestError, manual_decision

SELECTOR = f"{HEALTH_LABEL} in ({','.join(PENDING_STATUSES)})"


def label_setter(node: Any) -> tuple[str, datetime]:
    """(field manager, time) of the last write of the health label; the Node's creation when
    no managed field names it (an apiserver that keeps none)."""
    field = f"f:{HEALTH_LABEL}"
    for entry in node.metadata.managed_fields or []:
        labels = (entry.fields_v1 or {}).get("f:metadata", {}).get("f:labels", {})
        if field in labels and entry.time is not None:
            return str(entry.manager), entry.time
    return "unknown", node.metadata.creation_timestamp


def requester(node: Any) -> str:
    """The authenticated user the admission policy made the label's writer name; RequestError
    where none is named, or a node is."""
    who = str((node.metadata.annotations or {}).get(REQUESTED_BY_ANNOTATION, ""))
    if not who:
        raise RequestError(
            f"no {REQUESTED_BY_ANNOTATION} annotation: a label request names its writer "
            "(the chart's labelRequests policy)"
        )
    if who.startswith(NODE_USER_PREFIX):
        raise RequestError(f"{who} is a node's identity: a node never asks for a repair")
    return who


def requested(core: client.CoreV1Api, cluster: str) -> dict[str, Any]:
    """``{nodes: [{node, instance_id, decision}]}``: the requests to start."""
    found = []
    for node in each_node(core, SELECTOR):
        instance = instance_of(node.spec.provider_id or "")
        if not instance or any(t.key == TAINT_KEY for t in node.spec.taints or []):
            continue
        manager, at = label_setter(node)
        if manager == FIELD_MANAGER:
            continue
        value = node.metadata.labels[HEALTH_LABEL]
        try:
            decision = manual_decision(
                cluster,
                instance,
                PENDING_STATUSES[value],
                requested_by=requester(node),
                reason=f"{value} (label {HEALTH_LABEL}, field manager {manager})",
                requested_at=at,
            )
        except RequestError as exc:
            # Neither a label nobody vouched for nor a node nodemedic cannot act on (a
            # Fargate node's providerID names no EC2 instance) may keep every other request
            # from starting.
            logger.warning(
                "label request ignored", extra={"node": node.metadata.name, "why": str(exc)}
            )
            continue
        found.append({"node": node.metadata.name, "instance_id": instance, "decision": decision})
    return {"nodes": found}
