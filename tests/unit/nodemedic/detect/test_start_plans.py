"""The lines that start as a family of rules' matches do are run against the family's
patterns as one: each such line must reach exactly the rules one of the patterns matches,
in bulk as line by line, whatever the patterns' group names, and a pattern that cannot be
run in one alternation must still be reached."""

from __future__ import annotations

import re

import pytest

from nodemedic.catalog import load_catalog
from nodemedic.detect.classifier import Classifier
from nodemedic.detect.logformat import messages
from nodemedic.detect.matching import matches_any, prefixes
from tests.support.paths import EVENTS

CATALOG = load_catalog()
KERNEL_RULES = [rule for rule in CATALOG.rules if rule.source == "kmsg"]


def _texts() -> list[str]:
    """Every kernel line this repository holds: the catalog's examples, the real fault and
    healthy lines of tests/events, each also cut after each of its words (a line that
    starts as a fault does and stops short of it)."""
    kmsg = EVENTS / "kmsg"
    lines = [rule.example for rule in KERNEL_RULES if rule.example]
    lines += [s.split("\t", 1)[-1] for s in (kmsg / "faults.txt").read_text().splitlines()]
    lines += (kmsg / "benign.txt").read_text().splitlines()
    texts = [entry.message for entry in messages(line for line in lines if line[:1] != "#")]
    return texts + [text[:cut] for text in texts for cut in range(3, len(text), 7)]


def test_a_family_run_as_one_matches_where_one_of_its_patterns_does() -> None:
    """For every first characters that rules' matches start with, the one call reaches a
    line exactly where one of those rules' patterns matches it."""
    families: dict[str, set[str]] = {}
    for rule in KERNEL_RULES:
        for start in prefixes(rule.pattern) or ():
            families.setdefault(start, set()).add(rule.pattern)
    texts = _texts()
    run = 0
    for start, patterns in sorted(families.items()):
        compiled = [re.compile(pattern) for pattern in sorted(patterns)]
        matches = matches_any(compiled)
        if matches is None:
            continue
        run += 1
        for text in texts:
            alone = any(regex.search(text) for regex in compiled)
            assert bool(matches(text)) == alone, (start, text)
    assert run >= len(families) - 2


def test_group_names_shared_by_patterns_or_spelt_in_a_class_do_not_break_the_alternation() -> None:
    matches = matches_any(
        [re.compile(r"^xid [(?P<]+(?P<code>\d+)"), re.compile(r"^sxid (?P<code>\d+)\[\(?P<")]
    )
    assert matches is not None
    assert matches("xid (?P<79")
    assert matches("sxid 12028[(P<")
    assert not matches("xid 79")
    assert not matches("gpu 79")


@pytest.mark.parametrize(
    "pattern",
    [r"^(?P<dev>sd\w) (?P=dev) failed", r"^(a)(b) \2 failed", r"(?s)^dev.failed"],
)
def test_a_pattern_that_refers_back_or_sets_a_flag_for_the_text_is_not_joined(
    pattern: str,
) -> None:
    """Its groups made non-capturing, a back-reference would name another group or none;
    a flag for the whole text cannot stand in the middle of an alternation."""
    assert matches_any([re.compile(pattern), re.compile(r"^dev (?P<n>\d+)")]) is None


def test_a_line_holding_a_needle_across_two_lines_in_bulk_has_no_fault() -> None:
    """Lines are searched for needles as one text: a needle that only the end of one line
    and the start of the next make up is no fault of either, and the fault line after them
    is still found."""
    classifier = Classifier(CATALOG)
    fault = next(rule.example for rule in KERNEL_RULES if rule.id == "netdev-tx-timeout")
    assert fault is not None
    assert classifier.classify(fault) is not None
    cut = fault.index("WATCHDOG")
    lines = [fault[:cut], fault[cut:], fault]
    assert [index for index, _ in classifier.classify_lines(lines)] == [2]
