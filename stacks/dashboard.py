"""The cluster's CloudWatch dashboard: faults per component, remediations by action and
outcome, fault-to-action and remediation time, nodes in remediation against the breaker's
limit and decisions held per node group, the classifier's throughput, the pipeline's
alarms, silent and stranded nodes, nodes by health status per node group, the job monitor's
restarts, failures, holds and latencies per job (when it is on), and the latest node lines
that match the catalog."""

from __future__ import annotations

import re
from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_logs as logs
from constructs import Construct

from nodemedic.catalog import Catalog
from nodemedic.contracts.jobs import (
    FAULT_DETECTION_SECONDS_METRIC,
    JOB_COUNT_METRICS,
    RESTART_SECONDS_METRIC,
)
from nodemedic.contracts.metrics import (
    BREAKER_METRIC,
    CLASSIFIER_METRICS,
    CLUSTER_DIMENSION,
    FAULT_TO_ACTION_METRIC,
    IN_REMEDIATION_METRIC,
    JOB_DIMENSION,
    METRICS_NAMESPACE,
    NODE_GROUP_DIMENSION,
    NODES_DIMENSIONS,
    NODES_METRIC,
    REMEDIATION_EXTRA_DIMENSIONS,
    REMEDIATION_SECONDS_METRIC,
    REMEDIATIONS_METRIC,
    SILENT_METRIC,
    STRANDED_METRIC,
    SUBSTRATE_DIMENSION,
)
from nodemedic.contracts.stack import dashboard_name
from nodemedic.detect.filterpattern import filter_terms
from nodemedic.settings import ClusterSettings
from stacks.alarms import breaker_tripped, cluster_metric, watched
from stacks.insights import insights_query, search_expressions

PERIOD = Duration.minutes(5)
PERCENTILES = ("p50", "p99")
EVIDENCE_LINES = 50
_SPECIAL = re.compile(r"([\\.^$|?*+()\[\]{}/])")
"""Regex metacharacters, and the slash that ends a Logs Insights regex."""


def faults_by_component(catalog: Catalog) -> dict[str, dict[str, list[str]]]:
    """component → namespace → metrics of the rules that raise a fault, in catalog order."""
    grouped: dict[str, dict[str, list[str]]] = {}
    for rule in catalog.rules:
        if rule.action == "ignore":
            continue
        metrics = grouped.setdefault(rule.component, {}).setdefault(rule.namespace, [])
        if rule.metric not in metrics:
            metrics.append(rule.metric)
    return grouped


def component_sum(namespaces: dict[str, list[str]], *, cluster: str, period_seconds: int) -> str:
    """One math expression: the sum of every metric of a component, all node groups."""
    searches = [
        search
        for namespace, metrics in namespaces.items()
        for search in search_expressions(
            namespace, metrics, cluster=cluster, statistic="Sum", period_seconds=period_seconds
        )
    ]
    if len(searches) == 1:
        return f"SUM({searches[0]})"
    return "SUM([" + ", ".join(f"SUM({s})" for s in searches) + "])"


def evidence_query(terms: Sequence[str]) -> str:
    """Logs Insights: the newest lines that pass the subscription filter, i.e. the lines
    the classifier was shown."""
    regex = "|".join(_SPECIAL.sub(r"\\\1", term) for term in terms)
    return "\n".join(
        [
            "fields @timestamp, @logStream as node_stream, @message",
            f"| filter @message like /{regex}/",
            "| sort @timestamp desc",
            f"| limit {EVIDENCE_LINES}",
        ]
    )


def _expression(expression: str, label: str = "") -> cw.MathExpression:
    """Without a label each series is named by its group or dimensions; CDK's default
    would name every one of them after the query text."""
    return cw.MathExpression(expression=expression, period=PERIOD, label=label)


