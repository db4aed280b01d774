"""A synthesized template's values with CloudFormation's intrinsics resolved, for the
validators that read plain JSON (tests/support/validators.py).

Each reference becomes what CloudFormation would give in account ``ACCOUNT`` of ``REGION``:
a ``Ref`` the resource type's physical id (a queue's URL, a key's id, a topic's ARN...), a
``Fn::GetAtt`` its attribute (an ARN of that service's shape). A resource without a name
property is named by its logical id. A reference this module does not know fails loudly,
so a new resource type cannot slip past a validator as an odd string.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

PARTITION = "aws"
REGION = "us-east-1"
ACCOUNT = "123456789012"
PSEUDO: dict[str, str] = {
    "AWS::Partition": PARTITION,
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT,
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackName": "nodemedic-placeholder",
}
NAME_PROPERTY: dict[str, str] = {
    "AWS::SQS::Queue": "QueueName",
    "AWS::DynamoDB::Table": "TableName",
    "AWS::Logs::LogGroup": "LogGroupName",
    "AWS::Lambda::Function": "FunctionName",
    "AWS::StepFunctions::StateMachine": "StateMachineName",
    "AWS::SNS::Topic": "TopicName",
    "AWS::IAM::Role": "RoleName",
    "AWS::IAM::ManagedPolicy": "ManagedPolicyName",
    "AWS::IAM::Policy": "PolicyName",
    "AWS::Events::Rule": "Name",
    "AWS::CloudWatch::Alarm": "AlarmName",
    "AWS::CloudWatch::Dashboard": "DashboardName",
    "AWS::KMS::Alias": "AliasName",
}

Template = dict[str, Any]
Attribute = Callable[[str, str], str]
"""(physical name, key id) -> the attribute's value."""


def _arn(service: str, resource: str, *, region: str = REGION) -> str:
    return f"arn:{PARTITION}:{service}:{region}:{ACCOUNT}:{resource}"


ATTRIBUTES: dict[str, dict[str, Attribute]] = {
    "AWS::SQS::Queue": {
        "Ref": lambda n, _: f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{n}",
        "Arn": lambda n, _: _arn("sqs", n),
        "QueueName": lambda n, _: n,
        "QueueUrl": lambda n, _: f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{n}",
    },
    "AWS::DynamoDB::Table": {
        "Ref": lambda n, _: n,
        "Arn": lambda n, _: _arn("dynamodb", f"table/{n}"),
        "StreamArn": lambda n, _: _arn("dynamodb", f"table/{n}/stream/2020-01-01T00:00:00.000"),
    },
    "AWS::KMS::Key": {
        "Ref": lambda _, k: k,
        "KeyId": lambda _, k: k,
        "Arn": lambda _, k: _arn("kms", f"key/{k}"),
    },
    "AWS::KMS::Alias": {"Ref": lambda n, _: n},
    "AWS::SSM::Document": {"Ref": lambda n, _: n},
    "AWS::Logs::LogGroup": {
        "Ref": lambda n, _: n,
        "Arn": lambda n, _: _arn("logs", f"log-group:{n}:*"),
    },
    "AWS::StepFunctions::StateMachine": {
        "Ref": lambda n, _: _arn("states", f"stateMachine:{n}"),
        "Arn": lambda n, _: _arn("states", f"stateMachine:{n}"),
        "Name": lambda n, _: n,
    },
    "AWS::SNS::Topic": {
        "Ref": lambda n, _: _arn("sns", n),
        "TopicArn": lambda n, _: _arn("sns", n),
        "TopicName": lambda n, _: n,
    },
    "AWS::Lambda::Function": {
        "Ref": lambda n, _: n,
        "Arn": lambda n, _: _arn("lambda", f"function:{n}"),
    },
    "AWS::IAM::Role": {
        "Ref": lambda n, _: n,
        "Arn": lambda n, _: f"arn:{PARTITION}:iam::{ACCOUNT}:role/{n}",
        "RoleId": lambda n, _: "AROA" + n.upper()[:17].ljust(17, "X"),
    },
    "AWS::IAM::ManagedPolicy": {
        "Ref": lambda n, _: f"arn:{PARTITION}:iam::{ACCOUNT}:policy/{n}",
        "PolicyArn": lambda n, _: f"arn:{PARTITION}:iam::{ACCOUNT}:policy/{n}",
    },
    "AWS::IAM::Policy": {"Ref": lambda n, _: n},
    "AWS::Events::Rule": {
        "Ref": lambda n, _: n,
        "Arn": lambda n, _: _arn("events", f"rule/{n}"),
    },
    "AWS::CloudWatch::Alarm": {
        "Ref": lambda n, _: n,
        "Arn": lambda n, _: _arn("cloudwatch", f"alarm:{n}"),
    },
    "AWS::CloudWatch::Dashboard": {"Ref": lambda n, _: n},
}
"""What ``Ref`` (key ``"Ref"``) and ``Fn::GetAtt`` give for each resource type, as
CloudFormation documents them."""

