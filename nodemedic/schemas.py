"""JSON Schemas of the rule files and the cluster settings, derived from the loaders'
dataclasses and checks, published beside them (``nodemedic/catalog/rules.schema.json``,
``nodemedic/settings.schema.json``) for editors and other tools.

The loaders (``nodemedic.catalog.parse_rules``, ``nodemedic.settings.parse_clusters``)
stay the authority and report every mistake at once: they also check what a schema cannot
say (a pattern compiles, ``match`` names its groups, a day's limit is at least the hour's,
spares are of listed groups). The schemas are generated from the same fields, so they
cannot drift from the loaders (tests/unit/nodemedic/catalog/test_schemas.py):

    python -m nodemedic.schemas   # rewrites both files
"""

from __future__ import annotations

import json
import re
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

from nodemedic import catalog
from nodemedic.settings import CONTEXT_KEY, GROUP_SETTINGS, ClusterSettings, declare

DRAFT = "https://json-schema.org/draft/2020-12/schema"
ROOT = Path(__file__).resolve().parent
RULES_SCHEMA = ROOT / "catalog" / "rules.schema.json"
SETTINGS_SCHEMA = ROOT / "settings.schema.json"
LINK = re.compile(r"\[([^\]]+)\]\([^)]+\)")
Schema = dict[str, Any]


def _rule_property(name: str, hint: Any) -> Schema:
    if name == "threshold":
        return {
            "type": "object",
            "properties": {
                "count": {"type": "integer", "minimum": 1},
                "window": {"type": "integer", "minimum": 1},
            },
            "required": ["count", "window"],
            "additionalProperties": False,
        }
    if name == "match":
        return {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {"type": "array", "minItems": 1},
        }
    schema: Schema = {"type": "string"}
    if get_origin(hint) is Literal:
        schema["enum"] = list(get_args(hint))
    patterns = {"id": catalog.ID_PATTERN, "metric": catalog.METRIC_PATTERN}
    if name in patterns:
        schema["pattern"] = patterns[name].pattern
    if name in catalog.REQUIRED:
        schema["minLength"] = 1
    return schema


def rules_schema() -> Schema:
    hints = get_type_hints(catalog.Rule)
    rule: Schema = {
        "type": "object",
        "properties": {f.name: _rule_property(f.name, hints[f.name]) for f in fields(catalog.Rule)},
        "required": list(catalog.REQUIRED),
        "additionalProperties": False,
    }
    return {
        "$schema": DRAFT,
        "title": "nodemedic rule file",
        "description": "A file of fault rules (nodemedic/catalog/rules/README.md).",
        "type": "object",
        "properties": {
            "schema": {"const": 1},
            "rules": {"type": "array", "items": {"$ref": "#/$defs/rule"}},
        },
        "required": ["rules"],
        "$defs": {"rule": rule},
    }


_BY_KIND: dict[type, Schema] = {
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    str: {"type": "string"},
    tuple: {"type": "array", "items": {"type": "string"}},
}


def _setting_property(name: str) -> Schema:
    """The schema of one setting, read from its declaration: its type, its choices, its
    bounds and the schema words it declares."""
    spec = declare.specs(ClusterSettings)[name]
    if name == "group_overrides":
        own = {key: _setting_property(key) for key in GROUP_SETTINGS}
        group = {"type": "object", "properties": own, "additionalProperties": False}
        return {"type": "object", "additionalProperties": group}
    if spec.mapping is not None:
        schema: Schema = {"type": "object"}
    else:
        schema = dict(_BY_KIND[declare.kinds(ClusterSettings)[name]])
    allowed = declare.choices(ClusterSettings).get(name) or spec.one_of
    if allowed:
        schema["enum"] = list(allowed)
    if spec.minimum is not None:
        schema["minimum"] = spec.minimum
    if spec.maximum is not None:
        schema["maximum"] = spec.maximum
    return {**schema, **spec.schema}


def description(text: str) -> str:
    """A setting's doc as plain text: its links' words without their targets."""
    return LINK.sub(r"\1", text)


def settings_schema() -> Schema:
    docs = declare.docs(ClusterSettings)
    properties = {}
    for setting in declare.declared(ClusterSettings):
        schema = _setting_property(setting.name)
        if (
            declare.specs(ClusterSettings)[setting.name].mapping
            or setting.name == "group_overrides"
        ):
            schema["default"] = {}
        elif setting.default is not MISSING:
            default = setting.default
            schema["default"] = list(default) if isinstance(default, tuple) else default
        properties[setting.name] = {
            "description": description(docs.get(setting.name, "")),
            **schema,
        }
    cluster: Schema = {
        "type": "object",
        "properties": properties,
        "required": ["name"],
        "additionalProperties": False,
    }
    return {
        "$schema": DRAFT,
        "title": "nodemedic clusters",
        "description": (
            f"The CDK context value {CONTEXT_KEY!r}: the clusters nodemedic "
            "watches, with their settings (docs/deploy.md). Synth also checks what a "
            "schema cannot say: a day's limit is at least the hour's, spares are of listed "
            "node groups, the fleet settings are possible, names are unique."
        ),
        "type": "array",
        "items": {"$ref": "#/$defs/cluster"},
        "$defs": {"cluster": cluster},
    }


def rendered(schema: Schema) -> str:
    return json.dumps(schema, indent=2) + "\n"


def main() -> None:
    RULES_SCHEMA.write_text(rendered(rules_schema()), encoding="utf-8")
    SETTINGS_SCHEMA.write_text(rendered(settings_schema()), encoding="utf-8")


if __name__ == "__main__":
    main()
