"""Limits on the remediation state machine's role that hold whatever its tasks were granted.

Step Functions' SDK integrations grant by action and resource only, so the conditions the
pipeline's safety depends on are added here as explicit denials (a deny always wins):
reboot only instances of the configured node groups (by the tag Auto Scaling puts on every
instance it launches) or of this cluster's listed NodePools (Karpenter's tags), mark
instances unhealthy only in those groups, publish metrics only to the catalog's namespaces
and nodemedic's own. With nothing configured nodemedic only monitors, and the role may
reboot or mark nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_stepfunctions as sfn

from nodemedic.contracts.substrates import NODEPOOL_LABEL
from nodemedic.settings import ClusterSettings

GROUP_TAG = "aws:ResourceTag/aws:autoscaling:groupName"
NODEPOOL_TAG = f"aws:ResourceTag/{NODEPOOL_LABEL}"
"""Karpenter tags the instances it launches with their NodePool (and Auto Mode its own)."""
CLUSTER_TAG = "aws:ResourceTag/eks:eks-cluster-name"


def node_group_arns(stack: Stack, groups: Sequence[str]) -> list[str]:
    """``arn:…:autoScalingGroup:<generated id>:autoScalingGroupName/<name>``: the id is
    unknown before the group exists, the name is fixed."""
    return [
        stack.format_arn(
            service="autoscaling",
            resource="autoScalingGroup",
            resource_name=f"*:autoScalingGroupName/{name}",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        for name in groups
    ]


def guard_remediation(
    state_machine: sfn.StateMachine, settings: ClusterSettings, namespaces: Sequence[str]
) -> list[iam.PolicyStatement]:
    groups = list(settings.node_groups)
    replace = iam.PolicyStatement(
        sid="ReplaceOnlyInConfiguredNodeGroups",
        effect=iam.Effect.DENY,
        actions=["autoscaling:SetInstanceHealth"],
    )
    if groups:
        # NotResource: the deny covers every group but the configured ones.
        replace.add_not_resources(*node_group_arns(Stack.of(state_machine), groups))
    else:
        replace.add_all_resources()
    # A deny's keys hold together: the reboot is denied unless one of the tags is listed.
    listed = {GROUP_TAG: groups, NODEPOOL_TAG: list(settings.karpenter_nodepools)}
    owners = {key: names for key, names in listed.items() if names}
    statements = [
        iam.PolicyStatement(
            sid="RebootOnlyConfiguredNodeGroups",
            effect=iam.Effect.DENY,
            actions=["ec2:RebootInstances"],
            resources=["*"],
            conditions={"StringNotEquals": owners} if owners else None,
        ),
        replace,
        iam.PolicyStatement(
            sid="MetricsOnlyToNodeMedicNamespaces",
            effect=iam.Effect.DENY,
            actions=["cloudwatch:PutMetricData"],
            resources=["*"],
            conditions={"StringNotEquals": {"cloudwatch:namespace": sorted(set(namespaces))}},
        ),
    ]
    if settings.karpenter_nodepools:
        # A NodePool's name is no cluster's own: its instances must be this cluster's too.
        statements.append(
            iam.PolicyStatement(
                sid="RebootKarpenterNodesOfThisClusterOnly",
                effect=iam.Effect.DENY,
                actions=["ec2:RebootInstances"],
                resources=["*"],
                conditions={
                    "Null": {NODEPOOL_TAG: "false"},
                    "StringNotEquals": {CLUSTER_TAG: settings.kube_cluster},
                },
            )
        )
    for statement in statements:
        state_machine.add_to_role_policy(statement)
    return statements
