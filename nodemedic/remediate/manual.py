"""Decisions a person asks for: ``nodemedic reboot|replace NODE --reason``, or the node's
health label set to ``UnschedulablePendingReboot`` or ``UnschedulablePendingReplacement``.

They are decision records like the classifier's, so they go through the same state machine,
its breaker, its lock and its ledger: a hand is no faster path around the safety limits.
Only their ``source`` (``manual``), their fault (``manual-<action>``) and two extra fields,
``requested_by`` and ``request_reason``, tell them apart; the evidence line says the same
in words for the mail and the node condition.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Final

from nodemedic.contracts.kube import MANUAL_CONDITION, MANUAL_SOURCE, STATUS_OF_ACTION
from nodemedic.contracts.metrics import METRICS_NAMESPACE
from nodemedic.remediate.decision import Decision, decision_id, evidence, iso

ACTIONS: Final = ("reboot", "replace")
"""What a person may ask for: notify needs no hand, and nothing else acts on a node."""
TEXT_MAX: Final = 256
"""Characters of a reason or a requester kept: what a mail subject and a node condition show."""
_INSTANCE = re.compile(r"^i-[0-9a-f]{8,17}$")


class RequestError(ValueError):
    """A manual request that cannot become a decision; the message says which part."""


def fault_id(action: str) -> str:
    return f"manual-{action}"


def _text(value: str, what: str) -> str:
    cleaned = evidence(value.strip())[:TEXT_MAX]
    if not cleaned:
        raise RequestError(f"a manual request needs {what}")
    return cleaned


def manual_decision(
    cluster: str,
    instance_id: str,
    action: str,
    *,
    requested_by: str,
    reason: str,
    requested_at: datetime,
) -> dict[str, Any]:
    """The decision record of a request. Its id is deterministic in the request's time (to
    the second): the same request seen again (a CLI retry, the same label at the next
    reconcile) names the same execution and starts nothing twice."""
    if action not in ACTIONS:
        raise RequestError(f"a manual request is reboot or replace, not {action!r}")
    if not _INSTANCE.match(instance_id):
        raise RequestError(f"not an EC2 instance id: {instance_id!r}")
    who = _text(requested_by, "who asked (requested_by)")
    why = _text(reason, "a reason")
    fault = fault_id(action)
    metric = "Manual" + action.capitalize()
    record = Decision(
        decision_id=decision_id(cluster, instance_id, fault, int(requested_at.timestamp())),
        cluster=cluster,
        instance_id=instance_id,
        fault_id=fault,
        component="node",
        action=action,
        severity="critical",
        condition=MANUAL_CONDITION,
        condition_status="True",
        metric=metric,
        metric_namespace=METRICS_NAMESPACE,
        health_status=STATUS_OF_ACTION[action],
        evidence_line=evidence(f"{action} requested by {who}: {why}"),
        source=MANUAL_SOURCE,
        first_seen=iso(requested_at),
        count=1,
    ).to_record()
    return record | {"requested_by": who, "request_reason": why}
