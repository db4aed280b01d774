"""The settings as cdk.json gives them (JSON): the type each value must have, and the
lists and objects turned into what ``ClusterSettings`` keeps (tuples, sorted pairs)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodemedic import group_settings


def type_errors(values: Mapping[str, Any], kinds: Mapping[str, type]) -> dict[str, str]:
    """Setting → why its value has the wrong type. JSON from cdk.json or ``-c``:
    ``"node_groups": "trn1"`` would otherwise become the groups ``t``, ``r``, ``n``, ``1``,
    and ``"dry_run": "false"`` a true value."""
    errors = {}
    for name, kind in kinds.items():
        if name not in values:
            continue
        value = values[name]
        if name in OBJECTS:
            wanted, of = OBJECTS[name]
            if not group_settings.mapping_of(value, of):
                errors[name] = f"{name} must map {wanted}, not {value!r}"
        elif name == "group_overrides":
            errors.update(_override_type_errors(value, kinds))
        elif kind is tuple:
            if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                errors[name] = f"{name} must be a list of strings, not {value!r}"
        elif kind is int:
            if isinstance(value, bool) or not isinstance(value, int):
                errors[name] = f"{name} must be a whole number, not {value!r}"
        elif not isinstance(value, kind):
            errors[name] = f"{name} must be a {kind.__name__}, not {value!r}"
    return errors


OBJECTS: dict[str, tuple[str, type]] = {
    "spares": ("node group names to whole numbers", int),
    "actions": ("rule ids or components to actions", str),
}
"""The settings that are objects in cdk.json (sorted pairs in ``ClusterSettings``): what
they map to what."""


def _override_type_errors(value: Any, kinds: Mapping[str, type]) -> dict[str, str]:
    """Each group's own settings are typed as the cluster's."""
    if not group_settings.mapping_of(value, Mapping):
        return {
            "group_overrides": f"group_overrides must map node groups to objects, not {value!r}"
        }
    found = [
        f"group_overrides: {group!r}: {error}"
        for group, own in value.items()
        for error in type_errors(own, kinds).values()
    ]
    return {"group_overrides": "; ".join(found)} if found else {}


def plain(values: Mapping[str, Any]) -> dict[str, Any]:
    """JSON's lists and objects as the settings keep them: tuples and sorted pairs."""
    kept = dict(values)
    for key in ("node_groups", "notification_emails", "spot_groups"):
        if key in kept:
            kept[key] = tuple(kept[key])
    for key in OBJECTS:
        if key in kept:
            kept[key] = group_settings.pairs(kept[key])
    if "group_overrides" in kept:
        kept["group_overrides"] = group_settings.pairs(
            {
                group: group_settings.pairs(plain(own))
                for group, own in kept["group_overrides"].items()
            }
        )
    return kept
