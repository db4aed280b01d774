"""The nvidia-smi check on recorded outputs (tests/events/nvidia-smi/SOURCES.md)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent.checks.base import Result, Runner
from agent.checks.nvidia import NvidiaSmi
from nodemedic.contracts.health import NVIDIA_SMI_CHECK
from nodemedic.detect.classifier import classify
from nodemedic.health.nvidia_smi import evaluate
from tests.support.paths import EVENTS

SMI = EVENTS / "nvidia-smi"
V100 = (SMI / "tesla-v100-dbe-retirement-pending.xml").read_bytes()
P100 = (SMI / "tesla-p100-healthy.xml").read_bytes()
L4X2 = (SMI / "nvidia-l4-x2-healthy.xml").read_bytes()
TS = "2026-11-22T18:30:00Z"
C1 = b'<gpu id="00000000:C1:00.0">'


def summary(results: list[Result]) -> list[tuple[str, str, str]]:
    return [(r.device, r.status, r.reason) for r in results]


def on_second_l4(old: bytes, new: bytes) -> bytes:
    """The L4 recording with one element of its second GPU changed."""
    head, tail = L4X2.split(C1)
    assert old in tail
    return head + C1 + tail.replace(old, new, 1)


def test_volatile_double_bit_error_and_pending_retirement_on_a_v100() -> None:
    results = evaluate(V100, expected_gpus=0, ts=TS)
    assert summary(results) == [
        ("00000000:34:00.0", "fail", "EccUncorrectable"),
        ("00000000:34:00.0", "warn", "RetiredPagesPending"),
    ]
    assert results[0].figures == {"ecc_uncorrected_volatile": 1, "ecc_uncorrected_aggregate": 7627}
    assert results[1].figures == {
        "retired_pages_pending": 1,
        "retired_pages_dbe": 2,
        "retired_pages_sbe": 0,
    }


def test_healthy_recordings_are_healthy() -> None:
    assert summary(evaluate(P100, 0, TS)) == [("00000000:00:04.0", "ok", "Healthy")]
    assert summary(evaluate(L4X2, 2, TS)) == [
        ("00000000:01:00.0", "ok", "Healthy"),
        ("00000000:C1:00.0", "ok", "Healthy"),
    ]


@pytest.mark.parametrize(
    ("old", "new", "status", "reason", "figures", "fault"),
    [
        (
            b"<dram_uncorrectable>0</dram_uncorrectable>",
            b"<dram_uncorrectable>3</dram_uncorrectable>",
            "fail",
            "EccUncorrectable",
            {"ecc_uncorrected_volatile": 3, "ecc_uncorrected_aggregate": 0},
            "nvidia-smi-ecc-uncorrectable",
        ),
        (
            b"<remapped_row_pending>No</remapped_row_pending>",
            b"<remapped_row_pending>Yes</remapped_row_pending>",
            "warn",
            "RowRemapPending",
            {"remapped_rows_pending": 1, "remapped_row_corr": 0, "remapped_row_unc": 0},
            "nvidia-smi-row-remap-pending",
        ),
        (
            b"<remapped_row_failure>No</remapped_row_failure>",
            b"<remapped_row_failure>Yes</remapped_row_failure>",
            "fail",
            "RowRemapFailure",
            {"remapped_rows_failure": 1, "remapped_row_corr": 0, "remapped_row_unc": 0},
            "nvidia-smi-row-remap-failure",
        ),
        (
            b"<clocks_event_reason_hw_slowdown>Not Active",
            b"<clocks_event_reason_hw_slowdown>Active",
            "warn",
            "HwSlowdown",
            {"clocks_event_reasons": 0x1 | 0x8},
            "nvidia-smi-hw-slowdown",
        ),
        (
            b"<clocks_event_reason_hw_power_brake_slowdown>Not Active",
            b"<clocks_event_reason_hw_power_brake_slowdown>Active",
            "warn",
            "PowerBrake",
            {"clocks_event_reasons": 0x1 | 0x80},
            "nvidia-smi-power-brake",
        ),
    ],
)
def test_each_fault_on_the_current_driver_layout(
    *, old: bytes, new: bytes, status: str, reason: str, figures: dict[str, int], fault: str
) -> None:
    results = evaluate(on_second_l4(old, new), 2, TS)
    assert summary(results) == [
        ("00000000:01:00.0", "ok", "Healthy"),
        ("00000000:C1:00.0", status, reason),
    ]
    assert results[1].figures == figures
    # The catalog's health rule turns the line into the fault; the healthy GPU is no fault.
    healthy, faulty = (classify(r.to_json(), "health") for r in results)
    assert healthy is None and faulty is not None and faulty.rule.id == fault
    assert faulty.groups == {"device": "00000000:C1:00.0"}


def test_fewer_gpus_than_the_instance_type_has() -> None:
    results = evaluate(L4X2, expected_gpus=8, ts=TS)
    assert results[0] == Result(
        NVIDIA_SMI_CHECK, "node", "fail", "GpuMissing", {"expected": 8, "found": 2}, TS
    )


def test_result_lines_are_compact_ordered_json_the_classifier_understands() -> None:
    lines = [r.to_json() for r in evaluate(V100, 2, TS)]
    assert lines[0] == (
        '{"check":"nvidia-smi","device":"node","status":"fail","reason":"GpuMissing",'
        '"figures":{"expected":2,"found":1},"ts":"2026-11-22T18:30:00Z"}'
    )
    assert list(json.loads(lines[1])) == ["check", "device", "status", "reason", "figures", "ts"]
    faults = [classify(line, "health") for line in lines]
    assert [f.rule.id if f else None for f in faults] == [
        "nvidia-smi-gpu-missing",
        "nvidia-smi-ecc-uncorrectable",
        "nvidia-smi-retired-pages-pending",
    ]


def run(check: NvidiaSmi) -> list[Result]:
    results, _ = Runner([check]).run(datetime(2026, 11, 22, 18, 30, tzinfo=UTC))
    return results


def test_runs_the_configured_command(tmp_path: Path) -> None:
    results = run(NvidiaSmi(["cat", str(SMI / "tesla-v100-dbe-retirement-pending.xml")]))
    assert [r.reason for r in results] == ["EccUncorrectable", "RetiredPagesPending"]
    assert results[0].ts == TS


def test_a_failing_or_hanging_nvidia_smi_is_smi_failed() -> None:
    exit_255 = run(NvidiaSmi([sys.executable, "-c", "raise SystemExit(255)"]))
    assert summary(exit_255) == [("node", "fail", "SmiFailed")] and exit_255[0].figures == {
        "exit_code": 255
    }
    hung = run(NvidiaSmi([sys.executable, "-c", "import time; time.sleep(10)"], timeout=0.3))
    assert hung[0].reason == "SmiFailed" and hung[0].figures == {"timeout_s": 0.3}
    garbage = run(NvidiaSmi(["echo", "No devices were found"]))
    assert garbage[0].reason == "SmiFailed"
    fault = classify(hung[0].to_json(), "health")
    assert fault is not None and fault.rule.id == "nvidia-smi-failed"


def test_a_missing_nvidia_smi_is_reported_once_as_skipped(tmp_path: Path) -> None:
    check = NvidiaSmi([str(tmp_path / "nvidia-smi"), "-q", "-x"])
    runner = Runner([check])
    now = datetime(2026, 11, 22, tzinfo=UTC)
    first, _ = runner.run(now)
    assert summary(first) == [("node", "skipped", "ToolMissing")]
    assert classify(first[0].to_json(), "health") is None, "no GPU is not a GPU fault"
    assert runner.run(now)[0] == []
    check.command = ["cat", str(SMI / "tesla-p100-healthy.xml")]  # the driver got installed
    assert summary(runner.run(now)[0]) == [("00000000:00:04.0", "ok", "Healthy")]
    check.command = [str(tmp_path / "nvidia-smi")]  # and removed again
    assert summary(runner.run(now)[0]) == [("node", "skipped", "ToolMissing")]
