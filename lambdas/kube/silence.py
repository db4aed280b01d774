"""The kube Lambda's ``silent`` op: the Ready Nodes against the heartbeats the classifier
recorded in the ledger (``nodemedic.remediate.silence``).

One Lambda call per reconcile, whatever the cluster's size: the comparison of thousands of
nodes stays out of the state machine (whose state transitions are what it costs, and whose
payloads are bounded), and only what the notification needs comes back.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.exceptions import ClientError
from kubernetes import client

from lambdas.kube.nodes import ready_nodes
from nodemedic.contracts.ledger import HEARTBEAT_PK
from nodemedic.contracts.logs import SILENT_AFTER_BEATS
from nodemedic.remediate.silence import (
    AGENT_STATE,
    HEARD_AT,
    NOTIFIED_AT,
    Heard,
    Silent,
    silent_nodes,
)

NAMED = 50
"""Nodes named in the op's answer and the notification; the count is always whole."""


def heard(table: str, dynamodb: Any) -> dict[str, Heard]:
    """Every heartbeat item of the ledger, by instance id (one partition, paged)."""
    found: dict[str, Heard] = {}
    kwargs: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "pk = :pk",
        "ExpressionAttributeValues": {":pk": {"S": HEARTBEAT_PK}},
    }
    while True:
        page = dynamodb.query(**kwargs)
        for item in page["Items"]:
            state = item.get(AGENT_STATE, {}).get("M", {})
            found[item["sk"]["S"]] = Heard(
                heard_at=float(item[HEARD_AT]["N"]) if HEARD_AT in item else None,
                notified=NOTIFIED_AT in item,
                state={k: int(v["N"]) for k, v in state.items()},
            )
        if "LastEvaluatedKey" not in page:
            return found
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _mark_notified(table: str, dynamodb: Any, silent: Silent, now: float) -> bool:
    """Mark ``silent`` notified, unless its agent was heard meanwhile or another run did."""
    condition = f"attribute_not_exists({NOTIFIED_AT}) AND "
    values: dict[str, Any] = {":now": {"N": str(int(now))}}
    if silent.last_heard is None:
        condition += f"attribute_not_exists({HEARD_AT})"
    else:
        condition += f"{HEARD_AT} = :heard"
        values[":heard"] = {"N": str(int(silent.last_heard))}
    try:
        dynamodb.update_item(
            TableName=table,
            Key={"pk": {"S": HEARTBEAT_PK}, "sk": {"S": silent.instance_id}},
            UpdateExpression=f"SET {NOTIFIED_AT} = :now",
            ConditionExpression=condition,
            ExpressionAttributeValues=values,
        )
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        return False
    return True


def describe(silent: Silent) -> str:
    if silent.last_heard is None:
        return f"{silent.node} ({silent.instance_id}): its agent was never heard"
    at = datetime.fromtimestamp(silent.last_heard, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    state = ", ".join(f"{k} {v}" for k, v in sorted(silent.state.items()))
    return f"{silent.node} ({silent.instance_id}): last heard {at}; it then reported {state}"


def summary(found: list[str], new: list[str], why: str) -> dict[str, Any]:
    """``{count, nodes, left_out, new: {count, message}}`` of the reconcile's ops: the
    ``found`` nodes, the first ``NAMED`` of them (``found`` comes in the order that matters
    most first) and how many that leaves out, and the message for SNS (``why``, then one
    line per node ``new`` to this state). A message has a size limit: it names ``NAMED``
    and counts the rest."""
    more = [f"... and {len(new) - NAMED} more"] if len(new) > NAMED else []
    message = why + "\n" + "\n".join(new[:NAMED] + more)
    return {
        "count": len(found),
        "nodes": found[:NAMED],
        "left_out": max(0, len(found) - NAMED),
        "new": {"count": len(new), "message": message},
    }


def silent(core: client.CoreV1Api, table: str, dynamodb: Any | None = None) -> dict[str, Any]:
    """``{count, nodes, left_out, new: {count, message}}``: every silent Ready node (by the
    heartbeats in the ledger ``table``), the newest silence first, and the ones not
    notified before, marked notified now (``message`` names them for SNS)."""
    dynamodb = dynamodb or boto3.client("dynamodb")
    now = time.time()
    found = silent_nodes(ready_nodes(core), heard(table, dynamodb), now)
    new = [s for s in found if s.new and _mark_notified(table, dynamodb, s, now)]
    return summary(
        [s.node for s in found],
        [describe(s) for s in new],
        f"{len(new)} Ready node(s) went silent: their nodemedic agent shipped no heartbeat "
        f"for {SILENT_AFTER_BEATS} intervals. Its credentials may be refused or expired, "
        "its pod may not run, or the node may be hung while Kubernetes still calls it "
        "Ready. Each is told once per silence.",
    )
