"""The post-reboot gate's record in the ledger (``contracts.ledger.GATE_PK``): the last
pass's line time and when the node's last hold began.

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
from typing import Any

import boto3

from nodemedic.contracts.ledger import GATE_PK
from nodemedic.remediate.decision import iso

PASSED_AT = "passed_at"
HELD_SINCE = "held_since"
HELD_BY = "held_by"


def record_pass(table: str, instance_id: str, at: datetime.datetime) -> datetime.datetime | None:
    """Note a pass logged at ``at``; when the node's last hold began (None: never held)."""
    item = _update(table, instance_id, {PASSED_AT: iso(at)})
    return _time(item, HELD_SINCE)


def record_hold(
    table: str, instance_id: str, since: datetime.datetime, decision_id: str
) -> datetime.datetime | None:
    """Note a hold that began at ``since``; the last pass's line time (None: none yet)."""
    item = _update(table, instance_id, {HELD_SINCE: iso(since), HELD_BY: decision_id})
    return _time(item, PASSED_AT)


def _update(table: str, instance_id: str, values: dict[str, str]) -> dict[str, Any]:
    names = {f"#{k}": k for k in values}
    answer = _dynamodb().update_item(
        TableName=table,
        Key={"pk": {"S": GATE_PK}, "sk": {"S": instance_id}},
        UpdateExpression="SET " + ", ".join(f"#{k} = :{k}" for k in values),
        ExpressionAttributeNames=names,
        ExpressionAttributeValues={f":{k}": {"S": v} for k, v in values.items()},
        ReturnValues="ALL_NEW",
    )
    attributes: dict[str, Any] = answer.get("Attributes", {})
    return attributes


def _time(item: dict[str, Any], name: str) -> datetime.datetime | None:
    stamped = item.get(name, {}).get("S")
    return datetime.datetime.fromisoformat(stamped) if stamped else None


def _dynamodb() -> Any:
    return boto3.client("dynamodb")
