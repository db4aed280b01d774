"""``nodemedic triage`` on the dumps an engineer takes on a node: each is recognised by its
content and judged by the agent's own health rules (samples: tests/events/*/SOURCES.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.cli import main
from tests.support.paths import EVENTS
from tests.support.triage import fault_records

FAULTY = [
    # (sample, flags, format, {(fault, action)})
    ("nvidia-smi/tesla-v100-dbe-retirement-pending.xml", (), "nvidia-smi-xml",
     {("nvidia-smi-ecc-uncorrectable", "reboot"), ("nvidia-smi-retired-pages-pending", "reboot")}),
    ("nvidia-smi-q/a100-row-remap-pending-excerpt.txt", (), "nvidia-smi-q",
     {("nvidia-smi-row-remap-pending", "reboot")}),
    ("nvidia-smi-q/a10-hw-slowdown.txt", (), "nvidia-smi-q",
     {("nvidia-smi-hw-slowdown", "notify"), ("nvidia-smi-power-brake", "notify")}),
    ("dcgmi/r2-gpu-memory-fail-excerpt.txt", (), "dcgmi-diag", {("dcgmi-diag-fail", "reboot")}),
    ("dcgmi/deployment-error-excerpt.txt", (), "dcgmi-diag", {("dcgmi-diag-fail", "reboot")}),
    ("neuron-ls/trn2-json-two-of-sixteen.json", ("--instance-type", "trn2.48xlarge"), "neuron-ls",
     {("neuron-sysfs-device-missing", "reboot")}),
    ("fi_info/no-efa-device.txt", (), "fi_info", {("efa-device-missing", "reboot")}),
    ("fi_info/p4d-24xlarge-four-efa.txt", ("--expect-efa-devices", "5"), "fi_info",
     {("efa-device-missing", "reboot")}),
]  # fmt: skip
HEALTHY = [
    ("nvidia-smi/tesla-p100-healthy.xml", (), "nvidia-smi-xml"),
    ("nvidia-smi-q/a10-healthy.txt", (), "nvidia-smi-q"),
    ("dcgmi/r2-healthy.json", (), "dcgmi-diag"),
    ("neuron-ls/trn2-48xlarge-healthy.txt", ("--instance-type", "trn2.48xlarge"), "neuron-ls"),
    ("neuron-ls/inf1-xlarge-healthy.txt", ("--instance-type", "inf1.xlarge"), "neuron-ls"),
    ("fi_info/p4d-24xlarge-four-efa.txt", ("--expect-efa-devices", "4"), "fi_info"),
]


def triage(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["triage", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("sample", "flags", "kind", "faults"), FAULTY)
def test_a_faulty_dump_gets_the_agents_fault_and_action(
    capsys: pytest.CaptureFixture[str],
    sample: str,
    flags: tuple[str, ...],
    kind: str,
    faults: set[tuple[str, str]],
) -> None:
    code, out, _ = triage(capsys, "--format", "json", *flags, str(EVENTS / sample))
    records = fault_records(out)
    assert code == 0
    assert {(r["fault_id"], r["action"]) for r in records} == faults
    assert {r["format"] for r in records} == {kind}
    for record in records:
        assert json.loads(record["line"])["status"] in {"warn", "fail"}, "a health result line"


@pytest.mark.parametrize(("sample", "flags", "kind"), HEALTHY)
def test_a_healthy_dump_is_read_and_gets_a_clean_verdict(
    capsys: pytest.CaptureFixture[str], sample: str, flags: tuple[str, ...], kind: str
) -> None:
    code, out, _ = triage(capsys, *flags, str(EVENTS / sample))
    assert code == 0
    assert out.startswith(f"{EVENTS / sample}: read as {kind}\nno faults found\n")
    assert "verdict: leave this node alone" in out


def test_uncorrectable_ecc_in_nvidia_smi_xml_is_not_a_clean_verdict(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = triage(capsys, str(EVENTS / "nvidia-smi/tesla-v100-dbe-retirement-pending.xml"))
    assert code == 0
    assert "no faults found" not in out
    assert "verdict: cordon, drain and reboot this node" in out
    assert "nvidia-smi-ecc-uncorrectable" in out


def test_a_missing_device_waits_for_the_agents_second_check(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The count rules act on two checks in a row, as in the cluster; triage says so."""
    sample = str(EVENTS / "neuron-ls/trn2-json-two-of-sixteen.json")
    code, out, _ = triage(capsys, "--instance-type", "trn2.48xlarge", sample)
    assert code == 0
    assert "verdict: no action yet" in out and "seen 1x, acts at 2" in out


@pytest.mark.parametrize(
    "content",
    ["hello world\nthis is no log at all\n", "a,b,c\n1,2,3\n", '{"some": "json"}\n'],
)
def test_a_file_in_no_known_format_exits_2_with_a_message(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str
) -> None:
    path = tmp_path / "notes.txt"
    path.write_text(content)
    code, out, err = triage(capsys, str(path))
    assert (code, out) == (2, "")
    assert "not in a format triage reads" in err and err.count("\n") == 1


def test_an_unknown_instance_type_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    sample = str(EVENTS / "neuron-ls/trn2-48xlarge-healthy.txt")
    code, _, err = triage(capsys, "--instance-type", "trn9.huge", sample)
    assert code == 2 and "unknown instance type 'trn9.huge'" in err


def test_dmesg_decode_and_iso_time_prefixes_are_stripped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "dmesg-decode.txt"
    log.write_text(
        "kern  :warn  : 2025-01-02T03:04:05,123456+00:00 Memory failure: 0x7e025e: "
        "recovery action for unknown page: Ignored\n"
        "2025-01-02T03:04:06,000001+00:00 Memory failure: 0x7e025f: "
        "recovery action for unknown page: Ignored\n"
        "user  :notice: 2025-01-02T03:04:07,000001+00:00 Memory failure: 0x7e0260: "
        "recovery action for unknown page: Ignored\n"
    )
    code, out, _ = triage(capsys, "--format", "json", str(log))
    records = fault_records(out)
    assert code == 0
    assert [(r["line_no"], r["injected"]) for r in records] == [(1, False), (2, False), (3, True)]
    assert {r["fault_id"] for r in records} == {"memory-failure"}
