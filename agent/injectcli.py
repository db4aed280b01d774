"""``nodemedic inject``: argument parsing for ``agent.inject``, apart from the agent's own
command line so that each stays readable."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agent.argtypes import count
from agent.config import Config


def configure_inject(parser: argparse.ArgumentParser) -> None:
    from agent.inject import KINDS

    parser.epilog = (
        "An injected line is not a kernel line: /dev/kmsg records it with the facility "
        "LOG_USER, --record writes that facility too, and a plain line has none, so the agent "
        "ships it marked injected. It cordons, drains, reboots or replaces a node only in a "
        "cluster whose setting accept_injected_faults is on (the demo's cluster turns it on); "
        "anywhere else its fault is at most notified."
    )
    parser.add_argument("kind", choices=KINDS, help="xid <code> | neuron <TYPE> | rule <rule-id>")
    parser.add_argument("value", help="Xid code, Neuron error type (e.g. DMA_ERROR) or rule id")
    parser.add_argument(
        "--to",
        type=Path,
        default=Path(Config.kmsg),
        help="/dev/kmsg (root) or a file the agent follows (default: %(default)s)",
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="append to a file as a raw kmsg record (facility LOG_USER) instead of a plain line",
    )
    parser.add_argument(
        "--instance-id",
        default="",
        help="the instance a line that names one (Neuron's) names; default: the catalog "
        "example's, another instance",
    )
    parser.add_argument("--hostname", default="", help="likewise the host name such a line names")
    parser.add_argument("--count", type=count, default=1, help="how many times")
    parser.add_argument(
        "--catalog",
        type=Path,
        action="append",
        default=[],
        help="extra rule file(s), as for the classifier",
    )


def run_inject(args: argparse.Namespace) -> int:
    from agent.inject import LEVELS, InjectError, append_file, find_rule, line_for, write_device
    from agent.kmsg import is_device
    from nodemedic.catalog import CatalogError, load_catalog

    try:
        rule = find_rule(load_catalog(args.catalog), args.kind, args.value)
        line = line_for(rule, instance_id=args.instance_id, hostname=args.hostname)
    except (InjectError, CatalogError) as exc:
        print(f"nodemedic inject: {exc}", file=sys.stderr)
        return 2
    level = LEVELS[rule.severity]
    try:
        for _ in range(args.count):
            if args.to.exists() and is_device(str(args.to)):
                write_device(args.to, line, level)
                written = f"<{level}>{line}"
            else:
                written = append_file(args.to, line, level, args.record)
            print(f"{rule.id} -> {args.to}: {written}")
    except PermissionError:
        print(f"nodemedic inject: no permission to write {args.to} (root needed)", file=sys.stderr)
        return 1
    return 0
