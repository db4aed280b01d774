"""``nodemedic handoff NODE --to VENDOR --ticket ID --cluster NAME`` and ``nodemedic
take-back NODE --cluster NAME``: a held node parked outside nodemedic's control, and back
(``nodemedic.remediate.handoff``).

Each is one ledger transaction: the node's lock, its breaker counts and its hand-off record
change together or not at all. A handed-off node counts on its group's breaker, not on the
cluster's (``parking.UNCOUNT``): it is capacity lost, not a remediation in flight.
``handoff`` refuses a node nodemedic does not hold out of service (exit 3: no parked lock),
``take-back`` one not handed off (exit 3). Exit 2: bad input, or AWS could not be reached.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from typing import Any

from console.cli.manual import instance_of
from console.cli.stack import add_aws_options, session, stack_output
from nodemedic.contracts.ledger import BREAKER_SK, LOCK_SK, STEP_AT_PREFIX
from nodemedic.contracts.stack import LEDGER_OUTPUT, TOPIC_OUTPUT
from nodemedic.remediate import breaker, handoff, ledger, parking
from nodemedic.remediate.expressions import Condition, Update

Wire = dict[str, Any]


class NotHeld(LookupError):
    """The node's lock is not in the state the command needs."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("node", help="the Node's name (its private DNS name) or instance id")
    if parser.prog.endswith("handoff"):
        parser.add_argument("--to", required=True, help="who has the node now (a vendor)")
        parser.add_argument("--ticket", required=True, help="their ticket, for the ledger")
    add_aws_options(parser)
    parser.add_argument("--format", choices=("table", "json"), default="table")


def _update(
    table: str, key: Wire, change: Update, values: Wire, condition: Condition | None = None
) -> Wire:
    shape: Wire = {
        "TableName": table,
        "Key": key,
        "UpdateExpression": change.text,
        "ExpressionAttributeValues": values,
    }
    if condition is not None:
        shape["ConditionExpression"] = condition.text
    if change.names:
        shape["ExpressionAttributeNames"] = change.names
    return {"Update": shape}


def _held_out(table: str, instance: str, group: str, cluster: str) -> list[Wire]:
    """The handed-off instance counted on its group's breaker (its capacity is gone) and
    taken off the cluster's, whose ``max_in_flight`` counts remediations
    (``parking.UNCOUNT``)."""
    holder = {":holder": {"SS": [instance]}}
    return [
        _update(
            table,
            ledger.key({"S": ledger.BREAKER_PK.format(group)}, {"S": BREAKER_SK}),
            parking.COUNT,
            holder,
        ),
        _update(
            table,
            ledger.key({"S": breaker.CLUSTER_PK.format(cluster)}, {"S": breaker.CLUSTER_SK}),
            parking.UNCOUNT,
            holder,
        ),
    ]


def _lock(dynamodb: Any, table: str, instance: str) -> dict[str, Any]:
    found = dynamodb.get_item(
        TableName=table, Key=ledger.key({"S": instance}, {"S": LOCK_SK}), ConsistentRead=True
    ).get("Item")
    return breaker.plain_item(found or {})


def _iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def hand_off(
    dynamodb: Any,
    table: str,
    cluster: str,
    instance: str,
    node: str,
    *,
    to: str,
    ticket: str,
    by: str,
    now: int,
) -> dict[str, Any]:
    """The hand-off transaction; the record it opened, as plain values."""
    lock = _lock(dynamodb, table, instance)
    if not lock or not handoff.HANDABLE.holds(lock, {}):
        raise NotHeld(
            f"{instance} is not held out of service by nodemedic (no parked lock"
            + (", or handed off already)" if lock else ")")
        )
    group = str(lock["node_group"])
    decision_id = handoff.record_id(instance, now)
    record_sk = ledger.RECORD_SK.format(decision_id)
    at = _iso(now)
    record = {
        "pk": instance,
        "sk": record_sk,
        "decision_id": decision_id,
        "cluster": cluster,
        "instance_id": instance,
        "node": node,
        "node_group": group,
        "fault_id": str(lock.get("fault_id")),
        "action": handoff.SOURCE,
        "source": handoff.SOURCE,
        "requested_by": by,
        "request_reason": f"handed off to {to}, ticket {ticket}",
        handoff.HANDED_OFF_TO: to,
        handoff.TICKET: ticket,
        "started_at": at,
        "state": handoff.HANDED_OFF_STATE,
        STEP_AT_PREFIX + handoff.HANDED_OFF_STATE: at,
    }
    dynamodb.transact_write_items(
        TransactItems=[
            _update(
                table,
                ledger.key({"S": instance}, {"S": LOCK_SK}),
                handoff.HAND_OFF,
                {
                    ":now": {"S": at},
                    ":to": {"S": to},
                    ":ticket": {"S": ticket},
                    ":by": {"S": by},
                    ":record": {"S": record_sk},
                },
                handoff.HANDABLE,
            ),
            *_held_out(table, instance, group, cluster),
            {"Put": {"TableName": table, "Item": {k: {"S": v} for k, v in record.items()}}},
        ]
    )
    return record


