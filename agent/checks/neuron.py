"""AWS Neuron devices (Trainium, Inferentia), from the Neuron driver's sysfs counters.

Per device (``neuron0``, ...): uncorrected SRAM and HBM ECC events
(``stats/hardware/{sram,mem}_ecc_uncorrected``, one file each) and NeuronCore
uncorrectable errors (``neuron_core*/stats/status/hw_nc_ue_error/total``, summed over the
device's cores). They count since the driver loaded; a count that grew is a failure. For
the node: fewer devices than expected. Layout: tests/events/neuron-sysfs/SOURCES.md.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from agent.argtypes import count
from agent.checks.base import CounterBaseline, Result, SysfsDevices, read_counter
from agent.checks.registry import Option, Registration
from agent.expected import expected_count
from nodemedic.contracts.health import NEURON_SYSFS_CHECK

if TYPE_CHECKING:
    from agent.config import Config

EXPECT_DEVICES: Option[int | None] = Option(
    "--expect-neuron-devices",
    None,
    "Neuron devices expected (default: the instance type's; 0: unchecked)",
    count,
)
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


class NeuronSysfs(SysfsDevices):
    name = NEURON_SYSFS_CHECK
    sysfs_dir = SYSFS_DIR
    kind = "Neuron"

    def devices(self) -> list[Path]:
        return sorted(
            (p for p in self.root.iterdir() if _DEVICE.match(p.name)),
            key=lambda p: int(p.name[len("neuron") :]),
        )

    def device_results(self, device: Path, ts: str) -> list[Result]:
        readings = device_counters(device)
        grown = [
            Result(
                NEURON_SYSFS_CHECK,
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
        return grown or [
            Result(NEURON_SYSFS_CHECK, device.name, "ok", "Healthy", dict(readings), ts)
        ]


def expected_devices(config: Config) -> int:
    """The flag, else the instance type's count: what this check and the deep check expect."""
    expected = EXPECT_DEVICES.value(config.check_options)
    return expected_count(expected, config.instance_type, "neuron_devices")


def build(config: Config) -> NeuronSysfs:
    baseline = CounterBaseline(config.state_dir / "neuron-counters.json", config.boot_id)
    return NeuronSysfs(config.sys_root, baseline, expected_devices(config))


REGISTRATION = Registration("neuron", NEURON_SYSFS_CHECK, build, (EXPECT_DEVICES,))
