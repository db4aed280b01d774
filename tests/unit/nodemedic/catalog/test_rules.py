"""The catalog's mechanics: loading, validation, order, user extensions."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodemedic.catalog import CatalogError, load_catalog, parse_rules
from nodemedic.detect.classifier import Classifier
from nodemedic.detect.matching import required_literal

XID = r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9A-Fa-f:.]+)\): (?P<xid>\d+),"


def rules_yaml(*bodies: str) -> str:
    return "schema: 1\nrules:\n" + "".join(bodies)


def rule(rule_id: str, pattern: str, action: str = "reboot", extra: str = "") -> str:
    return (
        f"  - id: {rule_id}\n    source: kmsg\n    pattern: '{pattern}'\n"
        f"    component: gpu\n    severity: fatal\n    action: {action}\n"
        f"    metric: M_{rule_id.replace('-', '_')}\n{extra}"
    )


def classifier_of(text: str) -> Classifier:
    from nodemedic.catalog import Catalog

    return Classifier(Catalog(rules=tuple(parse_rules(text, "test"))))


def test_rules_sharing_a_pattern_are_told_apart_by_the_captured_value() -> None:
    text = rules_yaml(
        rule("xid-79", XID, "replace", "    match: {xid: ['79']}\n"),
        rule("xid-13", XID, "notify", "    match: {xid: ['13', '31']}\n"),
    )
    classify = classifier_of(text).classify
    fault = classify("NVRM: Xid (PCI:0000:2b:00): 79, pid=1, GPU has fallen off the bus.")
    assert fault is not None and fault.fault_id == "xid-79" and fault.action == "replace"
    assert fault.groups["pci"] == "0000:2b:00"
    fault = classify("NVRM: Xid (0000:03:00): 31, pid=2, Ch 00000010, MMU Fault")
    assert fault is not None and fault.fault_id == "xid-13"
    assert classify("NVRM: Xid (PCI:0000:2b:00): 999, pid=1, new code") is None


def test_first_rule_in_file_order_wins_across_patterns() -> None:
    text = rules_yaml(
        rule("xid-79", XID, "replace", "    match: {xid: ['79']}\n"),
        rule("bus-gone", "fallen off the bus", "reboot"),
    )
    classify = classifier_of(text).classify
    hit = classify("NVRM: Xid (PCI:0000:2b:00): 79, pid=1, GPU has fallen off the bus.")
    assert hit is not None and hit.fault_id == "xid-79"
    other = classify("NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.")
    assert other is not None and other.fault_id == "bus-gone"
    unknown_xid = classify("NVRM: Xid (PCI:0000:2b:00): 998, pid=1, GPU has fallen off the bus.")
    assert unknown_xid is not None and unknown_xid.fault_id == "bus-gone"


def test_an_ignore_rule_silences_a_later_broader_rule() -> None:
    text = rules_yaml(
        rule("probe", "EDAC MC0: Giving out device", "ignore"),
        rule("edac", "EDAC MC0", "replace"),
    )
    classify = classifier_of(text).classify
    assert classify("EDAC MC0: Giving out device to module skx_edac") is None
    hit = classify("EDAC MC0: 1 UE memory read error")
    assert hit is not None and hit.fault_id == "edac"


@pytest.mark.parametrize(
    ("pattern", "needle"),
    [
        (XID, "NVRM: Xid ("),
        ("NEURON_HW_ERR=(?P<type>DMA_ERROR)", "NEURON_HW_ERR="),
        ("(?i)hung task", None),
        ("a|bcdef", None),
        ("blocked for more than \\d+ seconds", "blocked for more than "),
    ],
)
def test_required_literal_never_claims_an_optional_part(pattern: str, needle: str | None) -> None:
    assert required_literal(pattern) == needle


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (rule("Bad_Id", "x"), "lower-case kebab-case"),
        (rule("a", "(unclosed"), "does not compile"),
        (rule("a", "abc", "explode"), "action must be one of"),
        (rule("a", XID, "reboot", "    match: {nope: ['1']}\n"), "does not have"),
        (rule("a", "abc", "reboot", "    threshold: {count: 0, window: 5}\n"), "positive"),
        (rule("a", "abc", "reboot", "    colour: red\n"), "unknown field"),
    ],
)
def test_a_broken_rule_is_refused_with_its_file_and_id(body: str, message: str) -> None:
    with pytest.raises(CatalogError, match=message) as caught:
        parse_rules(rules_yaml(body), "mine.yaml")
    assert str(caught.value).startswith("mine.yaml: rule ")


def test_user_rules_go_first_and_replace_builtins_by_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builtin = load_catalog()
    victim = builtin.rules[-1]
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        rules_yaml(
            rule("site-fan-failure", "fan \\d+ failed", "notify"),
            rule(victim.id, "never matches anything xyz", "notify"),
        )
    )
    monkeypatch.setenv("NODEMEDIC_CATALOG_EXTRA", str(mine))
    catalog = load_catalog()
    assert catalog.rules[0].id == "site-fan-failure"
    assert catalog.rule(victim.id).pattern == "never matches anything xyz"
    assert len(catalog.rules) == len(builtin.rules) + 1
    fault = Classifier(catalog).classify("fan 3 failed")
    assert fault is not None and fault.action == "notify"


def test_an_unreadable_extra_catalog_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="cannot read catalog"):
        load_catalog([tmp_path / "missing.yaml"])


def test_condition_polarity_follows_the_condition_name() -> None:
    catalog = load_catalog()
    neuron = next(r for r in catalog.rules if r.component == "neuron")
    gpu = next(r for r in catalog.rules if r.component == "gpu" and r.action == "replace")
    assert (neuron.condition, neuron.condition_status) == ("NeuronHasError", "True")
    assert (gpu.condition, gpu.condition_status) == ("AcceleratedHardwareReady", "False")


def test_every_mistake_of_a_file_is_reported_at_once() -> None:
    text = rules_yaml(
        rule("Bad_Id", "abc"),
        rule("fine", "abc", "explode", "    colour: red\n"),
    )
    with pytest.raises(CatalogError) as caught:
        parse_rules(text, "mine.yaml")
    lines = str(caught.value).splitlines()
    assert lines == [
        "mine.yaml: rule Bad_Id: id 'Bad_Id' must be lower-case kebab-case",
        "mine.yaml: rule fine: unknown field(s): colour",
        "mine.yaml: rule fine: action must be one of ignore, notify, reset, reboot, replace, not "
        "'explode'",
    ]


def test_a_duplicate_id_is_said_with_the_other_mistakes(tmp_path: Path) -> None:
    """One run of ``catalog --check`` names every mistake, the reused id among them."""
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        rules_yaml(rule("mine-a", "first"), rule("mine-a", "second"), rule("mine-b", "x", "boot")),
        encoding="utf-8",
    )
    other = tmp_path / "other.yaml"
    other.write_text(rules_yaml(rule("other-a", "y", "explode")), encoding="utf-8")
    with pytest.raises(CatalogError) as caught:
        load_catalog([mine, other])
    said = str(caught.value)
    assert "rule mine-a: id used twice in this file" in said
    assert "rule mine-b" in said  # its action, in the same message
    assert f"{other}: rule other-a" in said  # the next file's mistakes too
