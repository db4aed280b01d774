"""``nodemedic catalog``: check a rule file and see what the pipeline derives from it."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from nodemedic.catalog import CatalogError, Rule, load_catalog
from nodemedic.detect.classifier import Classifier
from nodemedic.detect.filterpattern import subscription_filter_patterns
from nodemedic.detect.matching import anchored


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--catalog", type=Path, action="append", default=[], help="extra file")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument(
        "--check",
        action="store_true",
        help="only check the catalog with the --catalog files: every mistake, then exit 0 "
        "(valid), 1 (valid, with warnings) or 2 (invalid); for CI and editors' save hooks",
    )
    parser.add_argument(
        "--filter-pattern",
        action="store_true",
        help="print the subscription filter patterns, one per line (one per filter)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        catalog = load_catalog(args.catalog)
        patterns = subscription_filter_patterns(catalog)
    except CatalogError as exc:
        print(f"nodemedic catalog: {exc}", file=sys.stderr)
        return 2
    if args.filter_pattern:
        print("\n".join(patterns))
        return 0
    classifier = Classifier(catalog)
    unmatched = [
        r.id
        for r in catalog.rules
        if r.example and r.action != "ignore" and _first(classifier, r) != r.id
    ]
    # Searched anywhere in a line, a rule's text can be met inside a process name, a file
    # path or a message that a kernel line quotes: a tenant could set it off at will.
    unanchored = [r.id for r in catalog.rules if r.source == "kmsg" and not anchored(r.pattern)]
    if args.check:
        files = len(args.catalog)
        yours = f" and {files} file{'s' * (files != 1)} of yours" if files else ""
        print(f"{len(catalog.rules)} rules valid: the built-in catalog{yours}")
    elif args.format == "json":
        for rule in catalog.rules:
            print(
                json.dumps(
                    {
                        "id": rule.id,
                        "source": rule.source,
                        "component": rule.component,
                        "severity": rule.severity,
                        "action": rule.action,
                        "metric": f"{rule.namespace}/{rule.metric}",
                        "summary": rule.summary,
                    }
                )
            )
    else:
        for rule in catalog.rules:
            print(
                f"{rule.id:<40} {rule.source:<6} {rule.component:<8} {rule.action:<8} "
                f"{rule.summary}"
            )
        sizes = " + ".join(str(len(p)) for p in patterns)
        print(f"\n{len(catalog.rules)} rules; filter patterns {sizes} characters")
    if unmatched:
        print(
            f"rules whose example is matched by another rule first: {', '.join(unmatched)}",
            file=sys.stderr,
        )
    if unanchored:
        print(
            "kmsg rules whose pattern does not start with ^ (matched anywhere in a line, a "
            f"process name or a file path could set them off): {', '.join(unanchored)}",
            file=sys.stderr,
        )
    return 1 if unmatched or unanchored else 0


def _first(classifier: Classifier, rule: Rule) -> str | None:
    """The rule that wins on ``rule``'s own example: a catalog where it is another rule has
    an ordering mistake that would misreport that fault."""
    fault = classifier.classify(rule.example, rule.source)
    return None if fault is None else fault.fault_id
