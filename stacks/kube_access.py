"""The Kubernetes Lambda and its way into the cluster: an EKS access entry that maps the
function's role to the ``nodemedic:remediator`` group bound by ``lambdas/kube/rbac.yaml``
(the job monitor's role comes in the same way, as its own group)."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from nodemedic.contracts.env import ENV_CLUSTER, ENV_EKS_CLUSTER
from nodemedic.contracts.kube import REMEDIATOR_GROUP
from nodemedic.settings import ClusterSettings
from stacks.functions import PythonFunction
from stacks.nag import acknowledge
from stacks.unscoped import reason as unscoped_reason
from stacks.unscoped import unscoped


class KubeAccess(Construct):
    def __init__(
        self, scope: Construct, id: str, *, settings: ClusterSettings, code: lambda_.Code
    ) -> None:
        super().__init__(scope, id)
        cluster = settings.kube_cluster
        # A drain round evicts a node's pods one call each; a large node needs the minute.
        fn = PythonFunction(
            self,
            "Kube",
            settings=settings,
            code=code,
            handler="lambdas.kube.handler.handler",
            service="nodemedic-kube",
            description=f"Kubernetes API operations on EKS cluster {cluster}",
            environment={ENV_EKS_CLUSTER: cluster, ENV_CLUSTER: settings.name},
            memory_size=512,
            timeout_seconds=60,
        )
        self.function = fn.function
        self.role = fn.role
        self.access_entry = cluster_access(self, self.role, cluster, REMEDIATOR_GROUP)
        read_group_sizes(self.role)


def read_group_sizes(role: iam.IRole) -> None:
    """The ``group_size`` op (lambdas/kube/groups.py): DescribeAutoScalingGroups, which has no
    resource-level permissions, so on '*' as the state machine's Auto Scaling reads are."""
    action = "autoscaling:DescribeAutoScalingGroups"
    role.add_to_principal_policy(
        iam.PolicyStatement(actions=[action], resources=unscoped(*action.split(":")))
    )
    # Replaces PythonFunction's acknowledgement, which says the role holds only X-Ray on '*'.
    traced = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
    acknowledge(role, "IAM5[Resource::*]", unscoped_reason([*traced, action]))


def cluster_access(
    scope: Construct, role: iam.IRole, cluster: str, group: str
) -> eks.CfnAccessEntry:
    """The role's way into the EKS cluster as ``group`` (one of lambdas/kube/rbac.yaml). The
    endpoint and CA come from DescribeCluster; the bearer token is a presigned
    sts:GetCallerIdentity URL, which needs no permission."""
    role.add_to_principal_policy(
        iam.PolicyStatement(
            actions=["eks:DescribeCluster"],
            resources=[
                Stack.of(scope).format_arn(service="eks", resource="cluster", resource_name=cluster)
            ],
        )
    )
    return eks.CfnAccessEntry(
        scope,
        "AccessEntry",
        cluster_name=cluster,
        principal_arn=role.role_arn,
        kubernetes_groups=[group],
        type="STANDARD",
    )
