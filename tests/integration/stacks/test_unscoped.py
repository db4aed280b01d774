"""IAM resources are named, not defaulted: ``*`` only for the actions that cannot be scoped."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda, aws_sns
from aws_cdk import aws_stepfunctions as sfn

from stacks.remediation.kit.flow import Flow
from stacks.unscoped import UNSCOPED_ACTIONS, is_unscoped, reason, unscoped
from tests.support.templates import SETTINGS, Template, actions, resources


def _flow() -> Flow:
    stack = cdk.Stack(cdk.App(), "Probe")
    arn = "arn:aws:lambda:us-east-1:123456789012:function:f"
    return Flow(
        stack,
        settings=SETTINGS,
        kube=aws_lambda.Function.from_function_arn(stack, "Kube", arn),
        policy_function=aws_lambda.Function.from_function_arn(stack, "Policy", arn + "2"),
        topic=aws_sns.Topic.from_topic_arn(stack, "Topic", "arn:aws:sns:us-east-1:1:t"),
        ledger_table=dynamodb.Table.from_table_name(stack, "Ledger", "ledger"),
        lock_seconds=60,
    )


def test_a_task_that_names_no_resources_is_refused() -> None:
    flow = _flow()
    with pytest.raises(TypeError, match="iam_resources"):
        flow.aws("Reboot", "ec2", "rebootInstances", {"InstanceIds": []})  # type: ignore[call-arg]


def test_star_only_for_an_action_without_resource_level_permissions() -> None:
    assert unscoped("cloudwatch", "putMetricData") == ["*"]
    with pytest.raises(ValueError, match="ec2:rebootInstances is not in"):
        unscoped("ec2", "rebootInstances")
    task = _flow().aws(
        "Describe",
        "autoscaling",
        "describeAutoScalingGroups",
        {},
        iam_resources=unscoped("autoscaling", "describeAutoScalingGroups"),
    )
    assert isinstance(task, sfn.TaskStateBase)


def test_every_statement_on_star_is_one_the_table_explains(template: Template) -> None:
    on_star: set[str] = set()
    for policy_type in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
        for policy in resources(template, policy_type).values():
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                named = statement.get("Resource")
                if statement["Effect"] == "Allow" and "*" in (
                    named if isinstance(named, list) else [named]
                ):
                    on_star.update(actions(statement))
    assert on_star
    assert {a for a in on_star if not is_unscoped(a)} == set()
    explained = reason(sorted(on_star))
    for action in on_star:
        assert action.lower() in explained.lower()
    assert all(len(why) > 20 for why in UNSCOPED_ACTIONS.values())
