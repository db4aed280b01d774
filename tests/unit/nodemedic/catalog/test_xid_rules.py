"""``rules/xid.yaml`` is generated from a copy of NVIDIA's Xid catalog: it must be exactly what
``scripts/generate_xid_rules.py`` makes of its sources, and the generator must refuse
sources that would make a rule nobody decided on."""

from __future__ import annotations

import pytest

from nodemedic.catalog import load_catalog, parse_rules
from nodemedic.detect.classifier import Classifier
from scripts import generate_xid_rules as generator

TABLE = (
    "\t".join(generator.COLUMNS) + "\n" + "1\tA_ERROR / A_OLD\tBroke\tRESET_GPU\tCONTACT_SUPPORT\n"
)
POLICY = """\
defaults:
  pattern: 'Xid (?P<xid>\\d+),'
  summary: '{description} (NVIDIA: {immediate})'
  example: 'Xid {code}, {description}'
buckets:
  - {immediate: [RESET_GPU], severity: critical, action: reboot, reason: a reset}
unused: {severity: warning, action: notify, summary: unused, reason: never logged}
unknown: {severity: warning, action: notify, summary: not in the table, reason: news}
codes: {}
"""
EXAMPLES = "id\tsource\texample\nnvidia-xid-unknown\t[x]\tXid 300, new\n"


def test_the_checked_in_xid_rules_are_what_their_sources_make() -> None:
    written = generator.OUTPUT.read_text(encoding="utf-8")
    assert written == generator.checked_in(), "stale: run `make xid-rules` and commit the result"


def test_every_code_of_nvidias_table_has_its_rule() -> None:
    table = generator.read_table(generator.TABLE.read_text(encoding="utf-8"))
    ids = {rule.id for rule in parse_rules(generator.OUTPUT.read_text(encoding="utf-8"), "xid")}
    assert {f"nvidia-xid-{row.code}" for row in table} <= ids
    assert len(table) >= 172


def test_a_row_becomes_a_rule_through_its_bucket_and_unused_codes_only_notify() -> None:
    table = TABLE + "2\tB_ERROR\tUnused\tRESET_GPU\t\n"
    rules = parse_rules(
        generator.render(table, POLICY, EXAMPLES + "nvidia-xid-2\t[x]\tXid 2, seen\n"), "t"
    )
    first, second, _ = rules
    assert (first.id, first.severity, first.action) == ("nvidia-xid-1", "critical", "reboot")
    assert first.summary == "Xid 1 A_ERROR: Broke (NVIDIA: RESET_GPU)"
    assert (first.example, first.match) == ("Xid 1, Broke", (("xid", frozenset({"1"})),))
    assert (second.severity, second.action, second.summary) == (
        "warning",
        "notify",
        "Xid 2 B_ERROR: unused",
    )
    assert second.example == "Xid 2, seen"


@pytest.fixture(scope="module")
def classifier() -> Classifier:
    return Classifier(load_catalog())


@pytest.mark.parametrize(
    "text",
    [
        "79, pid=1234, name=python, GPU has fallen off the bus.",
        "145, RLW_RXPIPE Fatal XC0 i0 Link 11 (0x00000001 0x00000000)",
        "154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
        "13, Graphics Exception: ESR 0x57e7b0=0x81e0017",
    ],
)
@pytest.mark.parametrize("hidden", ["...", "xxxx:xx:xx", "XXXX:XX:XX.X", "<bus id>"])
def test_an_xid_pasted_with_its_address_hidden_is_judged_as_with_it(
    classifier: Classifier, text: str, hidden: str
) -> None:
    """Threads and tickets hide the GPU's address; the fault is the same."""
    shown = classifier.classify(f"NVRM: Xid (PCI:0000:2b:00): {text}")
    found = classifier.classify(f"NVRM: Xid (PCI:{hidden}): {text}")
    assert shown is not None and found is not None
    assert (found.fault_id, found.action) == (shown.fault_id, shown.action)
    assert "pci" not in found.groups and shown.groups["pci"] == "0000:2b:00"


def test_a_code_the_table_does_not_list_meets_the_last_rule_on_the_shared_pattern() -> None:
    *coded, last = parse_rules(generator.render(TABLE, POLICY, EXAMPLES), "t")
    assert (last.id, last.action, last.metric) == (
        "nvidia-xid-unknown",
        "notify",
        "NvidiaXidUnknown",
    )
    assert last.match == () and {rule.pattern for rule in coded} == {last.pattern}
    assert (last.example, last.summary) == ("Xid 300, new", "not in the table")
    shipped = parse_rules(generator.OUTPUT.read_text(encoding="utf-8"), "xid")
    assert shipped[-1].id == "nvidia-xid-unknown" and shipped[-1].pattern == shipped[0].pattern


@pytest.mark.parametrize(
    ("table", "policy", "examples", "message"),
    [
        (
            TABLE,
            POLICY.replace("codes: {}", "codes: {1: {action: ignore}}"),
            EXAMPLES,
            r"missing \['reason'\]",
        ),
        (
            TABLE,
            POLICY.replace("codes: {}", "codes: {9: {reason: r}}"),
            EXAMPLES,
            "not in NVIDIA's table",
        ),
        (
            TABLE.replace("RESET_GPU", "NEW_BUCKET"),
            POLICY,
            EXAMPLES,
            "no bucket group .* 'NEW_BUCKET'",
        ),
        (
            TABLE,
            POLICY.replace("action: reboot", "action: reimage"),
            EXAMPLES,
            "action must be one of",
        ),
        (TABLE, POLICY, EXAMPLES + "nvidia-xid-9\t[x]\tXid 9,\n", "no such Xid rule"),
        (TABLE, POLICY, EXAMPLES + "nvidia-xid-1\t\tXid 1,\n", "a source and an example"),
        (TABLE.replace("Code", "Xid"), POLICY, EXAMPLES, "must name the columns"),
        (TABLE, POLICY, "id\tsource\texample\n", "nvidia-xid-unknown needs an example"),
        (TABLE, POLICY.replace("unknown: {", "unknown: {metric: M, "), EXAMPLES, "unknown"),
    ],
)
def test_sources_that_would_make_an_undecided_rule_are_refused(
    table: str, policy: str, examples: str, message: str
) -> None:
    with pytest.raises(generator.XidSourceError, match=message):
        generator.render(table, policy, examples)
