"""``nodemedic backtest``: what would nodemedic have done to this fleet, on its history?

Replays log files or a CloudWatch Logs log group through the real catalog, classifier and
remediation policy in simulated time (``console.backtest``). The cluster's settings are
the stack's (``nodemedic.settings``): by default no node group is listed, so every decision
is monitor-only, and the report says so. Bad input: one line on stderr, exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from console.backtest.compare import changes, print_changes
from console.backtest.files import read_sources
from console.backtest.html import page
from console.backtest.read import History, log_group_events, read_events
from console.backtest.replay import ACTION_SECONDS, Timeline, replay
from console.backtest.report import document, table
from console.backtest.stamps import parse_time
from console.inputs import InputError
from nodemedic.catalog import CatalogError, load_catalog
from nodemedic.detect.classifier import Classifier
from nodemedic.remediate.errors import PolicyError
from nodemedic.settings import ClusterSettings, parse_cluster
from nodemedic.settings.groups import catalog_errors

DEFAULT_CLUSTER = "backtest"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sources", nargs="*", metavar="SOURCE", help="log files or directories")
    parser.add_argument("--log-group", help="read this CloudWatch Logs group instead")
    parser.add_argument("--start", help="ISO 8601 time the log group is read from")
    parser.add_argument("--end", help="ISO 8601 time the log group is read to")
    parser.add_argument(
        "--settings", type=Path, help="the cluster's settings (JSON or YAML, as in cdk.json)"
    )
    parser.add_argument(
        "--enforce",
        action="store_true",
        help="list the replayed node group in node_groups: replay an enforcing cluster",
    )
    parser.add_argument(
        "--group", help="the node group every node is in (default: the first listed)"
    )
    parser.add_argument("--group-size", type=int, help="its size (default: the nodes replayed)")
    parser.add_argument(
        "--action-seconds",
        type=int,
        default=ACTION_SECONDS,
        help=f"how long a reboot or replacement takes (default {ACTION_SECONDS})",
    )
    parser.add_argument(
        "--boot-time",
        action="append",
        default=[],
        metavar="[NODE=]TIME",
        help="ISO 8601 boot time of NODE (a file's name less its suffixes), for its lines "
        "timed since boot (dmesg, kmsg); repeat for each node; TIME alone: the one node",
    )
    parser.add_argument("--year", type=int, help="year of journal lines that give none")
    parser.add_argument(
        "--catalog",
        type=Path,
        help="a candidate rules file or directory: print what it changes against the built-in",
    )
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--html", type=Path, metavar="FILE", help="write the fleet timeline page")


def _settings(args: argparse.Namespace) -> tuple[ClusterSettings, str]:
    """The cluster's settings, and the node group its nodes are replayed in."""
    raw: dict[str, Any] = {"name": DEFAULT_CLUSTER}
    if args.settings is not None:
        try:
            loaded = yaml.safe_load(args.settings.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise InputError(f"{args.settings}: cannot read settings: {exc}") from None
        if not isinstance(loaded, dict):
            raise InputError(f"{args.settings}: settings must be one cluster's object")
        raw.update(loaded)
    group = args.group or (raw.get("node_groups") or [DEFAULT_CLUSTER])[0]
    if args.enforce and group not in raw.get("node_groups", []):
        raw["node_groups"] = [*raw.get("node_groups", []), group]
    try:
        return parse_cluster(raw), group
    except (ValueError, PolicyError) as exc:
        raise InputError(f"settings: {exc}") from None


def _boot_times(given: list[str]) -> tuple[dict[str, float], float | None]:
    """``--boot-time`` values: boot times by node, and the one without a node."""
    boots: dict[str, float] = {}
    bare = [parse_time(value) for value in given if "=" not in value]
    for value in given:
        node, _, time = value.partition("=")
        if time and boots.setdefault(node, parse_time(time)) != parse_time(time):
            raise InputError(f"--boot-time {node}: two boot times")
    if len(bare) > 1:
        raise InputError("--boot-time without NODE= holds for one node: give NODE=TIME")
    return boots, bare[0] if bare else None


def _history(args: argparse.Namespace) -> Timeline:
    if args.log_group is None:
        if not args.sources:
            raise InputError("give log files or directories, or --log-group")
        boots, boot = _boot_times(args.boot_time)
        return read_sources(args.sources, boots=boots, boot=boot, year=args.year)
    if args.sources or not (args.start and args.end):
        raise InputError("--log-group needs --start and --end, and no SOURCE")
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    history = History()
    start, end = parse_time(args.start), parse_time(args.end)
    try:
        read_events(history, log_group_events(boto3.client("logs"), args.log_group, start, end))
    except (BotoCoreError, ClientError) as exc:
        raise InputError(f"{args.log_group}: {exc}") from None
    if not history.lines:
        raise InputError(f"{args.log_group}: no node events from {args.start} to {args.end}")
    return history


def _candidate(path: Path) -> Classifier:
    files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    if not files:
        raise InputError(f"{path}: no rule files (*.yaml)")
    return Classifier(load_catalog(files))


def run(args: argparse.Namespace) -> int:
    try:
        settings, group = _settings(args)
        history = _history(args)
        candidate = _candidate(args.catalog) if args.catalog else None
        options: dict[str, Any] = {"group": group, "group_size": args.group_size}
        catalog = load_catalog()
        refused = catalog_errors(settings, catalog)
        if refused:
            raise InputError(f"settings: {'; '.join(refused)}")
        before = replay(
            history,
            Classifier(catalog),
            settings,
            action_seconds=args.action_seconds,
            **options,
        )
    except (InputError, CatalogError, PolicyError) as exc:
        print(f"nodemedic backtest: {exc}", file=sys.stderr)
        return 2
    doc = document(before)
    if candidate is not None:
        after = document(
            replay(history, candidate, settings, action_seconds=args.action_seconds, **options)
        )
        found = changes(doc, after)
        if args.format == "json":
            json.dump(found, sys.stdout, indent=2)
            print()
        else:
            print_changes(found, sys.stdout)
    elif args.format == "json":
        json.dump(doc, sys.stdout, indent=2)
        print()
    else:
        table(doc, sys.stdout)
    if args.html is not None:
        args.html.write_text(page(doc, before.nodes), encoding="utf-8")
    for why in history.refused:
        print(
            f"nodemedic backtest: {why} (left out; the other files are replayed)", file=sys.stderr
        )
    return 2 if history.refused else 0
