"""The remediation state machine's arithmetic: ``plan`` and ``elapsed`` (see lambdas/policy.py).

Thin, and standard library only, so the function's bundle is just the ``lambdas`` package.
Bad input raises ``PolicyError``: the task fails, the state machine records where and why.
"""

from __future__ import annotations

from typing import Any

from nodemedic.remediate.errors import PolicyError
from nodemedic.remediate.policy import Group, Policy, elapsed, parse_time, plan


def _group(raw: Any) -> Group | None:
    if not isinstance(raw, dict) or not raw.get("found"):
        return None
    return Group(name=str(raw["name"]), size=int(raw["size"]))


def _last_reboot(raw: Any) -> str | None:
    """The ``at`` of a DynamoDB GetItem result for the reboot marker, if there is one."""
    if not isinstance(raw, dict):
        return None
    at = raw.get("Item", {}).get("at", {}).get("S")
    return str(at) if at else None


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    op = event.get("op")
    if op == "plan":
        last = _last_reboot(event.get("last_reboot"))
        result = plan(
            event["decision"],
            _group(event.get("group")),
            parse_time(last, "last reboot") if last else None,
            parse_time(event["now"], "now"),
            Policy.from_mapping(event["policy"]),
        )
        return result.to_mapping()
    if op == "elapsed":
        return {"seconds": elapsed(event["since"], event["until"])}
    raise PolicyError(f"unknown op {op!r}: expected plan or elapsed")
