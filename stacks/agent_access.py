"""What the node agents may do: create streams in and write to the cluster's log group,
nothing else. A managed policy to attach to any role, and a role for EKS Pod Identity
associated with the agent DaemonSet's service account."""

from __future__ import annotations

from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from nodemedic.settings import ClusterSettings

AGENT_NAMESPACE = "nodemedic"
AGENT_SERVICE_ACCOUNT = "nodemedic-agent"
"""Where the chart (deploy/chart/nodemedic) runs the DaemonSet."""


class AgentAccess(Construct):
    def __init__(
        self, scope: Construct, id: str, *, settings: ClusterSettings, log_group: logs.ILogGroup
    ) -> None:
        super().__init__(scope, id)
        self.policy = iam.ManagedPolicy(
            self,
            "Policy",
            description=f"nodemedic {settings.name}: agents ship node logs to "
            f"{settings.log_group_name}",
            statements=[
                iam.PolicyStatement(
                    actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                    resources=[log_group.log_group_arn],
                )
            ],
        )
        self.role = iam.Role(
            self,
            "Role",
            # Pod Identity also tags the session with the pod's attributes.
            assumed_by=iam.ServicePrincipal("pods.eks.amazonaws.com").with_session_tags(),
            description=f"nodemedic {settings.name}: node agent (EKS Pod Identity)",
            managed_policies=[self.policy],
        )
        self.association = eks.CfnPodIdentityAssociation(
            self,
            "PodIdentity",
            cluster_name=settings.kube_cluster,
            namespace=AGENT_NAMESPACE,
            service_account=AGENT_SERVICE_ACCOUNT,
            role_arn=self.role.role_arn,
        )
