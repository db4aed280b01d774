"""The cluster's origin key: agents encrypt their registrations under it (kms:Encrypt,
with their instance as encryption context) and only the classifier decrypts them. The
classifier keeps those it proved in the ledger's registration partitions (the only role
that may write them, ``stacks.recorded`` denies the others), and reads the identity streams
only for a key not kept there (logs:GetLogEvents, on those streams only). docs/security.md
says why."""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from nodemedic.contracts.ledger import REGISTRATION_PK_PREFIX
from nodemedic.contracts.logs import ORIGIN_CONTEXT_CLUSTER, identity_stream, origin_key_alias
from nodemedic.settings import ClusterSettings
from stacks.nag import acknowledge


class OriginKey(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        settings: ClusterSettings,
        agent_policy: iam.ManagedPolicy,
        classifier: lambda_.IFunction,
        ledger: dynamodb.ITable,
    ) -> None:
        super().__init__(scope, id)
        self.key = kms.Key(
            self,
            "Key",
            alias=origin_key_alias(settings.name),
            description=f"nodemedic {settings.name}: agent key registrations",
            enable_key_rotation=True,
        )
        # Sealed for this cluster only: a registration names the cluster it is for.
        agent_policy.add_statements(
            iam.PolicyStatement(
                actions=["kms:Encrypt"],
                resources=[self.key.key_arn],
                conditions={
                    "StringEquals": {
                        f"kms:EncryptionContext:{ORIGIN_CONTEXT_CLUSTER}": settings.name
                    }
                },
            )
        )
        self.key.grant_decrypt(classifier)
        classifier.add_to_role_policy(
            iam.PolicyStatement(
                actions=["dynamodb:Query", "dynamodb:UpdateItem"],
                resources=[ledger.table_arn],
                conditions={
                    "ForAllValues:StringLike": {
                        "dynamodb:LeadingKeys": [REGISTRATION_PK_PREFIX + "*"]
                    }
                },
            )
        )
        # The identity streams only: the classifier reads no node's kernel log back.
        identity_streams = Stack.of(self).format_arn(
            service="logs",
            resource="log-group",
            resource_name=f"{settings.log_group_name}:log-stream:{identity_stream('*')}",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        classifier.add_to_role_policy(
            iam.PolicyStatement(actions=["logs:GetLogEvents"], resources=[identity_streams])
        )
        if classifier.role is not None:
            acknowledge(
                classifier.role,
                "IAM5[Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:"
                f"log-group:{settings.log_group_name}:log-stream:{identity_stream('*')}]",
                "Instance ids are only known at run time; the wildcard covers the agents' "
                "identity streams of this cluster's log group and no other stream",
            )
