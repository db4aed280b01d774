"""Settings per node group (``group_overrides``) and per fault (``actions``): every mistake
refused with a message naming it, and the plan acting on the group's own settings."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from lambdas.policy.handler import handler
from nodemedic.catalog import load_catalog
from nodemedic.contracts.kube import MANUAL_SOURCE, PLANNED_SOURCE
from nodemedic.remediate.policy import Group, Policy, plan
from nodemedic.settings import GROUP_SETTINGS, ClusterSettings, parse_cluster
from nodemedic.settings.groups import catalog_errors, group_policies

NOW = datetime(2026, 11, 22, 18, 30, tzinfo=UTC)
TRAINING = {
    "name": "prod",
    "node_groups": ["p5-training", "p5-serving"],
    "group_overrides": {
        "p5-training": {
            "actions": {"edac-uncorrectable": "reboot"},
            "wait_before_acting": 600,
            "drain_timeout": 1800,
            "max_parallel": 1,
        }
    },
}
EDAC = {
    "action": "replace",
    "health_status": "UnschedulablePendingReplacement",
    "fault_id": "edac-uncorrectable",
    "component": "memory",
    "source": "kmsg",
}


def _refused(**raw: Any) -> str:
    with pytest.raises(ValueError) as caught:
        parse_cluster({"name": "prod", "node_groups": ["p5"], **raw})
    return str(caught.value)


def _catalog_refusal(**raw: Any) -> list[str]:
    return catalog_errors(parse_cluster({"name": "prod", "node_groups": ["p5"], **raw}), CATALOG)


CATALOG = load_catalog()


def test_a_group_s_settings_are_the_cluster_s_with_its_own() -> None:
    settings = parse_cluster({**TRAINING, "actions": {"gpu": "replace"}, "drain_timeout": 300})
    training = settings.for_group("p5-training")
    assert dict(training.actions) == {"gpu": "replace", "edac-uncorrectable": "reboot"}
    assert (training.wait_before_acting, training.drain_timeout, training.max_parallel) == (
        600,
        1800,
        1,
    )
    assert settings.for_group("p5-serving") == settings
    assert settings.wait_before_acting == 0


def test_defaults_keep_today_s_plan() -> None:
    settings = parse_cluster({"name": "prod", "node_groups": ["p5"]})
    assert group_policies(settings) == {}
    assert (settings.policy.actions, settings.policy.wait_before_acting) == ((), 0)


def test_the_lock_outlasts_the_longest_group() -> None:
    plain = parse_cluster({"name": "prod", "node_groups": ["p5-training", "p5-serving"]})
    assert parse_cluster(TRAINING).lock_seconds > plain.lock_seconds + 600


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        ({"p4": {"max_parallel": 1}}, "group_overrides: 'p4' is not in node_groups"),
        ({"p5": {"name": "x"}}, "group_overrides: 'p5': name cannot be set per group"),
        ({"p5": {"max_parallel": "1"}}, "group_overrides: 'p5': max_parallel must be a whole"),
        ({"p5": {"drain_timeout": 0}}, "group_overrides: 'p5': drain_timeout must be at least 1"),
        ({"p5": {"wait_before_acting": -1}}, "'p5': wait_before_acting must be 0 (none) or more"),
        ({"p5": {"actions": {"gpu": "reset"}}}, "'p5': actions: 'gpu' must be notify or reboot"),
        ({"p5": {"actions": ["gpu"]}}, "'p5': actions must map rule ids or components"),
        ({"p5": {"approval": "reboot"}}, "'p5': approval must be none or replace or any"),
        ({"p5": {"approval_timeout": 0}}, "'p5': approval_timeout must be at least 1"),
        ({"p5": {"approval_timeout_default": "go"}}, "'p5': approval_timeout_default must be"),
        (["p5"], "group_overrides must map node groups to objects"),
    ],
)
def test_each_mistake_of_a_group_is_named(overrides: Any, says: str) -> None:
    assert says in _refused(group_overrides=overrides)


def test_a_cluster_mistake_is_named_once_not_again_per_group() -> None:
    message = _refused(max_parallel=0, group_overrides={"p5": {"wait_before_acting": 60}})
    assert message == "max_parallel must be at least 1"


def test_every_group_setting_is_a_cluster_setting() -> None:
    """A name added to ``GROUP_SETTINGS`` that the cluster does not have would be refused."""
    cluster = {f for f in ClusterSettings.__dataclass_fields__}
    assert set(GROUP_SETTINGS) <= cluster


def test_an_unknown_rule_or_family_is_named_at_synth() -> None:
    (error,) = _catalog_refusal(
        group_overrides={"p5": {"actions": {"edac-uncorectable": "reboot"}}}
    )
    assert error.startswith("group_overrides: 'p5': actions: 'edac-uncorectable' is neither")
    (error,) = _catalog_refusal(actions={"tpu": "notify"})
    assert error.startswith("actions: 'tpu' is neither a rule id of the catalog nor a component")


def test_a_notify_only_rule_may_not_be_made_to_act() -> None:
    (error,) = _catalog_refusal(
        group_overrides={"p5": {"actions": {"edac-correctable": "replace"}}}
    )
    assert "rule 'edac-correctable' only notifies in the catalog; it may not replace" in error


@pytest.mark.parametrize(
    "actions",
    [
        {"edac-uncorrectable": "reboot"},
        {"edac-uncorrectable": "notify"},
        {"nvidia-xid-48": "replace"},
        {"gpu": "replace"},
        {"edac-correctable": "notify"},
    ],
)
def test_lowering_or_a_reboot_made_a_replacement_is_allowed(actions: dict[str, str]) -> None:
    assert _catalog_refusal(actions=actions) == []


def _plan(decision: dict[str, Any], actions: dict[str, str], **kwargs: Any) -> Any:
    policy = Policy(node_groups=("p5",), actions=tuple(actions.items()))
    return plan(decision, Group("p5", 10), None, NOW, policy, **kwargs)


def test_a_rule_s_own_action_wins_over_its_component_s() -> None:
    planned = _plan(EDAC, {"memory": "notify", "edac-uncorrectable": "reboot"})
    assert (planned.mode, planned.action) == ("act", "reboot")
    assert planned.health_status == "UnschedulablePendingReboot"
    assert "replace made reboot by the setting actions['edac-uncorrectable']" in planned.reason
    assert _plan(EDAC, {"memory": "notify"}).mode == "notify"


def test_an_overridden_reboot_escalates_as_any_reboot() -> None:
    policy = Policy(node_groups=("p5",), actions=(("edac-uncorrectable", "reboot"),))
    planned = plan(EDAC, Group("p5", 10), NOW, NOW, policy)
    assert (planned.action, planned.escalated) == ("replace", True)


@pytest.mark.parametrize(
    "decision",
    [
        {**EDAC, "action": "notify", "health_status": "Schedulable"},
        {**EDAC, "source": MANUAL_SOURCE},
        {**EDAC, "source": PLANNED_SOURCE, "component": "memory"},
    ],
)
def test_a_notify_only_manual_or_planned_decision_is_not_overridden(
    decision: dict[str, Any],
) -> None:
    assert _plan(decision, {"edac-uncorrectable": "reboot"}).action == decision["action"]


def test_the_policy_lambda_plans_with_the_group_s_own_policy() -> None:
    settings = parse_cluster(TRAINING)
    event = {
        "op": "plan",
        "decision": EDAC,
        "last_reboot": {},
        "now": "2026-11-22T18:30:00Z",
        "policy": settings.policy.to_mapping(),
        "group_policies": group_policies(settings),
    }
    training = handler({**event, "group": {"found": True, "name": "p5-training", "size": 8}}, None)
    assert (training["action"], training["limit"], training["max_parallel"]) == ("reboot", 1, 1)
    assert (training["wait_before_acting"], training["drain_timeout"]) == (600, 1800)
    assert training["drain_rounds"] == 2 * 1800 // 15 + 2
    serving = handler({**event, "group": {"found": True, "name": "p5-serving", "size": 8}}, None)
    assert (serving["action"], serving["limit"]) == ("replace", 2)
    assert (serving["wait_before_acting"], serving["drain_timeout"]) == (0, 600)
