"""The cluster's SNS topic: encrypted with its own KMS key, e-mail subscriptions from the
settings, publishable by CloudWatch alarms."""

from __future__ import annotations

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from nodemedic.settings import ClusterSettings


class Notifications(Construct):
    def __init__(self, scope: Construct, id: str, *, settings: ClusterSettings) -> None:
        super().__init__(scope, id)
        self.key = kms.Key(
            self,
            "Key",
            description=f"nodemedic {settings.name}: notifications topic",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.DESTROY,
        )
        # An alarm action on an encrypted topic fails silently unless CloudWatch may use
        # the key; only alarms of this account.
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
                conditions={"StringEquals": {"aws:SourceAccount": Stack.of(self).account}},
            )
        )
        self.topic = sns.Topic(
            self,
            "Topic",
            display_name=f"nodemedic {settings.name}",
            master_key=self.key,
            enforce_ssl=True,
        )
        for address in settings.notification_emails:
            self.topic.add_subscription(subscriptions.EmailSubscription(address))
