"""Alarms: one Metrics Insights alarm per fault metric that makes nodemedic act on a node
(reboot or replace rules; notify-only metrics are on the dashboard), and alarms on the
pipeline itself. Every alarm notifies the cluster's topic.

CloudWatch evaluates a Metrics Insights alarm on the last three hours of data, one query
per alarm, and allows 200 such alarms per account and Region by default. So HyperPod's own
findings get alarms only on a cluster that lists HyperPod clusters (``watched``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from nodemedic.catalog import Catalog
from nodemedic.contracts.metrics import (
    BREAKER_METRIC,
    BREAKER_TRIPPED_METRIC,
    CLUSTER_DIMENSION,
    FORGED_DECISIONS_METRIC,
    HELD_OUT_METRIC,
    METRICS_NAMESPACE,
    QUARANTINE_TRIPPED_METRIC,
    REASON_DIMENSION,
    SILENT_METRIC,
    STRANDED_METRIC,
    UNPROVEN_METRIC,
    UNREADABLE_NOTICES_METRIC,
    UNVERIFIABLE_REASON,
)
from nodemedic.contracts.substrates import HYPERPOD_SOURCE
from nodemedic.settings import ClusterSettings
from stacks.insights import insights_query, is_insights_query

PERIOD = Duration.minutes(5)
MAX_NAME = 255
MAX_DESCRIPTION = 1024
ACTING = ("reset", "reboot", "replace")


@dataclass(frozen=True)
class FaultMetric:
    namespace: str
    metric: str
    rules: tuple[str, ...]
    summary: str


def watched(catalog: Catalog, settings: ClusterSettings) -> Catalog:
    """The rules whose faults can arise on the cluster: HyperPod's own findings (``source:
    hyperpod``) only where it lists HyperPod clusters, whose log groups alone carry them.
    Elsewhere their alarms would never fire and would use up the account's Metrics
    Insights alarms, their dashboard series would stay empty."""
    if settings.hyperpod_clusters:
        return catalog
    return replace(catalog, rules=tuple(r for r in catalog.rules if r.source != HYPERPOD_SOURCE))


def fault_metrics(catalog: Catalog) -> list[FaultMetric]:
    """The metrics of rules that reboot or replace, in catalog order, with their rules."""
    found: dict[tuple[str, str], list[str]] = {}
    summaries: dict[tuple[str, str], list[str]] = {}
    for rule in catalog.rules:
        if rule.action in ACTING:
            key = (rule.namespace, rule.metric)
            found.setdefault(key, []).append(rule.id)
            if rule.summary and rule.summary not in summaries.setdefault(key, []):
                summaries[key].append(rule.summary)
    return [
        FaultMetric(ns, metric, tuple(rules), "; ".join(summaries[(ns, metric)]))
        for (ns, metric), rules in found.items()
    ]


def breaker_tripped(cluster: str) -> cw.Metric:
    """Trips of the cluster's breaker, one datum per trip."""
    return cluster_metric(BREAKER_TRIPPED_METRIC, cluster, "Sum")


def cluster_metric(metric: str, cluster: str, statistic: str) -> cw.Metric:
    """A pipeline metric published with the dimension ``Cluster`` alone (the breaker's
    trips, the reconcile's gauges, refused forgeries)."""
    return cw.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=metric,
        dimensions_map={CLUSTER_DIMENSION: cluster},
        statistic=statistic,
        period=PERIOD,
    )


