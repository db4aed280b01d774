"""The fault families issue 35 found missed or mis-acted (tests/events/kmsg/families.tsv),
each on real lines: the rule that judges a line and the action nodemedic takes, as a
cluster with the default settings does, or silence for a recovery, a benign state change
and a tenant's own limit."""

from __future__ import annotations

import pytest

from nodemedic.catalog import load_catalog
from nodemedic.detect.classifier import Classifier
from nodemedic.detect.filterpattern import selected, subscription_filter_patterns
from tests.support.paths import EVENTS

CATALOG = load_catalog()
CLASSIFIER = Classifier(CATALOG)


def cases() -> list[tuple[str, str, str]]:
    rows = []
    for raw in (EVENTS / "kmsg" / "families.tsv").read_text(encoding="utf-8").splitlines():
        if raw.strip() and not raw.startswith("#"):
            rule, action, line = raw.split("\t", 2)
            rows.append((rule, action, line))
    return rows


DETECTED = [case for case in cases() if case[0] != "-"]
SILENT = [line for rule, _, line in cases() if rule == "-"]


@pytest.mark.parametrize(("rule", "action", "line"), DETECTED, ids=[c[0] for c in DETECTED])
def test_each_family_s_lines_get_their_rule_and_action(rule: str, action: str, line: str) -> None:
    fault = CLASSIFIER.classify(line)
    assert fault is not None, line
    assert (fault.fault_id, fault.action) == (rule, action)


def test_each_family_s_lines_reach_the_classifier_through_the_subscription_filter() -> None:
    """A rule the filter keeps its lines from never fires in AWS (moto delivers them all):
    every spelling and head a family's lines show must hold a filter term."""
    patterns = subscription_filter_patterns(CATALOG)
    assert [line for _, _, line in DETECTED if not selected(patterns, line)] == []


@pytest.mark.parametrize("line", SILENT, ids=[line[:50] for line in SILENT])
def test_recoveries_benign_states_and_a_tenant_s_own_limits_stay_silent(line: str) -> None:
    assert CLASSIFIER.classify(line) is None


def test_a_process_named_like_a_bug_line_is_not_a_kernel_bug() -> None:
    """A crash of a process called "BUG: x" names its pid in brackets; the rule leaves it."""
    line = "BUG: x[1234]: segfault at 0 ip 00007f sp 00007f error 4 in libc.so.6[7f0+1000]"
    assert CLASSIFIER.classify(line) is None
