"""The pipeline's Grafana dashboard (deploy/grafana/nodemedic-pipeline.json): the file a user
imports is the one ``stacks.grafana`` generates from the CloudWatch dashboard now, and every
query of the CloudWatch dashboard reaches Grafana with the cluster as a variable."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stacks import grafana


@pytest.fixture(scope="module")
def body() -> dict[str, Any]:
    return grafana.cloudwatch_body()


def test_the_shipped_file_is_what_the_generator_writes_today() -> None:
    shipped = grafana.PATH.read_text()
    assert shipped == grafana.render(), (
        "run `make generated` (python -m stacks.grafana) and commit the file"
    )


def test_every_cloudwatch_query_is_in_a_grafana_panel_with_the_cluster_as_a_variable(
    body: dict[str, Any],
) -> None:
    board = json.loads(grafana.PATH.read_text())
    assert {v["name"]: v["type"] for v in board["templating"]["list"]} == {
        "datasource": "datasource",
        "cluster": "textbox",
    }
    text = json.dumps(board)
    assert grafana.PLACEHOLDER not in text
    queries = {
        t.get("expression") or t.get("sqlExpression") or t.get("metricName")
        for panel in board["panels"]
        for t in panel.get("targets", [])
    }
    widgets = [w for w in body["widgets"] if w["type"] == "metric"]
    for widget in widgets:
        for entry in widget["properties"]["metrics"]:
            options = entry[-1] if isinstance(entry[-1], dict) else {}
            query = options.get("expression") or entry[1]
            assert query.replace(grafana.PLACEHOLDER, "$cluster") in queries, query[:120]
    titles = [p["title"] for p in board["panels"]]
    assert titles == [w["properties"].get("title", "") for w in body["widgets"]]
    assert all(p["datasource"]["type"] == "cloudwatch" for p in board["panels"] if "targets" in p)


def test_metrics_insights_queries_are_sql_and_searches_are_code(body: dict[str, Any]) -> None:
    board = json.loads(grafana.PATH.read_text())
    targets = [t for p in board["panels"] for t in p.get("targets", [])]
    sql = [t for t in targets if "sqlExpression" in t]
    searches = [t for t in targets if t.get("expression", "").startswith(("SEARCH", "SUM", "FILL"))]
    assert sql and all(t["metricQueryType"] == 1 for t in sql)
    assert searches and all(t["metricQueryType"] == 0 for t in searches)
    assert all(t["metricEditorMode"] == 1 for t in [*sql, *searches])
    (logs,) = [t for t in targets if t["queryMode"] == "Logs"]
    assert logs["logGroupNames"] == ["/nodemedic/$cluster/nodes"]
    assert "SOURCE" not in logs["expression"] and logs["expression"].startswith("fields")