class Alarms(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        settings: ClusterSettings,
        catalog: Catalog,
        topic: sns.ITopic,
        classifier: lambda_.IFunction,
        kube: lambda_.IFunction,
        dead_letters: sqs.IQueue,
        state_machine: sfn.IStateMachine,
        aftercare: tuple[sfn.IStateMachine, ...],
        planned: sfn.IStateMachine | None = None,
        jobs_failed: cw.Alarm | None = None,
    ) -> None:
        """``aftercare``: the state machines that clean up after remediations, reconcile
        the nodes they leave out of service and start the ones the health label asks for;
        ``planned``: the planned repairs' (where on); ``jobs_failed``: the job monitor's
        alarm (where on), counted with the Metrics Insights alarms."""
        super().__init__(scope, id)
        self.settings = settings
        self.action = actions.SnsAction(topic)
        self.insights: list[cw.Alarm] = [] if jobs_failed is None else [jobs_failed]
        """The alarms on Metrics Insights queries (their own quota), the job monitor's too."""
        self.faults = [
            self._alarm(
                f"Fault{fault.namespace}{fault.metric}",
                fault.metric,
                cw.MathExpression(
                    expression=insights_query(
                        "MAX", fault.metric, fault.namespace, cluster=settings.name
                    ),
                    period=PERIOD,
                    label=fault.metric,
                ),
                f"Fault {fault.metric} ({fault.namespace}) on a node of {settings.name}: "
                f"{fault.summary}. Rules: {', '.join(fault.rules)}.",
            )
            for fault in fault_metrics(watched(catalog, settings))
        ]
        self.pipeline = [
            self._alarm(
                "ClassifierErrors",
                "classifier-errors",
                classifier.metric_errors(period=PERIOD, statistic="Sum"),
                "The classifier Lambda failed; rejected payloads go to the dead-letter queue.",
            ),
            self._alarm(
                "KubeErrors",
                "kube-errors",
                kube.metric_errors(period=PERIOD, statistic="Sum"),
                "The Kubernetes Lambda failed (EKS API unreachable or access entry missing?).",
            ),
            self._alarm(
                "DeadLetters",
                "dead-letters",
                dead_letters.metric_approximate_number_of_messages_visible(
                    period=PERIOD, statistic="Maximum"
                ),
                "Log batches the classifier could not process wait in the dead-letter queue.",
            ),
            self._alarm(
                "RemediationFailures",
                "remediation-failures",
                self._failures(state_machine, "executions not succeeded"),
                "A remediation execution failed, timed out or was aborted; the ledger and "
                "the SNS message say where it stopped.",
            ),
            self._alarm(
                "BreakerOpen",
                "breaker-open",
                cw.MathExpression(
                    expression=insights_query(
                        "SUM", BREAKER_METRIC, METRICS_NAMESPACE, cluster=settings.name
                    ),
                    period=PERIOD,
                    label=BREAKER_METRIC,
                ),
                "The breaker is holding decisions back: a node group is at its limit of nodes "
                "in remediation (max_parallel / max_unhealthy_percent).",
            ),
            self._alarm(
                "BreakerTripped",
                "breaker-tripped",
                breaker_tripped(settings.name),
                f"The breaker of {settings.name} tripped on a limit (max_in_flight, or a "
                "group's reboots or replacements per hour or day): every reboot and "
                f"replacement of the cluster is held for breaker_cooldown "
                f"({settings.breaker_cooldown} s), then until the limits have room. See "
                f"`nodemedic breaker status --cluster {settings.name}`; `reset` reopens it.",
            ),
            self._alarm(
                "QuarantineTripped",
                "quarantine-tripped",
                cluster_metric(QUARANTINE_TRIPPED_METRIC, settings.name, "Sum"),
                f"The quarantine limit of {settings.name} was reached "
                f"(quarantine_group_percent {settings.quarantine_group_percent} %, "
                f"quarantine_cluster_percent {settings.quarantine_cluster_percent} % per "
                f"{settings.quarantine_window} s): more faulty nodes than that were not "
                "cordoned and wait for the breaker untouched. Many faults at once are likelier "
                "a rollout or a job than hardware: look before raising the limit.",
            ),
            self._alarm(
                "StrandedNodes",
                "stranded-nodes",
                self._stranded(settings, aftercare),
                "Nodes carry the nodemedic.io/unhealthy taint with no remediation at work on "
                "them (the reconcile's last output names them), or the cleanup, the "
                "reconcile or the label requests' run failed. A node whose remediation "
                "failed stays out and counted by the breaker until a person fixes it and "
                "takes the taint off.",
            ),
            self._alarm(
                "NodesHeldOut",
                "nodes-held-out",
                cluster_metric(HELD_OUT_METRIC, settings.name, "Maximum"),
                f"At least max_in_flight ({settings.max_in_flight}) nodes of {settings.name} "
                "are out of service under a person's decision: handed off to a vendor, or "
                "their repair denied or left unanswered where that holds. They are not "
                "remediations and do not hold the breaker back, but their capacity is gone "
                "until someone takes them back or takes the taint off. `nodemedic "
                f"history --cluster {settings.name}` names them.",
                threshold=settings.max_in_flight,
            ),
            self._alarm(
                "SilentNodes",
                "silent-nodes",
                cluster_metric(SILENT_METRIC, settings.name, "Maximum"),
                "Ready nodes whose nodemedic agent shipped no heartbeat for 3 intervals: its "
                "credentials refused or expired, its pod not running, or the node hung while "
                "still Ready. Faults on them go unseen; the topic got their names once.",
            ),
            self._alarm(
                "ForgedDecisions",
                "forged-decisions",
                cluster_metric(FORGED_DECISIONS_METRIC, settings.name, "Sum"),
                "The remediation state machine refused an execution whose decision no "
                "recorder wrote: someone other than the classifier or the planned Lambda "
                "called states:StartExecution with a decision of source kmsg, health, "
                "deep-check or planned, or altered or replayed one. The node was not "
                "touched. CloudTrail's StartExecution events name the caller; the refused "
                "executions end in the state 'Refused forged decision' (docs/security.md).",
            ),
            self._alarm(
                "UnprovenEvidence",
                "unproven-evidence",
                cw.Metric(
                    namespace=METRICS_NAMESPACE,
                    metric_name=UNPROVEN_METRIC,
                    dimensions_map={
                        CLUSTER_DIMENSION: settings.name,
                        REASON_DIMENSION: UNVERIFIABLE_REASON,
                    },
                    statistic="Sum",
                    period=PERIOD,
                ),
                "Reboot or replace lines whose origin could not be checked at all: unsigned "
                "(an agent that cannot register: no IMDS, KMS refused), or no registration "
                "of the node holds or can be read (KMS or Logs refused, the log group's "
                "retention outlived it), or no identity certificate for the Region. With "
                f"proof_of_origin {settings.proof_of_origin}, "
                + (
                    "those faults are only notified. "
                    if settings.proof_of_origin == "enforce"
                    else "those faults act anyway. "
                )
                + "The classifier's log names each line's reason (docs/security.md). Lines "
                "signed with a key that does not hold (a forgery) count apart and do not page.",
            ),
        ]

        if planned is not None:
            self.pipeline.append(
                self._alarm(
                    "PlannedFailures",
                    "planned-failures",
                    self._failures(planned, "planned executions not succeeded"),
                    "A planned repair (an AWS notice's instance to drain and replace before "
                    "AWS acts) failed, timed out or was aborted before it started its "
                    "remediation: the instance goes at the notice's deadline undrained. Its "
                    "execution's input names the instance and the notice.",
                )
            )
            self.pipeline.append(
                self._alarm(
                    "UnreadableNotices",
                    "unreadable-notices",
                    cluster_metric(UNREADABLE_NOTICES_METRIC, settings.name, "Sum"),
                    "The planned Lambda received an event it could not read as an AWS "
                    "notice (a format AWS changed, or an event rule sending something "
                    "else): nothing was planned for it, and an instance it named may go at "
                    "its deadline undrained. The planned Lambda's log holds the event and "
                    "the reason.",
                )
            )

    @staticmethod
    def _failures(machine: sfn.IStateMachine, label: str) -> cw.MathExpression:
        return cw.MathExpression(
            expression="failed + timedOut + aborted",
            using_metrics={
                "failed": machine.metric_failed(period=PERIOD),
                "timedOut": machine.metric_timed_out(period=PERIOD),
                "aborted": machine.metric_aborted(period=PERIOD),
            },
            period=PERIOD,
            label=label,
        )

    @staticmethod
    def _stranded(
        settings: ClusterSettings, aftercare: tuple[sfn.IStateMachine, ...]
    ) -> cw.MathExpression:
        """The reconcile's count, plus every failed, timed-out or aborted aftercare run
        (each series filled with 0 where it has no data, so that one alone can alarm)."""
        using: dict[str, cw.IMetric] = {
            "stranded": cluster_metric(STRANDED_METRIC, settings.name, "Maximum")
        }
        for i, machine in enumerate(aftercare):
            using[f"failed{i}"] = machine.metric_failed(period=PERIOD)
            using[f"timedOut{i}"] = machine.metric_timed_out(period=PERIOD)
            using[f"aborted{i}"] = machine.metric_aborted(period=PERIOD)
        return cw.MathExpression(
            expression=" + ".join(f"FILL({name}, 0)" for name in using),
            using_metrics=using,
            period=PERIOD,
            label="stranded nodes and failed aftercare runs",
        )

    def _alarm(
        self, id: str, name: str, metric: cw.IMetric, description: str, *, threshold: int = 1
    ) -> cw.Alarm:
        alarm = cw.Alarm(
            self,
            id,
            alarm_name=f"nodemedic-{self.settings.name}-{name}"[:MAX_NAME],
            alarm_description=description[:MAX_DESCRIPTION],
            metric=metric,
            threshold=threshold,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
        )
        alarm.add_alarm_action(self.action)
        if isinstance(metric, cw.MathExpression) and is_insights_query(metric.expression):
            self.insights.append(alarm)
        return alarm
