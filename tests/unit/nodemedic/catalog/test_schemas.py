"""The published JSON Schemas agree with the loaders: generated from the same fields, every
field the loader accepts is in the schema and no other, the built-in rules and cdk.json's
clusters are valid under them, and what the loader refuses for its shape, they refuse."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from nodemedic import catalog, schemas, settings
from tests.support.paths import ROOT


def validator(schema: dict[str, Any]) -> Draft202012Validator:
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def test_the_published_schemas_are_the_generated_ones() -> None:
    """Regenerate with ``make generated`` after changing a loader."""
    assert schemas.RULES_SCHEMA.read_text() == schemas.rendered(schemas.rules_schema())
    assert schemas.SETTINGS_SCHEMA.read_text() == schemas.rendered(schemas.settings_schema())


def test_the_schemas_name_exactly_the_fields_the_loaders_accept() -> None:
    rule = schemas.rules_schema()["$defs"]["rule"]
    assert set(rule["properties"]) == catalog.FIELDS == {f.name for f in fields(catalog.Rule)}
    assert set(rule["required"]) == set(catalog.REQUIRED)
    cluster = schemas.settings_schema()["$defs"]["cluster"]
    assert set(cluster["properties"]) == {f.name for f in fields(settings.ClusterSettings)}
    assert all(p["description"] for p in cluster["properties"].values()), "a field has no doc"


def test_the_builtin_rules_and_the_demo_clusters_are_valid() -> None:
    rules = validator(schemas.rules_schema())
    for family in catalog.FAMILIES:
        text = (ROOT / "nodemedic" / "catalog" / "rules" / f"{family}.yaml").read_text()
        assert list(rules.iter_errors(yaml.safe_load(text))) == [], family
    clusters = json.loads((ROOT / "cdk.json").read_text())["context"][settings.CONTEXT_KEY]
    assert list(validator(schemas.settings_schema()).iter_errors(clusters)) == []


GOOD_RULE = {
    "id": "a",
    "source": "kmsg",
    "pattern": "^abc",
    "component": "gpu",
    "severity": "fatal",
    "action": "reboot",
    "metric": "M",
}


@pytest.mark.parametrize(
    "change",
    [
        {"id": "Bad_Id"},
        {"action": "explode"},
        {"metric": ""},
        {"colour": "red"},
        {"threshold": {"count": 0, "window": 5}},
        {"match": {}},
    ],
)
def test_a_rule_the_loader_refuses_for_its_shape_the_schema_refuses(
    change: dict[str, Any],
) -> None:
    raw = {**GOOD_RULE, **change}
    assert catalog.rule_errors(raw)
    assert list(validator(schemas.rules_schema()).iter_errors({"rules": [raw]}))
    assert not catalog.rule_errors(GOOD_RULE)


@pytest.mark.parametrize(
    "change",
    [
        {"max_parallel": "2"},
        {"dry_run": "false"},
        {"recovery_mode": "automatic"},
        {"proof_of_origin": "off"},
        {"log_retention_days": 10},
        {"poll_seconds": 0},
        {"max_unhealthy_percent": 101},
        {"node_groups": ["trn1-*"]},
        {"node_groups": ["a", "a"]},
        {"notification_emails": ["oncall"]},
        {"spares": {"a": -1}},
        {"name": "demo_1"},
        {"max_paralel": 3},
    ],
)
def test_a_setting_the_loader_refuses_for_its_shape_the_schema_refuses(
    change: dict[str, Any],
) -> None:
    entry = {"name": "demo", "node_groups": ["a"], **change}
    with pytest.raises(ValueError):
        settings.parse_cluster(entry)
    assert list(validator(schemas.settings_schema()).iter_errors([entry]))
