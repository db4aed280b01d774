"""The EMF documents of recorded nvidia-smi and neuron-monitor reports, checked against the
Embedded Metric Format specification (what CloudWatch requires to turn a line into metrics)."""

from __future__ import annotations

import json
from typing import Any

from agent.checks.nvidia import NvidiaSmi
from agent.telemetry import telemetry
from agent.telemetry.emf import SELECTIONS, emf_lines
from agent.telemetry.neuron_report import NeuronTelemetry
from nodemedic.contracts.logs import TELEMETRY_NAMESPACE
from tests.unit.agent.telemetry.test_telemetry_gpu import SMI, TS
from tests.unit.agent.telemetry.test_telemetry_neuron import telemetry_check, with_ecc

AT_MS = 1_795_000_000_000
UNITS = {
    "Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes",
    "Terabytes", "Bits", "Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count",
    "Bytes/Second", "Kilobytes/Second", "Megabytes/Second", "Gigabytes/Second",
    "Terabytes/Second", "Bits/Second", "Kilobits/Second", "Megabits/Second", "Gigabits/Second",
    "Terabits/Second", "Count/Second", "None",
}  # fmt: skip
"""The units the specification allows (MetricDefinition.Unit)."""


def valid_emf(line: str) -> dict[str, Any]:
    """The document of ``line``, asserting each rule of the EMF specification it must meet."""
    document = json.loads(line)
    meta = document["_aws"]
    assert isinstance(meta["Timestamp"], int) and meta["Timestamp"] > 0
    directives = meta["CloudWatchMetrics"]
    assert isinstance(directives, list) and directives
    for directive in directives:
        assert isinstance(directive["Namespace"], str) and directive["Namespace"]
        assert directive["Dimensions"], "a directive without dimensions"
        for dimension_set in directive["Dimensions"]:
            assert 1 <= len(dimension_set) <= 30
            for key in dimension_set:
                assert isinstance(document[key], str) and document[key], key
        assert 1 <= len(directive["Metrics"]) <= 100
        for metric in directive["Metrics"]:
            assert 1 <= len(metric["Name"]) <= 1024
            assert metric.get("Unit", "None") in UNITS
            value = document[metric["Name"]]
            assert isinstance(value, int | float) and not isinstance(value, bool), metric
    assert len(line.encode()) < 1024 * 1024
    return dict(document)


def by_device(lines: list[str]) -> dict[tuple[str, str], dict[str, Any]]:
    found = {}
    for line in lines:
        document = valid_emf(line)
        [dimensions] = document["_aws"]["CloudWatchMetrics"][0]["Dimensions"]
        found[(dimensions[-1], document[dimensions[-1]])] = document
    return found


def test_two_l4s_give_one_valid_document_per_gpu() -> None:
    check = NvidiaSmi(["cat", str(SMI / "nvidia-l4-x2-healthy.xml")])
    assert emf_lines(telemetry([check])(), "demo", "i-0abc", AT_MS) == [], "before a report"
    check.run(TS)
    docs = by_device(emf_lines(telemetry([check])(), "demo", "i-0abc", AT_MS))
    assert set(docs) == {("GPU", "0"), ("GPU", "1")}
    gpu = docs[("GPU", "0")]
    directive = gpu["_aws"]["CloudWatchMetrics"][0]
    assert gpu["_aws"]["Timestamp"] == AT_MS
    assert directive["Namespace"] == TELEMETRY_NAMESPACE
    assert directive["Dimensions"] == [["ClusterName", "InstanceId", "GPU"]]
    assert (gpu["ClusterName"], gpu["InstanceId"]) == ("demo", "i-0abc")
    assert {m["Name"] for m in directive["Metrics"]} == {
        s.metric for s in SELECTIONS if s.dimension == "GPU"
    }
    assert gpu["GPUUtilization"] == 2
    assert gpu["GPUTemperature"] == 45
    assert gpu["GPUPowerDraw"] == 27.22
    assert gpu["GPUMemoryUsed"] == 1
    assert gpu["GPUEccUncorrected"] == 0


def test_neuron_cores_and_devices_with_their_ecc_events_summed() -> None:
    neuron = NeuronTelemetry()
    neuron.update(with_ecc(mem_ecc_uncorrected=2, sram_ecc_uncorrected=1, sram_ecc_corrected=4))
    docs = by_device(emf_lines(telemetry([telemetry_check(neuron)])(), "demo", "i-0abc", AT_MS))
    # inf1.xlarge: one device of four NeuronCores.
    assert set(docs) == {*(("NeuronCore", str(n)) for n in range(4)), ("NeuronDevice", "0")}
    core = docs[("NeuronCore", "0")]
    assert round(core["NeuronCoreUtilization"], 3) == 2.926
    assert core["NeuronCoreMemoryUsed"] > 0
    device = docs[("NeuronDevice", "0")]
    assert device["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [
        ["ClusterName", "InstanceId", "NeuronDevice"]
    ]
    assert (device["NeuronDeviceEccUncorrected"], device["NeuronDeviceEccCorrected"]) == (3, 4)
