"""Two replays of one history, under the built-in catalog and a candidate: what changes.

An operator who drafts a rule asks what it would have done to last month's fleet before
enabling it: for each node and fault, the actions taken before → after, and the totals.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TextIO

from console.backtest.report import TOTALS


def _actions(doc: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """Per (node, fault): its decisions' actions in time order, one word each."""
    found: dict[tuple[str, str], list[str]] = {}
    for row in doc["rows"]:
        found.setdefault((row["node"], row["fault_id"]), []).append(row["action"])
    return {key: ", ".join(actions) for key, actions in found.items()}


def changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """The ``--catalog`` document: rows whose actions differ (``none``: no such fault under
    that catalog) and both totals."""
    old, new = _actions(before), _actions(after)
    return {
        "schema": before["schema"],
        "changes": [
            {
                "node": node,
                "fault_id": fault,
                "before": old.get(key, "none"),
                "after": new.get(key, "none"),
            }
            for key in sorted(old.keys() | new.keys())
            for node, fault in [key]
            if old.get(key) != new.get(key)
        ],
        "totals": {"before": before["totals"], "after": after["totals"]},
    }


def print_changes(found: Mapping[str, Any], out: TextIO) -> None:
    for change in found["changes"]:
        print(
            f"{change['node']}  {change['fault_id']}: {change['before']} -> {change['after']}",
            file=out,
        )
    if not found["changes"]:
        print("the candidate catalog changes nothing on this history", file=out)
    before, after = found["totals"]["before"], found["totals"]["after"]
    for name in TOTALS:
        mark = "" if before[name] == after[name] else "  *"
        print(
            f"{name.replace('_', ' '):>13}  {before[name]:>6} -> {after[name]:<6}{mark}", file=out
        )
