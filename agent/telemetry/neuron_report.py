"""``neuron-monitor``'s JSON reports → the metrics ``neuron-monitor-prometheus.py`` exports.

The names, labels, kinds and help texts are the script's (it ships with neuron-monitor in
aws-neuronx-tools, ``/opt/aws/neuron/bin``; see tests/events/neuron-monitor/SOURCES.md), so
dashboards built for it read the agent unchanged. Like the script, a metric group whose
``error`` is not empty is skipped, the counters add each report's figure (neuron-monitor
reports counts *for the captured period*), and the series of the Neuron applications are
dropped when a report lists none. The report format is the Neuron Monitor User Guide's.

Besides the exported counters, the uncorrected ECC events of each device are totalled on
their own (``uncorrected``): the health check acts on their growth, and a dashboard
reading the exported counters must not be able to reset it.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from agent.telemetry.exposition import Family, Kind

log = logging.getLogger(__name__)

LabelKey = tuple[tuple[str, str], ...]
NEURONCORE_MEMORY = (
    "constants",
    "model_code",
    "model_shared_scratchpad",
    "runtime_memory",
    "tensors",
)
ECC_COUNTERS = (
    "mem_ecc_corrected",
    "mem_ecc_uncorrected",
    "sram_ecc_corrected",
    "sram_ecc_uncorrected",
)
UNCORRECTED = ("mem_ecc_uncorrected", "sram_ecc_uncorrected")
RUNTIME_GROUPS = (
    "neuroncore_counters",
    "memory_used",
    "neuron_runtime_vcpu_usage",
    "execution_stats",
)
SYSTEM_GROUPS = ("vcpu_usage", "memory_info", "neuron_hw_counters")

FAMILIES: dict[str, tuple[Kind, str]] = {
    "neuroncore_utilization_ratio": ("gauge", "NeuronCore utilization ratio"),
    "neuron_runtime_vcpu_usage_ratio": ("gauge", "Runtime vCPU utilization ratio"),
    "neuron_runtime_memory_used_bytes": ("gauge", "Runtime memory used bytes"),
    **{
        f"neuroncore_memory_usage_{kind}": ("gauge", f"NeuronCore memory utilization for {kind}")
        for kind in NEURONCORE_MEMORY
    },
    "execution_errors_total": ("counter", "Execution errors total"),
    "execution_status_total": ("counter", "Execution status total"),
    "execution_latency_seconds": ("gauge", "Execution latency in seconds"),
    "hardware_ecc_events_total": ("counter", "Hardware ecc events total"),
    "system_vcpu_count": ("gauge", "System vCPU count"),
    "system_vcpu_usage_ratio": ("gauge", "System CPU utilization ratio"),
    **{
        f"system_{entry}_{stat}": ("gauge", f"System {entry} {stat} bytes")
        for entry in ("memory", "swap")
        for stat in ("total_bytes", "used_bytes")
    },
    "instance_info": ("gauge", "EC2 instance information"),
    "neuron_hardware_info": ("gauge", "Neuron Hardware Information"),
}
"""Every family the agent exports from neuron-monitor, in the script's order."""
RUNTIME_FAMILIES = frozenset(
    name for name in FAMILIES if name.startswith(("neuroncore_", "neuron_runtime_", "execution_"))
)
"""The families of Neuron applications, dropped when a report lists none."""
_CPU_AGGREGATION = {"user": ("user", "nice"), "system": ("system", "io_wait", "irq", "soft_irq")}

Series = dict[str, dict[LabelKey, float]]
Handler = Callable[[Series, Mapping[str, Any], dict[str, str]], None]


def instance_labels(info: Mapping[str, Any]) -> dict[str, str]:
    return {
        "instance_name": str(info.get("instance_name", "")),
        "instance_id": str(info.get("instance_id", "")),
        "instance_type": str(info.get("instance_type", "")),
        "availability_zone": str(info.get("instance_availability_zone", "")),
        "region": str(info.get("instance_region", "")),
        "subnet_id": str(info.get("subnet_id", "")),
    }


def _key(labels: Mapping[str, str], **extra: object) -> LabelKey:
    return tuple({**labels, **{k: str(v) for k, v in extra.items()}}.items())


def _neuroncore_counters(series: Series, data: Mapping[str, Any], labels: dict[str, str]) -> None:
    for core, figures in data["neuroncores_in_use"].items():
        key = _key(labels, neuroncore=int(core))
        series["neuroncore_utilization_ratio"][key] = figures["neuroncore_utilization"] / 100.0


def _runtime_vcpu(series: Series, data: Mapping[str, Any], labels: dict[str, str]) -> None:
    for usage in ("user", "system"):
        key = _key(labels, usage_type=usage)
        series["neuron_runtime_vcpu_usage_ratio"][key] = data["vcpu_usage"][usage] / 100.0


def _memory_used(series: Series, data: Mapping[str, Any], labels: dict[str, str]) -> None:
    used = data["neuron_runtime_used_bytes"]
    for location in ("host", "neuron_device"):
        key = _key(labels, memory_location=location)
        series["neuron_runtime_memory_used_bytes"][key] = used[location]
    # The script keeps its memory_location label on these, unset: prometheus_client
    # prints it as "None", and series must match its label sets to be the same series.
    for core, figures in used["usage_breakdown"]["neuroncore_memory_usage"].items():
        key = _key(labels, memory_location=None, neuroncore=int(core))
        for kind in NEURONCORE_MEMORY:
            series[f"neuroncore_memory_usage_{kind}"][key] = figures[kind]


