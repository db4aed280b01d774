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
    parser.add_argument(
        "--cloudwatch-images",
        action="store_true",
        help="draw metric widgets with CloudWatch's GetMetricWidgetImage, as the console "
        "draws them (on AWS; each call is billed as a GetMetricData request)",
    )


def write(
    cloudwatch: Any,
    name: str,
    html: Path,
    *,
    minutes: int | None,
    period: int | None,
    images: bool = False,
) -> None:
    from console.dashboard.images import drawn_by_cloudwatch
    from console.dashboard.page import page
    from console.dashboard.read import board

    now = datetime.now(UTC)
    start = now - timedelta(minutes=minutes) if minutes else None
    read = board(cloudwatch, name, now=now, start=start, period=period)
    html.write_text(page(drawn_by_cloudwatch(cloudwatch, name, read) if images else read))


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
        write(
            cloudwatch,
            name,
            args.html,
            minutes=args.minutes,
            period=args.period,
            images=args.cloudwatch_images,
        )
    except (BotoCoreError, ClientError, OSError, ValueError) as exc:
        print(f"nodemedic dashboard: {exc}", file=sys.stderr)
        return 2
    print(args.html)
    return 0
