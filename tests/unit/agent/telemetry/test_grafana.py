"""The Grafana dashboard that ships in deploy/grafana (the scrape configuration is the
chart's, tests/integration/deploy/chart): a dashboard Grafana can import, on a Prometheus data
source the user picks, whose every query names metrics the agent really exports (the
exporters' own lists, not a copy)."""

from __future__ import annotations

import json
import re
from typing import Any

from agent.metrics import Metrics
from agent.telemetry.gpu import METRICS as GPU_METRICS
from agent.telemetry.neuron_report import FAMILIES as NEURON_FAMILIES
from tests.support.paths import ROOT

GRAFANA = ROOT / "deploy" / "grafana"
DASHBOARD = GRAFANA / "nodemedic-accelerators.json"
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_SELECTORS = re.compile(r"\{[^}]*\}|\[[^\]]*\]")
_WORD = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
PROMQL = {
    "sum", "avg", "max", "min", "count", "by", "without", "rate", "increase", "on",
    "ignoring", "group_left", "group_right", "and", "or", "unless",
}  # fmt: skip


FROM_DCGM_EXPORTER = {
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
}
"""DCGM fields (409, 419, 429, 439) only dcgm-exporter exports: ``nvidia-smi -q -x`` has no
NVLink counters. Only the NVLink panel names them, and its description says so."""


def exported() -> set[str]:
    """Every metric name the agent's /metrics can carry."""
    own = {line.split()[2] for line in Metrics().render().splitlines() if line.startswith("# TYPE")}
    return own | set(NEURON_FAMILIES) | {name for name, *_ in GPU_METRICS}


def metric_names(expr: str) -> set[str]:
    """The metric names in a PromQL expression: its words outside label matchers, range
    selectors and strings, less functions, keywords and the labels of ``by (...)``."""
    bare = _SELECTORS.sub(" ", _STRINGS.sub(" ", expr))
    bare = re.sub(r"\b(?:by|without)\s*\([^)]*\)", " ", bare)
    return {
        word
        for word in _WORD.findall(bare)
        if word not in PROMQL and not re.search(rf"\b{word}\s*\(", bare)
    }


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def test_the_dashboard_is_importable_with_a_prometheus_datasource_variable() -> None:
    board = dashboard()
    assert board["uid"] and board["title"] and isinstance(board["schemaVersion"], int)
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    rows = [p["title"] for p in board["panels"] if p["type"] == "row"]
    assert [r.split(" ")[0] for r in rows] == ["Neuron", "GPU", "nodemedic"]
    graphs = [p for p in board["panels"] if p["type"] != "row"]
    assert len({p["id"] for p in board["panels"]}) == len(board["panels"])
    for panel in graphs:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel
        assert panel["targets"], panel["title"]
        assert all(t["expr"] and t["refId"] for t in panel["targets"]), panel["title"]
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24, panel["title"]


def test_every_query_names_only_metrics_the_agent_exports() -> None:
    board = dashboard()
    queries = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    # A variable's query, label_values(<metric>, <label>), names one metric.
    queries += [
        v["definition"].removeprefix("label_values(").split(",")[0]
        for v in board["templating"]["list"]
        if v["type"] == "query"
    ]
    known = exported()
    named = set().union(*(metric_names(q) for q in queries))
    assert named - known == FROM_DCGM_EXPORTER
    # Each exporter has panels: Neuron, GPU and the agent's own.
    assert named & set(NEURON_FAMILIES) and named & {n for n, *_ in GPU_METRICS}
    assert any(name.startswith("nodemedic_agent_") for name in named)


def test_xids_pcie_replays_and_nvlink_errors_have_panels_that_say_where_they_come_from() -> None:
    panels = {p["title"]: p for p in dashboard()["panels"]}
    names = {
        title: set().union(*(metric_names(t["expr"]) for t in panel.get("targets", [])))
        for title, panel in panels.items()
    }
    assert names["Xid lines by code (kernel log)"] == {"nodemedic_agent_xid_total"}
    assert names["PCIe replays"] == {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER"}
    nvlink = panels["NVLink errors (dcgm-exporter)"]
    assert names[nvlink["title"]] == FROM_DCGM_EXPORTER
    assert "dcgm-exporter" in nvlink["description"]


def test_the_query_parser_finds_names_and_only_names() -> None:
    expr = (
        "sum by (instance_id, event_type) (increase(hardware_ecc_events_total"
        '{event_type=~".*uncorrected.*"}[5m])) / system_memory_total_bytes'
    )
    assert metric_names(expr) == {"hardware_ecc_events_total", "system_memory_total_bytes"}
    assert metric_names("count(nodemedic_agent_signing == 0)") == {"nodemedic_agent_signing"}