def take_back(dynamodb: Any, table: str, instance: str, *, by: str, now: int) -> dict[str, Any]:
    """The take-back transaction; what it closed."""
    lock = _lock(dynamodb, table, instance)
    if not lock or not handoff.HANDED_OFF.holds(lock, {}):
        raise NotHeld(f"{instance} is not handed off")
    at = _iso(now)
    record_sk = str(lock[handoff.HANDOFF_RECORD])
    closing = ledger.record_update(
        "state", STEP_AT_PREFIX + handoff.TAKEN_BACK_STATE, "outcome", "taken_back_by", "ended_at"
    )
    dynamodb.transact_write_items(
        TransactItems=[
            _update(
                table,
                ledger.key({"S": instance}, {"S": LOCK_SK}),
                handoff.TAKE_BACK,
                {":until": {"N": str(now + parking.LEASE_SECONDS)}},
                handoff.HANDED_OFF,
            ),
            _update(
                table,
                ledger.key({"S": instance}, {"S": record_sk}),
                closing,
                {
                    ":state": {"S": handoff.TAKEN_BACK_STATE},
                    f":{STEP_AT_PREFIX}{handoff.TAKEN_BACK_STATE}": {"S": at},
                    ":outcome": {"S": handoff.TAKEN_BACK_STATE},
                    ":taken_back_by": {"S": by},
                    ":ended_at": {"S": at},
                },
            ),
        ]
    )
    return {
        "instance_id": instance,
        "decision_id": record_sk.removeprefix(ledger.RECORD_SK.format("")),
        "handed_off_to": lock.get(handoff.HANDED_OFF_TO),
        "ticket": lock.get(handoff.TICKET),
        "taken_back_by": by,
        "taken_back_at": at,
    }


def tell(sns: Any, topic: str, subject: str, shown: dict[str, Any]) -> None:
    """The cluster's topic hears of it, as of a remediation: who has the node and who said."""
    sns.publish(TopicArn=topic, Subject=subject, Message=json.dumps(shown, sort_keys=True))


def run(args: argparse.Namespace) -> int:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        aws = session(args)
        cloudformation = aws.client("cloudformation", endpoint_url=args.endpoint_url)
        table = stack_output(cloudformation, args.cluster, LEDGER_OUTPUT)
        topic = stack_output(cloudformation, args.cluster, TOPIC_OUTPUT)
        instance = instance_of(aws.client("ec2", endpoint_url=args.endpoint_url), args.node)
        by = str(aws.client("sts", endpoint_url=args.endpoint_url).get_caller_identity()["Arn"])
        dynamodb = aws.client("dynamodb", endpoint_url=args.endpoint_url)
        now = int(time.time())
        if args.command == "handoff":
            node = "" if args.node == instance else args.node
            shown = hand_off(
                dynamodb,
                table,
                args.cluster,
                instance,
                node,
                to=args.to,
                ticket=args.ticket,
                by=by,
                now=now,
            )
            subject = f"nodemedic handed off: {instance}"
        else:
            shown = take_back(dynamodb, table, instance, by=by, now=now)
            subject = f"nodemedic taken back: {instance}"
        tell(aws.client("sns", endpoint_url=args.endpoint_url), topic, subject, shown)
    except NotHeld as exc:
        print(f"nodemedic {args.command}: {exc}", file=sys.stderr)
        return 3
    except (BotoCoreError, ClientError, LookupError) as exc:
        print(f"nodemedic {args.command}: {exc}", file=sys.stderr)
        return 2
    if args.format == "json":
        print(json.dumps(shown, sort_keys=True))
    elif args.command == "handoff":
        print(
            f"handed off {args.node} ({instance}): {shown['request_reason']}; it stays "
            "cordoned and counted until `nodemedic take-back`"
        )
    else:
        print(
            f"took back {args.node} ({instance}) from {shown['handed_off_to']} "
            f"(ticket {shown['ticket']}): held as before, until its taint is taken off"
        )
    return 0
