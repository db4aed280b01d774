"""Elastic Fabric Adapter devices, from ``/sys/class/infiniband``.

For the node: fewer EFA devices than expected. Per device: error counters that grew, from
the driver's device-wide ``hw_counters/`` and per-port ``ports/<n>/hw_counters/`` (errors
of admin commands and resource creation, dropped packets, RDMA work requests completed in
error, unresponsive or impaired remote connections, retransmit timeouts). Other RDMA
devices in the class directory (mlx5, ...) are not EFA and are left alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agent.argtypes import count
from agent.checks.base import CounterBaseline, Figure, Result, SysfsDevices, read_counter
from agent.checks.registry import Option, Registration
from nodemedic.contracts.health import EFA_CHECK

if TYPE_CHECKING:
    from agent.config import Config

# Not from the instance type: its MaximumEfaInterfaces is the most it can take, not what the
# launch template attached, and expecting it would reboot every node launched with fewer.
EXPECT_DEVICES = Option("--expect-efa-devices", 0, "EFA devices expected (0: unchecked)", count)
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


class Efa(SysfsDevices):
    name = EFA_CHECK
    sysfs_dir = SYSFS_DIR
    kind = "EFA"

    def devices(self) -> list[Path]:
        return sorted(d for d in self.root.iterdir() if is_efa(d))

    def device_results(self, device: Path, ts: str) -> list[Result]:
        counters = error_counters(device)
        grown: dict[str, Figure] = {
            name: value
            for name, value in counters.items()
            if self.baseline.growth(device.name, name, value)
        }
        if grown:
            return [Result(EFA_CHECK, device.name, "warn", "ErrorCounters", grown, ts)]
        return [Result(EFA_CHECK, device.name, "ok", "Healthy", dict(counters), ts)]


def build(config: Config) -> Efa:
    baseline = CounterBaseline(config.state_dir / "efa-counters.json", config.boot_id)
    return Efa(config.sys_root, baseline, EXPECT_DEVICES.value(config.check_options))


REGISTRATION = Registration("efa", EFA_CHECK, build, (EXPECT_DEVICES,))
