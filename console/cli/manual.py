"""``nodemedic reboot|replace NODE --reason TEXT --cluster NAME``: a remediation by hand.

The request becomes a manual decision (``nodemedic.remediate.manual``) and starts the
cluster's own remediation state machine, so the breaker, the node lock and the ledger treat
it as they treat the classifier's: it can be held, or refused where nodemedic does not act.
The command waits a few seconds (``--wait``) to say which, from the decision's ledger record.
Exit 0: started (or held: it waits for a slot); 2: bad input or the cluster, node or AWS
could not be found or reached; 3: refused or a duplicate (the node is not acted on).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from datetime import UTC, datetime
from typing import Any

from console.cli.stack import add_aws_options, session, stack_output
from nodemedic.contracts.stack import LEDGER_OUTPUT, STATE_MACHINE_OUTPUT
from nodemedic.remediate.manual import RequestError, manual_decision

_INSTANCE = re.compile(r"^i-[0-9a-f]{8,17}$")
SETTLED = {"closed", "failed", "duplicate", "upgraded", "held"}
"""Record states after which the answer does not change within the wait: ended, or held."""
ACTING = {"marking", "draining", "rebooting", "replacing", "holding", "monitoring"}
_NOT_ACTED = {"refused", "duplicate", "upgraded", "unmanaged", "monitored", "dry-run"}


class UnknownNode(LookupError):
    """NODE names no EC2 instance here."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("node", help="the Node's name (its private DNS name) or instance id")
    parser.add_argument("--reason", required=True, help="why, for the ledger and the mail")
    parser.add_argument(
        "--requested-by",
        help="on whose behalf, kept in the reason: who asked is always the caller's STS identity",
    )
    add_aws_options(parser)
    parser.add_argument(
        "--wait", type=float, default=10, help="seconds to wait for the verdict (default 10)"
    )
    parser.add_argument("--format", choices=("table", "json"), default="table")


def instance_of(ec2: Any, node: str) -> str:
    """The running instance named ``node`` (an instance id or a private DNS name)."""
    from botocore.exceptions import ClientError

    by = (
        {"InstanceIds": [node]}
        if _INSTANCE.match(node)
        else {"Filters": [{"Name": "private-dns-name", "Values": [node]}]}
    )
    try:
        reservations = ec2.describe_instances(**by)["Reservations"]
    except ClientError as exc:
        if "InvalidInstanceID" in str(exc):
            raise UnknownNode(f"unknown node {node!r}: no such EC2 instance") from exc
        raise
    found = [
        i["InstanceId"]
        for r in reservations
        for i in r["Instances"]
        if i["State"]["Name"] not in ("terminated", "shutting-down")
    ]
    if not found:
        raise UnknownNode(f"unknown node {node!r}: no running EC2 instance has that name or id")
    return str(found[0])


def verdict(record: dict[str, Any] | None, status: str) -> tuple[str, str]:
    """(state, what it means) from the decision's ledger record and the execution status."""
    st = None if record is None else str(record.get("state"))
    said = {
        None: ("started", "the remediation started; its record is not written yet"),
        "held": (
            "held",
            "held by the breaker: it waits for a free slot (breaker_hold); "
            "`nodemedic breaker status` says why",
        ),
        "duplicate": ("duplicate", "another remediation of this node is in flight"),
        "upgraded": ("upgraded", "it upgraded the remediation of this node in flight"),
    }
    if st in said:
        return said[st]
    assert record is not None
    if st == "closed":
        return str(record.get("outcome")), str(record.get("reason") or "")
    if st == "failed":
        return "failed", f"stopped at {record.get('failed_step')}: {record.get('error')}"
    if st in ACTING:
        return "admitted", f"admitted by the breaker, now {st}"
    return "started", f"the remediation is {st} ({status.lower()})"


