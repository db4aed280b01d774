"""From the agents' log group to remediation executions: the log group, the subscription
filter with the catalog's pattern, the classifier Lambda, its dead-letter queue and the
idempotency table."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from aws_cdk import Duration, RemovalPolicy, Stack, Token
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_logs_destinations as destinations
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from nodemedic.catalog import Catalog
from nodemedic.contracts.env import (
    ENV_ACCEPT_INJECTED,
    ENV_CLUSTER,
    ENV_GPU_RESET,
    ENV_IDEMPOTENCY_TABLE,
    ENV_IDENTITY_CERTIFICATES,
    ENV_PROOF_OF_ORIGIN,
    ENV_STALE_AFTER,
    ENV_STATE_MACHINE_ARN,
    HYPERPOD_EVENTS_ENV,
    HYPERPOD_LOG_GROUPS_ENV,
)
from nodemedic.contracts.substrates import hyperpod_log_group
from nodemedic.detect.filterpattern import subscription_filter_patterns
from nodemedic.origin.identity import load_certificates, vendored_regions
from nodemedic.settings import ClusterSettings
from stacks.functions import PythonFunction
from stacks.loggroups import log_group

IDEMPOTENCY_KEY = "id"
IDEMPOTENCY_TTL = "expiration"
"""Powertools' idempotency attribute names (and the classifier's hit counter's)."""


def identity_certificates(settings: ClusterSettings, region: str) -> str:
    """The PEM text of the cluster's own certificates, checked at synth; empty for AWS's,
    which the classifier takes for the Region it runs in.

    A stack of a known ``region`` that enforces proof of origin with AWS's certificates is
    refused where none is vendored for it: every fault there would only be notified. The
    app's stacks are region-agnostic (they go where the deploying credentials say), so
    their Region is known only at run time: there a Region without a certificate makes
    every reboot or replace line unverifiable, and the ``unproven-evidence`` alarm pages."""
    text = "".join(Path(p).read_text(encoding="ascii") for p in settings.identity_certificates)
    if text:
        load_certificates(text)
    elif (
        settings.proof_of_origin == "enforce"
        and not Token.is_unresolved(region)
        and region not in vendored_regions()
    ):
        raise ValueError(
            f"proof_of_origin is enforce, and no AWS identity certificate of {region} is "
            f"vendored: list its RSA certificate in identity_certificates, or set "
            "proof_of_origin to audit (docs/deploy.md)"
        )
    return text


class Ingest(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        settings: ClusterSettings,
        catalog: Catalog,
        code: lambda_.Code,
        state_machine: sfn.IStateMachine,
        environment: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.log_group = log_group(
            self,
            "NodeLogs",
            name=settings.log_group_name,
            retention_days=settings.log_retention_days,
        )
        self.idempotency = dynamodb.Table(
            self,
            "Idempotency",
            partition_key=dynamodb.Attribute(
                name=IDEMPOTENCY_KEY, type=dynamodb.AttributeType.STRING
            ),
            time_to_live_attribute=IDEMPOTENCY_TTL,
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            # Short-lived records (dedup window, threshold hits): nothing to keep.
            removal_policy=RemovalPolicy.DESTROY,
        )
        # Receives the events the classifier rejected after its retries, whole, for a
        # person to read: a malformed payload is never dropped.
        self.dead_letters = sqs.Queue(
            self,
            "DeadLetters",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
        )
        hyperpod_groups = [hyperpod_log_group(*cluster) for cluster in settings.hyperpod_clusters]
        classifier = PythonFunction(
            self,
            "Classifier",
            settings=settings,
            code=code,
            handler="lambdas.classify.handler.handler",
            service="nodemedic-classify",
            description="classify node log lines, start remediations",
            environment={
                ENV_STATE_MACHINE_ARN: state_machine.state_machine_arn,
                ENV_IDEMPOTENCY_TABLE: self.idempotency.table_name,
                ENV_ACCEPT_INJECTED: "true" if settings.accept_injected_faults else "false",
                ENV_PROOF_OF_ORIGIN: settings.proof_of_origin,
                ENV_STALE_AFTER: str(settings.stale_after),
                # Set only where on: a cluster with the default keeps its template as it was.
                **({ENV_GPU_RESET: "true"} if settings.gpu_reset else {}),
                **(
                    {
                        HYPERPOD_LOG_GROUPS_ENV: ",".join(hyperpod_groups),
                        ENV_CLUSTER: settings.name,
                        HYPERPOD_EVENTS_ENV: settings.hyperpod_events,
                    }
                    if hyperpod_groups
                    else {}
                ),
                ENV_IDENTITY_CERTIFICATES: identity_certificates(settings, Stack.of(self).region),
                **(environment or {}),
            },
            dead_letter_queue=self.dead_letters,
            reserved_concurrency=settings.classifier_reserved_concurrency,
            traced=settings.classifier_tracing,
        )
        self.function = classifier.function
        state_machine.grant_start_execution(self.function)
        self.idempotency.grant(
            self.function,
            "dynamodb:GetItem",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
        )
        # One filter while the catalog's terms fit in one pattern, two when they do not
        # (nodemedic.detect.filterpattern): the first keeps its construct id and name.
        self.filter_patterns = subscription_filter_patterns(catalog)
        self.subscriptions = [
            logs.SubscriptionFilter(
                self,
                "Faults" if index == 0 else f"Faults{index + 1}",
                log_group=self.log_group,
                destination=destinations.LambdaDestination(self.function),
                filter_pattern=logs.FilterPattern.literal(pattern),
                filter_name="nodemedic-faults" if index == 0 else f"nodemedic-faults-{index + 1}",
            )
            for index, pattern in enumerate(self.filter_patterns)
        ]
        # HyperPod's own findings: its health monitoring agent's events and its deep health
        # checks' results, in the log group HyperPod made with the cluster (it must exist
        # before the stack). Every event goes: the classifier reads the stream's name.
        self.hyperpod_subscriptions = [
            logs.SubscriptionFilter(
                self,
                f"HyperPod{index + 1}",
                log_group=logs.LogGroup.from_log_group_name(self, f"HyperPodLogs{index + 1}", name),
                destination=destinations.LambdaDestination(self.function),
                filter_pattern=logs.FilterPattern.all_events(),
                filter_name="nodemedic-hyperpod",
            )
            for index, name in enumerate(hyperpod_groups)
        ]
