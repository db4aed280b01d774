"""neuron-monitor's reports as the agent exports them and acts on them, from a recorded real
report (tests/events/neuron-monitor/SOURCES.md); faults are one field away from it."""

from __future__ import annotations

import copy
import json
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agent.checks.base import Runner
from agent.checks.neuron_monitor import NeuronMonitor, command_line, monitor_config
from agent.telemetry import exposition
from agent.telemetry.neuron_report import FAMILIES, NeuronTelemetry
from nodemedic.contracts.health import NEURON_MONITOR_CHECK
from nodemedic.detect.classifier import classify
from tests.support.paths import EVENTS
from tests.support.prometheus import Samples, read_exposition

RECORDED = EVENTS / "neuron-monitor" / "inf1-xlarge-one-runtime.jsonl"
TS = "2026-11-22T18:30:00Z"
INSTANCE = (
    'instance_name="",instance_id="i-040b6e5c98f5c62b5",instance_type="inf1.xlarge",'
    'availability_zone="us-east-2a",region="us-east-2",subnet_id="subnet-0cb948f5b4bd8d9ca"'
)
RUNTIME = INSTANCE + ',runtime_tag="1"'


def ecc_series(event: str) -> str:
    return f'hardware_ecc_events_total{{{INSTANCE},event_type="{event}",neuron_device_index="0"}}'


def report() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(RECORDED.read_text())
    return loaded


def with_ecc(**counters: int) -> dict[str, Any]:
    """The recorded report with device 0's hardware counters changed."""
    changed = copy.deepcopy(report())
    changed["system_data"]["neuron_hw_counters"]["neuron_devices"][0].update(counters)
    return changed


def samples(telemetry: NeuronTelemetry) -> Samples:
    return read_exposition(exposition([telemetry_check(telemetry)])())


def telemetry_check(telemetry: NeuronTelemetry) -> NeuronMonitor:
    # ``true`` stands for neuron-monitor where the test feeds the reports itself.
    return NeuronMonitor(["true"], telemetry)


def test_the_recorded_report_under_the_prometheus_scripts_names_and_labels() -> None:
    telemetry = NeuronTelemetry()
    telemetry.read_line(RECORDED.read_bytes())
    seen = samples(telemetry)
    assert seen[f'neuroncore_utilization_ratio{{{RUNTIME},neuroncore="0"}}'] == pytest.approx(
        0.02926414908153532
    )
    assert seen[
        f'neuron_runtime_memory_used_bytes{{{RUNTIME},memory_location="neuron_device"}}'
    ] == (63105088)
    assert (
        seen[
            f'neuroncore_memory_usage_constants{{{RUNTIME},memory_location="None",neuroncore="0"}}'
        ]
        == 61766864
    )
    assert seen[f'execution_status_total{{{RUNTIME},status_type="completed"}}'] == 50
    assert seen[f'execution_errors_total{{{RUNTIME},error_type="hardware"}}'] == 0
    assert seen[f'execution_latency_seconds{{{RUNTIME},percentile="p99"}}'] == pytest.approx(
        0.005083322525024414
    )
    assert seen[ecc_series("mem_ecc_uncorrected")] == 0
    assert seen[f"system_vcpu_count{{{INSTANCE}}}"] == 4
    assert seen[f'system_vcpu_usage_ratio{{{INSTANCE},usage_type="system"}}'] == pytest.approx(
        (4.64 + 0.35) / 100
    )
    assert seen[f"system_memory_total_bytes{{{INSTANCE}}}"] == 8033386496
    assert seen[f"instance_info{{{INSTANCE}}}"] == 1
    # The runtime's vCPU group carries an error in the recording: skipped, as the script does.
    assert not any(name.startswith("neuron_runtime_vcpu_usage_ratio") for name in seen)
    assert {name.split("{")[0] for name in seen} == set(FAMILIES) - {
        "neuron_runtime_vcpu_usage_ratio"
    }


def test_counters_add_each_reports_period_and_runtime_series_go_with_the_runtimes() -> None:
    telemetry = NeuronTelemetry()
    telemetry.update(report())
    telemetry.update(with_ecc(sram_ecc_corrected=3))
    seen = samples(telemetry)
    assert seen[f'execution_status_total{{{RUNTIME},status_type="completed"}}'] == 100
    corrected = ecc_series("sram_ecc_corrected")
    assert seen[corrected] == 3

    idle = report()
    idle["neuron_runtime_data"] = []
    telemetry.update(idle)
    seen = samples(telemetry)
    assert not any("runtime_tag" in name for name in seen)
    assert seen[corrected] == 3 and seen[f"system_vcpu_count{{{INSTANCE}}}"] == 4


