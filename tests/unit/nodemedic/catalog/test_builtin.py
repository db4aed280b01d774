"""The shipped catalog against real kernel lines from public sources (tests/events/kmsg)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodemedic.catalog import CatalogError, Rule, load_catalog
from nodemedic.contracts.health import LINE_CHECKS
from nodemedic.detect.classifier import Classifier
from nodemedic.detect.filterpattern import (
    MAX_FILTERS,
    MAX_PATTERN_LENGTH,
    filter_terms,
    selected,
    subscription_filter_patterns,
)
from tests.support.paths import EVENTS as EVENTS_ROOT

EVENTS = EVENTS_ROOT / "kmsg"
CATALOG = load_catalog()
CLASSIFIER = Classifier(CATALOG)


def labelled_lines() -> list[tuple[str, str]]:
    rows = []
    for raw in (EVENTS / "faults.txt").read_text().splitlines():
        if raw.strip() and not raw.startswith("#"):
            expected, line = raw.split("\t", 1)
            rows.append((expected, line))
    return rows


def benign_lines() -> list[str]:
    text = (EVENTS / "benign.txt").read_text().splitlines()
    return [line for line in text if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize(("expected", "line"), labelled_lines())
def test_every_real_fault_line_gets_its_rule(expected: str, line: str) -> None:
    fault = CLASSIFIER.classify(line)
    assert fault is not None, f"no fault for: {line}"
    assert fault.fault_id == expected


@pytest.mark.parametrize("line", benign_lines())
def test_ordinary_boot_and_driver_lines_are_not_faults(line: str) -> None:
    assert CLASSIFIER.classify(line) is None


@pytest.mark.parametrize("rule", CATALOG.rules, ids=lambda r: r.id)
def test_each_rule_wins_on_its_own_example(rule: object) -> None:
    from nodemedic.catalog import Rule

    assert isinstance(rule, Rule) and rule.example, "every rule carries a realistic example"
    fault = CLASSIFIER.classify(rule.example, rule.source)
    if rule.action == "ignore":
        assert fault is None
    else:
        assert fault is not None and fault.fault_id == rule.id


def test_the_catalog_covers_what_the_fleet_needs() -> None:
    ids = {rule.id for rule in CATALOG.rules}
    for code in (13, 31, 43, 45, 48, 62, 64, 74, 79, 95, 109, 119, 120, 140):
        assert f"nvidia-xid-{code}" in ids
    for kind in (
        "DMA_ERROR",
        "HANG_ON_COLLECTIVES",
        "HBM_UNCORRECTABLE_ERROR",
        "SRAM_UNCORRECTABLE_ERROR",
        "NC_UNCORRECTABLE_ERROR",
    ):
        rule = CATALOG.rule("neuron-" + kind.lower().replace("_", "-"))
        assert (rule.namespace, rule.metric) == ("NeuronHealthCheck", f"NeuronHasError_{kind}")
    assert CATALOG.rule("nvidia-xid-79").action == "replace"
    assert CATALOG.rule("nvidia-xid-48").action == "reboot"
    assert CATALOG.rule("nvidia-xid-13").action == "notify"
    assert CATALOG.rule("neuron-dma-error").action == "replace"
    components = {rule.component for rule in CATALOG.rules}
    assert components >= {"gpu", "neuron", "efa", "memory", "cpu", "storage", "kernel"}


def test_filter_patterns_pass_every_fault_line_and_fit_cloudwatch() -> None:
    patterns = subscription_filter_patterns(CATALOG)
    assert 0 < len(patterns) <= MAX_FILTERS
    assert all(0 < len(pattern) <= MAX_PATTERN_LENGTH for pattern in patterns)
    lines = [line for _, line in labelled_lines()]
    lines += [r.example for r in CATALOG.rules if r.source == "kmsg" and r.action != "ignore"]
    missed = [line for line in lines if not selected(patterns, line)]
    assert missed == []
    health = [r.example for r in CATALOG.rules if r.source == "health" and r.action != "ignore"]
    assert health, "health rules exist"


def test_filter_patterns_keep_most_benign_lines_away_from_the_lambda() -> None:
    """Two of three look-alikes stay away. The NVIDIA driver's own lines all pass: twenty-one
    rules select theirs by ``NVRM`` alone, a few healthy lines a boot, which frees the
    filter's characters for rules of other families."""
    patterns = subscription_filter_patterns(CATALOG)
    passed = [line for line in benign_lines() if selected(patterns, line)]
    others = [line for line in passed if not line.startswith("NVRM:")]
    assert len(passed) <= len(benign_lines()) // 3, passed
    assert len(others) <= len(benign_lines()) // 4, others


SITE_RULES = """schema: 1
rules:
  - id: site-psu-failure
    source: kmsg
    pattern: '^ipmi: PSU (?P<psu>\\d+) lost its input power'
    component: cpu
    severity: fatal
    action: replace
    metric: SitePsuFailure
    example: 'ipmi: PSU 1 lost its input power'
  - id: site-fan-slow
    source: kmsg
    pattern: '^ipmi: fan (?P<fan>\\d+) speed below threshold'
    component: cpu
    severity: warning
    action: notify
    metric: SiteFanSlow
    example: 'ipmi: fan 2 speed below threshold'
"""


def test_filter_patterns_leave_room_for_a_site_s_own_rules(tmp_path: Path) -> None:
    """A site's own rules (``NODEMEDIC_CATALOG_EXTRA``) add their terms to the same two
    filters: the built-in terms must leave room for a few, or the site's catalog is refused."""
    mine = tmp_path / "site.yaml"
    mine.write_text(SITE_RULES)
    patterns = subscription_filter_patterns(load_catalog([mine]))
    assert len(patterns) <= MAX_FILTERS
    assert selected(patterns, "ipmi: fan 2 speed below threshold")


def test_a_rule_s_own_term_selects_its_lines_and_one_no_match_holds_is_refused(
    tmp_path: Path,
) -> None:
    """``term``: a site's two rules share ``ipmi:`` in the filter instead of two terms, and a
    term some matches lack would drop their lines, so the catalog is refused."""
    shared = tmp_path / "shared.yaml"
    shared.write_text(
        SITE_RULES.replace("    source: kmsg\n", "    source: kmsg\n    term: 'ipmi:'\n")
    )
    terms = filter_terms(load_catalog([shared]))
    assert "ipmi:" in terms
    assert not [term for term in terms if "PSU" in term or "fan" in term]
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(
        SITE_RULES.replace("    source: kmsg\n", "    source: kmsg\n    term: 'PSU failure'\n", 1)
    )
    with pytest.raises(
        CatalogError, match=r"site-psu-failure: its term 'PSU failure' is not a literal"
    ):
        filter_terms(load_catalog([wrong]))


@pytest.mark.parametrize(
    "rule",
    [r for r in CATALOG.rules if r.source in ("health", "deep-check")],
    ids=lambda rule: rule.id,
)
def test_a_health_rule_names_a_check_the_agent_writes(rule: Rule) -> None:
    """A rule for a check no line carries never fires: its pattern and its example name one
    of the contract's check names (``nodemedic.contracts.health``)."""
    check = json.loads(rule.example)["check"]
    assert check in LINE_CHECKS
    assert rule.pattern.startswith(f"^{check} ")
