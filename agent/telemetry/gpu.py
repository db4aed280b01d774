"""``nvidia-smi -q -x`` → dcgm-exporter's metrics, from the report the health check reads.

Names and units are dcgm-exporter's (``etc/default-counters.csv`` and
``dcp-metrics-included.csv`` of NVIDIA/dcgm-exporter; the clock event reasons are DCGM
3.3's ``DCGM_FI_DEV_CLOCKS_EVENT_REASONS``, a bit mask of NVML's reasons), with its labels
``gpu`` (nvidia-smi's index), ``UUID``, ``pci_bus_id``, ``device`` (``nvidia<minor>``),
``modelName`` and ``Hostname``, so DCGM dashboards read the agent unchanged. A reading
the board does not report (``N/A``) is left out, as dcgm-exporter leaves out blank values.
The figures are as fresh as the last check run (``--check-interval``), not a second old.
"""

from __future__ import annotations

import os
import socket
import xml.etree.ElementTree as ET
from collections.abc import Callable

from agent.telemetry.exposition import Family, Kind
from nodemedic.health.nvidia_smi import CORRECTABLE, UNCORRECTABLE, clock_event_mask, ecc_errors

Reading = Callable[[ET.Element], float | None]


def _reading(*paths: str) -> Reading:
    """The number leading the first of ``paths`` that holds one ("27.22 W", "45 C")."""

    def read(gpu: ET.Element) -> float | None:
        for path in paths:
            words = (gpu.findtext(path) or "").split()
            try:
                return float(words[0])
            except (IndexError, ValueError):
                continue
        return None

    return read


def _flag(path: str) -> Reading:
    """1 for ``Yes``, 0 for ``No``, None where the board has no such state (``N/A``)."""

    def read(gpu: ET.Element) -> float | None:
        text = (gpu.findtext(path) or "").strip()
        return {"Yes": 1.0, "No": 0.0}.get(text)

    return read


def _ecc(scope: str, paths: tuple[str, ...]) -> Reading:
    def read(gpu: ET.Element) -> float | None:
        return ecc_errors(gpu, scope, paths)

    return read


def _clock_events(gpu: ET.Element) -> float | None:
    return clock_event_mask(gpu)


METRICS: tuple[tuple[str, Kind, str, Reading], ...] = (
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", _reading("utilization/gpu_util")),
    (
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        "gauge",
        "Memory utilization (in %).",
        _reading("utilization/memory_util"),
    ),
    (
        "DCGM_FI_DEV_FB_USED",
        "gauge",
        "Framebuffer memory used (in MiB).",
        _reading("fb_memory_usage/used"),
    ),
    (
        "DCGM_FI_DEV_FB_FREE",
        "gauge",
        "Framebuffer memory free (in MiB).",
        _reading("fb_memory_usage/free"),
    ),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", _reading("temperature/gpu_temp")),
    (
        "DCGM_FI_DEV_MEMORY_TEMP",
        "gauge",
        "Memory temperature (in C).",
        _reading("temperature/memory_temp"),
    ),
    (
        "DCGM_FI_DEV_POWER_USAGE",
        "gauge",
        "Power draw (in W).",
        _reading("gpu_power_readings/power_draw", "power_readings/power_draw"),
    ),
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", _reading("clocks/sm_clock")),
    (
        "DCGM_FI_DEV_MEM_CLOCK",
        "gauge",
        "Memory clock frequency (in MHz).",
        _reading("clocks/mem_clock"),
    ),
    (
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
        "gauge",
        "Current clock event reasons (bit mask of NVML's clocks event reasons).",
        _clock_events,
    ),
    (
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "counter",
        "Total number of single-bit volatile ECC errors.",
        _ecc("volatile", CORRECTABLE),
    ),
    (
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "counter",
        "Total number of double-bit volatile ECC errors.",
        _ecc("volatile", UNCORRECTABLE),
    ),
    (
        "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
        "counter",
        "Total number of single-bit persistent ECC errors.",
        _ecc("aggregate", CORRECTABLE),
    ),
    (
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
        "counter",
        "Total number of double-bit persistent ECC errors.",
        _ecc("aggregate", UNCORRECTABLE),
    ),
    (
        "DCGM_FI_DEV_RETIRED_SBE",
        "counter",
        "Total number of retired pages due to single-bit errors.",
        _reading("retired_pages/multiple_single_bit_retirement/retired_count"),
    ),
    (
        "DCGM_FI_DEV_RETIRED_DBE",
        "counter",
        "Total number of retired pages due to double-bit errors.",
        _reading("retired_pages/double_bit_retirement/retired_count"),
    ),
    (
        "DCGM_FI_DEV_RETIRED_PENDING",
        "counter",
        "Total number of pages pending retirement.",
        _flag("retired_pages/pending_retirement"),
    ),
    (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for uncorrectable errors",
        _reading("remapped_rows/remapped_row_unc"),
    ),
    (
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for correctable errors",
        _reading("remapped_rows/remapped_row_corr"),
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "gauge",
        "Whether remapping of rows has failed",
        _flag("remapped_rows/remapped_row_failure"),
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_PENDING",
        "gauge",
        "Whether remapping of rows is pending a GPU reset",
        _flag("remapped_rows/remapped_row_pending"),
    ),
    (
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "counter",
        "Total number of PCIe retries.",
        _reading("pci/replay_counter"),
    ),
)
"""Every family the agent exports from nvidia-smi: (name, kind, help, reading)."""


def node_name() -> str:
    """dcgm-exporter's ``Hostname``: the Kubernetes node (``NODE_NAME``, from the DaemonSet's
    downward API) or the host's name."""
    return os.environ.get("NODE_NAME") or socket.gethostname()


def gpu_labels(gpu: ET.Element, index: int, hostname: str) -> dict[str, str]:
    minor = (gpu.findtext("minor_number") or "").strip()
    return {
        "gpu": str(index),
        "UUID": (gpu.findtext("uuid") or "").strip(),
        "pci_bus_id": gpu.get("id") or (gpu.findtext("pci/pci_bus_id") or "").strip(),
        "device": f"nvidia{minor}" if minor.isdigit() else "",
        "modelName": (gpu.findtext("product_name") or "").strip(),
        "Hostname": hostname,
    }


def gpu_families(report: ET.Element, hostname: str) -> list[Family]:
    """One family per dcgm-exporter metric, one sample per GPU that reports it."""
    gpus = [
        (gpu, gpu_labels(gpu, index, hostname)) for index, gpu in enumerate(report.findall("gpu"))
    ]
    families = []
    for name, kind, help_text, read in METRICS:
        family = Family(name, kind, help_text)
        for gpu, labels in gpus:
            value = read(gpu)
            if value is not None:
                family.add(labels, value)
        families.append(family)
    return families
