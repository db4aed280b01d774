"""Classifier throughput on one core: nodemedic's classifier against the naive way.

The naive baseline is what a first implementation does: ``re.search`` with every rule, in
catalog order, on every line. nodemedic's side is ``Classifier.classify_lines``, the bulk
form the classifier Lambda runs on each subscription batch. Both run on the same corpus
(real benign and fault lines from tests/events, mixed like a node in a fault storm: mostly
ordinary kernel chatter, one line in ten a fault), and must agree on every line before any
number is printed.

    python -m bench.classifier [--lines N] [--fault-share 0.1]
"""

from __future__ import annotations

import argparse
import random
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.timing import best_rate
from nodemedic.catalog import Catalog, Rule, load_catalog
from nodemedic.detect.classifier import Classifier

EVENTS = Path(__file__).parents[1] / "tests" / "events" / "kmsg"


def corpus(lines: int, fault_share: float, seed: int = 7) -> list[str]:
    """Real lines with their numbers varied, so no cache or interning flatters anyone."""
    benign = [s for s in (EVENTS / "benign.txt").read_text().splitlines() if s and s[0] != "#"]
    faults = [
        s.split("\t", 1)[1]
        for s in (EVENTS / "faults.txt").read_text().splitlines()
        if s and s[0] != "#"
    ]
    rng = random.Random(seed)
    out = []
    for _ in range(lines):
        pool = faults if rng.random() < fault_share else benign
        line = rng.choice(pool)
        out.append(re.sub(r"pid=\d+", f"pid={rng.randint(100, 99999)}", line))
    return out


Bulk = Callable[[Sequence[str]], list[str | None]]
"""Lines in, the fault id (or None) of each line out."""


def naive(catalog: Catalog) -> Bulk:
    compiled: list[tuple[re.Pattern[str], Rule]] = [
        (re.compile(r.pattern), r) for r in catalog.rules if r.source == "kmsg"
    ]

    def classify(line: str) -> str | None:
        for regex, rule in compiled:
            found = regex.search(line)
            if found and all(found.group(g) in values for g, values in rule.match):
                return None if rule.action == "ignore" else rule.id
        return None

    return lambda lines: [classify(line) for line in lines]


def fast(catalog: Catalog) -> Bulk:
    classifier = Classifier(catalog)

    def classify(lines: Sequence[str]) -> list[str | None]:
        ids: list[str | None] = [None] * len(lines)
        for index, fault in classifier.classify_lines(lines):
            ids[index] = fault.fault_id
        return ids

    return classify


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--fault-share", type=float, default=0.1)
    args = parser.parse_args()
    catalog = load_catalog()
    lines = corpus(args.lines, args.fault_share)
    ours, baseline = fast(catalog), naive(catalog)
    sample = lines[: max(1, len(lines) // 10)]
    pairs = zip(sample, ours(sample), baseline(sample), strict=True)
    wrong = [line for line, a, b in pairs if a != b]
    if wrong:
        raise SystemExit(f"classifiers disagree on {len(wrong)} lines: {wrong[:3]}")
    kmsg_rules = sum(1 for r in catalog.rules if r.source == "kmsg")
    naive_rate = best_rate(lambda: baseline(sample), len(sample))
    fast_rate = best_rate(lambda: ours(lines), len(lines))
    print(f"corpus: {len(lines)} lines, {args.fault_share:.0%} faults, {kmsg_rules} kmsg rules")
    print(f"naive re.search loop: {naive_rate:>10,.0f} lines/s (on {len(sample)} lines)")
    print(f"nodemedic classifier: {fast_rate:>10,.0f} lines/s (target >= 200,000)")
    print(f"ratio:                {fast_rate / naive_rate:>10.1f}x (target >= 20x)")


if __name__ == "__main__":
    main()
