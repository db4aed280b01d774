"""The checks a declared bound cannot say: names AWS must accept, one setting against
another, each mistake in words of its own. Each takes the values it judges, not the
settings, so the declarations (``nodemedic.settings``) stand on it and not the reverse."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, get_args

from nodemedic.catalog import Component

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,39}$")
EKS_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")
EMAIL = re.compile(r"^[^@\s\"'<>,;]+@[^@\s\"'<>,;]+\.[A-Za-z]{2,}$")
IAM_WILDCARDS = ("*", "?")
MAX_GROUP_NAME = 255
MAX_SPARES = 100
"""More idle accelerators than this per group is a capacity plan, not a spare pool."""
GROUP_NAME: Final = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_GROUP_NAME,
    "pattern": "^[^" + "".join(IAM_WILDCARDS) + "]*$",
}
"""A node group name, as the JSON Schema says it (``node_group_errors``)."""
SPARE_COUNT: Final = {"type": "integer", "minimum": 0, "maximum": MAX_SPARES}
# fmt: off
LOG_RETENTION_DAYS = (
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731,
    1096, 1827, 2192, 2557, 2922, 3288, 3653,
)
# fmt: on
"""The values CloudWatch Logs accepts for a log group's RetentionInDays."""
OVERRIDE_ACTIONS: Final = ("notify", "reboot", "replace")
"""What ``actions`` may ask for; a GPU reset stays the catalog's choice (``gpu_reset``)."""
STRENGTH: Final = ("ignore", "notify", "reset", "reboot", "replace")
"""Actions from the weakest to the strongest, as the catalog orders them."""
COMPONENTS: Final = get_args(Component)
"""The catalog's components: an ``actions`` key that is no rule id names every rule of one."""


def guess(name: str, known: Iterable[str]) -> str:
    """`` (did you mean <known>?)`` for the known name ``name`` most likely misspells, else
    nothing: ``max_paralel`` would leave the user comparing it with forty settings by eye."""
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
    return f" (did you mean {close[0]}?)" if close else ""


def misspelt(names: Iterable[str], known: Iterable[str]) -> str:
    """The names, sorted, each with its guess."""
    choices = tuple(known)
    return ", ".join(name + guess(name, choices) for name in sorted(names))


def name_errors(name: str, eks_cluster_name: str) -> list[str]:
    errors = []
    if not NAME.match(name):
        errors.append(f"cluster name {name!r} must match {NAME.pattern}")
    if eks_cluster_name and not EKS_NAME.match(eks_cluster_name):
        errors.append(
            f"eks_cluster_name {eks_cluster_name!r} is not an EKS cluster name ({EKS_NAME.pattern})"
        )
    return errors


def node_group_errors(groups: Sequence[str]) -> list[str]:
    """The names go into IAM ARNs, where ``*`` and ``?`` would widen what may be replaced."""
    errors = []
    for group in groups:
        if not 1 <= len(group) <= MAX_GROUP_NAME:
            errors.append(f"node group name {group!r} must have 1 to {MAX_GROUP_NAME} characters")
        if any(wildcard in group for wildcard in IAM_WILDCARDS):
            errors.append(f"node group name {group!r}: wildcards are not allowed")
    if len(set(groups)) != len(groups):
        errors.append("node_groups lists a group twice")
    return errors


def spares_errors(spares: Sequence[tuple[str, int]], node_groups: Sequence[str]) -> list[str]:
    """A spare of a group nodemedic does not act on would never be used, only paid for."""
    errors = []
    groups = [group for group, _ in spares]
    if len(set(groups)) != len(groups):
        errors.append("spares names a group twice")
    for group, count in spares:
        if group not in node_groups:
            errors.append(f"spares: {group!r} is not in node_groups")
        if not 0 <= count <= MAX_SPARES:
            errors.append(f"spares: {group!r} must keep 0 to {MAX_SPARES}, not {count}")
    return errors


def spot_errors(spot_groups: Sequence[str], node_groups: Sequence[str]) -> list[str]:
    """A Spot group nodemedic does not act on would be listed for nothing."""
    return [
        f"spot_groups: {group!r} is not in node_groups"
        for group in spot_groups
        if group not in node_groups
    ]


def auto_repair_errors(eks_auto_repair: str, node_groups: Sequence[str]) -> list[str]:
    """EKS node auto repair and nodemedic would both reboot or replace the same nodes, each
    undoing or doubling the other's work."""
    if eks_auto_repair != "on" or not node_groups:
        return []
    return [
        "eks_auto_repair is on: EKS node auto repair and nodemedic would both act on the "
        f"nodes of {', '.join(map(repr, node_groups))}; turn node auto repair off "
        "for those managed node groups and set eks_auto_repair to off, or leave them out "
        "of node_groups"
    ]


def per_day_errors(limits: Mapping[str, int]) -> list[str]:
    """``limits``: the breaker's per-hour and per-day settings by name."""
    return [
        f"{action}_per_day must be at least {action}_per_hour"
        for action in ("reboots", "replacements")
        if limits[f"{action}_per_day"] < limits[f"{action}_per_hour"]
    ]


def retention_errors(days: int) -> list[str]:
    if days in LOG_RETENTION_DAYS:
        return []
    return [
        f"log_retention_days {days} is not a retention CloudWatch "
        f"Logs accepts; use one of {', '.join(map(str, LOG_RETENTION_DAYS))}"
    ]


def email_errors(addresses: Sequence[str]) -> list[str]:
    return [
        f"notification_emails: {address!r} is not an e-mail address"
        for address in addresses
        if not EMAIL.match(address)
    ]


def action_errors(actions: Sequence[tuple[str, str]]) -> list[str]:
    return [
        f"actions: {key!r} must be {' or '.join(OVERRIDE_ACTIONS)}, not {action!r}"
        for key, action in actions
        if action not in OVERRIDE_ACTIONS
    ]


def override_errors(
    overrides: Sequence[tuple[str, Sequence[tuple[str, Any]]]],
    node_groups: Sequence[str],
    per_group: Sequence[str],
) -> list[str]:
    """A group nodemedic does not act on would have settings for nothing: most likely a
    typo of the group the user meant, whose nodes would then act on the cluster's."""
    errors = []
    for group, own in overrides:
        if group not in node_groups:
            errors.append(
                f"group_overrides: {group!r} is not in node_groups{guess(group, node_groups)}"
            )
        unknown = [key for key, _ in own if key not in per_group]
        if unknown:
            errors.append(
                f"group_overrides: {group!r}: {misspelt(unknown, per_group)} cannot be set per "
                f"group (a group may set {', '.join(per_group)})"
            )
    return errors
