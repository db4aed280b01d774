"""Accelerator telemetry as CloudWatch Embedded Metric Format (EMF) lines.

CloudWatch Logs turns each such line into metrics as it ingests it, so the node needs no
``cloudwatch:PutMetricData`` call (nor its permission). Every metric and dimension value
combination is a custom metric that costs money each month (docs/telemetry.md), so only a
small set is sent, and only when the agent is asked to (``--telemetry-emf``):

- per GPU (dimension ``GPU``, nvidia-smi's index): utilisation, framebuffer memory used,
  temperature, power draw, volatile ECC errors corrected and uncorrected;
- per NeuronCore (``NeuronCore``): utilisation and the memory its runtime uses;
- per Neuron device (``NeuronDevice``; neuron-monitor counts ECC events by device, not by
  core): hardware ECC events corrected and uncorrected (memory and SRAM together).

The figures are read from the families the agent already exports on ``/metrics``
(``agent.telemetry.gpu``, ``agent.telemetry.neuron_report``): one reading, two outlets.
One document per device, as EMF gives one set of dimension values per document.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from agent.telemetry.exposition import Family, Labels
from nodemedic.contracts.logs import TELEMETRY_DIMENSIONS, TELEMETRY_NAMESPACE


@dataclass(frozen=True)
class Selection:
    """Samples of ``families`` (whose labels pass ``keep``) summed per device into one metric."""

    metric: str
    unit: str
    """A CloudWatch unit name (``Percent``, ``Bytes``, ``Count``, ``None``...)."""
    families: tuple[str, ...]
    device_label: str
    dimension: str
    scale: float = 1.0
    keep: Callable[[Labels], bool] = lambda labels: True


def _event_type(suffix: str) -> Callable[[Labels], bool]:
    return lambda labels: labels.get("event_type", "").endswith(suffix)


NEURONCORE_MEMORY_FAMILIES = (
    "neuroncore_memory_usage_constants",
    "neuroncore_memory_usage_model_code",
    "neuroncore_memory_usage_model_shared_scratchpad",
    "neuroncore_memory_usage_runtime_memory",
    "neuroncore_memory_usage_tensors",
)
SELECTIONS: tuple[Selection, ...] = (
    Selection("GPUUtilization", "Percent", ("DCGM_FI_DEV_GPU_UTIL",), "gpu", "GPU"),
    Selection("GPUMemoryUsed", "Megabytes", ("DCGM_FI_DEV_FB_USED",), "gpu", "GPU"),
    # Degrees Celsius and watts have no CloudWatch unit.
    Selection("GPUTemperature", "None", ("DCGM_FI_DEV_GPU_TEMP",), "gpu", "GPU"),
    Selection("GPUPowerDraw", "None", ("DCGM_FI_DEV_POWER_USAGE",), "gpu", "GPU"),
    Selection("GPUEccCorrected", "Count", ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",), "gpu", "GPU"),
    Selection("GPUEccUncorrected", "Count", ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",), "gpu", "GPU"),
    Selection(
        "NeuronCoreUtilization",
        "Percent",
        ("neuroncore_utilization_ratio",),
        "neuroncore",
        "NeuronCore",
        scale=100.0,
    ),
    Selection(
        "NeuronCoreMemoryUsed", "Bytes", NEURONCORE_MEMORY_FAMILIES, "neuroncore", "NeuronCore"
    ),
    Selection(
        "NeuronDeviceEccCorrected",
        "Count",
        ("hardware_ecc_events_total",),
        "neuron_device_index",
        "NeuronDevice",
        keep=_event_type("_ecc_corrected"),
    ),
    Selection(
        "NeuronDeviceEccUncorrected",
        "Count",
        ("hardware_ecc_events_total",),
        "neuron_device_index",
        "NeuronDevice",
        keep=_event_type("_ecc_uncorrected"),
    ),
)
"""Every metric the agent sends; docs/telemetry.md prices them."""


def documents(
    families: Iterable[Family], cluster: str, instance_id: str, timestamp_ms: int
) -> list[dict[str, Any]]:
    """One EMF document per device that reported any selected metric."""
    by_name: dict[str, list[Family]] = {}
    for family in families:
        by_name.setdefault(family.name, []).append(family)
    keys = dict(zip(TELEMETRY_DIMENSIONS, (cluster, instance_id), strict=True))
    # (dimension, device) -> metric -> (unit, value)
    devices: dict[tuple[str, str], dict[str, tuple[str, float]]] = {}
    for selection in SELECTIONS:
        for name in selection.families:
            for family in by_name.get(name, []):
                for labels, value in family.samples:
                    device = labels.get(selection.device_label)
                    if device is None or not selection.keep(labels):
                        continue
                    metrics = devices.setdefault((selection.dimension, device), {})
                    _, total = metrics.get(selection.metric, (selection.unit, 0.0))
                    metrics[selection.metric] = (selection.unit, total + value * selection.scale)
    return [
        _document({**keys, dimension: device}, metrics, timestamp_ms)
        for (dimension, device), metrics in sorted(devices.items())
    ]


def _document(
    dimensions: dict[str, str], metrics: dict[str, tuple[str, float]], timestamp_ms: int
) -> dict[str, Any]:
    """``dimensions`` in order: the node's, then the device's."""
    return {
        "_aws": {
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [
                {
                    "Namespace": TELEMETRY_NAMESPACE,
                    "Dimensions": [list(dimensions)],
                    "Metrics": [
                        {"Name": name, "Unit": unit} for name, (unit, _) in metrics.items()
                    ],
                }
            ],
        },
        **dimensions,
        **{name: value for name, (_, value) in metrics.items()},
    }


def emf_lines(
    families: Iterable[Family], cluster: str, instance_id: str, timestamp_ms: int
) -> list[str]:
    """The documents as the log lines CloudWatch parses (compact JSON, one per line)."""
    return [
        json.dumps(document, separators=(",", ":"))
        for document in documents(families, cluster, instance_id, timestamp_ms)
    ]
