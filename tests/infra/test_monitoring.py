"""Alarms and the dashboard, generated from the catalog."""

from __future__ import annotations

import json
import re
from typing import Any

from lambdas.catalog import load_catalog
from lambdas.filterpattern import filter_terms
from stacks.dashboard import EVIDENCE_LINES
from tests.infra.conftest import Template, one, render, resources

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


def test_every_metric_that_makes_nodemedic_act_has_one_insights_alarm(
    template: Template,
) -> None:
    catalog = load_catalog()
    acting = {(r.namespace, r.metric) for r in catalog.rules if r.action in ("reboot", "replace")}
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


def test_queries_fit_cloudwatch_limits(template: Template) -> None:
    for alarm in _alarms(template).values():
        assert len(alarm["AlarmName"]) <= 255
        assert len(alarm["AlarmDescription"]) <= 1024
        for query in alarm.get("Metrics", []):
            assert len(query.get("Expression", "")) <= 2048


def test_the_pipeline_watches_itself(template: Template) -> None:
    alarms = _alarms(template)
    machine_id, _ = one(template, "AWS::StepFunctions::StateMachine")
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
    return widget["properties"]


def _expressions(widget: dict[str, Any]) -> list[str]:
    return [m[0]["expression"] for m in widget["metrics"] if "expression" in m[0]]


def test_the_dashboard_graphs_faults_per_component(template: Template) -> None:
    catalog = load_catalog()
    widget = _widget(_dashboard(template), "Faults per component")
    labels = [m[0]["label"] for m in widget["metrics"]]
    components = list(dict.fromkeys(r.component for r in catalog.rules if r.action != "ignore"))
    assert labels == components
    for expression in _expressions(widget):
        for search in re.findall(r"SEARCH\('([^']*)'", expression):
            assert len(search) <= 1024
            assert 'Cluster="demo"' in search
    # Every fault metric is in its component's line.
    text = " ".join(_expressions(widget))
    for rule in catalog.rules:
        if rule.action != "ignore":
            assert f'MetricName="{rule.metric}"' in text


def test_the_dashboard_shows_remediation_and_breaker_state(template: Template) -> None:
    body = _dashboard(template)
    (outcomes,) = _expressions(_widget(body, "Remediations by outcome"))
    assert outcomes.endswith('GROUP BY "Outcome"')
    assert 'SUM("Remediations")' in outcomes
    durations = _widget(body, "Time from decision to outcome")
    assert [m[0]["label"] for m in durations["metrics"]] == ["p50", "p99"]
    assert all("RemediationSeconds" in e for e in _expressions(durations))
    (nodes,) = _expressions(_widget(body, "Nodes under remediation"))
    assert nodes.endswith('GROUP BY "NodeGroup"')
    (held,) = _expressions(_widget(body, "Breaker"))
    assert 'SUM("BreakerHeld")' in held
    alarms = _widget(body, "Pipeline alarms")
    assert len(alarms["alarms"]) == 5


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
    for rule in catalog.rules:
        if rule.action != "ignore" and rule.example:
            assert compiled.search(rule.example), rule.id
    assert compiled.pattern.count("|") == len(filter_terms(catalog)) - 1
