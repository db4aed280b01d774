"""The cluster's origin key: agents encrypt their registrations under it (kms:Encrypt,
with their instance as encryption context) and only the classifier decrypts them, after
reading them from the identity streams (logs:GetLogEvents). docs/security.md says why."""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from nodemedic.contracts import origin_key_alias
from stacks.settings import ClusterSettings


class OriginKey(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        settings: ClusterSettings,
        log_group: logs.ILogGroup,
        agent_policy: iam.ManagedPolicy,
        classifier: lambda_.IFunction,
    ) -> None:
        super().__init__(scope, id)
        self.key = kms.Key(
            self,
            "Key",
            alias=origin_key_alias(settings.name),
            description=f"nodemedic {settings.name}: agent key registrations",
            enable_key_rotation=True,
        )
        agent_policy.add_statements(
            iam.PolicyStatement(actions=["kms:Encrypt"], resources=[self.key.key_arn])
        )
        self.key.grant_decrypt(classifier)
        classifier.add_to_role_policy(
            iam.PolicyStatement(
                actions=["logs:GetLogEvents"], resources=[f"{log_group.log_group_arn}"]
            )
        )
