"""The Neuron and EFA checks on sysfs trees built in tmp_path from the driver layout and
recorded EFA counters (tests/events/neuron-sysfs/, tests/events/efa/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.checks.base import CounterBaseline, Result, ToolMissing
from agent.checks.efa import Efa
from agent.checks.neuron import NeuronSysfs
from nodemedic.contracts.health import EFA_CHECK, NEURON_SYSFS_CHECK
from nodemedic.detect.classifier import classify
from tests.support.paths import EVENTS

TS = "2026-11-22T18:30:00Z"


def neuron_tree(sys_root: Path, devices: int) -> Path:
    """``devices`` healthy Trn1 devices under ``sys_root``, laid out as the driver does."""
    layout = [
        line.split("\t")
        for line in (EVENTS / "neuron-sysfs" / "trn1-layout.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    base = sys_root / "devices" / "virtual" / "neuron_device"
    for n in range(devices):
        for relative, value in layout:
            path = base / f"neuron{n}" / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{value}\n")
    return base


def summary(results: list[Result]) -> list[tuple[str, str, str]]:
    return [(r.device, r.status, r.reason) for r in results]


def neuron_check(tmp_path: Path, boot: str = "boot-1", expected: int = 0) -> NeuronSysfs:
    return NeuronSysfs(tmp_path / "sys", CounterBaseline(tmp_path / "neuron.json", boot), expected)


def test_healthy_neuron_devices(tmp_path: Path) -> None:
    neuron_tree(tmp_path / "sys", 2)
    results = neuron_check(tmp_path).run(TS)
    assert summary(results) == [("neuron0", "ok", "Healthy"), ("neuron1", "ok", "Healthy")]
    assert results[0].figures == {
        "sram_ecc_uncorrected": 0,
        "mem_ecc_uncorrected": 0,
        "nc_uncorrected": 0,
    }


def test_neuron_counters_that_grow_are_reported_once(tmp_path: Path) -> None:
    base = neuron_tree(tmp_path / "sys", 16)
    check = neuron_check(tmp_path)
    check.run(TS)
    (base / "neuron3/stats/hardware/sram_ecc_uncorrected").write_text("1\n")
    (base / "neuron5/stats/hardware/mem_ecc_uncorrected").write_text("2\n")
    (base / "neuron7/neuron_core1/stats/status/hw_nc_ue_error/total").write_text("1\n")
    grown = [r for r in check.run(TS) if r.status != "ok"]
    assert summary(grown) == [
        ("neuron3", "fail", "SramUncorrectable"),
        ("neuron5", "fail", "HbmUncorrectable"),
        ("neuron7", "fail", "NcUncorrectable"),
    ]
    assert grown[0].figures == {"sram_ecc_uncorrected": 1, "increase": 1}
    assert [classify(r.to_json(), "health").rule.id for r in grown] == [  # type: ignore[union-attr]
        "neuron-sysfs-sram-uncorrectable",
        "neuron-sysfs-hbm-uncorrectable",
        "neuron-sysfs-nc-uncorrectable",
    ]
    assert all(r.status == "ok" for r in check.run(TS)), "unchanged counters are not news"


def test_growth_survives_an_agent_restart_until_committed(tmp_path: Path) -> None:
    base = neuron_tree(tmp_path / "sys", 1)
    (base / "neuron0/stats/hardware/sram_ecc_uncorrected").write_text("4\n")
    # Counted before the agent ever ran on this boot: still evidence.
    first = neuron_check(tmp_path)
    assert summary(first.run(TS)) == [("neuron0", "fail", "SramUncorrectable")]
    # Crash before the result was safe: the next agent reports it again.
    second = neuron_check(tmp_path)
    assert summary(second.run(TS)) == [("neuron0", "fail", "SramUncorrectable")]
    second.commit()()
    assert summary(neuron_check(tmp_path).run(TS)) == [("neuron0", "ok", "Healthy")]
    # A new boot counts from zero again.
    assert summary(neuron_check(tmp_path, boot="boot-2").run(TS)) == [
        ("neuron0", "fail", "SramUncorrectable")
    ]


def test_a_reset_counter_is_not_growth(tmp_path: Path) -> None:
    base = neuron_tree(tmp_path / "sys", 1)
    counter = base / "neuron0/stats/hardware/mem_ecc_uncorrected"
    counter.write_text("5\n")
    check = neuron_check(tmp_path)
    check.run(TS)
    counter.write_text("0\n")  # someone wrote to it: the driver reset it
    assert summary(check.run(TS)) == [("neuron0", "ok", "Healthy")]


def test_missing_neuron_devices_and_missing_driver(tmp_path: Path) -> None:
    neuron_tree(tmp_path / "sys", 15)
    results = neuron_check(tmp_path, expected=16).run(TS)
    assert results[0] == Result(
        NEURON_SYSFS_CHECK, "node", "fail", "DeviceMissing", {"expected": 16, "found": 15}, TS
    )
    assert classify(results[0].to_json(), "health").rule.id == "neuron-sysfs-device-missing"  # type: ignore[union-attr]
    with pytest.raises(ToolMissing):
        neuron_check(tmp_path / "elsewhere").run(TS)


def efa_device(sys_root: Path, name: str, counters: dict[str, str], driver: str = "efa") -> Path:
    device = sys_root / "class" / "infiniband" / name
    port = device / "ports" / "1" / "hw_counters"
    port.mkdir(parents=True)
    for counter, value in counters.items():
        (port / counter).write_text(f"{value}\n")
    drivers = sys_root / "bus" / "pci" / "drivers" / driver
    drivers.mkdir(parents=True, exist_ok=True)
    (device / "device").mkdir()
    (device / "device" / "driver").symlink_to(drivers)
    return port


def recorded_counters(name: str) -> dict[str, str]:
    """Counter values from a recording, in either of its published forms."""
    text = (EVENTS / "efa" / name).read_text().splitlines()
    counters: dict[str, str] = {}
    path = None
    for line in text:
        if line.startswith("/sys/") and ":" in line.rsplit("/", 1)[1]:
            key, value = line.rsplit("/", 1)[1].split(":")
            counters[key] = value
        elif line.startswith("/sys/"):
            path = line.rsplit("/", 1)[1]
        elif path and line and not line.startswith(":"):
            counters[path] = line
            path = None
    return counters


def efa_check(tmp_path: Path, expected: int = 0) -> Efa:
    return Efa(tmp_path / "sys", CounterBaseline(tmp_path / "efa.json", "boot-1"), expected)


def test_recorded_efa_counters_are_healthy(tmp_path: Path) -> None:
    idle = recorded_counters("rdmap0s31-more-hw_counters.txt")
    busy = recorded_counters("rdmap144s27-hw_counters.txt")
    assert len(idle) == 23 and idle["lifespan"] == "12" and busy["tx_bytes"] == "84417311044934"
    efa_device(tmp_path / "sys", "rdmap0s31", idle)
    efa_device(tmp_path / "sys", "rdmap144s27", busy)
    efa_device(tmp_path / "sys", "mlx5_0", {"rx_drops": "99"}, driver="mlx5_core")
    results = efa_check(tmp_path).run(TS)
    assert summary(results) == [("rdmap0s31", "ok", "Healthy"), ("rdmap144s27", "ok", "Healthy")]
    assert results[0].figures == {
        "impaired_remote_conn_events": 0,
        "rdma_read_wr_err": 0,
        "rdma_write_wr_err": 0,
        "retrans_timeout_events": 0,
        "rx_drops": 0,
        "unresponsive_remote_events": 0,
    }


def test_efa_error_counters_that_grow(tmp_path: Path) -> None:
    port = efa_device(
        tmp_path / "sys", "rdmap16s27", recorded_counters("rdmap144s27-hw_counters.txt")
    )
    check = efa_check(tmp_path)
    check.run(TS)
    (port / "rx_drops").write_text("12\n")
    (port / "tx_bytes").write_text("99999999999999\n")  # traffic is not an error
    (results,) = check.run(TS)
    assert results == Result(EFA_CHECK, "rdmap16s27", "warn", "ErrorCounters", {"rx_drops": 12}, TS)
    assert classify(results.to_json(), "health").rule.id == "efa-error-counters"  # type: ignore[union-attr]


def test_missing_efa_devices(tmp_path: Path) -> None:
    for n in range(31):
        efa_device(tmp_path / "sys", f"rdmap{n}s27", {"rx_drops": "0"})
    results = efa_check(tmp_path, expected=32).run(TS)
    assert results[0] == Result(
        EFA_CHECK, "node", "fail", "DeviceMissing", {"expected": 32, "found": 31}, TS
    )
    assert classify(results[0].to_json(), "health").rule.id == "efa-device-missing"  # type: ignore[union-attr]
