"""The synthesized templates the infrastructure tests read (each synthesized once)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from nodemedic.settings import ClusterSettings

SETTINGS = ClusterSettings(
    name="demo",
    eks_cluster_name="demo-eks",
    node_groups=("demo-trn1", "demo-p5"),
    notification_emails=("oncall@example.com", "ml-infra@example.com"),
    log_retention_days=14,
    job_monitoring=True,
)


Template = dict[str, Any]
MACHINE = "AWS::StepFunctions::StateMachine"
REMEDIATION = "RemediationStateMachine"
"""The logical id prefix of the remediation state machine; the aftercare's (cleanup and
reconcile, ``stacks.remediation.machines.aftercare``) begin ``RemediationAftercare``."""


def resources(template: Template, type_: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == type_}


def one(template: Template, type_: str, prefix: str = "") -> tuple[str, dict[str, Any]]:
    found = [(k, r) for k, r in resources(template, type_).items() if k.startswith(prefix)]
    assert len(found) == 1, f"expected one {type_} {prefix!r}, found {[k for k, _ in found]}"
    return found[0]


def statements(template: Template, role_id: str) -> Iterator[dict[str, Any]]:
    """Every statement of every inline and managed policy attached to the role, from
    either side of the attachment."""
    role = template["Resources"][role_id]["Properties"]
    for inline in role.get("Policies", []):
        yield from inline["PolicyDocument"]["Statement"]
    attached = role.get("ManagedPolicyArns", [])
    for policy_id, policy in template["Resources"].items():
        if policy["Type"] not in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            continue
        props = policy["Properties"]
        if {"Ref": role_id} in props.get("Roles", []) or {"Ref": policy_id} in attached:
            yield from props["PolicyDocument"]["Statement"]


POLICY_TYPES = ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy")
"""Where a role's statements are: CDK moves those past the inline size limit to managed
policies of its own (its overflow), so a grant can be in either."""


def policy_statements(template: Template) -> Iterator[dict[str, Any]]:
    """Every statement of every policy the template holds, inline or managed."""
    for resource in template["Resources"].values():
        if resource["Type"] in POLICY_TYPES:
            yield from resource["Properties"]["PolicyDocument"]["Statement"]


def actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)


def render(value: Any) -> str:
    """A CloudFormation string value with references shown as ``${LogicalId}``."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        delimiter, parts = value["Fn::Join"]
        return str(delimiter).join(render(p) for p in parts)
    if "Ref" in value:
        return "${" + str(value["Ref"]) + "}"
    if "Fn::GetAtt" in value:
        return "${" + ".".join(value["Fn::GetAtt"]) + "}"
    raise AssertionError(f"unexpected intrinsic {value}")
