"""No Xid or SXid line passes unseen: a code no rule names is notified by a catch-all, and
every code that has a rule keeps it."""

from __future__ import annotations

import pytest

from nodemedic.catalog import Catalog, load_catalog, parse_rule
from nodemedic.detect.classifier import Classifier
from nodemedic.detect.filterpattern import selected, subscription_filter_patterns
from scripts.generate_xid_rules import TABLE, read_table

CATALOG = load_catalog()
CLASSIFIER = Classifier(CATALOG)
CODES = [row.code for row in read_table(TABLE.read_text(encoding="utf-8"))]
SXID = "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): {code}, {text}"


def xid(code: int) -> str:
    return f"NVRM: Xid (PCI:0000:2b:00): {code}, pid=7, name=python, what the driver says"


def fault_id(line: str) -> str | None:
    fault = CLASSIFIER.classify(line)
    return fault.fault_id if fault else None


@pytest.mark.parametrize("code", [code for code in CODES if code != 154])
def test_every_code_of_nvidias_table_keeps_its_own_rule(code: int) -> None:
    rule = next(r for r in CATALOG.rules if r.id == f"nvidia-xid-{code}")
    assert fault_id(xid(code)) == (None if rule.action == "ignore" else rule.id)


@pytest.mark.parametrize("code", [0, 173, 175, 999])
def test_a_code_no_rule_names_is_notified(code: int) -> None:
    fault = CLASSIFIER.classify(xid(code))
    assert fault is not None
    assert (fault.fault_id, fault.action, fault.component) == (
        "nvidia-xid-unknown",
        "notify",
        "gpu",
    )


def test_an_xid_a_codes_own_rules_cannot_read_is_notified_not_dropped() -> None:
    """Xid 154 names the recovery the driver wants; one its rules do not list (a newer
    driver's "OS Reboot") reaches people."""
    line = (
        "NVRM: Xid (PCI:0000:01:00): 154, "
        "GPU recovery action changed from 0x0 (None) to 0x2 (OS Reboot)"
    )
    assert fault_id(line) == "nvidia-xid-unknown"
    assert fault_id(line.replace("OS Reboot", "Node Reboot Required")) == "nvidia-xid-154"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Fatal, Link 48 LTSSM Fault Up", "nvidia-sxid-fatal"),
        ("Non-fatal, Link 32 egress non-posted PRIV error (First)", "nvidia-sxid-nonfatal"),
        ("Severity 1 Engine instance 60 Sub-engine instance 00", None),
        ("Data {0x10000000, 0x10000000, 0x00000000}", None),
        ("NVSWITCH Temperature 97C | TSENSE WARN Threshold 95C", "nvidia-sxid-unknown"),
        ("SOE init Failed(0)", "nvidia-sxid-unknown"),
    ],
)
def test_an_sxid_head_line_is_judged_and_its_detail_lines_are_not_counted(
    text: str, expected: str | None
) -> None:
    assert fault_id(SXID.format(code=20034, text=text)) == expected


def test_the_catch_alls_lines_pass_the_subscription_filter() -> None:
    patterns = subscription_filter_patterns(CATALOG)
    for line in (xid(175), SXID.format(code=10004, text="SOE init Failed(0)")):
        assert selected(patterns, line), line


def rule(rule_id: str, match: dict[str, list[str]] | None) -> dict[str, object]:
    return {
        "id": rule_id,
        "source": "kmsg",
        "pattern": r"^code (?P<code>\d+)",
        "component": "gpu",
        "severity": "warning",
        "action": "notify",
        "metric": "M",
        **({"match": match} if match else {}),
    }


def test_a_catch_all_after_rules_on_its_pattern_takes_only_what_they_leave() -> None:
    """The classifier looks the code up, then falls back to the first rule that constrains
    nothing; a rule after that one could never be met in catalog order, and is not."""
    catalog = Catalog(
        tuple(
            parse_rule(raw)
            for raw in (
                rule("one", {"code": ["1"]}),
                rule("two", {"code": ["2"]}),
                rule("any", None),
                rule("late", {"code": ["3"]}),
            )
        )
    )
    classifier = Classifier(catalog)
    found = {line: classifier.classify(line) for line in ("code 1", "code 2", "code 3", "code 4")}
    assert {line: f.fault_id if f else None for line, f in found.items()} == {
        "code 1": "one",
        "code 2": "two",
        "code 3": "any",
        "code 4": "any",
    }
    in_bulk = dict(classifier.classify_lines(list(found)))
    assert [in_bulk[n].fault_id for n in range(4)] == ["one", "two", "any", "any"]


def test_with_the_catch_all_every_xid_is_still_one_search_and_one_lookup() -> None:
    """The classifier's promise for a storm of Xid lines holds: the rules of the shared
    pattern keep their lookup by code, with the catch-all as its fallback."""
    pattern = CATALOG.rule("nvidia-xid-79").pattern
    index = CLASSIFIER._indexes["kmsg"]
    [group] = {
        g for groups in index.by_needle.values() for g in groups if g.regex.pattern == pattern
    }
    assert group.key == "xid"
    assert group.fallback is not None and group.fallback[1].id == "nvidia-xid-unknown"
