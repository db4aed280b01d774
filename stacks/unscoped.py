"""The only IAM actions nodemedic grants on ``*``, each with the reason it cannot be scoped.

An action the service authorizes per resource is granted on the resources a task names;
``unscoped`` hands out ``*`` only for an action listed here, so a new task that forgets to
name its resources fails the synth instead of quietly widening the role. The cdk-nag
acknowledgement of ``IAM5[Resource::*]`` quotes this table (``reason``), and a test holds
every ``*`` statement of the synthesized template to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

_NO_RESOURCE_TYPES: Final = "has no resource-level permissions (Service Authorization Reference)"

UNSCOPED_ACTIONS: Final[Mapping[str, str]] = {
    "autoscaling:DescribeAutoScalingInstances": _NO_RESOURCE_TYPES,
    "autoscaling:DescribeAutoScalingGroups": _NO_RESOURCE_TYPES,
    "ec2:DescribeInstances": f"{_NO_RESOURCE_TYPES}; the planned Lambda lists a Capacity "
    "Block's instances",
    "ssm:GetCommandInvocation": f"{_NO_RESOURCE_TYPES}; it reads the GPU reset command "
    "the state machine sent (ssm:SendCommand, scoped to nodemedic's document)",
    "cloudwatch:PutMetricData": f"{_NO_RESOURCE_TYPES}; a deny on cloudwatch:namespace limits "
    "it to nodemedic's namespaces (stacks/guardrails.py)",
    "logs:CreateLogDelivery": "Step Functions' execution logging: the vended-log delivery "
    f"actions {_NO_RESOURCE_TYPES}",
    "logs:GetLogDelivery": "execution logging, as logs:CreateLogDelivery",
    "logs:UpdateLogDelivery": "execution logging, as logs:CreateLogDelivery",
    "logs:DeleteLogDelivery": "execution logging, as logs:CreateLogDelivery",
    "logs:ListLogDeliveries": "execution logging, as logs:CreateLogDelivery",
    "logs:PutResourcePolicy": "execution logging: the log group's resource policy for "
    "delivery, which CDK grants on *",
    "logs:DescribeResourcePolicies": "execution logging, as logs:PutResourcePolicy",
    "logs:DescribeLogGroups": "execution logging, as logs:PutResourcePolicy",
    "xray:PutTraceSegments": f"tracing: {_NO_RESOURCE_TYPES}",
    "xray:PutTelemetryRecords": f"tracing: {_NO_RESOURCE_TYPES}",
    "xray:GetSamplingRules": f"tracing: {_NO_RESOURCE_TYPES}",
    "xray:GetSamplingTargets": f"tracing: {_NO_RESOURCE_TYPES}",
}
"""IAM action (as the Service Authorization Reference spells it) -> why it is on ``*``."""

_BY_LOWER: Final = {action.lower(): action for action in UNSCOPED_ACTIONS}


def unscoped(service: str, action: str) -> list[str]:
    """``["*"]`` for an SDK call (``autoscaling``, ``describeAutoScalingGroups``) whose
    action is listed in ``UNSCOPED_ACTIONS``; any other is a synth error."""
    if f"{service}:{action}".lower() not in _BY_LOWER:
        raise ValueError(
            f"{service}:{action} is not in stacks.unscoped.UNSCOPED_ACTIONS: name the "
            "resources it acts on instead of '*'"
        )
    return ["*"]


def is_unscoped(action: str) -> bool:
    return action.lower() in _BY_LOWER


def reason(actions: list[str]) -> str:
    """The acknowledgement's reason: each action on ``*`` and why."""
    return "; ".join(
        f"{_BY_LOWER[a.lower()]} {UNSCOPED_ACTIONS[_BY_LOWER[a.lower()]]}" for a in actions
    )