def _record(dynamodb: Any, table: str, decision: dict[str, Any]) -> dict[str, Any] | None:
    from nodemedic.remediate.breaker import plain_item
    from nodemedic.remediate.ledger import RECORD_SK, key

    found = dynamodb.get_item(
        TableName=table,
        Key=key({"S": decision["instance_id"]}, {"S": RECORD_SK.format(decision["decision_id"])}),
        ConsistentRead=True,
    ).get("Item")
    return plain_item(found) if found else None


def settle(
    sfn: Any, dynamodb: Any, table: str, arn: str, decision: dict[str, Any], *, wait: float
) -> tuple[str, str]:
    """The verdict once the record says it (ended, held or acting), or after ``wait`` s."""
    deadline = time.monotonic() + wait
    while True:
        record = _record(dynamodb, table, decision)
        status = str(sfn.describe_execution(executionArn=arn)["status"])
        state = None if record is None else record.get("state")
        if state in SETTLED or state in ACTING or status != "RUNNING":
            return verdict(record, status)
        if time.monotonic() >= deadline:
            return verdict(record, status)
        time.sleep(0.5)


def caller(aws: Any, endpoint_url: str | None) -> str:
    """Who asks, as AWS authenticated the request's credentials: whoever may start the
    state machine could write any name in free text."""
    return str(aws.client("sts", endpoint_url=endpoint_url).get_caller_identity()["Arn"])


def reason(args: argparse.Namespace) -> str:
    """``--reason``, with ``--requested-by`` (free text, unproven) kept beside it."""
    if not args.requested_by:
        return str(args.reason)
    return f"{args.reason} (on behalf of {args.requested_by})"


def request(args: argparse.Namespace, aws: Any, *, machine: str, table: str) -> dict[str, Any]:
    """Start the manual decision on the state machine ``machine`` whose ledger is ``table``;
    what the command prints."""
    instance = instance_of(aws.client("ec2", endpoint_url=args.endpoint_url), args.node)
    decision = manual_decision(
        args.cluster,
        instance,
        args.command,
        requested_by=caller(aws, args.endpoint_url),
        reason=reason(args),
        requested_at=datetime.now(UTC),
    )
    sfn = aws.client("stepfunctions", endpoint_url=args.endpoint_url)
    arn = str(
        sfn.start_execution(
            stateMachineArn=machine, name=decision["decision_id"], input=json.dumps(decision)
        )["executionArn"]
    )
    dynamodb = aws.client("dynamodb", endpoint_url=args.endpoint_url)
    state, detail = settle(sfn, dynamodb, table, arn, decision, wait=args.wait)
    return {
        "cluster": args.cluster,
        "node": args.node,
        "instance_id": instance,
        "action": args.command,
        "decision_id": decision["decision_id"],
        "execution_arn": arn,
        "requested_by": decision["requested_by"],
        "reason": decision["request_reason"],
        "state": state,
        "detail": detail,
    }


def run(args: argparse.Namespace) -> int:
    from botocore.exceptions import BotoCoreError, ClientError

    if args.wait < 0:
        print(f"nodemedic {args.command}: --wait must not be negative", file=sys.stderr)
        return 2
    try:
        aws = session(args)
        cloudformation = aws.client("cloudformation", endpoint_url=args.endpoint_url)
        shown = request(
            args,
            aws,
            machine=stack_output(cloudformation, args.cluster, STATE_MACHINE_OUTPUT),
            table=stack_output(cloudformation, args.cluster, LEDGER_OUTPUT),
        )
    except (BotoCoreError, ClientError, LookupError, RequestError) as exc:
        print(f"nodemedic {args.command}: {exc}", file=sys.stderr)
        return 2
    if args.format == "json":
        print(json.dumps(shown, sort_keys=True))
    else:
        print(
            f"{shown['action']} {shown['node']} ({shown['instance_id']}): {shown['state']}: "
            f"{shown['detail']}\nexecution {shown['execution_arn']}"
        )
    return 3 if shown["state"] in _NOT_ACTED else 0
