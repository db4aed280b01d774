"""The pipeline's Grafana dashboard, for teams on Amazon Managed Grafana: the cluster's
CloudWatch dashboard (``stacks.dashboard``) turned widget by widget into Grafana panels on a
CloudWatch data source.

Generated, never hand-written: the CloudWatch dashboard of a placeholder cluster is
synthesized and each of its queries (SEARCH and math expressions, Metrics Insights SQL,
metric statistics, the Logs Insights query) is carried over unchanged, with the cluster's
name replaced by the dashboard's ``$cluster`` variable. A query that changes in
``stacks.dashboard`` changes here when the file is written again
(``python -m stacks.grafana``); ``tests/unit/stacks/test_grafana.py`` fails until it is.

CloudWatch widgets with no Grafana counterpart say so in a text panel: the alarm status
widget (Grafana reads no alarm states from CloudWatch) points to the console.
"""

from __future__ import annotations

import json
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

from nodemedic.catalog import load_catalog
from nodemedic.contracts.logs import NODE_LOG_GROUP
from nodemedic.settings import ClusterSettings

PLACEHOLDER = "grafanaplaceholder"
"""A cluster name no query contains otherwise, replaced by ``$cluster`` everywhere."""
CLUSTER_VARIABLE = "$cluster"
DATASOURCE = {"type": "cloudwatch", "uid": "${datasource}"}
PATH = Path(__file__).resolve().parent.parent / "deploy" / "grafana" / "nodemedic-pipeline.json"
GRID_HEIGHT = 8
"""Grafana rows per CloudWatch widget height of 6."""
_SOURCE = re.compile(r"SOURCE '([^']+)'")
Json = dict[str, Any]


@cache
def cloudwatch_body() -> Json:
    """The CloudWatch dashboard body of a placeholder cluster with every widget on (job
    monitoring and HyperPod's findings included), Region references left out. Synthesized
    once per process (a synthesis takes seconds); callers read it, never change it."""
    from aws_cdk import App, Stack
    from aws_cdk import aws_logs as logs
    from aws_cdk.assertions import Template

    from stacks.dashboard import Dashboard

    stack = Stack(App(), "Grafana")
    # A HyperPod cluster listed too: its findings' series are graphed only where one is.
    settings = ClusterSettings(
        name=PLACEHOLDER,
        node_groups=(PLACEHOLDER,),
        job_monitoring=True,
        hyperpod_clusters=((PLACEHOLDER, "abcdef123456"),),
    )
    log_group = NODE_LOG_GROUP.format(cluster=PLACEHOLDER)
    Dashboard(
        stack,
        "Dashboard",
        settings=settings,
        catalog=load_catalog(),
        log_group=logs.LogGroup.from_log_group_name(stack, "Nodes", log_group),
        alarms=[],
    )
    (dashboard,) = [
        resource
        for resource in Template.from_stack(stack).to_json()["Resources"].values()
        if resource["Type"] == "AWS::CloudWatch::Dashboard"
    ]
    joined = dashboard["Properties"]["DashboardBody"]["Fn::Join"][1]
    text = "".join(part if isinstance(part, str) else "default" for part in joined)
    body: Json = json.loads(text)
    return body


def _metric_target(entry: list[Any], ref_id: str, period: int) -> Json:
    """One entry of a metric widget's ``metrics``: an expression (``{"expression": ...}``)
    or a statistic of one metric (``[namespace, name, dim, value, ..., {options}]``)."""
    *names, options = entry if isinstance(entry[-1], dict) else [*entry, {}]
    target: Json = {
        "datasource": DATASOURCE,
        "refId": ref_id,
        "queryMode": "Metrics",
        "region": "default",
        "id": "",
        "label": options.get("label", ""),
        "period": str(options.get("period", period)),
        "matchExact": True,
    }
    expression: str = options.get("expression", "")
    if not names and expression.lstrip().upper().startswith("SELECT"):
        return target | {"metricQueryType": 1, "metricEditorMode": 1, "sqlExpression": expression}
    if not names:
        return target | {"metricQueryType": 0, "metricEditorMode": 1, "expression": expression}
    namespace, metric, *pairs = names
    return target | {
        "metricQueryType": 0,
        "metricEditorMode": 0,
        "namespace": namespace,
        "metricName": metric,
        "dimensions": dict(zip(pairs[::2], pairs[1::2], strict=True)),
        "statistic": options.get("stat", "Average"),
    }


