"""One cluster's whole nodemedic pipeline as one stack (issue 4).

Agents → log group → subscription filter → classifier → remediation state machine →
kube Lambda (EKS) / Auto Scaling / EC2 → SNS, with alarms and a dashboard generated from
the fault catalog. The stack is environment-agnostic and looks nothing up, so it
synthesizes offline without credentials.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from nodemedic.catalog import Catalog
from nodemedic.contracts.metrics import METRICS_NAMESPACE
from nodemedic.contracts.release import VERSION
from nodemedic.contracts.stack import (
    DEAD_LETTER_OUTPUT,
    LEDGER_OUTPUT,
    TOPIC_OUTPUT,
    VERSION_OUTPUT,
)
from nodemedic.contracts.stack import stack_name as cluster_stack_name
from nodemedic.settings import ClusterSettings
from stacks.agent_access import AgentAccess
from stacks.alarms import Alarms
from stacks.bundling import catalog_environment, lambda_code
from stacks.dashboard import Dashboard
from stacks.guardrails import guard_remediation
from stacks.ingest import Ingest
from stacks.jobs import JobMonitor
from stacks.kube_access import KubeAccess
from stacks.nag import acknowledge
from stacks.notifications import Notifications
from stacks.origin import OriginKey
from stacks.planned import Planned
from stacks.recorded import record_decisions
from stacks.remediation import Remediation
from stacks.silence import hear_silence
from stacks.unscoped import UNSCOPED_ACTIONS
from stacks.unscoped import reason as unscoped_reason


def stack_name(settings: ClusterSettings) -> str:
    return cluster_stack_name(settings.name)


class PipelineStack(Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        settings: ClusterSettings,
        catalog: Catalog,
        catalog_files: Sequence[Path] = (),
        **kwargs: Any,
    ) -> None:
        """``catalog_files``: the user's extra rule files ``catalog`` was loaded with; the
        classifier gets copies, so it knows the rules the filter and alarms come from."""
        super().__init__(
            scope,
            id,
            description=f"nodemedic: detect and heal broken accelerator nodes of {settings.name}",
            **kwargs,
        )
        code = lambda_code(catalog_files)
        self.notifications = Notifications(self, "Notifications", settings=settings)
        topic = self.notifications.topic
        self.kube = KubeAccess(self, "Kube", settings=settings, code=code)
        self.remediation = Remediation(
            self, "Remediation", settings=settings, kube_function=self.kube.function, topic=topic
        )
        state_machine = self.remediation.state_machine
        # sns:Publish comes with the SnsPublish tasks; an encrypted topic also needs its key.
        self.notifications.key.grant(state_machine, "kms:GenerateDataKey", "kms:Decrypt")
        guard_remediation(
            state_machine,
            settings,
            [METRICS_NAMESPACE, *(namespace for namespace, _ in catalog.metrics())],
        )
        self.ingest = Ingest(
            self,
            "Ingest",
            settings=settings,
            catalog=catalog,
            code=code,
            state_machine=state_machine,
            environment=catalog_environment(catalog_files),
        )
        hear_silence(
            self.remediation.ledger, classifier=self.ingest.function, kube=self.kube.function
        )
        self.jobs = (
            JobMonitor(
                self,
                "Jobs",
                settings=settings,
                code=code,
                ledger=self.remediation.ledger,
                topic=topic,
                topic_key=self.notifications.key,
                dead_letters=self.ingest.dead_letters,
            )
            if settings.job_monitoring
            else None
        )
        # Planned repairs act only where nodemedic acts: with no node group, nothing to plan.
        self.planned = (
            Planned(self, "Planned", settings=settings, code=code, remediation=state_machine)
            if settings.planned_repairs and settings.node_groups
            else None
        )
        record_decisions(
            self.remediation.ledger,
            classifier=self.ingest.function,
            planned=self.planned.function if self.planned else None,
            others=[state_machine, *([self.jobs.function] if self.jobs else [])],
        )
        self.agent = AgentAccess(self, "Agent", settings=settings, log_group=self.ingest.log_group)
        self.origin = OriginKey(
            self,
            "Origin",
            settings=settings,
            agent_policy=self.agent.policy,
            classifier=self.ingest.function,
            ledger=self.remediation.ledger,
        )
        self.alarms = Alarms(
            self,
            "Alarms",
            settings=settings,
            catalog=catalog,
            topic=topic,
            classifier=self.ingest.function,
            kube=self.kube.function,
            dead_letters=self.ingest.dead_letters,
            state_machine=state_machine,
            aftercare=(
                self.remediation.aftercare.cleanup,
                self.remediation.aftercare.reconcile,
                self.remediation.aftercare.requests,
            ),
            planned=self.planned.state_machine if self.planned else None,
            jobs_failed=self.jobs.failed_alarm if self.jobs else None,
        )
        self.dashboard = Dashboard(
            self,
            "Dashboard",
            settings=settings,
            catalog=catalog,
            log_group=self.ingest.log_group,
            alarms=[*self.alarms.pipeline, *([self.jobs.failed_alarm] if self.jobs else [])],
        )
        self._outputs()
        self._acknowledge(settings)

    def _outputs(self) -> None:
        """What docs/deploy.md's steps after ``cdk deploy`` need."""
        for name, value, description in (
            ("LogGroup", self.ingest.log_group.log_group_name, "where the agents write"),
            ("AgentRoleArn", self.agent.role.role_arn, "the agents' Pod Identity role"),
            (
                "AgentPolicyArn",
                self.agent.policy.managed_policy_arn,
                "the same permissions, to attach to a role of your own instead",
            ),
            ("KubeRoleArn", self.kube.role.role_arn, "mapped to group nodemedic:remediator"),
            ("StateMachineArn", self.remediation.state_machine.state_machine_arn, "remediation"),
            (LEDGER_OUTPUT, self.remediation.ledger.table_name, "the ledger: nodemedic breaker"),
            (TOPIC_OUTPUT, self.notifications.topic.topic_arn, "notifications and alarms"),
            (DEAD_LETTER_OUTPUT, self.ingest.dead_letters.queue_url, "rejected log batches"),
            ("DashboardName", self.dashboard.dashboard.dashboard_name, "CloudWatch dashboard"),
            (VERSION_OUTPUT, VERSION, "the nodemedic release this stack is"),
        ):
            CfnOutput(self, name, value=value, description=description)

    def _acknowledge(self, settings: ClusterSettings) -> None:
        """cdk-nag (AwsSolutions) findings that are the least privilege possible."""
        machine = self.remediation.state_machine
        # The remediation's role (the cleanup and the reconcile run on it too) and the
        # request reconcile's own: both invoke the Lambdas, log and trace.
        for role_of in (machine, self.remediation.aftercare.requests):
            # On the role only, and only for the actions stacks/unscoped.py lists: a test
            # holds every '*' statement of the template to that table.
            acknowledge(role_of.role, "IAM5[Resource::*]", unscoped_reason(list(UNSCOPED_ACTIONS)))
            for invoked in (self.kube.function, self.remediation.policy_function):
                token = self.resolve(invoked.function_arn)["Fn::GetAtt"][0]
                acknowledge(
                    role_of,
                    f"IAM5[Resource::<{token}.Arn>:*]",
                    "lambda:InvokeFunction on the function and its versions (Step Functions' "
                    "Lambda integration grant)",
                )
        acknowledge(
            machine,
            "IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:instance/*]",
            "Instance ids are only known at run time; a deny on the "
            "aws:autoscaling:groupName tag limits reboots to the configured node groups "
            "(stacks/guardrails.py)",
        )
        for group in settings.node_groups:
            acknowledge(
                machine,
                "IAM5[Resource::arn:<AWS::Partition>:autoscaling:<AWS::Region>:"
                f"<AWS::AccountId>:autoScalingGroup:*:autoScalingGroupName/{group}]",
                "An Auto Scaling group's ARN contains a generated id; the name is fixed",
            )