_SUB = re.compile(r"\$\{([^}!]+)\}")


def key_id(logical_id: str) -> str:
    """A KMS key id (a UUID), the same for a logical id every run."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"nodemedic:{logical_id}"))


def resolve(template: Template, value: Any) -> Any:
    """``value`` with every intrinsic in it replaced by its placeholder value."""
    if isinstance(value, list):
        return [resolve(template, v) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((name, argument),) = value.items()
        function = FUNCTIONS.get(name)
        if function is not None:
            return function(template, argument)
        assert not name.startswith("Fn::") and name != "Condition", (
            f"no placeholder for intrinsic {name}: {value}"
        )
    return {k: resolve(template, v) for k, v in value.items()}


def _ref(template: Template, argument: Any) -> str:
    return _attribute(template, str(argument), "Ref")


def _get_att(template: Template, argument: Any) -> str:
    logical_id, attribute = argument if isinstance(argument, list) else argument.split(".", 1)
    return _attribute(template, logical_id, attribute)


def _join(template: Template, argument: Any) -> str:
    delimiter, parts = argument
    return str(delimiter).join(str(p) for p in _resolve_list(template, parts))


def _sub(template: Template, argument: Any) -> str:
    text, names = (argument, {}) if isinstance(argument, str) else argument
    values = {k: resolve(template, v) for k, v in names.items()}

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in values:
            return str(values[name])
        logical_id, _, attribute = name.partition(".")
        return _attribute(template, logical_id, attribute or "Ref")

    return str(_SUB.sub(replace, text).replace("${!", "${"))


def _select(template: Template, argument: Any) -> Any:
    index, items = argument
    return _resolve_list(template, items)[int(resolve(template, index))]


def _split(template: Template, argument: Any) -> list[str]:
    delimiter, text = argument
    return str(resolve(template, text)).split(delimiter)


FUNCTIONS: dict[str, Callable[[Template, Any], Any]] = {
    "Ref": _ref,
    "Fn::GetAtt": _get_att,
    "Fn::Join": _join,
    "Fn::Sub": _sub,
    "Fn::Select": _select,
    "Fn::Split": _split,
}


def _resolve_list(template: Template, value: Any) -> list[Any]:
    """A list argument, given as a list or as an intrinsic that returns one."""
    resolved = resolve(template, value)
    assert isinstance(resolved, list), f"expected a list, got {value}"
    return resolved


def _attribute(template: Template, logical_id: str, attribute: str) -> str:
    if attribute == "Ref" and logical_id in PSEUDO:
        return PSEUDO[logical_id]
    if logical_id in template.get("Parameters", {}):
        parameter = template["Parameters"][logical_id]
        return str(parameter.get("Default", f"placeholder-{logical_id}"))
    resource = template["Resources"].get(logical_id)
    assert resource is not None, f"reference to {logical_id}, which the template lacks"
    type_ = resource["Type"]
    known = ATTRIBUTES.get(type_, {})
    assert attribute in known, f"no placeholder for {type_}'s {attribute} ({logical_id})"
    properties = resource.get("Properties", {})
    name_property = NAME_PROPERTY.get(type_)
    name = (
        str(resolve(template, properties[name_property]))
        if name_property and name_property in properties
        else logical_id
    )
    return known[attribute](name, key_id(logical_id))
