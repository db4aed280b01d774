"""GPU telemetry under dcgm-exporter's names, from the recorded nvidia-smi reports
(tests/events/nvidia-smi/SOURCES.md) the health check reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.checks.nvidia import NvidiaSmi
from agent.telemetry import exposition
from tests.support.paths import EVENTS
from tests.support.prometheus import Samples, read_exposition

SMI = EVENTS / "nvidia-smi"
TS = "2026-11-22T18:30:00Z"


def scraped(check: NvidiaSmi) -> Samples:
    return read_exposition(exposition([check])())


def test_two_l4s_under_dcgm_exporter_names_and_labels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODE_NAME", "ip-10-0-1-7.ec2.internal")
    check = NvidiaSmi(["cat", str(SMI / "nvidia-l4-x2-healthy.xml")])
    assert scraped(check) == {}, "nothing before the first report"
    check.run(TS)
    seen = scraped(check)
    first = (
        'gpu="0",UUID="GPU-c5533cd4-5a60-059e-348d-b6d7466932e4",pci_bus_id="00000000:01:00.0",'
        'device="nvidia1",modelName="NVIDIA L4",Hostname="ip-10-0-1-7.ec2.internal"'
    )
    assert seen[f"DCGM_FI_DEV_GPU_UTIL{{{first}}}"] == 2
    assert seen[f"DCGM_FI_DEV_GPU_TEMP{{{first}}}"] == 45
    assert seen[f"DCGM_FI_DEV_POWER_USAGE{{{first}}}"] == 27.22
    assert seen[f"DCGM_FI_DEV_FB_USED{{{first}}}"] == 1
    assert seen[f"DCGM_FI_DEV_FB_FREE{{{first}}}"] == 22601
    assert seen[f"DCGM_FI_DEV_SM_CLOCK{{{first}}}"] == 2040
    assert seen[f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{first}}}"] == 0
    assert seen[f"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{first}}}"] == 0
    assert seen[f"DCGM_FI_DEV_ROW_REMAP_FAILURE{{{first}}}"] == 0
    # Readings the board does not report (N/A) are left out, as dcgm-exporter does.
    assert not any(k.startswith(("DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_RETIRED")) for k in seen)
    assert sum(k.startswith("DCGM_FI_DEV_GPU_UTIL{") for k in seen) == 2


def test_the_v100s_double_bit_error_and_retired_pages() -> None:
    check = NvidiaSmi(["cat", str(SMI / "tesla-v100-dbe-retirement-pending.xml")])
    check.run(TS)
    by_name = {key.split("{")[0]: value for key, value in scraped(check).items()}
    assert by_name["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"] == 1
    assert by_name["DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"] == 1
    assert by_name["DCGM_FI_DEV_ECC_DBE_AGG_TOTAL"] == 7627
    assert by_name["DCGM_FI_DEV_RETIRED_DBE"] == 2
    assert by_name["DCGM_FI_DEV_RETIRED_PENDING"] == 1
    assert by_name["DCGM_FI_DEV_POWER_USAGE"] == 50.6  # the older power_readings element
    assert by_name["DCGM_FI_DEV_CLOCKS_EVENT_REASONS"] == 0x1  # gpu_idle


def test_a_failed_run_leaves_no_stale_figures(tmp_path: Path) -> None:
    report = tmp_path / "report.xml"
    report.write_bytes((SMI / "tesla-p100-healthy.xml").read_bytes())
    check = NvidiaSmi(["cat", str(report)])
    check.run(TS)
    assert scraped(check)
    report.write_text("<nvidia_smi_log><gpu>")  # a report cut short: SmiFailed
    assert [r.reason for r in check.run(TS)] == ["SmiFailed"]
    assert scraped(check) == {}