def _search(
    metrics: Sequence[str], statistic: str, *, cluster: str, per: str = NODE_GROUP_DIMENSION
) -> str:
    """SEARCH for one line per node group (or job, with ``per=JOB_DIMENSION``): unlike Metrics
    Insights it has percentiles and any time range."""
    (search,) = search_expressions(
        METRICS_NAMESPACE,
        metrics,
        cluster=cluster,
        statistic=statistic,
        period_seconds=int(PERIOD.to_seconds()),
        dimensions=(CLUSTER_DIMENSION, per),
    )
    return search


def _line_per(
    expression: str, label: str = "", per: str = NODE_GROUP_DIMENSION
) -> cw.MathExpression:
    return _expression(expression, f"{label} ${{PROP('Dim.{per}')}}".strip())


def _percentiles(
    title: str, metric: str, *, cluster: str, per: str = NODE_GROUP_DIMENSION
) -> cw.GraphWidget:
    return cw.GraphWidget(
        title=title,
        left=[
            _line_per(_search([metric], p, cluster=cluster, per=per), p, per) for p in PERCENTILES
        ],
        left_y_axis=cw.YAxisProps(label="seconds", show_units=False, min=0),
        width=6,
    )


def job_widgets(cluster: str) -> list[cw.IWidget]:
    """The job monitor's metrics (docs/jobs.md), one line per job: what it did to each job
    (restarts, failures, verdicts its breaker held) and how fast."""
    counts = cw.GraphWidget(
        title="Jobs: restarted, failed, held by the job breaker, per job",
        left=[
            _line_per(
                _search(JOB_COUNT_METRICS, "Sum", cluster=cluster, per=JOB_DIMENSION),
                "${PROP('MetricName')}",
                JOB_DIMENSION,
            )
        ],
        left_y_axis=cw.YAxisProps(label="verdicts", show_units=False, min=0),
        width=12,
    )
    return [
        counts,
        _percentiles(
            "Job fault to restart decision, p50 and p99 (s)",
            FAULT_DETECTION_SECONDS_METRIC,
            cluster=cluster,
            per=JOB_DIMENSION,
        ),
        _percentiles(
            "Job restart decision to all pods running, p50 and p99 (s)",
            RESTART_SECONDS_METRIC,
            cluster=cluster,
            per=JOB_DIMENSION,
        ),
    ]


def nodes_by_status(cluster: str) -> cw.GraphWidget:
    """The reconcile's census (``NODES_METRIC``): one line per node group and status, the
    last count of each period (the reconcile counts every few minutes)."""
    (search,) = search_expressions(
        METRICS_NAMESPACE,
        [NODES_METRIC],
        cluster=cluster,
        statistic="Maximum",
        period_seconds=int(PERIOD.to_seconds()),
        dimensions=NODES_DIMENSIONS,
    )
    return cw.GraphWidget(
        title="Nodes by health status per node group",
        left=[_expression(search, "${PROP('Dim.NodeGroup')} ${PROP('Dim.Status')}")],
        left_y_axis=cw.YAxisProps(label="nodes", show_units=False, min=0),
        width=12,
    )


