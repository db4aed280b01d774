"""AWS's own rules on what the repository ships, and proof that each validator is live: a
known-bad input fails it. The synthesized templates: tests/integration/stacks/test_aws_rules.py."""

from __future__ import annotations

import json
from typing import Any

from tests.support.intrinsics import resolve
from tests.support.validators import (
    AGENT_POLICY,
    IDENTITY,
    cfn_lint_findings,
    parliament_findings,
    shipped_agent_policy,
    unexplained,
)

ALIAS_SEAL = {
    "Sid": "SealOwnRegistrationOnly",
    "Effect": "Allow",
    "Action": ["kms:Encrypt"],
    "Resource": "arn:aws:kms:REGION:ACCOUNT_ID:alias/nodemedic-CLUSTER_NAME-origin",
    "Condition": {"StringEquals": {"kms:EncryptionContext:nodemedic:cluster": "CLUSTER_NAME"}},
}
"""The agent policy's KMS statement as it shipped before parliament ran: an alias ARN in
Resource names the alias, not the key behind it, so AWS never let agents encrypt."""


def test_parliament_passes_the_shipped_agent_policy() -> None:
    where = str(AGENT_POLICY.relative_to(AGENT_POLICY.parents[2]))
    assert unexplained(parliament_findings(shipped_agent_policy(), IDENTITY, where)) == []


def test_parliament_flags_kms_encrypt_on_an_alias_arn() -> None:
    shipped = json.loads(AGENT_POLICY.read_text(encoding="utf-8"))
    shipped["Statement"] = [s for s in shipped["Statement"] if "kms:Encrypt" not in s["Action"]]
    shipped["Statement"].append(ALIAS_SEAL)
    old = shipped_agent_policy(json.dumps(shipped))
    findings = parliament_findings(old, IDENTITY, "the agent policy before the fix")
    assert [(f.check, f.detail) for f in findings] == [
        (
            "RESOURCE_MISMATCH",
            str([{"action": "kms:Encrypt", "required_format": "arn:*:kms:*:*:key/*"}]),
        )
    ]
    assert unexplained(findings)


def test_cfn_lint_fails_a_template_with_errors() -> None:
    broken = {
        "Resources": {
            "Queue": {
                "Type": "AWS::SQS::Queue",
                "Properties": {
                    "VisibilityTimeout": "soon",
                    "RedrivePolicy": {
                        "deadLetterTargetArn": {"Fn::GetAtt": ["Missing", "Arn"]},
                        "maxReceiveCount": 3,
                    },
                },
            }
        }
    }
    findings = cfn_lint_findings(broken)
    assert {(f.check, f.kind, f.where) for f in findings} == {
        ("E3012", "AWS::SQS::Queue", "Resources/Queue/Properties/VisibilityTimeout"),
        (
            "E1010",
            "AWS::SQS::Queue",
            "Resources/Queue/Properties/RedrivePolicy/deadLetterTargetArn/Fn::GetAtt/0",
        ),
    }
    assert len(unexplained(findings)) == 2


def test_references_resolve_to_each_resource_types_arn() -> None:
    template: dict[str, Any] = {
        "Resources": {
            "Queue": {"Type": "AWS::SQS::Queue", "Properties": {}},
            "Table": {"Type": "AWS::DynamoDB::Table", "Properties": {"TableName": "ledger"}},
            "Key": {"Type": "AWS::KMS::Key", "Properties": {}},
            "Logs": {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": "/n/c"}},
            "Machine": {"Type": "AWS::StepFunctions::StateMachine", "Properties": {}},
            "Topic": {"Type": "AWS::SNS::Topic", "Properties": {}},
            "Function": {"Type": "AWS::Lambda::Function", "Properties": {}},
            "Role": {"Type": "AWS::IAM::Role", "Properties": {}},
        }
    }
    value = {
        "queue": {"Fn::GetAtt": ["Queue", "Arn"]},
        "queue_url": {"Ref": "Queue"},
        "table": {"Fn::GetAtt": ["Table", "Arn"]},
        "table_name": {"Ref": "Table"},
        "key": {"Fn::GetAtt": ["Key", "Arn"]},
        "logs": {"Fn::GetAtt": ["Logs", "Arn"]},
        "machine": {"Ref": "Machine"},
        "topic": {"Ref": "Topic"},
        "function": {"Fn::GetAtt": ["Function", "Arn"]},
        "role": {"Fn::GetAtt": ["Role", "Arn"]},
        "joined": {
            "Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":eks:", {"Ref": "AWS::Region"}]]
        },
        "sub": {"Fn::Sub": "${AWS::AccountId}/${Table}/${Logs.Arn}/${!Literal}"},
    }
    resolved = resolve(template, value)
    key_id = resolved["key"].rsplit("/", 1)[1]
    assert len(key_id) == 36 and key_id.count("-") == 4
    assert resolved == {
        "queue": "arn:aws:sqs:us-east-1:123456789012:Queue",
        "queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/Queue",
        "table": "arn:aws:dynamodb:us-east-1:123456789012:table/ledger",
        "table_name": "ledger",
        "key": f"arn:aws:kms:us-east-1:123456789012:key/{key_id}",
        "logs": "arn:aws:logs:us-east-1:123456789012:log-group:/n/c:*",
        "machine": "arn:aws:states:us-east-1:123456789012:stateMachine:Machine",
        "topic": "arn:aws:sns:us-east-1:123456789012:Topic",
        "function": "arn:aws:lambda:us-east-1:123456789012:function:Function",
        "role": "arn:aws:iam::123456789012:role/Role",
        "joined": "arn:aws:eks:us-east-1",
        "sub": "123456789012/ledger/"
        "arn:aws:logs:us-east-1:123456789012:log-group:/n/c:*/${Literal}",
    }