def _add(series: Series, name: str, key: LabelKey, value: float) -> None:
    series[name][key] = series[name].get(key, 0) + value


def _execution_stats(series: Series, data: Mapping[str, Any], labels: dict[str, str]) -> None:
    for error, count in data["error_summary"].items():
        _add(series, "execution_errors_total", _key(labels, error_type=error), count)
    for outcome, count in data["execution_summary"].items():
        _add(series, "execution_status_total", _key(labels, status_type=outcome), count)
    for percentile, seconds in (data["latency_stats"]["total_latency"] or {}).items():
        series["execution_latency_seconds"][_key(labels, percentile=percentile)] = seconds


def _hw_counters(series: Series, data: Mapping[str, Any], labels: dict[str, str]) -> None:
    for device in data["neuron_devices"]:
        for counter in ECC_COUNTERS:
            key = _key(
                labels, event_type=counter, neuron_device_index=device["neuron_device_index"]
            )
            _add(series, "hardware_ecc_events_total", key, device[counter])


def _vcpu_usage(series: Series, data: Mapping[str, Any], labels: dict[str, str]) -> None:
    series["system_vcpu_count"][_key(labels)] = len(data["usage_data"])
    for usage, fields in _CPU_AGGREGATION.items():
        total = min(sum(data["average_usage"][f] for f in fields), 100.0)
        series["system_vcpu_usage_ratio"][_key(labels, usage_type=usage)] = total / 100.0


def _memory_info(series: Series, data: Mapping[str, Any], labels: dict[str, str]) -> None:
    for entry in ("memory", "swap"):
        for stat in ("total_bytes", "used_bytes"):
            series[f"system_{entry}_{stat}"][_key(labels)] = data[f"{entry}_{stat}"]


HANDLERS: dict[str, Handler] = {
    "neuroncore_counters": _neuroncore_counters,
    "neuron_runtime_vcpu_usage": _runtime_vcpu,
    "memory_used": _memory_used,
    "execution_stats": _execution_stats,
    "neuron_hw_counters": _hw_counters,
    "vcpu_usage": _vcpu_usage,
    "memory_info": _memory_info,
}


class NeuronTelemetry:
    """The series of every report read so far; fed by the stream's thread, read by scrapes
    and the health check."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._series: Series = {name: {} for name in FAMILIES}
        self._uncorrected: Counter[tuple[str, str]] = Counter()
        self.reports = 0
        self.rejected = 0

    def read_line(self, line: bytes) -> None:
        """One line of neuron-monitor's stdout; a line that is not a report is counted and
        logged, never fatal (the tool writes a report per line, nothing else)."""
        try:
            report = json.loads(line)
            if not isinstance(report, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            self.rejected += 1
            log.warning("neuron-monitor: a line that is not a report (%s): %.80r", exc, line)
            return
        self.update(report)

    def update(self, report: Mapping[str, Any]) -> None:
        labels = instance_labels(report.get("instance_info") or {})
        with self._lock:
            runtimes = report.get("neuron_runtime_data") or []
            if not runtimes:
                for name in RUNTIME_FAMILIES:
                    self._series[name].clear()
            for runtime in runtimes:
                if runtime.get("error"):
                    continue
                tagged = {**labels, "runtime_tag": str(runtime.get("neuron_runtime_tag", ""))}
                self._groups(runtime.get("report") or {}, tagged)
            system = report.get("system_data") or {}
            self._groups(system, labels)
            self._count_uncorrected(system.get("neuron_hw_counters") or {})
            self._info(report, labels)
            self.reports += 1

    def _groups(self, groups: Mapping[str, Any], labels: dict[str, str]) -> None:
        for name, data in groups.items():
            handler = HANDLERS.get(name)
            if handler is None or not isinstance(data, dict) or data.get("error"):
                continue
            try:
                handler(self._series, data, dict(labels))
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                log.warning("neuron-monitor: metric group %s unreadable: %r", name, exc)

    def _count_uncorrected(self, counters: Mapping[str, Any]) -> None:
        if counters.get("error"):
            return
        for device in counters.get("neuron_devices") or []:
            index = device.get("neuron_device_index")
            for counter in UNCORRECTED:
                value = device.get(counter)
                if isinstance(index, int) and isinstance(value, int) and value > 0:
                    self._uncorrected[(f"neuron{index}", counter)] += value

    def _info(self, report: Mapping[str, Any], labels: dict[str, str]) -> None:
        """The script's two ``Info`` metrics: the instance, and the Neuron hardware."""
        self._series["instance_info"] = {_key(labels): 1}
        hardware = report.get("neuron_hardware_info") or {}
        if "neuron_device_count" in hardware and not hardware.get("error"):
            key = _key(
                {
                    "neuron_device_count": str(hardware["neuron_device_count"]),
                    "neuroncore_per_device_count": str(hardware.get("neuroncore_per_device_count")),
                },
                **labels,
            )
            self._series["neuron_hardware_info"] = {key: 1}

    def uncorrected(self) -> dict[tuple[str, str], int]:
        """(device, counter) → uncorrected ECC events counted since the agent started."""
        with self._lock:
            return dict(self._uncorrected)

    def families(self) -> list[Family]:
        with self._lock:
            return [
                Family(
                    name, kind, help_text, [(dict(key), v) for key, v in self._series[name].items()]
                )
                for name, (kind, help_text) in FAMILIES.items()
            ]
