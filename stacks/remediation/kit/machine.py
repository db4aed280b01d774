"""A state machine of the remediation: its execution logs (everything, with the data) and
X-Ray tracing, as every one of them has them."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from nodemedic.settings import ClusterSettings
from stacks.loggroups import log_group


def state_machine(
    scope: Construct,
    *,
    settings: ClusterSettings,
    states: sfn.IChainable,
    comment: str,
    timeout_seconds: int,
    role: iam.IRole | None = None,
) -> sfn.StateMachine:
    """``StateMachine`` and its ``ExecutionLogs`` in ``scope``."""
    execution_logs = log_group(scope, "ExecutionLogs", retention_days=settings.log_retention_days)
    return sfn.StateMachine(
        scope,
        "StateMachine",
        comment=comment,
        definition_body=sfn.DefinitionBody.from_chainable(states),
        timeout=Duration.seconds(timeout_seconds),
        tracing_enabled=True,
        role=role,
        logs=sfn.LogOptions(
            destination=execution_logs, level=sfn.LogLevel.ALL, include_execution_data=True
        ),
    )
