"""AWS Neuron devices (Trainium, Inferentia), from the Neuron driver's sysfs counters.

Per device (``neuron0``, ...): uncorrected SRAM and HBM ECC events
(``stats/hardware/{sram,mem}_ecc_uncorrected``, one file each) and NeuronCore
uncorrectable errors (``neuron_core*/stats/status/hw_nc_ue_error/total``, summed over the
device's cores). They count since the driver loaded; a count that grew is a failure. For
the node: fewer devices than expected. Layout: tests/events/neuron-sysfs/SOURCES.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from agent.checks.base import Check, CounterBaseline, Figure, Result, ToolMissing, read_counter

NAME = "neuron-sysfs"
SYSFS_DIR = "devices/virtual/neuron_device"
_DEVICE = re.compile(r"neuron(\d+)$")
COUNTERS = (
    ("sram_ecc_uncorrected", "SramUncorrectable"),
    ("mem_ecc_uncorrected", "HbmUncorrectable"),
    ("nc_uncorrected", "NcUncorrectable"),
)


def device_counters(device: Path) -> dict[str, int]:
    hardware = device / "stats" / "hardware"
    readings: dict[str, int | None] = {
        "sram_ecc_uncorrected": read_counter(hardware / "sram_ecc_uncorrected"),
        "mem_ecc_uncorrected": read_counter(hardware / "mem_ecc_uncorrected"),
    }
    cores = [
        read_counter(core / "stats" / "status" / "hw_nc_ue_error" / "total")
        for core in device.glob("neuron_core*")
    ]
    known = [c for c in cores if c is not None]
    readings["nc_uncorrected"] = sum(known) if known else None
    return {name: value for name, value in readings.items() if value is not None}


class NeuronSysfs(Check):
    name = NAME

    def __init__(
        self, sys_root: Path, baseline: CounterBaseline, expected_devices: int = 0
    ) -> None:
        self.root = sys_root / SYSFS_DIR
        self.baseline = baseline
        self.expected_devices = expected_devices

    def run(self, ts: str) -> list[Result]:
        if not self.root.is_dir():
            raise ToolMissing(f"{self.root} not found (no Neuron driver)")
        devices = sorted(
            (p for p in self.root.iterdir() if _DEVICE.match(p.name)),
            key=lambda p: int(p.name[len("neuron") :]),
        )
        if not devices and not self.expected_devices:
            raise ToolMissing(f"no Neuron devices under {self.root}")
        results: list[Result] = []
        if len(devices) < self.expected_devices:
            figures: dict[str, Figure] = {"expected": self.expected_devices, "found": len(devices)}
            results.append(Result(NAME, "node", "fail", "DeviceMissing", figures, ts))
        for device in devices:
            readings = device_counters(device)
            grown = [
                Result(
                    NAME,
                    device.name,
                    "fail",
                    reason,
                    {name: readings[name], "increase": increase},
                    ts,
                )
                for name, reason in COUNTERS
                if name in readings
                and (increase := self.baseline.growth(device.name, name, readings[name]))
            ]
            results.extend(
                grown or [Result(NAME, device.name, "ok", "Healthy", dict(readings), ts)]
            )
        return results

    def commit(self) -> Callable[[], None]:
        return self.baseline.commit()
