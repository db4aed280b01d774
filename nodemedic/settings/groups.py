"""What the cluster's settings and its groups' own settings say together: whether any
action waits for a person, and the ``actions`` of each against the catalog's rules.

Which settings a group may set is declared with each setting (``per_group``): the parser,
the checks, the JSON Schema and the state machine's per-group plan read it there
(``GROUP_SETTINGS``), and a setting the plan must carry is also a field of
``nodemedic.remediate.policy.Policy``.
"""

from __future__ import annotations

from typing import Any

from nodemedic.catalog import Catalog, acted
from nodemedic.settings.checks import COMPONENTS, STRENGTH
from nodemedic.settings.cluster import ClusterSettings


def asks_approval(settings: ClusterSettings) -> bool:
    """Whether the cluster or any of its groups has an action wait for a person: the state
    machine has the approval phase's states only then."""
    return any(own.approval != "none" for own in settings.each_group())


def group_policies(settings: ClusterSettings) -> dict[str, dict[str, Any]]:
    """Each group with settings of its own → its ``Policy``, as the plan is given it."""
    return {
        group: settings.for_group(group).policy.to_mapping()
        for group, _ in settings.group_overrides
    }


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
