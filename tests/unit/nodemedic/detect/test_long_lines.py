"""Bad input stays cheap: a line of any length costs the classifier a bounded time.

A tenant can write long lines into the kernel log (and an attacker with the agent's
credential can send anything): one 256 KiB line once took seconds, and a handful in one
batch would run the classify Lambda out of time. Each rule is fed lines shaped to make its
pattern backtrack: its required text repeated, its example repeated, and its example with
a long run of digits (what ``\\d+`` and hex classes consume) in the middle.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from functools import partial

import pytest

from nodemedic.catalog import Rule
from nodemedic.detect.classifier import MAX_LINE, default_classifier
from nodemedic.detect.matching import required_literal

SIZE = 256 * 1024
BUDGET = 0.100
"""CPU seconds one line may cost, on the slowest of the shapes."""


def _shapes(rule: Rule, size: int) -> dict[str, str]:
    needle = required_literal(rule.pattern) or rule.example[:16]
    half = len(rule.example) // 2
    return {
        "needle repeated": (needle + " ") * (size // (len(needle) + 1)),
        "example repeated": (rule.example + " ") * (size // (len(rule.example) + 1)),
        "digits inside": rule.example[:half] + "9" * size + rule.example[half:],
        "digits at the end": rule.example[:half] + "9" * size,
    }


def _cost(call: Callable[[], object]) -> float:
    """The best of three runs in CPU time: the budget is about the algorithm, not a busy
    machine."""
    runs = []
    for _ in range(3):
        began = time.process_time()
        call()
        runs.append(time.process_time() - began)
    return min(runs)


RULES = default_classifier().catalog.rules


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_a_long_adversarial_line_costs_the_classifier_little(rule: Rule) -> None:
    classifier = default_classifier()
    for shape, line in _shapes(rule, SIZE).items():
        assert _cost(partial(classifier.classify, line, rule.source)) < BUDGET, shape


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_no_pattern_is_super_linear(rule: Rule) -> None:
    """The patterns themselves, on a whole line four times the cut: a pattern whose
    quantifiers compete for the same characters is quadratic (seconds here, where a
    linear one takes a millisecond), whatever cut protects it today."""
    pattern = re.compile(rule.pattern)
    for shape, line in _shapes(rule, 4 * MAX_LINE).items():
        assert _cost(partial(pattern.search, line)) < BUDGET, shape


def test_a_long_line_is_matched_on_its_start_in_bulk_and_alone() -> None:
    """What lies past MAX_LINE is not matched, the same way on both paths."""
    classifier = default_classifier()
    fault = "NVRM: Xid (PCI:0000:2b:00): 79, pid=1234, name=python, GPU has fallen off the bus."
    early = fault + " " * SIZE
    late = " " * MAX_LINE + fault
    assert classifier.classify(early) is not None
    assert classifier.classify(late) is None
    assert [i for i, _ in classifier.classify_lines([late, early])] == [1]
