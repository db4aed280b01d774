"""Alarms and the dashboard, generated from the catalog."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import pytest

from nodemedic.catalog import load_catalog
from nodemedic.contracts.metrics import (
    BREAKER_METRIC,
    CLUSTER_DIMENSION,
    FAULT_TO_ACTION_METRIC,
    IN_REMEDIATION_METRIC,
    METRICS_NAMESPACE,
    NODES_METRIC,
    REMEDIATION_EXTRA_DIMENSIONS,
    REMEDIATION_SECONDS_METRIC,
    REMEDIATIONS_METRIC,
    SILENT_METRIC,
    STRANDED_METRIC,
    SUBSTRATE_DIMENSION,
    UNREADABLE_NOTICES_METRIC,
)
from nodemedic.contracts.substrates import HYPERPOD_SOURCE
from nodemedic.detect.filterpattern import filter_terms
from stacks.alarms import ACTING
from stacks.dashboard import EVIDENCE_LINES
from stacks.insights import DIMENSIONS
from stacks.synth import synth_template
from tests.support.templates import MACHINE, REMEDIATION, SETTINGS, Template, one, render, resources

HYPERPOD_CLUSTERS = (("ml-cluster", "abcdef123456"),)
QUERY = re.compile(
    r'^SELECT MAX\("(?P<metric>[^"]+)"\) FROM SCHEMA\("(?P<namespace>[^"]+)", "Cluster", '
    r"\"NodeGroup\"\) WHERE \"Cluster\" = 'demo'$"
)


def _alarms(template: Template) -> dict[str, dict[str, Any]]:
    return {
        a["Properties"]["AlarmName"]: a["Properties"]
        for a in resources(template, "AWS::CloudWatch::Alarm").values()
    }


def _insights_alarms(template: Template) -> dict[tuple[str, str], dict[str, Any]]:
    found = {}
    for alarm in _alarms(template).values():
        for query in alarm.get("Metrics", []):
            match = QUERY.match(query.get("Expression", ""))
            if match:
                found[(match["namespace"], match["metric"])] = alarm
    return found


@pytest.fixture(scope="module")
def hyperpod_template() -> Template:
    """The demo cluster with a HyperPod cluster listed."""
    return synth_template(dataclasses.replace(SETTINGS, hyperpod_clusters=HYPERPOD_CLUSTERS))


def _node_rules() -> list[Any]:
    """The rules a cluster with no HyperPod cluster alarms and graphs: all but HyperPod's."""
    return [r for r in load_catalog().rules if r.source != HYPERPOD_SOURCE]


