"""What ``nodemedic history`` shows of one remediation, from its ledger record.

The record (``<instance-id>`` / ``decision#<id>``) holds the decision's fields, ``state``,
``at_<state>`` for every state its remediation entered, the node changes' times
(``actions``, JSON) and, once ended, ``outcome``, ``reason`` or ``failed_step`` and
``error``. One shape for the table and for JSON (docs/contracts.md): keys only grow.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from nodemedic.contracts.kube import MANUAL_SOURCE
from nodemedic.contracts.ledger import DECISION_SK_PREFIX, STEP_AT_PREFIX
from nodemedic.remediate import handoff

SCHEMA: Final = 1
FIELDS: Final = (
    "decision_id",
    "cluster",
    "instance_id",
    "node",
    "node_group",
    "fault_id",
    "action",
    "source",
    "evidence_line",
    "first_seen",
    "started_at",
    "state",
    "outcome",
    "reason",
    "failed_step",
    "error",
    "ended_at",
    "requested_by",
    "request_reason",
    "execution",
    "approved_by",
    "denied_by",
    "approval_reason",
    "handed_off_to",
    "ticket",
    "taken_back_by",
    "substrate",
)
"""The record's fields an entry carries, each null when the record has none (yet)."""


def is_record(item: Mapping[str, Any]) -> bool:
    return str(item.get("sk", "")).startswith(DECISION_SK_PREFIX)


def entry(item: Mapping[str, Any]) -> dict[str, Any]:
    """One remediation as history shows it; ``item`` in plain values (strings, numbers)."""
    shown: dict[str, Any] = {name: item.get(name) for name in FIELDS}
    shown["schema"] = SCHEMA
    shown["triggered_by"] = (
        item.get("requested_by")
        if item.get("source") in (MANUAL_SOURCE, handoff.SOURCE)
        else f"{item.get('source')} line of {item.get('instance_id')}"
    )
    steps = [
        {"step": name[len(STEP_AT_PREFIX) :], "at": at}
        for name, at in item.items()
        if name.startswith(STEP_AT_PREFIX)
    ]
    opened = {"step": "open", "at": item.get("started_at")}
    shown["steps"] = [opened, *sorted(steps, key=lambda s: str(s["at"]))]
    shown["node_changes"] = _changes(item.get("actions"))
    seconds = item.get("seconds")
    shown["seconds"] = float(seconds) if seconds is not None else None
    return shown


def _changes(raw: Any) -> list[dict[str, Any]]:
    """``[{change, at}]`` from the record's ``actions`` (``{marked: {at}, ...}`` as JSON)."""
    if not isinstance(raw, str):
        return []
    try:
        times = json.loads(raw)
    except ValueError:
        return []
    if not isinstance(times, dict):
        return []
    found = [
        {"change": name, "at": value.get("at")}
        for name, value in times.items()
        if isinstance(value, dict)
    ]
    return sorted(found, key=lambda c: str(c["at"]))


def lines(shown: Mapping[str, Any]) -> list[str]:
    """The entry for a person: a headline, the evidence and trigger, every step and change."""
    end = shown["outcome"] or shown["state"]
    if shown["substrate"] not in (None, "autoscaling", "none"):
        end = f"{end} ({shown['substrate']})"  # who repaired it, where not Auto Scaling
    out = [
        f"{shown['started_at']}  {shown['instance_id']} ({shown['node'] or 'node unknown'}, "
        f"group {shown['node_group'] or 'unknown'})  {shown['fault_id']}: "
        f"{shown['action']} -> {end}",
        f"  triggered by: {shown['triggered_by']}",
        f"  evidence:     {shown['evidence_line']}",
    ]
    if shown["reason"]:
        out.append(f"  decision:     {shown['reason']}")
    if shown["approved_by"] or shown["denied_by"]:
        answer = "approved" if shown["approved_by"] else "denied"
        who = shown["approved_by"] or shown["denied_by"]
        out.append(f"  {answer} by:  {who}: {shown['approval_reason']}")
    if shown["taken_back_by"]:
        out.append(f"  taken back:   by {shown['taken_back_by']}")
    if shown["failed_step"]:
        out.append(f"  failed at:    {shown['failed_step']}: {shown['error']}")
    out += [f"  {s['at']}  {s['step']}" for s in shown["steps"]]
    out += [f"  {c['at']}  node {c['change']}" for c in shown["node_changes"]]
    return out