class Dashboard(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        settings: ClusterSettings,
        catalog: Catalog,
        log_group: logs.ILogGroup,
        alarms: Sequence[cw.IAlarm],
    ) -> None:
        super().__init__(scope, id)
        cluster = settings.name
        seconds = int(PERIOD.to_seconds())
        faults = cw.GraphWidget(
            title="Faults per component",
            left=[
                _expression(component_sum(ns, cluster=cluster, period_seconds=seconds), component)
                for component, ns in faults_by_component(watched(catalog, settings)).items()
            ],
            stacked=True,
            width=12,
        )
        # Where nodes live elsewhere than in Auto Scaling groups, who repaired them too.
        by_substrate = (SUBSTRATE_DIMENSION,) if settings.other_substrates else ()
        outcomes = cw.GraphWidget(
            title=f"Remediations by {'substrate, ' if by_substrate else ''}action and outcome",
            left=[
                # No SCHEMA: a series without one of the dimensions (one published before
                # the Substrate dimension was) shows under "Other" instead of vanishing.
                _expression(
                    insights_query(
                        "SUM",
                        REMEDIATIONS_METRIC,
                        METRICS_NAMESPACE,
                        cluster=cluster,
                        dimensions=None,
                        group_by=(*by_substrate, *REMEDIATION_EXTRA_DIMENSIONS),
                    )
                )
            ],
            stacked=True,
            width=12,
        )
        fault_to_action = _percentiles(
            "Fault to first action on the node, p50 and p99 (s)",
            FAULT_TO_ACTION_METRIC,
            cluster=cluster,
        )
        duration = _percentiles(
            "Decision to outcome, p50 and p99 (s)", REMEDIATION_SECONDS_METRIC, cluster=cluster
        )
        # A gauge published on change: the last value holds until the next one.
        nodes = _search([IN_REMEDIATION_METRIC], "Maximum", cluster=cluster)
        in_remediation = cw.GraphWidget(
            title="Nodes under remediation per node group (breaker limit)",
            left=[_line_per(f"FILL({nodes}, REPEAT)")],
            left_annotations=[
                cw.HorizontalAnnotation(
                    value=settings.max_parallel,
                    label=f"max_parallel = {settings.max_parallel}: the breaker holds new actions",
                    color=cw.Color.RED,
                )
            ],
            left_y_axis=cw.YAxisProps(label="nodes", show_units=False, min=0),
            width=6,
        )
        breaker = cw.GraphWidget(
            title="Breaker: trips of the cluster, decisions held per node group",
            left=[
                breaker_tripped(cluster).with_(label="breaker tripped (cluster)"),
                _expression(
                    insights_query(
                        "SUM",
                        BREAKER_METRIC,
                        METRICS_NAMESPACE,
                        cluster=cluster,
                        group_by=(NODE_GROUP_DIMENSION,),
                    )
                ),
            ],
            width=6,
        )
        # Gauges of the reconcile (dimension Cluster only), published at every run.
        unheard = cw.GraphWidget(
            title="Silent nodes (no heartbeat) and stranded nodes (tainted, no remediation)",
            left=[
                cluster_metric(metric, cluster, "Maximum").with_(label=metric)
                for metric in (SILENT_METRIC, STRANDED_METRIC)
            ],
            left_y_axis=cw.YAxisProps(label="nodes", show_units=False, min=0),
            width=12,
        )
        classifier = cw.GraphWidget(
            title="Classifier: lines, faults, remediations started",
            left=[
                _expression(
                    insights_query(
                        "SUM", metric, METRICS_NAMESPACE, cluster=cluster, dimensions=None
                    ),
                    metric,
                )
                for metric in CLASSIFIER_METRICS
            ],
            width=12,
        )
        health = cw.AlarmStatusWidget(
            title="Pipeline alarms",
            alarms=list(alarms),
            sort_by=cw.AlarmStatusWidgetSortBy.STATE_UPDATED_TIMESTAMP,
            width=12,
            # The classifier's chart beside it makes the row 6 high anyway; at the default
            # 3 the widget cut off every alarm past the 7th.
            height=6,
        )
        evidence = cw.LogQueryWidget(
            title="Latest node lines matching the fault catalog",
            log_group_names=[log_group.log_group_name],
            query_string=evidence_query(filter_terms(catalog)),
            view=cw.LogQueryVisualizationType.TABLE,
            width=24,
            height=8,
        )
        self.dashboard = cw.Dashboard(
            self,
            "Dashboard",
            dashboard_name=dashboard_name(cluster),
            default_interval=Duration.hours(24),
            widgets=[
                [faults, outcomes],
                [fault_to_action, duration, in_remediation, breaker],
                [classifier, health],
                [unheard, nodes_by_status(cluster)],
                *([job_widgets(cluster)] if settings.job_monitoring else []),
                [evidence],
            ],
        )
