"""Elastic Fabric Adapter devices, from ``/sys/class/infiniband``.

For the node: fewer EFA devices than expected. Per device: error counters that grew, from
the driver's device-wide ``hw_counters/`` and per-port ``ports/<n>/hw_counters/`` (errors
of admin commands and resource creation, dropped packets, RDMA work requests completed in
error, unresponsive or impaired remote connections, retransmit timeouts). Other RDMA
devices in the class directory (mlx5, ...) are not EFA and are left alone.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agent.checks.base import Check, CounterBaseline, Figure, Result, ToolMissing, read_counter

NAME = "efa"
SYSFS_DIR = "class/infiniband"
_ERROR_COUNTERS = {
    "no_completion_cmds",
    "retrans_timeout_events",
    "unresponsive_remote_events",
    "impaired_remote_conn_events",
}


def is_error_counter(name: str) -> bool:
    return name.endswith(("_err", "_drops")) or name in _ERROR_COUNTERS


def is_efa(device: Path) -> bool:
    driver = device / "device" / "driver"
    if driver.exists():
        return driver.resolve().name == "efa"
    return device.name.startswith(("efa", "rdmap"))


def error_counters(device: Path) -> dict[str, int]:
    """Error counters by name; port counters of ports other than 1 get a ``portN_`` prefix."""
    found: dict[str, int] = {}
    folders = [("", device / "hw_counters")]
    for port in sorted((device / "ports").glob("*")):
        folders.append(("" if port.name == "1" else f"port{port.name}_", port / "hw_counters"))
    for prefix, folder in folders:
        for counter in sorted(folder.glob("*")):
            if is_error_counter(counter.name):
                value = read_counter(counter)
                if value is not None:
                    found[prefix + counter.name] = value
    return found


class Efa(Check):
    name = NAME

    def __init__(
        self, sys_root: Path, baseline: CounterBaseline, expected_devices: int = 0
    ) -> None:
        self.root = sys_root / SYSFS_DIR
        self.baseline = baseline
        self.expected_devices = expected_devices

    def run(self, ts: str) -> list[Result]:
        if not self.root.is_dir():
            raise ToolMissing(f"{self.root} not found (no RDMA devices)")
        devices = sorted(d for d in self.root.iterdir() if is_efa(d))
        if not devices and not self.expected_devices:
            raise ToolMissing(f"no EFA devices under {self.root}")
        results: list[Result] = []
        if len(devices) < self.expected_devices:
            figures: dict[str, Figure] = {"expected": self.expected_devices, "found": len(devices)}
            results.append(Result(NAME, "node", "fail", "DeviceMissing", figures, ts))
        for device in devices:
            counters = error_counters(device)
            grown: dict[str, Figure] = {
                name: value
                for name, value in counters.items()
                if self.baseline.growth(device.name, name, value)
            }
            if grown:
                results.append(Result(NAME, device.name, "warn", "ErrorCounters", grown, ts))
            else:
                results.append(Result(NAME, device.name, "ok", "Healthy", dict(counters), ts))
        return results

    def commit(self) -> Callable[[], None]:
        return self.baseline.commit()