def test_every_metric_that_makes_nodemedic_act_has_one_insights_alarm(
    template: Template,
) -> None:
    catalog = load_catalog()
    acting = {(r.namespace, r.metric) for r in _node_rules() if r.action in ACTING}
    notify_only = {(r.namespace, r.metric) for r in catalog.rules if r.action == "notify"}
    alarmed = _insights_alarms(template)
    assert set(alarmed) == acting
    assert not set(alarmed) & (notify_only - acting)
    dma = alarmed[("NeuronHealthCheck", "NeuronHasError_DMA_ERROR")]
    (query,) = dma["Metrics"]
    assert query["Expression"] == (
        'SELECT MAX("NeuronHasError_DMA_ERROR") FROM SCHEMA("NeuronHealthCheck", "Cluster", '
        '"NodeGroup") WHERE "Cluster" = \'demo\''
    )
    assert query["Period"] == 300
    assert dma["Threshold"] == 1
    assert dma["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert dma["TreatMissingData"] == "notBreaching"
    assert "neuron-dma-error" in dma["AlarmDescription"]


def test_hyperpod_s_findings_have_alarms_and_graphs_only_where_hyperpod_is_listed(
    template: Template, hyperpod_template: Template
) -> None:
    """HyperPod's findings come only from a listed HyperPod cluster's log group: elsewhere
    their Metrics Insights alarms could never fire and would use up the account's quota."""
    hyperpod = {
        (r.namespace, r.metric)
        for r in load_catalog().rules
        if r.source == HYPERPOD_SOURCE and r.action in ACTING
    }
    without, listed = _insights_alarms(template), _insights_alarms(hyperpod_template)
    print(f"Metrics Insights alarms: {len(without)} without HyperPod, {len(listed)} with")
    assert hyperpod and not hyperpod & set(without)
    assert set(listed) == set(without) | hyperpod
    assert len(listed) == len(without) + len(hyperpod)
    graphed = [
        " ".join(_expressions(_widget(_dashboard(t), "Faults per component")))
        for t in (template, hyperpod_template)
    ]
    for _, metric in hyperpod:
        assert f'MetricName="{metric}"' not in graphed[0]
        assert f'MetricName="{metric}"' in graphed[1]


def test_queries_fit_cloudwatch_limits(template: Template) -> None:
    for alarm in _alarms(template).values():
        assert len(alarm["AlarmName"]) <= 255
        assert len(alarm["AlarmDescription"]) <= 1024
        for query in alarm.get("Metrics", []):
            assert len(query.get("Expression", "")) <= 2048


def test_the_pipeline_watches_itself(template: Template) -> None:
    alarms = _alarms(template)
    machine_id, _ = one(template, MACHINE, REMEDIATION)
    queue_id, _ = one(template, "AWS::SQS::Queue")
    failures = alarms["nodemedic-demo-remediation-failures"]["Metrics"]
    watched = {
        q["MetricStat"]["Metric"]["MetricName"]: q["MetricStat"]["Metric"]["Dimensions"]
        for q in failures
        if "MetricStat" in q
    }
    assert set(watched) == {"ExecutionsFailed", "ExecutionsTimedOut", "ExecutionsAborted"}
    assert all(
        d == [{"Name": "StateMachineArn", "Value": {"Ref": machine_id}}] for d in watched.values()
    )
    dead = alarms["nodemedic-demo-dead-letters"]
    assert dead["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert dead["Dimensions"] == [
        {"Name": "QueueName", "Value": {"Fn::GetAtt": [queue_id, "QueueName"]}}
    ]
    for name in ("classifier-errors", "kube-errors"):
        assert alarms[f"nodemedic-demo-{name}"]["MetricName"] == "Errors"
    (breaker,) = alarms["nodemedic-demo-breaker-open"]["Metrics"]
    assert breaker["Expression"] == (
        'SELECT SUM("BreakerHeld") FROM SCHEMA("NodeMedic", "Cluster", "NodeGroup") '
        "WHERE \"Cluster\" = 'demo'"
    )


def test_a_failed_planned_execution_alarms(template: Template) -> None:
    """The planned machine's own failures: its remediation's alarms never see a start that
    did not happen."""
    planned_id, _ = one(template, MACHINE, "PlannedWait")
    metrics = _alarms(template)["nodemedic-demo-planned-failures"]["Metrics"]
    watched = {
        q["MetricStat"]["Metric"]["MetricName"]: q["MetricStat"]["Metric"]["Dimensions"]
        for q in metrics
        if "MetricStat" in q
    }
    assert set(watched) == {"ExecutionsFailed", "ExecutionsTimedOut", "ExecutionsAborted"}
    assert all(
        d == [{"Name": "StateMachineArn", "Value": {"Ref": planned_id}}] for d in watched.values()
    )


def test_an_unreadable_aws_notice_alarms(template: Template) -> None:
    """The planned Lambda plans nothing for an event it cannot read, and counts it: the
    instance such a notice named may go at its deadline undrained, so one pages."""
    alarm = _alarms(template)["nodemedic-demo-unreadable-notices"]
    watched = (alarm["Namespace"], alarm["MetricName"], alarm["Statistic"], alarm["Threshold"])
    assert watched == (METRICS_NAMESPACE, UNREADABLE_NOTICES_METRIC, "Sum", 1)
    # What the planned Lambda publishes (``lambdas.planned.handler``): the cluster alone.
    assert alarm["Dimensions"] == [{"Name": CLUSTER_DIMENSION, "Value": SETTINGS.name}]
    assert alarm["TreatMissingData"] == "notBreaching"


def test_every_alarm_notifies_the_topic(template: Template) -> None:
    topic_id, _ = one(template, "AWS::SNS::Topic")
    for name, alarm in _alarms(template).items():
        assert alarm["AlarmActions"] == [{"Ref": topic_id}], name


def _dashboard(template: Template) -> dict[str, Any]:
    _, dashboard = one(template, "AWS::CloudWatch::Dashboard")
    body: dict[str, Any] = json.loads(render(dashboard["Properties"]["DashboardBody"]))
    return body


def _widget(body: dict[str, Any], title_start: str) -> dict[str, Any]:
    (widget,) = [
        w for w in body["widgets"] if w["properties"].get("title", "").startswith(title_start)
    ]
    properties: dict[str, Any] = widget["properties"]
    return properties


def _expressions(widget: dict[str, Any]) -> list[str]:
    return [m[0]["expression"] for m in widget["metrics"] if "expression" in m[0]]


def test_the_dashboard_graphs_faults_per_component(template: Template) -> None:
    rules = _node_rules()
    widget = _widget(_dashboard(template), "Faults per component")
    labels = [m[0]["label"] for m in widget["metrics"]]
    components = list(dict.fromkeys(r.component for r in rules if r.action != "ignore"))
    assert labels == components
    for expression in _expressions(widget):
        for search in re.findall(r"SEARCH\('([^']*)'", expression):
            assert len(search) <= 1024
            assert 'Cluster="demo"' in search
    # Every fault metric is in its component's line.
    text = " ".join(_expressions(widget))
    for rule in rules:
        if rule.action != "ignore":
            assert f'MetricName="{rule.metric}"' in text


def test_the_dashboard_shows_remediations_timings_and_the_breaker(template: Template) -> None:
    body = _dashboard(template)
    (outcomes,) = _expressions(_widget(body, "Remediations by action and outcome"))
    assert outcomes == (
        'SELECT SUM("Remediations") FROM "NodeMedic" WHERE "Cluster" = \'demo\' '
        'GROUP BY "Action", "Outcome"'
    )
    for title, metric in (
        ("Fault to first action", "FaultToActionSeconds"),
        ("Decision to outcome", "RemediationSeconds"),
    ):
        widget = _widget(body, title)
        assert [m[0]["label"].split()[0] for m in widget["metrics"]] == ["p50", "p99"]
        for expression, statistic in zip(_expressions(widget), ("p50", "p99"), strict=True):
            assert expression == (
                'SEARCH(\'{"NodeMedic","Cluster","NodeGroup"} Cluster="demo" AND '
                f"(MetricName=\"{metric}\")', '{statistic}', 300)"
            )
    nodes = _widget(body, "Nodes under remediation per node group")
    (gauge,) = _expressions(nodes)
    assert gauge.startswith("FILL(SEARCH(") and gauge.endswith(", REPEAT)")
    assert 'MetricName="InRemediation"' in gauge
    (limit,) = nodes["annotations"]["horizontal"]
    assert limit["value"] == SETTINGS.max_parallel
    breaker = _widget(body, "Breaker")
    (held,) = _expressions(breaker)
    # The cluster's trips beside the holds: the breaker's state at a glance.
    assert ["NodeMedic", "BreakerTripped", "Cluster", SETTINGS.name] in [
        m[:4] for m in breaker["metrics"]
    ]
    assert held.startswith(
        'SELECT SUM("BreakerHeld") FROM SCHEMA("NodeMedic", "Cluster", "NodeGroup")'
    )
    assert held.endswith('GROUP BY "NodeGroup"')
    alarms = _widget(body, "Pipeline alarms")["alarms"]
    pipeline = {
        f"${{{k}.Arn}}"
        for k, a in resources(template, "AWS::CloudWatch::Alarm").items()
        if not any(QUERY.match(q.get("Expression", "")) for q in a["Properties"].get("Metrics", []))
    }
    assert set(alarms) == pipeline
    # classifier errors, kube errors, dead letters, failures, breaker open, breaker tripped,
    # quarantine tripped, stranded nodes, nodes held out, silent nodes, forged decisions,
    # unproven evidence, failed planned repairs, unreadable notices, failed jobs
    assert len(alarms) == 15


def _put_metric_data(template: Template) -> list[dict[str, Any]]:
    """The parameters of every putMetricData task of the state machine, in any branch."""
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if str(node.get("Resource", "")).endswith(":aws-sdk:cloudwatch:putMetricData"):
                found.append(node["Parameters"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    _, machine = one(template, MACHINE, REMEDIATION)
    walk(json.loads(render(machine["Properties"]["DefinitionString"])))
    return found


def _published(template: Template) -> dict[tuple[str, str], set[frozenset[str]]]:
    """(namespace, metric) → the sets of dimension names it is published with; names the
    state machine takes from the decision are shown as their path."""
    published: dict[tuple[str, str], set[frozenset[str]]] = {}
    for parameters in _put_metric_data(template):
        namespace = parameters.get("Namespace") or parameters["Namespace.$"]
        for datum in parameters["MetricData"]:
            metric = datum.get("MetricName") or datum["MetricName.$"]
            names = frozenset(d["Name"] for d in datum["Dimensions"])
            published.setdefault((namespace, metric), set()).add(names)
            cluster = [d for d in datum["Dimensions"] if d["Name"] == "Cluster"]
            # The classifier puts its CLUSTER_NAME (the settings' name) in the decision.
            assert cluster == [{"Name": "Cluster", "Value.$": "$.decision.cluster"}], metric
    return published


def test_the_state_machine_publishes_what_the_alarms_and_dashboard_read(
    template: Template,
) -> None:
    published = _published(template)
    per_node_group = {frozenset(DIMENSIONS)}
    # The catalog's fault metric: the Metrics Insights alarms' SCHEMA(namespace, dims).
    assert published[("$.decision.metric_namespace", "$.decision.metric")] == per_node_group
    for metric in (
        REMEDIATION_SECONDS_METRIC,
        FAULT_TO_ACTION_METRIC,
        IN_REMEDIATION_METRIC,
        BREAKER_METRIC,
    ):
        assert published.get((METRICS_NAMESPACE, metric)) == per_node_group, metric
    # Every execution's end, the failed ones too, with what the dashboard groups by and
    # who repaired the node.
    assert published[(METRICS_NAMESPACE, REMEDIATIONS_METRIC)] == {
        frozenset((*DIMENSIONS, *REMEDIATION_EXTRA_DIMENSIONS, SUBSTRATE_DIMENSION))
    }


def test_remediations_name_the_substrate_the_plan_found(
    template: Template, hyperpod_template: Template
) -> None:
    """Every ``Remediations`` datum, the report's and the failure's, counts the node's
    substrate as the plan named it; a cluster listing another substrate than Auto Scaling
    graphs its remediations by it."""
    for each in (template, hyperpod_template):
        substrates = [
            d
            for parameters in _put_metric_data(each)
            for datum in parameters["MetricData"]
            if datum.get("MetricName") == REMEDIATIONS_METRIC
            for d in datum["Dimensions"]
            if d["Name"] == SUBSTRATE_DIMENSION
        ]
        assert len(substrates) >= 2
        assert all(d == {"Name": "Substrate", "Value.$": "$.plan.substrate"} for d in substrates)
    (outcomes,) = _expressions(
        _widget(_dashboard(hyperpod_template), "Remediations by substrate, action and outcome")
    )
    assert outcomes.endswith('GROUP BY "Substrate", "Action", "Outcome"')


def test_the_evidence_widget_shows_the_lines_the_classifier_sees(template: Template) -> None:
    catalog = load_catalog()
    widget = _widget(_dashboard(template), "Latest node lines")
    query = widget["query"]
    (log_id,) = [
        k
        for k, r in resources(template, "AWS::Logs::LogGroup").items()
        if r["Properties"].get("LogGroupName") == "/nodemedic/demo/nodes"
    ]
    assert query.startswith(f"SOURCE '${{{log_id}}}' |")
    regex = re.search(r"like /(.*)/", query)
    assert regex is not None
    assert f"limit {EVIDENCE_LINES}" in query
    compiled = re.compile(regex[1])
    # HyperPod's rules read HyperPod's log groups, never the nodes' group this widget shows.
    for rule in catalog.rules:
        if rule.action != "ignore" and rule.example and rule.source != HYPERPOD_SOURCE:
            assert compiled.search(rule.example), rule.id
    assert compiled.pattern.count("|") == len(filter_terms(catalog)) - 1


@pytest.mark.parametrize(
    ("name", "metric", "threshold"),
    [
        ("silent-nodes", "SilentNodes", 1),
        # Nodes people hold out are capacity lost: the alarm when as many as the cluster lets
        # remediations take.
        ("nodes-held-out", "NodesHeldOut", SETTINGS.max_in_flight),
    ],
)
def test_the_reconciles_gauges_alarm(
    template: Template, name: str, metric: str, threshold: int
) -> None:
    (alarm,) = [
        a["Properties"]
        for a in resources(template, "AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("AlarmName") == f"nodemedic-{SETTINGS.name}-{name}"
    ]
    assert (alarm["MetricName"], alarm["Namespace"], alarm["Statistic"]) == (
        metric,
        "NodeMedic",
        "Maximum",
    )
    assert alarm["Dimensions"] == [{"Name": "Cluster", "Value": SETTINGS.name}]
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (
        threshold,
        "GreaterThanOrEqualToThreshold",
    )
    assert alarm["TreatMissingData"] == "notBreaching" and alarm["AlarmActions"]


def test_the_dashboard_shows_silent_and_stranded_nodes(template: Template) -> None:
    widget = _widget(_dashboard(template), "Silent nodes")
    series = [m for m in widget["metrics"] if "expression" not in m[-1]]
    assert [(m[0], m[1], m[2]) for m in series] == [
        (METRICS_NAMESPACE, SILENT_METRIC, "Cluster"),
        (METRICS_NAMESPACE, STRANDED_METRIC, "Cluster"),
    ]
    assert all(m[3] == SETTINGS.name and m[-1]["stat"] == "Maximum" for m in series)


def test_the_dashboard_shows_nodes_by_health_status_per_node_group(template: Template) -> None:
    widget = _widget(_dashboard(template), "Nodes by health status")
    [expression] = _expressions(widget)
    schema = f'{{"{METRICS_NAMESPACE}","Cluster","NodeGroup","Status"}}'
    query = f'{schema} Cluster="{SETTINGS.name}" AND (MetricName="{NODES_METRIC}")'
    assert expression == f"SEARCH('{query}', 'Maximum', 300)"
    [series] = [m for m in widget["metrics"] if "expression" in m[0]]
    assert series[0]["label"] == "${PROP('Dim.NodeGroup')} ${PROP('Dim.Status')}"


def test_the_dashboard_shows_the_job_monitors_metrics_per_job(
    template: Template, plain_template: Template
) -> None:
    body = _dashboard(template)
    schema = f'{{"{METRICS_NAMESPACE}","Cluster","Job"}} Cluster="{SETTINGS.name}"'
    counts = _widget(body, "Jobs: restarted, failed, held")
    assert _expressions(counts) == [
        f'SEARCH(\'{schema} AND (MetricName="JobsRestarted" OR MetricName="JobsFailed" OR '
        "MetricName=\"JobRestartsHeld\")', 'Sum', 300)"
    ]
    assert counts["metrics"][0][0]["label"] == "${PROP('MetricName')} ${PROP('Dim.Job')}"
    for title, metric in (
        ("Job fault to restart decision", "FaultDetectionLatencySeconds"),
        ("Job restart decision to all pods running", "RestartLatencySeconds"),
    ):
        widget = _widget(body, title)
        assert [m[0]["label"] for m in widget["metrics"]] == [
            "p50 ${PROP('Dim.Job')}",
            "p99 ${PROP('Dim.Job')}",
        ]
        assert _expressions(widget) == [
            f"SEARCH('{schema} AND (MetricName=\"{metric}\")', '{statistic}', 300)"
            for statistic in ("p50", "p99")
        ]
    # A cluster without job monitoring has no job widgets to stay empty.
    titles = [w["properties"].get("title", "") for w in _dashboard(plain_template)["widgets"]]
    assert titles and not [t for t in titles if t.startswith("Job")]


def test_the_quarantine_limit_trips_loudly(template: Template) -> None:
    """The state machine's trip datum is what the alarm reads, and the alarm mails."""
    (alarm,) = [
        a["Properties"]
        for a in resources(template, "AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("AlarmName") == f"nodemedic-{SETTINGS.name}-quarantine-tripped"
    ]
    assert (alarm["MetricName"], alarm["Namespace"], alarm["Statistic"]) == (
        "QuarantineTripped",
        "NodeMedic",
        "Sum",
    )
    assert alarm["Dimensions"] == [{"Name": "Cluster", "Value": SETTINGS.name}]
    assert alarm["AlarmActions"]
    published = [
        p["MetricData"][0]
        for p in _put_metric_data(template)
        if p["MetricData"][0].get("MetricName") == "QuarantineTripped"
    ]
    assert [[d["Name"] for d in m["Dimensions"]] for m in published] == [["Cluster"]]