def _panel(widget: Json, panel_id: int) -> Json:
    properties: Json = widget["properties"]
    grid = {
        "x": widget["x"],
        "y": round(widget["y"] * GRID_HEIGHT / 6),
        "w": widget["width"],
        "h": max(3, round(widget["height"] * GRID_HEIGHT / 6)),
    }
    panel: Json = {"id": panel_id, "title": properties.get("title", ""), "gridPos": grid}
    if widget["type"] == "metric":
        period = int(properties.get("period", 300))
        targets = [
            _metric_target(entry, chr(ord("A") + n), period)
            for n, entry in enumerate(properties["metrics"])
        ]
        axis = properties.get("yAxis", {}).get("left", {})
        custom: Json = {"stacking": {"mode": "normal" if properties.get("stacked") else "none"}}
        if "label" in axis:
            custom["axisLabel"] = axis["label"]
        defaults: Json = {"custom": custom}
        if "min" in axis:
            defaults["min"] = axis["min"]
        return panel | {
            "type": "timeseries",
            "datasource": DATASOURCE,
            "targets": targets,
            "fieldConfig": {"defaults": defaults, "overrides": []},
        }
    if widget["type"] == "log":
        groups = _SOURCE.findall(properties["query"])
        query = _SOURCE.sub("", properties["query"]).strip().removeprefix("|").strip()
        return panel | {
            "type": "table",
            "datasource": DATASOURCE,
            "targets": [
                {
                    "datasource": DATASOURCE,
                    "refId": "A",
                    "queryMode": "Logs",
                    "region": "default",
                    "id": "",
                    "logGroupNames": groups,
                    "expression": query.strip(),
                    "statsGroups": [],
                }
            ],
        }
    return panel | {
        "type": "text",
        "options": {
            "mode": "markdown",
            "content": "Grafana reads no alarm states from CloudWatch: see the stack's alarms "
            "in the CloudWatch console (Alarms, prefix `nodemedic-$cluster`), or "
            "`nodemedic dashboard --html`.",
        },
    }


def pipeline_dashboard() -> Json:
    """The Grafana dashboard: one panel per widget of the CloudWatch dashboard."""
    body = cloudwatch_body()
    panels = [_panel(widget, n) for n, widget in enumerate(body["widgets"], start=1)]
    text = json.dumps(panels).replace(PLACEHOLDER, CLUSTER_VARIABLE)
    return {
        "title": "nodemedic: remediation pipeline",
        "uid": "nodemedic-pipeline",
        "description": "The cluster's CloudWatch dashboard (faults, remediations, breaker, "
        "classifier, silent and stranded nodes, jobs, the lines that matched) for a Grafana "
        "CloudWatch data source. Generated by `python -m stacks.grafana` from stacks/dashboard.py.",
        "tags": ["nodemedic", "cloudwatch"],
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "time": {"from": "now-24h", "to": "now"},
        "refresh": "5m",
        "templating": {
            "list": [
                {
                    "name": "datasource",
                    "label": "CloudWatch",
                    "type": "datasource",
                    "query": "cloudwatch",
                    "current": {},
                },
                {
                    "name": "cluster",
                    "label": "Cluster (nodemedic's name for it)",
                    "type": "textbox",
                    "query": "",
                    "current": {},
                },
            ]
        },
        "panels": json.loads(text),
    }


def render() -> str:
    return json.dumps(pipeline_dashboard(), indent=2) + "\n"


if __name__ == "__main__":
    PATH.write_text(render())
    sys.stdout.write(f"wrote {PATH}\n")
