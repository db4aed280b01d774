"""nodemedic's Lambda functions: one role and one log group each, traced, Powertools
configured by environment."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from nodemedic.contracts.env import ENV_LOG_LEVEL, ENV_METRICS_NAMESPACE, ENV_SERVICE_NAME
from nodemedic.contracts.metrics import METRICS_NAMESPACE
from nodemedic.settings import ClusterSettings
from stacks.bundling import ARCHITECTURE, RUNTIME
from stacks.loggroups import log_group
from stacks.nag import XRAY, acknowledge


class PythonFunction(Construct):
    """A function whose role may write only its own log group (no AWS managed policy) and
    send its traces to X-Ray."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        settings: ClusterSettings,
        code: lambda_.Code,
        handler: str,
        service: str,
        description: str,
        environment: Mapping[str, str],
        memory_size: int = 256,
        timeout_seconds: int = 30,
        dead_letter_queue: sqs.IQueue | None = None,
        reserved_concurrency: int = 0,
        traced: bool = True,
    ) -> None:
        super().__init__(scope, id)
        self.log_group = log_group(self, "Logs", retention_days=settings.log_retention_days)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"nodemedic {settings.name}: {service}",
        )
        self.log_group.grant_write(self.role)
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            code=code,
            handler=handler,
            role=self.role,
            log_group=self.log_group,
            tracing=lambda_.Tracing.ACTIVE if traced else lambda_.Tracing.PASS_THROUGH,
            memory_size=memory_size,
            timeout=Duration.seconds(timeout_seconds),
            description=f"nodemedic {settings.name}: {description}",
            environment={
                ENV_SERVICE_NAME: service,
                ENV_METRICS_NAMESPACE: METRICS_NAMESPACE,
                ENV_LOG_LEVEL: "INFO",
                **environment,
            },
            dead_letter_queue=dead_letter_queue,
            reserved_concurrent_executions=reserved_concurrency or None,
        )
        acknowledge(self.role, "IAM5[Resource::*]", XRAY)
