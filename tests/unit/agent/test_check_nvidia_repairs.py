"""What drivers >= 570 report about repairs, on a real H200 report (driver 580, DTD v13) and
its variants one element away (tests/events/nvidia-smi/SOURCES.md)."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from agent.deepcheck import run
from console.cli import main
from nodemedic.detect.classifier import classify
from nodemedic.dumps import nvidia_text
from nodemedic.health.nvidia_smi import evaluate
from tests.support.paths import EVENTS
from tests.support.triage import fault_records, verdicts
from tests.unit.agent.deepcheck.test_deepcheck import cat, node

SMI = EVENTS / "nvidia-smi"
H200 = (SMI / "h200-healthy.xml").read_text()
H200_TEXT = (EVENTS / "nvidia-smi-q" / "h200-healthy.txt").read_text()
DEVICE = "00000000:00:06.0"
TS = "2026-11-27T12:00:00Z"
VARIANTS = [
    # (file, the element changed, the fault, its action); None: still healthy
    ("h200-sram-threshold-exceeded.xml", "sram_threshold_exceeded",
     "nvidia-smi-sram-threshold-exceeded", "replace"),
    ("h200-unrepairable-memory.xml", "unrepairable_memory",
     "nvidia-smi-unrepairable-memory", "replace"),
    ("h200-channel-repair-pending.xml", "channel_repair_pending",
     "nvidia-smi-channel-repair-pending", "reboot"),
    ("h200-tpc-repair-pending.xml", "tpc_repair_pending",
     "nvidia-smi-tpc-repair-pending", "reboot"),
    ("h200-recovery-reset.xml", "gpu_recovery_action", "nvidia-smi-recovery-reset", "reboot"),
    ("h200-recovery-drain-and-reset.xml", "gpu_recovery_action",
     "nvidia-smi-recovery-drain-and-reset", "reboot"),
    ("h200-recovery-reboot.xml", "gpu_recovery_action", "nvidia-smi-recovery-reboot", "reboot"),
    ("h200-recovery-drain-p2p.xml", "gpu_recovery_action",
     "nvidia-smi-recovery-drain-p2p", "notify"),
    ("h200-sram-aggregate-parity-4.xml", "sram_uncorrectable_parity", None, "none"),
]  # fmt: skip


def triage_json(capsys: pytest.CaptureFixture[str], path: str) -> str:
    assert main(["triage", "--format", "json", path]) == 0
    return capsys.readouterr().out


def test_the_real_h200_report_is_healthy_in_xml_and_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """It carries a lifetime L2 SRAM parity error below the threshold: history, no fault."""
    for path in (SMI / "h200-healthy.xml", EVENTS / "nvidia-smi-q" / "h200-healthy.txt"):
        out = triage_json(capsys, str(path))
        assert fault_records(out) == [] and verdicts(out)[0]["action"] == "none"
    xml = evaluate(H200.encode(), 1, TS)
    text = nvidia_text.evaluate(H200_TEXT, None, TS)
    assert [(r.device, r.reason) for r in xml] == [(DEVICE, "Healthy")]
    assert [(r.device, r.reason) for r in text] == [(DEVICE, "Healthy")]


@pytest.mark.parametrize(("sample", "element", "fault", "action"), VARIANTS)
def test_each_variant_is_one_element_of_the_real_report_and_gets_its_action(
    capsys: pytest.CaptureFixture[str], sample: str, element: str, fault: str | None, action: str
) -> None:
    variant = (SMI / sample).read_text()
    changed = [
        line
        for line in difflib.unified_diff(H200.splitlines(), variant.splitlines(), n=0)
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    assert len(changed) == 2 and all(f"<{element}>" in line for line in changed)
    out = triage_json(capsys, str(SMI / sample))
    assert [(r["fault_id"], r["action"]) for r in fault_records(out)] == (
        [(fault, action)] if fault else []
    )
    assert verdicts(out)[0]["action"] == action


@pytest.mark.parametrize(
    ("value", "reason", "fault"),
    [
        # Xid 154's spelling of the same actions
        ("GPU Reset Required", "RecoveryActionReset", "nvidia-smi-recovery-reset"),
        ("Node Reboot Required", "RecoveryActionReboot", "nvidia-smi-recovery-reboot"),
        # newer NVML actions nodemedic has no rule for: told, not acted on
        ("Recover IMEX Domain", "RecoveryActionUnknown", "nvidia-smi-recovery-unknown"),
    ],
)
def test_recovery_action_spellings(value: str, reason: str, fault: str) -> None:
    report = H200.replace("<gpu_recovery_action>None<", f"<gpu_recovery_action>{value}<")
    (result,) = evaluate(report.encode(), 1, TS)
    assert (result.reason, result.figures) == (reason, {"gpu_recovery_action": value})
    found = classify(result.to_json(), "health")
    assert found is not None and found.rule.id == fault


@pytest.mark.parametrize(
    "value", ["N/A", "[Not Supported]", "Requested functionality has been deprecated"]
)
def test_a_recovery_action_the_board_does_not_report_is_no_fault(value: str) -> None:
    report = H200.replace("<gpu_recovery_action>None<", f"<gpu_recovery_action>{value}<")
    assert [r.reason for r in evaluate(report.encode(), 1, TS)] == ["Healthy"]


def test_the_sram_threshold_carries_the_counts_and_their_sources() -> None:
    report = H200.replace("<sram_threshold_exceeded>No<", "<sram_threshold_exceeded>Yes<")
    (result,) = evaluate(report.encode(), 1, TS)
    assert result.figures == {
        "sram_threshold_exceeded": 1,
        "sram_uncorrectable_parity": 1,
        "sram_uncorrectable_secded": 0,
        "sram_l2": 1,
        "sram_sm": 0,
        "sram_microcontroller": 0,
        "sram_pcie": 0,
        "sram_other": 0,
    }


def test_the_text_report_reads_the_same_fields() -> None:
    for old, new, reason in [
        ("GPU Recovery Action                                : None", "GPU Recovery Action : Reset",
         "RecoveryActionReset"),
        ("SRAM Threshold Exceeded                    : No", "SRAM Threshold Exceeded : Yes",
         "SramThresholdExceeded"),
        ("Unrepairable Memory                            : No", "Unrepairable Memory : Yes",
         "UnrepairableMemory"),
        ("TPC Repair Pending                             : No", "TPC Repair Pending : Yes",
         "TpcRepairPending"),
    ]:  # fmt: skip
        assert H200_TEXT.count(old) == 1
        results = nvidia_text.evaluate(H200_TEXT.replace(old, new), None, TS)
        assert [r.reason for r in results] == [reason]


@pytest.mark.parametrize(
    ("sample", "verdict"),
    [
        ("h200-healthy.xml", "Passed"),
        ("h200-channel-repair-pending.xml", "Passed"),  # a warning: the repair is reset-bound
        ("h200-recovery-reset.xml", "Failed"),  # still asked for after the node's reboot
        ("h200-sram-threshold-exceeded.xml", "Failed"),
    ],
)
def test_the_deep_check_judges_the_same_fields(tmp_path: Path, sample: str, verdict: str) -> None:
    """A node's deep check after its boot reads the report as the health check does: a GPU
    that still asks for recovery after the reboot is not let back in."""
    results = run(node(tmp_path, gpus=1, nvidia_smi=cat(SMI / sample)))
    assert (results[-1].status, results[-1].reason) == (
        "ok" if verdict == "Passed" else "fail",
        verdict,
    )
