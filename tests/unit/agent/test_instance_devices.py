"""The device counts a node expects come from its instance type (EC2's own figures), so a
GPU that fell off the bus is caught by the count even when its kernel line was lost."""

from __future__ import annotations

import argparse
import logging
import xml.etree.ElementTree as ET
from importlib import metadata
from pathlib import Path

import pytest

from agent.checks.base import Result
from agent.cli import agent_config, configure_agent
from agent.main import build_checks
from nodemedic.detect.classifier import classify
from nodemedic.health.instance_types import TABLE, devices_of
from scripts import generate_instance_devices as generator
from tests.support.paths import EVENTS

L4X2 = EVENTS / "nvidia-smi" / "nvidia-l4-x2-healthy.xml"


def gpus_visible(tmp_path: Path, count: int) -> Path:
    """The L4 recording with its first GPU repeated ``count`` times, each at its own bus id."""
    root = ET.parse(L4X2).getroot()  # noqa: S314
    first = root.findall("gpu")[0]
    for gpu in root.findall("gpu"):
        root.remove(gpu)
    for index in range(count):
        copy = ET.fromstring(ET.tostring(first))  # noqa: S314
        copy.set("id", f"00000000:{index + 0x10:02X}:00.0")
        root.append(copy)
    path = tmp_path / f"{count}-gpus.xml"
    path.write_bytes(ET.tostring(root))
    return path


def nvidia_results(tmp_path: Path, gpus: int, *flags: str) -> list[Result]:
    parser = argparse.ArgumentParser()
    configure_agent(parser)
    kmsg = tmp_path / "kmsg"
    kmsg.touch()
    args = parser.parse_args(
        [
            "--cluster", "c", "--kmsg", str(kmsg), "--state-dir", str(tmp_path),
            "--checks", "nvidia", "--nvidia-smi", f"cat {gpus_visible(tmp_path, gpus)}",
            *flags,
        ]
    )  # fmt: skip
    (check,) = build_checks(agent_config(args, "i-1", "us-east-1", "b"))
    return check.run("2026-11-22T18:30:00Z")


def missing(results: list[Result]) -> list[Result]:
    return [r for r in results if r.reason == "GpuMissing"]


def test_a_p5_with_seven_gpus_visible_reports_the_missing_gpu_without_a_flag(
    tmp_path: Path,
) -> None:
    (result,) = missing(nvidia_results(tmp_path, 7, "--instance-type", "p5.48xlarge"))
    assert (result.device, result.status, dict(result.figures)) == (
        "node",
        "fail",
        {"expected": 8, "found": 7},
    )
    fault = classify(result.to_json(), "health")
    assert fault is not None and fault.fault_id == "nvidia-smi-gpu-missing"


def test_all_eight_of_a_p5_are_healthy(tmp_path: Path) -> None:
    results = nvidia_results(tmp_path, 8, "--instance-type", "p5.48xlarge")
    assert {r.reason for r in results} == {"Healthy"}


def test_the_flag_overrides_the_instance_type(tmp_path: Path) -> None:
    assert not missing(
        nvidia_results(tmp_path, 7, "--instance-type", "p5.48xlarge", "--expect-gpus", "0")
    )
    assert missing(
        nvidia_results(tmp_path, 7, "--instance-type", "g6.12xlarge", "--expect-gpus", "8")
    )


def test_an_unknown_type_expects_nothing_and_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agent.expected")
    for _ in range(2):
        # moto's metadata service answers "moto.virtual"; an agent off EC2 has none.
        assert not missing(nvidia_results(tmp_path, 7, "--instance-type", "moto.virtual"))
    said = [r.getMessage() for r in caplog.records if "moto.virtual" in r.getMessage()]
    assert len(said) == 1 and "--expect-gpus" in said[0]


def test_the_table_holds_ec2s_figures() -> None:
    p5, trn1, inf1 = (devices_of(t) for t in ("p5.48xlarge", "trn1.32xlarge", "inf1.24xlarge"))
    assert p5 is not None and (p5.gpus, p5.neuron_devices, p5.efa_interfaces) == (8, 0, 32)
    assert trn1 is not None and (trn1.gpus, trn1.neuron_devices) == (0, 16)
    assert inf1 is not None and inf1.neuron_devices == 16
    assert devices_of("m5.large") is None


def test_the_checked_in_table_is_what_the_installed_moto_makes() -> None:
    recorded = TABLE.read_text(encoding="utf-8")
    if f'"moto_version": "{metadata.version("moto")}"' not in recorded:
        pytest.skip("another moto than the table was made from; run `make instance-devices`")
    assert recorded == generator.from_moto(), "stale: run `make instance-devices` and commit"
