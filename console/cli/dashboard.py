"""``nodemedic dashboard --cluster NAME --html FILE``: the cluster's CloudWatch dashboard,
its widgets drawn with the account's data into one page for people who would rather look
than read (``console.dashboard``)."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from console.cli.stack import add_aws_options, session
from nodemedic.contracts.stack import dashboard_name


def configure(parser: argparse.ArgumentParser) -> None:
    add_aws_options(parser)
    parser.add_argument("--html", type=Path, required=True, help="the page to write")
    parser.add_argument("--dashboard", help="the dashboard (default: nodemedic-CLUSTER)")
    parser.add_argument(
        "--minutes", type=int, help="the last MINUTES (default: the dashboard's own range)"
    )
    parser.add_argument("--period", type=int, help="seconds a point (default: each widget's)")


def write(
    cloudwatch: Any, name: str, html: Path, *, minutes: int | None, period: int | None
) -> None:
    from console.dashboard.page import page
    from console.dashboard.read import board

    now = datetime.now(UTC)
    start = now - timedelta(minutes=minutes) if minutes else None
    html.write_text(page(board(cloudwatch, name, now=now, start=start, period=period)))


def run(args: argparse.Namespace) -> int:
    from botocore.exceptions import BotoCoreError, ClientError

    if (args.minutes is not None and args.minutes <= 0) or (
        args.period is not None and args.period <= 0
    ):
        print("nodemedic dashboard: --minutes and --period must be positive", file=sys.stderr)
        return 2
    name = args.dashboard or dashboard_name(args.cluster)
    try:
        cloudwatch = session(args).client("cloudwatch", endpoint_url=args.endpoint_url)
        write(cloudwatch, name, args.html, minutes=args.minutes, period=args.period)
    except (BotoCoreError, ClientError, OSError, ValueError) as exc:
        print(f"nodemedic dashboard: {exc}", file=sys.stderr)
        return 2
    print(args.html)
    return 0
