"""The post-reboot gate's record in the ledger (``contracts.ledger.GATE_PK``): the last
pass's line time and its key's boot, and when the node's last hold began and for which
boot.

Both used to live on the Node, whose own credential may write its annotations: a pass time
set in the future there had the hold skipped. The ledger is out of a node's reach, and
only the kube Lambda's gate ops write this item.

The pass and the hold meet here. Each writes its own time and, in the same UpdateItem,
reads the other's back (``ALL_NEW``); DynamoDB applies the two one after the other, so
whichever comes second sees the first. The hold writes after it cordoned the node, and the
pass before it reads the node, so the second one also finds the node as the first left it.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

import boto3

from nodemedic.contracts.ledger import GATE_PK
from nodemedic.remediate.decision import iso

PASSED_AT = "passed_at"
PASSED_BOOT = "passed_boot"
HELD_SINCE = "held_since"
HELD_BY = "held_by"
HELD_BOOT = "held_boot"


@dataclass(frozen=True)
class Noted:
    """What the other side noted last: its time (None: never) and its boot (None: not
    named). For a pass, the boot whose key proved it; for a hold, the boot the reboot's
    watch saw come back."""

    at: datetime.datetime | None
    boot: str | None


def record_pass(table: str, instance_id: str, at: datetime.datetime, boot: str | None) -> Noted:
    """Note a pass logged at ``at`` by boot ``boot``; the node's last hold."""
    item = _update(table, instance_id, {PASSED_AT: iso(at), PASSED_BOOT: boot})
    return _noted(item, HELD_SINCE, HELD_BOOT)


def record_hold(
    table: str, instance_id: str, since: datetime.datetime, decision_id: str, boot: str | None
) -> Noted:
    """Note a hold that began at ``since`` for boot ``boot``; the last pass."""
    values = {HELD_SINCE: iso(since), HELD_BY: decision_id, HELD_BOOT: boot}
    item = _update(table, instance_id, values)
    return _noted(item, PASSED_AT, PASSED_BOOT)


def _update(table: str, instance_id: str, values: dict[str, str | None]) -> dict[str, Any]:
    """Set the values given, remove those None: a boot not named must not leave an older
    one in its place."""
    kept = {k: v for k, v in values.items() if v is not None}
    removed = [k for k, v in values.items() if v is None]
    expression = "SET " + ", ".join(f"#{k} = :{k}" for k in kept)
    if removed:
        expression += " REMOVE " + ", ".join(f"#{k}" for k in removed)
    answer = _dynamodb().update_item(
        TableName=table,
        Key={"pk": {"S": GATE_PK}, "sk": {"S": instance_id}},
        UpdateExpression=expression,
        ExpressionAttributeNames={f"#{k}": k for k in values},
        ExpressionAttributeValues={f":{k}": {"S": v} for k, v in kept.items()},
        ReturnValues="ALL_NEW",
    )
    attributes: dict[str, Any] = answer.get("Attributes", {})
    return attributes


def _noted(item: dict[str, Any], at: str, boot: str) -> Noted:
    stamped = item.get(at, {}).get("S")
    time = datetime.datetime.fromisoformat(stamped) if stamped else None
    return Noted(at=time, boot=item.get(boot, {}).get("S"))


def _dynamodb() -> Any:
    return boto3.client("dynamodb")
