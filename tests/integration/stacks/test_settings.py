"""The cluster settings of cdk.json: a value AWS or the pipeline would refuse later stops
the synth now, with a message naming the setting."""

from __future__ import annotations

import json
import re
from dataclasses import MISSING, fields
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import assertions
from aws_cdk import aws_logs as logs

from nodemedic.settings import LOG_RETENTION_DAYS, ClusterSettings, parse_cluster, parse_clusters
from stacks.synth import NO_BUNDLING, add_pipelines, app_context, synth_template
from tests.support.paths import ROOT


def test_defaults_are_the_documented_safe_ones() -> None:
    settings = parse_cluster({"name": "prod"})
    assert settings.kube_cluster == "prod"
    assert settings.log_group_name == "/nodemedic/prod/nodes"
    assert settings.recovery_mode == "Automatic"
    assert settings.node_groups == ()
    assert (settings.max_parallel, settings.max_unhealthy_percent) == (2, 20)
    assert (settings.escalation_window, settings.breaker_hold) == (3600, 3600)
    assert settings.log_retention_days == 30


def test_a_full_entry_is_read_as_given() -> None:
    settings = parse_cluster(
        {
            "name": "prod-trn",
            "eks_cluster_name": "prod_trn-eks",
            "node_groups": ["trn1-a", "trn1-b"],
            "recovery_mode": "None",
            "dry_run": True,
            "escalation_window": 1,
            "breaker_hold": 1,
            "log_retention_days": 3653,
            "notification_emails": ["ml-oncall+nodemedic@example.co.uk"],
        }
    )
    assert settings.kube_cluster == "prod_trn-eks"
    assert settings.node_groups == ("trn1-a", "trn1-b")
    assert settings.notification_emails == ("ml-oncall+nodemedic@example.co.uk",)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"name": "demo", "log_retention_days": 10}, "log_retention_days 10 is not a retention"),
        ({"name": "demo", "log_retention_days": 0}, "use one of 1, 3, 5"),
        ({"name": "demo", "escalation_window": 0}, "escalation_window must be at least 1"),
        ({"name": "demo", "breaker_hold": -5}, "breaker_hold must be at least 1"),
        ({"name": "demo", "poll_seconds": 0}, "poll_seconds must be at least 1"),
        ({"name": "demo", "max_unhealthy_percent": 101}, "within 0..100"),
        ({"name": "demo", "notification_emails": ["oncall"]}, "'oncall' is not an e-mail"),
        ({"name": "demo", "notification_emails": ["a@b"]}, "'a@b' is not an e-mail"),
        (
            {"name": "demo", "notification_emails": ["Ops <ops@example.com>"]},
            "is not an e-mail",
        ),
        ({"name": "demo", "notification_emails": "ops@example.com"}, "list of strings"),
        ({"name": "demo", "node_groups": "trn1-a"}, "node_groups must be a list of strings"),
        ({"name": "demo", "node_groups": ["trn1-*"]}, "wildcards are not allowed"),
        ({"name": "demo", "node_groups": ["a", "a"]}, "lists a group twice"),
        ({"name": "demo", "node_groups": [""]}, "1 to 255 characters"),
        ({"name": "demo", "dry_run": "false"}, "dry_run must be a bool"),
        ({"name": "demo", "max_parallel": "2"}, "max_parallel must be a whole number"),
        ({"name": "demo", "max_parallel": True}, "max_parallel must be a whole number"),
        ({"name": "demo", "recovery_mode": "automatic"}, "Automatic or None"),
        ({"name": "demo", "eks_cluster_name": "my cluster"}, "not an EKS cluster name"),
        (
            {"name": "demo", "eks_auto_repair": "yes"},
            "eks_auto_repair must be off or on or unknown",
        ),
        (
            {"name": "demo", "node_groups": ["p5", "trn2"], "eks_auto_repair": "on"},
            "eks_auto_repair is on: .* nodes of 'p5', 'trn2'",
        ),
        ({"name": "demo_1"}, "cluster name 'demo_1' must match"),
        ({"name": "demo", "max_paralel": 3}, "unknown cluster setting"),
        ({"node_groups": ["a"]}, "needs a name"),
        ({"name": "demo", "classifier_reserved_concurrency": -1}, r"must be 0 \(none\) or more"),
    ],
)
def test_a_bad_value_names_the_setting(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_cluster(entry)


def test_every_mistake_of_a_cluster_is_reported_at_once() -> None:
    with pytest.raises(ValueError) as caught:
        parse_clusters(
            [
                {"name": "demo", "max_parallel": "2", "log_retention_days": 10},
                {"name": "other", "reboots_per_day": 1, "poll_seconds": 0},
            ]
        )
    lines = str(caught.value).splitlines()
    assert len(lines) == 2
    assert "max_parallel must be a whole number" in lines[0]
    assert "log_retention_days 10 is not a retention" in lines[0]
    assert "poll_seconds must be at least 1" in lines[1]
    assert "reboots_per_day must be at least reboots_per_hour" in lines[1]


def test_auto_repair_on_is_refused_only_where_nodemedic_acts_on_node_groups() -> None:
    assert ClusterSettings(name="demo", eks_auto_repair="on").node_groups == ()
    assert ClusterSettings(name="demo", node_groups=("p5",), eks_auto_repair="off")


def test_settings_made_in_code_are_checked_too() -> None:
    with pytest.raises(ValueError, match="log_retention_days"):
        ClusterSettings(name="demo", log_retention_days=31)


@pytest.mark.parametrize("value", [{"name": "demo"}, "demo", ["demo"]])
def test_the_cluster_list_must_be_a_list_of_objects(value: Any) -> None:
    with pytest.raises(ValueError, match=r"list of clusters|each cluster is an object"):
        parse_clusters(value)


def test_the_accepted_retentions_are_cloudwatch_logs_own() -> None:
    """CDK's RetentionDays enum mirrors what CloudWatch Logs accepts; the synthesized
    numbers must be exactly the list the settings check against."""
    stack = cdk.Stack(cdk.App(), "retentions")
    for member in logs.RetentionDays:
        if member is not logs.RetentionDays.INFINITE:
            logs.LogGroup(stack, member.name, retention=member)
    groups = assertions.Template.from_stack(stack).find_resources("AWS::Logs::LogGroup")
    synthesized = sorted(g["Properties"]["RetentionInDays"] for g in groups.values())
    assert synthesized == sorted(LOG_RETENTION_DAYS)


def _as_documented(default: Any) -> str:
    """How the guide writes a default: JSON, strings bare."""
    if isinstance(default, str):
        return f"`{default}`"
    return f"`{json.dumps(list(default) if isinstance(default, tuple) else default)}`"


def test_the_deploy_guide_documents_every_setting_with_its_default() -> None:
    guide = (ROOT / "docs" / "deploy.md").read_text()
    rows = dict(re.findall(r"^\| `(\w+)` \| ([^|]+?) \|", guide, flags=re.MULTILINE))
    for field in fields(ClusterSettings):
        if field.default is MISSING:
            assert rows[field.name] == "(required)"
        elif field.name == "eks_cluster_name":
            assert rows[field.name] == "`name`"  # its default: the cluster's name
        elif field.name in ("spares", "actions", "group_overrides", "hyperpod_clusters"):
            assert rows[field.name] == "`{}`"  # written as a mapping, held as pairs
        else:
            assert rows[field.name] == _as_documented(field.default), field.name


def test_gpu_reset_reaches_the_classifier_only_when_on() -> None:
    """Off (the default), the template is what it was before the setting existed."""

    def variables(settings: ClusterSettings) -> dict[str, str]:
        (classifier,) = [
            resource["Properties"]
            for resource in synth_template(settings)["Resources"].values()
            if resource["Type"] == "AWS::Lambda::Function"
            and resource["Properties"]["Handler"] == "lambdas.classify.handler.handler"
        ]
        return dict(classifier["Environment"]["Variables"])

    assert "NODEMEDIC_GPU_RESET" not in variables(ClusterSettings(name="demo"))
    on = variables(ClusterSettings(name="demo", gpu_reset=True))
    assert on["NODEMEDIC_GPU_RESET"] == "true"


def reserved(settings: ClusterSettings) -> dict[str, Any]:
    """Each function's reserved concurrency, by handler, where it has one."""
    return {
        function["Properties"]["Handler"]: function["Properties"]["ReservedConcurrentExecutions"]
        for function in synth_template(settings)["Resources"].values()
        if function["Type"] == "AWS::Lambda::Function"
        and "ReservedConcurrentExecutions" in function["Properties"]
    }


def test_reserved_concurrency_caps_the_classifier_only_when_set() -> None:
    assert reserved(ClusterSettings(name="demo")) == {}
    capped = reserved(ClusterSettings(name="demo", classifier_reserved_concurrency=50))
    assert capped == {"lambdas.classify.handler.handler": 50}


def test_the_job_monitor_is_capped_by_default_apart_from_the_classifier() -> None:
    """A flood of training logs must not take the classifier's capacity."""
    assert reserved(ClusterSettings(name="demo", job_monitoring=True)) == {
        "lambdas.jobs.handler.handler": 50
    }
    both = ClusterSettings(
        name="demo",
        job_monitoring=True,
        job_monitor_reserved_concurrency=20,
        classifier_reserved_concurrency=100,
    )
    assert reserved(both) == {
        "lambdas.jobs.handler.handler": 20,
        "lambdas.classify.handler.handler": 100,
    }


def test_gpu_reset_lets_the_state_machine_run_only_its_document_and_only_when_on() -> None:
    """SSM Run Command is the reset's channel (docs/security.md): granted to the remediation
    state machine's role for the stack's own document, and to no role of a cluster with it
    off."""

    def ssm_grants(settings: ClusterSettings) -> dict[str, Any]:
        grants: dict[str, Any] = {}
        for resource in synth_template(settings)["Resources"].values():
            if resource["Type"] != "AWS::IAM::Policy":
                continue
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
                actions = statement["Action"]
                for action in [actions] if isinstance(actions, str) else actions:
                    if action.startswith("ssm:"):
                        grants[action] = statement["Resource"]
        return grants

    assert ssm_grants(ClusterSettings(name="demo")) == {}
    on = ssm_grants(ClusterSettings(name="demo", gpu_reset=True))
    assert set(on) == {"ssm:sendCommand", "ssm:getCommandInvocation"}
    assert on["ssm:getCommandInvocation"] == "*"
    document, instances = on["ssm:sendCommand"]
    assert '"Ref": "' in json.dumps(document), "the stack's own document, no other"
    assert ":document/" in json.dumps(document)
    assert json.dumps(instances).endswith(':instance/*"]]}')


def test_the_synth_refuses_actions_the_catalog_does_not_allow() -> None:
    """Rule ids are known only with the catalog: the synth checks them, every cluster's."""
    clusters = [
        parse_cluster({"name": "a", "node_groups": ["p5"], "actions": {"xid-79": "reboot"}}),
        parse_cluster(
            {
                "name": "b",
                "node_groups": ["p5"],
                "group_overrides": {"p5": {"actions": {"edac-correctable": "reboot"}}},
            }
        ),
    ]
    with pytest.raises(ValueError) as refused:
        add_pipelines(cdk.App(context={**app_context(), **NO_BUNDLING}), clusters, nag=False)
    assert str(refused.value).splitlines() == [
        "cluster a: actions: 'xid-79' is neither a rule id of the catalog nor a component "
        "(gpu, neuron, efa, memory, cpu, storage, kernel)",
        "cluster b: group_overrides: 'p5': actions: rule 'edac-correctable' only notifies in "
        "the catalog; it may not reboot a node (the fault says nothing against the node)",
    ]
