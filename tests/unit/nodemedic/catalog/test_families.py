"""The built-in catalog is one rule file per family, merged in the order ``FAMILIES`` declares."""

from __future__ import annotations

import pytest

from nodemedic.catalog import (
    FAMILIES,
    CatalogError,
    Rule,
    builtin_rules,
    merge_families,
    parse_rules,
)
from tests.support.paths import ROOT

RULES = ROOT / "nodemedic" / "catalog" / "rules"


def family_rules(family: str) -> list[Rule]:
    return parse_rules((RULES / f"{family}.yaml").read_text(encoding="utf-8"), family, builtin=True)


def test_every_rule_file_is_a_declared_family_with_rules() -> None:
    """A file FAMILIES does not name would never be loaded."""
    assert sorted(path.stem for path in RULES.glob("*.yaml")) == sorted(FAMILIES)
    assert all(family_rules(family) for family in FAMILIES)


def test_the_builtin_rules_are_the_families_one_after_the_other_in_order() -> None:
    expected = [rule for family in FAMILIES for rule in family_rules(family)]
    assert list(builtin_rules()) == expected
    assert FAMILIES[0] == "xid", "an Xid line is reported by its code before anything else"


def test_a_rule_id_used_in_two_family_files_is_refused_naming_both() -> None:
    text = (RULES / "efa.yaml").read_text(encoding="utf-8")
    with pytest.raises(
        CatalogError, match=r"rules/b\.yaml: rule efa-\S+: id already used in rules/a"
    ):
        merge_families([("rules/a.yaml", text), ("rules/b.yaml", text)])
