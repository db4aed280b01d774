"""Settings a node group has its own of (``group_overrides``), and the checks of the
actions a cluster or a group sets per fault.

One list, ``GROUP_SETTINGS``, says which cluster settings a group may override: the
parser, the checks, the JSON Schema and the state machine's per-group plan all read it, so
a setting becomes per group by adding its name there (and, if the plan must carry it, a
field of ``nodemedic.remediate.policy.Policy``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, get_args

from nodemedic.catalog import Catalog, Component, acted

if TYPE_CHECKING:
    from nodemedic.settings import ClusterSettings

GROUP_SETTINGS: Final = (
    "actions",
    "wait_before_acting",
    "drain_timeout",
    "max_parallel",
    "max_unhealthy_percent",
    "escalation_window",
    "force_drain",
    "approval",
    "approval_timeout",
    "approval_timeout_default",
)
"""The cluster settings a node group may set for its own nodes."""
OVERRIDE_ACTIONS: Final = ("notify", "reboot", "replace")
"""What ``actions`` may ask for; a GPU reset stays the catalog's choice (``gpu_reset``)."""
STRENGTH: Final = ("ignore", "notify", "reset", "reboot", "replace")
"""Actions from the weakest to the strongest, as the catalog orders them."""
COMPONENTS: Final = get_args(Component)
"""The catalog's components: an ``actions`` key that is no rule id names every rule of one."""


def mapping_of(value: Any, kind: type) -> bool:
    """Whether ``value`` maps strings to values of ``kind`` (no bool where ``int``)."""
    return isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, kind) and not (kind is int and isinstance(v, bool))
        for k, v in value.items()
    )


def pairs(value: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """An object of cdk.json as the settings keep it: sorted pairs, hashable."""
    return tuple(sorted(value.items()))


def each_group(settings: ClusterSettings) -> tuple[ClusterSettings, ...]:
    """The cluster's own settings, then those of each group that has settings of its own."""
    return (settings, *(settings.for_group(group) for group, _ in settings.group_overrides))


def asks_approval(settings: ClusterSettings) -> bool:
    """Whether the cluster or any of its groups has an action wait for a person: the state
    machine has the approval phase's states only then."""
    return any(own.approval != "none" for own in each_group(settings))


def action_errors(actions: tuple[tuple[str, str], ...]) -> list[str]:
    return [
        f"actions: {key!r} must be {' or '.join(OVERRIDE_ACTIONS)}, not {action!r}"
        for key, action in actions
        if action not in OVERRIDE_ACTIONS
    ]


def override_errors(settings: ClusterSettings) -> list[str]:
    """A group nodemedic does not act on would have settings for nothing: most likely a
    typo of the group the user meant, whose nodes would then act on the cluster's."""
    errors = []
    for group, own in settings.group_overrides:
        if group not in settings.node_groups:
            errors.append(f"group_overrides: {group!r} is not in node_groups")
        unknown = sorted(key for key, _ in own if key not in GROUP_SETTINGS)
        if unknown:
            errors.append(
                f"group_overrides: {group!r}: {', '.join(unknown)} cannot be set per group "
                f"(a group may set {', '.join(GROUP_SETTINGS)})"
            )
    return errors


def catalog_errors(settings: ClusterSettings, catalog: Catalog) -> list[str]:
    """The ``actions`` of the cluster and of each group against the rules they name. A rule
    the catalog only notifies (a correctable error, an application's fault) says nothing
    against its node: making it reboot or replace would act on healthy nodes, so that is
    refused. Lowering an action, or a reboot made a replacement, is the user's choice."""
    ids = {rule.id: rule for rule in catalog.rules}
    errors = []
    named = [("actions", settings.actions)] + [
        (f"group_overrides: {group!r}: actions", dict(own).get("actions", ()))
        for group, own in settings.group_overrides
    ]
    for where, actions in named:
        for key, action in actions:
            if key not in ids and key not in COMPONENTS:
                errors.append(
                    f"{where}: {key!r} is neither a rule id of the catalog nor a component "
                    f"({', '.join(COMPONENTS)})"
                )
                continue
            rule = ids.get(key)
            if rule is None or action not in STRENGTH:
                continue
            own = acted(rule.action, gpu_reset=settings.gpu_reset)
            if STRENGTH.index(own) <= STRENGTH.index("notify") < STRENGTH.index(action):
                errors.append(
                    f"{where}: rule {key!r} only {'notifies' if own == 'notify' else 'is ignored'}"
                    f" in the catalog; it may not {action} a node (the fault says nothing "
                    "against the node)"
                )
    return errors
