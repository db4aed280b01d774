"""JSON Schemas of the rule files and the cluster settings, derived from the loaders'
dataclasses and checks, published beside them (``nodemedic/catalog/rules.schema.json``,
``nodemedic/settings.schema.json``) for editors and other tools.

The loaders (``nodemedic.catalog.parse_rules``, ``nodemedic.settings.parse_clusters``)
stay the authority and report every mistake at once: they also check what a schema cannot
say (a pattern compiles, ``match`` names its groups, a day's limit is at least the hour's,
spares are of listed groups). The schemas are generated from the same fields, so they
cannot drift from the loaders (tests/unit/catalog/test_schemas.py):

    python -m nodemedic.schemas   # rewrites both files
"""

from __future__ import annotations

import ast
import inspect
import json
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

from nodemedic import catalog, group_settings, settings, settings_values

DRAFT = "https://json-schema.org/draft/2020-12/schema"
ROOT = Path(__file__).resolve().parent
RULES_SCHEMA = ROOT / "catalog" / "rules.schema.json"
SETTINGS_SCHEMA = ROOT / "settings.schema.json"
Schema = dict[str, Any]


def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of ``cls``, one line."""
    body = ast.parse(inspect.getsource(cls)).body[0]
    assert isinstance(body, ast.ClassDef)
    docs = {}
    for statement, following in zip(body.body, body.body[1:], strict=False):
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[statement.target.id] = " ".join(following.value.value.split())
    return docs


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


def _setting_property(name: str, hint: Any, kind: type) -> Schema:
    if name == "spares":
        number = {"type": "integer", "minimum": 0, "maximum": settings_values.MAX_SPARES}
        return {"type": "object", "additionalProperties": number}
    if name == "actions":
        action = {"enum": list(group_settings.OVERRIDE_ACTIONS)}
        return {"type": "object", "additionalProperties": action}
    if name == "group_overrides":
        hints = get_type_hints(settings.ClusterSettings)
        kinds = {f.name: type(f.default) for f in fields(settings.ClusterSettings)}
        own = {
            key: _setting_property(key, hints[key], kinds[key])
            for key in group_settings.GROUP_SETTINGS
        }
        group = {"type": "object", "properties": own, "additionalProperties": False}
        return {"type": "object", "additionalProperties": group}
    if name == "node_groups":
        group = {"type": "string", "minLength": 1, "maxLength": settings_values.MAX_GROUP_NAME}
        group["pattern"] = "^[^" + "".join(settings_values.IAM_WILDCARDS) + "]*$"
        return {"type": "array", "items": group, "uniqueItems": True}
    if name == "notification_emails":
        email = {"type": "string", "pattern": settings_values.EMAIL.pattern}
        return {"type": "array", "items": email}
    by_kind: dict[type, Schema] = {
        bool: {"type": "boolean"},
        int: {"type": "integer"},
        str: {"type": "string"},
        tuple: {"type": "array", "items": {"type": "string"}},
    }
    schema = by_kind[kind]
    if get_origin(hint) is Literal:
        schema["enum"] = list(get_args(hint))
    if name == "name":
        schema["pattern"] = settings_values.NAME.pattern
    if name == "eks_cluster_name":
        schema["pattern"] = f"^$|{settings_values.EKS_NAME.pattern}"
    if name in settings_values.AT_LEAST_ONE:
        schema["minimum"] = 1
    if name == "max_unhealthy_percent":
        schema.update(minimum=0, maximum=100)
    if name in ("classifier_reserved_concurrency", "wait_before_acting"):
        schema["minimum"] = 0
    if name == "log_retention_days":
        schema["enum"] = list(settings_values.LOG_RETENTION_DAYS)
    return schema


def settings_schema() -> Schema:
    docs = field_docs(settings.ClusterSettings)
    hints = get_type_hints(settings.ClusterSettings)
    properties = {}
    for setting in fields(settings.ClusterSettings):
        default = setting.default
        kind = str if default is MISSING else type(default)
        schema = _setting_property(setting.name, hints[setting.name], kind)
        if setting.name in ("spares", "actions", "group_overrides"):
            schema["default"] = {}
        elif default is not MISSING:
            schema["default"] = list(default) if isinstance(default, tuple) else default
        properties[setting.name] = {"description": docs.get(setting.name, ""), **schema}
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
            f"The CDK context value {settings.CONTEXT_KEY!r}: the clusters nodemedic "
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
