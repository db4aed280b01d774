"""``nodemedic breaker status|reset --cluster NAME``: the cluster's breaker, read and reset
in the ledger (``nodemedic.remediate.breaker``).

Both print one JSON object (docs/contracts.md, "nodemedic breaker"), or with ``--format
table`` the same facts as lines for a person. ``reset`` closes a
tripped breaker at once and forgives the starts the rate windows counted: an operator who
resets says the wave is understood, and a window still full would trip the breaker again
with the next decision. Remediations in flight (and nodes left out) keep their slots.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from typing import Any

from console.cli.stack import add_aws_options, session, stack_output
from nodemedic.contracts.ledger import RATE_SK_PREFIX
from nodemedic.contracts.stack import LEDGER_OUTPUT
from nodemedic.remediate import breaker
from nodemedic.remediate.ledger import HOLDERS, key


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("verb", choices=("status", "reset"), help="read, or close at once")
    add_aws_options(parser)
    parser.add_argument(
        "--table", help=f"the ledger table (default: output {LEDGER_OUTPUT} of its stack)"
    )
    parser.add_argument("--format", choices=("json", "table"), default="json")


def _iso(epoch: Any) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(float(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def table_name(cloudformation: Any, cluster: str) -> str:
    """The ledger table of ``cluster``'s stack, from the stack's outputs."""
    return stack_output(cloudformation, cluster, LEDGER_OUTPUT)


def _rate_items(dynamodb: Any, table: str, cluster: str) -> list[dict[str, Any]]:
    pages = dynamodb.get_paginator("query").paginate(
        TableName=table,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :rate)",
        ExpressionAttributeValues={
            ":pk": {"S": breaker.CLUSTER_PK.format(cluster)},
            ":rate": {"S": RATE_SK_PREFIX},
        },
        ConsistentRead=True,
    )
    return [item for page in pages for item in page["Items"]]


def status(dynamodb: Any, table: str, cluster: str, now: int) -> dict[str, Any]:
    """The breaker's state, the nodes it counts in flight, and the current windows' starts."""
    found = dynamodb.get_item(
        TableName=table,
        Key=key({"S": breaker.CLUSTER_PK.format(cluster)}, {"S": breaker.CLUSTER_SK}),
        ConsistentRead=True,
    ).get("Item", {})
    item = breaker.plain_item(found)
    current = set(breaker.windows(now))
    rates = []
    for rate in _rate_items(dynamodb, table, cluster):
        _, group, action, window = rate["sk"]["S"].split("#", 3)
        if window in current:
            started = len(rate.get(breaker.STARTED, {}).get("SS", []))
            rates.append({"group": group, "action": action, "window": window, "started": started})
    return {
        "cluster": cluster,
        "table": table,
        "state": breaker.state_of(item, now),
        "tripped_at": _iso(item.get(breaker.TRIPPED_AT)),
        "cooled_until": _iso(item.get(breaker.COOLED_UNTIL)),
        "reason": item.get(breaker.TRIP_REASON),
        "in_flight": sorted(item.get(HOLDERS, ())),
        "rates": sorted(rates, key=lambda r: (r["group"], r["action"], r["window"])),
    }


def reset(dynamodb: Any, table: str, cluster: str) -> int:
    """Close the breaker and forgive the rate windows; how many windows were forgiven."""
    dynamodb.update_item(
        TableName=table,
        Key=key({"S": breaker.CLUSTER_PK.format(cluster)}, {"S": breaker.CLUSTER_SK}),
        UpdateExpression=breaker.RESET.text,
    )
    windows = _rate_items(dynamodb, table, cluster)
    for window in windows:
        dynamodb.delete_item(TableName=table, Key={"pk": window["pk"], "sk": window["sk"]})
    return len(windows)


def as_lines(shown: dict[str, Any]) -> str:
    """The breaker for a person: its state and why, then what it counts."""
    lines = [f"breaker of cluster {shown['cluster']}: {shown['state']}"]
    if "was" in shown:
        lines[0] += f" (reset; was {shown['was']}, {shown['forgiven_windows']} windows forgiven)"
    if shown["tripped_at"]:
        lines.append(f"  tripped at {shown['tripped_at']}: {shown['reason'] or 'no reason kept'}")
    if shown["cooled_until"]:
        lines.append(f"  cools down until {shown['cooled_until']}")
    held = shown["in_flight"]
    lines.append(f"  in flight: {', '.join(held) if held else 'none'}")
    for rate in shown["rates"]:
        lines.append(
            f"  {rate['action']} in {rate['group']}, window {rate['window']}: {rate['started']}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        aws = session(args)
        table = args.table or table_name(
            aws.client("cloudformation", endpoint_url=args.endpoint_url), args.cluster
        )
        dynamodb = aws.client("dynamodb", endpoint_url=args.endpoint_url)
        before = status(dynamodb, table, args.cluster, int(time.time()))
        if args.verb == "reset":
            forgiven = reset(dynamodb, table, args.cluster)
            after = status(dynamodb, table, args.cluster, int(time.time()))
            shown = {**after, "reset": True, "was": before["state"], "forgiven_windows": forgiven}
        else:
            shown = before
    except (BotoCoreError, ClientError, LookupError) as exc:
        print(f"nodemedic breaker: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(shown, sort_keys=True) if args.format == "json" else as_lines(shown))
    return 0