def test_a_line_that_is_no_report_is_counted_and_skipped() -> None:
    telemetry = NeuronTelemetry()
    telemetry.read_line(b"neuron-monitor: could not open config\n")
    telemetry.read_line(b"[1, 2]\n")
    telemetry.read_line(RECORDED.read_bytes())
    assert (telemetry.rejected, telemetry.reports) == (2, 1)


def test_uncorrected_ecc_growth_is_a_replace_fault_reported_once_it_is_safe() -> None:
    telemetry = NeuronTelemetry()
    check = telemetry_check(telemetry)
    assert check.run(TS) == []  # no report yet
    telemetry.update(report())
    (healthy,) = check.run(TS)
    assert (healthy.device, healthy.status, healthy.reason) == ("neuron0", "ok", "Healthy")
    check.commit()()

    telemetry.update(with_ecc(mem_ecc_uncorrected=2, mem_ecc_corrected=5))
    (fault,) = check.run(TS)
    assert (fault.device, fault.status, fault.reason) == ("neuron0", "fail", "HbmUncorrectable")
    assert fault.figures == {"mem_ecc_uncorrected": 2, "increase": 2}
    found = classify(fault.to_json(), "health")
    assert found is not None and found.rule.id == "neuron-monitor-hbm-uncorrectable"
    assert found.rule.action == "replace"
    # Not yet safe (the results were not acknowledged): reported again, not lost.
    assert [r.reason for r in check.run(TS)] == ["HbmUncorrectable"]
    check.commit()()
    assert [r.reason for r in check.run(TS)] == ["Healthy"]

    telemetry.update(with_ecc(sram_ecc_uncorrected=1))
    (sram,) = check.run(TS)
    assert (sram.reason, sram.figures) == (
        "SramUncorrectable",
        {"sram_ecc_uncorrected": 1, "increase": 1},
    )
    found = classify(sram.to_json(), "health")
    assert found is not None and found.rule.id == "neuron-monitor-sram-uncorrectable"


def test_the_config_asks_for_what_the_prometheus_script_exports(tmp_path: Any) -> None:
    config = monitor_config(1.0)
    assert config["period"] == "1s"
    (runtimes,) = config["neuron_runtimes"]
    assert {m["type"] for m in runtimes["metrics"]} == {
        "neuroncore_counters",
        "memory_used",
        "neuron_runtime_vcpu_usage",
        "execution_stats",
    }
    assert {m["type"] for m in config["system_metrics"]} == {
        "vcpu_usage",
        "memory_info",
        "neuron_hw_counters",
    }
    path = tmp_path / "nm.json"
    assert command_line("neuron-monitor -c {config}", path) == ["neuron-monitor", "-c", str(path)]


def test_no_neuron_monitor_is_skipped_once() -> None:
    runner = Runner([NeuronMonitor(["/nonexistent/neuron-monitor"])])
    results, _ = runner.run(datetime.now(UTC))
    assert [(r.check, r.status, r.reason) for r in results] == [
        (NEURON_MONITOR_CHECK, "skipped", "ToolMissing")
    ]


class _Exporter:
    """An existing neuron-monitor-prometheus.py: serves the page ``text`` holds now."""

    def __init__(self) -> None:
        self.text = ""
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = outer.text.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                """Quiet."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/metrics"

    def serve(self, report_: dict[str, Any]) -> None:
        """The page the exporter shows after its first report, ``report_``."""
        telemetry = NeuronTelemetry()
        telemetry.update(report_)
        self.text = exposition([telemetry_check(telemetry)])()


def test_an_existing_neuron_monitor_is_read_not_started_and_not_exported_twice() -> None:
    exporter = _Exporter()
    try:
        # A neuron-monitor that is not there: the check must not try to start one.
        check = NeuronMonitor(["/nonexistent/neuron-monitor"], existing=exporter.url)
        exporter.serve(report())
        (healthy,) = check.run(TS)
        assert (healthy.device, healthy.status) == ("neuron0", "ok")
        check.commit()()
        exporter.serve(with_ecc(mem_ecc_uncorrected=2))
        (fault,) = check.run(TS)
        assert (fault.reason, fault.figures) == (
            "HbmUncorrectable",
            {"mem_ecc_uncorrected": 2, "increase": 2},
        )
        check.commit()()
        # The exporter restarted: its counters begin again, and a new event still counts.
        exporter.serve(with_ecc(mem_ecc_uncorrected=1))
        (again,) = check.run(TS)
        assert (again.reason, again.figures["increase"]) == ("HbmUncorrectable", 1)
        assert check.families() == [] and check.stream.starts == 0
    finally:
        # Closed, not only stopped: a stopped server's socket still takes connections,
        # which then wait out the scrape's timeout.
        exporter.server.shutdown()
        exporter.server.server_close()
    runner = Runner([check])
    results, _ = runner.run(datetime.now(UTC))
    assert [(r.status, r.reason) for r in results] == [("skipped", "ToolMissing")]
