"""The job monitor: a subscription on Container Insights' application log group (the group
the CloudWatch Observability add-on creates; imported, never owned), a one-minute schedule
for rules that a missing line breaks, the Lambda with its way into the cluster, and the
alarm on failed jobs."""

from __future__ import annotations

import json
from dataclasses import asdict

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_logs_destinations as destinations
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from nodemedic.contracts.env import (
    ENV_CLUSTER,
    ENV_EKS_CLUSTER,
    ENV_JOB_BREAKER,
    ENV_LEDGER_TABLE,
    ENV_TOPIC_ARN,
)
from nodemedic.contracts.jobs import (
    JOB_DIMENSIONS,
    JOB_LEADING_KEYS,
    JOBS_FAILED_METRIC,
    application_log_group,
)
from nodemedic.contracts.kube import JOB_MONITOR_GROUP
from nodemedic.contracts.metrics import METRICS_NAMESPACE
from nodemedic.settings import ClusterSettings
from stacks.functions import PythonFunction
from stacks.insights import insights_query
from stacks.kube_access import cluster_access

SCHEDULE = Duration.minutes(1)


class JobMonitor(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        settings: ClusterSettings,
        code: lambda_.Code,
        ledger: dynamodb.ITable,
        topic: sns.ITopic,
        topic_key: kms.IKey,
        dead_letters: sqs.IQueue,
    ) -> None:
        super().__init__(scope, id)
        cluster = settings.kube_cluster
        fn = PythonFunction(
            self,
            "Monitor",
            settings=settings,
            code=code,
            handler="lambdas.jobs.handler.handler",
            service="nodemedic-jobs",
            description="job log monitoring (HyperPod's rules): restart hung or slow jobs",
            environment={
                ENV_CLUSTER: settings.name,
                ENV_EKS_CLUSTER: cluster,
                ENV_LEDGER_TABLE: ledger.table_name,
                ENV_TOPIC_ARN: topic.topic_arn,
                ENV_JOB_BREAKER: json.dumps(asdict(settings.job_limits)),
            },
            timeout_seconds=60,
            dead_letter_queue=dead_letters,
            reserved_concurrency=settings.job_monitor_reserved_concurrency,
        )
        self.function = fn.function
        # Its own partitions only: a stolen or misled job monitor cannot touch a node's lock,
        # a breaker or a decision record (the remediation's ledger items).
        fn.role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["dynamodb:Query", "dynamodb:PutItem"],
                resources=[ledger.table_arn],
                conditions={
                    "ForAllValues:StringLike": {"dynamodb:LeadingKeys": [JOB_LEADING_KEYS]}
                },
            )
        )
        # Not grant_publish: on an encrypted topic it also grants kms:GenerateDataKey*.
        fn.role.add_to_principal_policy(
            iam.PolicyStatement(actions=["sns:Publish"], resources=[topic.topic_arn])
        )
        topic_key.grant(fn.role, "kms:GenerateDataKey", "kms:Decrypt")
        self.access_entry = cluster_access(self, fn.role, cluster, JOB_MONITOR_GROUP)
        self.log_group = logs.LogGroup.from_log_group_name(
            self, "Application", application_log_group(settings.name)
        )
        self.subscription = logs.SubscriptionFilter(
            self,
            "Lines",
            log_group=self.log_group,
            destination=destinations.LambdaDestination(self.function),
            filter_pattern=logs.FilterPattern.all_events(),
            filter_name="nodemedic-jobs",
        )
        self.schedule = events.Rule(
            self,
            "Schedule",
            schedule=events.Schedule.rate(SCHEDULE),
            description=f"nodemedic {settings.name}: time-driven job log monitoring rules",
            targets=[targets.LambdaFunction(self.function, retry_attempts=0)],
        )
        self.failed_alarm = cw.Alarm(
            self,
            "JobsFailed",
            alarm_name=f"nodemedic-{settings.name}-jobs-failed",
            alarm_description=(
                "A job's log monitoring rules kept finding it hung, slow or faulted past its "
                "restart policy: nodemedic marked it failed (annotation and Event on the job)."
            ),
            metric=cw.MathExpression(
                expression=insights_query(
                    "SUM",
                    JOBS_FAILED_METRIC,
                    METRICS_NAMESPACE,
                    cluster=settings.name,
                    dimensions=JOB_DIMENSIONS,
                ),
                period=Duration.minutes(5),
                label=JOBS_FAILED_METRIC,
            ),
            threshold=1,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
        )
        self.failed_alarm.add_alarm_action(actions.SnsAction(topic))
