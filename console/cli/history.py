"""``nodemedic history [NODE] --cluster NAME``: every remediation the ledger kept (for
``history_days``), oldest first: fault, evidence, decision, each step with its time, the
outcome, and who or what triggered it. ``--format json`` prints one object per remediation
(``console.cli.remediations``; docs/contracts.md). Exit 2 when the cluster's table
cannot be found or read.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from console.cli.remediations import entry, lines
from console.cli.stack import add_aws_options, session, stack_output
from nodemedic.contracts.ledger import DECISION_SK_PREFIX
from nodemedic.contracts.stack import LEDGER_OUTPUT
from nodemedic.remediate.breaker import plain_item

_INSTANCE = re.compile(r"^i-[0-9a-f]{8,17}$")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "node", nargs="?", help="a Node's name or instance id (default: every node)"
    )
    add_aws_options(parser)
    parser.add_argument(
        "--table", help=f"the ledger table (default: output {LEDGER_OUTPUT} of its stack)"
    )
    parser.add_argument("--format", choices=("table", "json"), default="table")


def records(dynamodb: Any, table: str, node: str | None) -> list[dict[str, Any]]:
    """The decision records of ``node`` (by instance id: one partition; by name: the
    records that located it), or of every node, as plain values."""
    prefix = {":record": {"S": DECISION_SK_PREFIX}}
    if node is not None and _INSTANCE.match(node):
        pages = dynamodb.get_paginator("query").paginate(
            TableName=table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :record)",
            ExpressionAttributeValues={":pk": {"S": node}, **prefix},
        )
    else:
        by_name = {":node": {"S": node}} if node is not None else {}
        pages = dynamodb.get_paginator("scan").paginate(
            TableName=table,
            FilterExpression="begins_with(sk, :record)"
            + (" AND #node = :node" if node is not None else ""),
            ExpressionAttributeValues={**prefix, **by_name},
            **({"ExpressionAttributeNames": {"#node": "node"}} if node is not None else {}),
        )
    found = [plain_item(item) for page in pages for item in page["Items"]]
    return sorted(found, key=lambda r: (str(r.get("started_at")), str(r.get("sk"))))


def run(args: argparse.Namespace) -> int:
    from botocore.exceptions import BotoCoreError, ClientError

    aws = session(args)
    try:
        table = args.table or stack_output(
            aws.client("cloudformation", endpoint_url=args.endpoint_url),
            args.cluster,
            LEDGER_OUTPUT,
        )
        found = records(aws.client("dynamodb", endpoint_url=args.endpoint_url), table, args.node)
    except (BotoCoreError, ClientError, LookupError) as exc:
        print(f"nodemedic history: {exc}", file=sys.stderr)
        return 2
    shown = [entry(record) for record in found]
    if args.format == "json":
        print(json.dumps({"cluster": args.cluster, "remediations": shown}, sort_keys=True))
    else:
        print("\n\n".join("\n".join(lines(s)) for s in shown) or "no remediation recorded")
    return 0
