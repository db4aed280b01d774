"""``nodemedic triage`` as a user runs it on logs copied off a node."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from console.cli import main
from nodemedic.contracts.health import NVIDIA_SMI_CHECK
from nodemedic.detect.logformat import messages
from tests.support.paths import EVENTS as EVENTS_ROOT
from tests.support.triage import fault_records, verdicts

EVENTS = EVENTS_ROOT / "kmsg"
BIN = Path(sys.executable).parent


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "sample", ["dmesg-sample.txt", "journalctl-sample.txt", "kmsg-records.txt"]
)
def test_each_log_format_yields_its_faults_as_json(
    capsys: pytest.CaptureFixture[str], sample: str
) -> None:
    code, out, _ = run(capsys, "triage", "--format", "json", str(EVENTS / sample))
    assert code == 0
    records = fault_records(out)
    assert records, f"{sample} holds faults"
    lines = (EVENTS / sample).read_text().splitlines()
    for record in records:
        assert set(record) >= {
            *("line_no", "line", "fault_id", "component", "action", "injected", "format")
        }, "keys only grow"
        assert (record["kind"], record["file"], record["repeats"]) == (
            "fault",
            str(EVENTS / sample),
            1,
        )
        assert record["format"] == "kernel-log"
        assert record["injected"] is False, "the samples hold kernel lines only"
        assert lines[record["line_no"] - 1] == record["line"]
        assert record["action"] in {"notify", "reboot", "replace"}


def test_prefixes_are_stripped_before_matching(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    message = "NVRM: Xid (PCI:0000:2b:00): 79, pid=1, name=python, GPU has fallen off the bus."
    log = tmp_path / "mixed.log"
    log.write_text(
        f"6,1201,5678901,-;{message}\n"
        " SUBSYSTEM=pci\n"
        f"[  512.000001] {message}\n"
        f"Nov 22 18:30:01 ip-10-0-1-23 kernel: {message}\n"
        "Nov 22 18:30:02 ip-10-0-1-23 kernel: nvidia-nvswitch: Probing device 0000:05:00.0\n"
    )
    code, out, _ = run(capsys, "triage", "--format", "json", str(log))
    assert code == 0
    found = fault_records(out)
    assert [r["line_no"] for r in found] == [1, 3, 4]
    assert {r["fault_id"] for r in found} == {"nvidia-xid-79"}


def test_health_results_and_kernel_lines_are_reported_in_file_order(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    health = json.dumps(
        {"check": NVIDIA_SMI_CHECK, "status": "fail", "reason": "EccUncorrectable", "device": "3"}
    )
    log = tmp_path / "agent.log"
    log.write_text(
        "NEURON_HW_ERR=DMA_ERROR instance-id=i-0abc nd0 nc1\n"
        f"{health}\n"
        "nvidia-nvswitch: Probing device 0000:05:00.0\n"
        "NVRM: Xid (PCI:0000:2b:00): 79, pid=1, GPU has fallen off the bus.\n"
        f"{health}\n"
    )
    code, out, _ = run(capsys, "triage", "--format", "json", str(log))
    assert code == 0
    found = [(r["line_no"], r["fault_id"]) for r in fault_records(out)]
    assert found == [
        (1, "neuron-dma-error"),
        (2, "nvidia-smi-ecc-uncorrectable"),
        (4, "nvidia-xid-79"),
        (5, "nvidia-smi-ecc-uncorrectable"),
    ]


def test_benign_logs_print_no_fault_line_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "triage", "--format", "json", str(EVENTS / "benign.txt"))
    assert (code, fault_records(out)) == (0, [])
    assert [v["action"] for v in verdicts(out)] == ["none"]


def test_the_table_ends_with_what_nodemedic_would_do(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "dmesg.txt"
    log.write_text(
        "[   10.1] NVRM: Xid (PCI:0000:2b:00): 13, pid=7, Graphics Exception: ESR 0x404600\n"
        "[   11.2] NVRM: Xid (PCI:0000:2b:00): 48, pid=7, An uncorrectable double bit error\n"
    )
    code, out, _ = run(capsys, "triage", str(log))
    assert code == 0
    assert "nvidia-xid-48" in out and "nvidia-xid-13" in out
    assert "verdict: cordon, drain and reboot this node" in out


def test_lines_the_kernel_did_not_log_are_told_apart_and_only_notified(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Raw records and ``dmesg -r`` carry the priority: facility LOG_USER (priority 8 +
    level) is a write to /dev/kmsg from user space, not the driver."""
    xid = "NVRM: Xid (PCI:0000:2b:00): 79, pid=1, name=python, GPU has fallen off the bus."
    log = tmp_path / "kmsg.txt"
    log.write_text(f"12,7,5678901,-;{xid}\n<12>[ 5678.901000] {xid}\n")
    code, out, _ = run(capsys, "triage", "--format", "json", str(log))
    assert code == 0
    found = fault_records(out)
    assert [(r["fault_id"], r["action"], r["injected"]) for r in found] == [
        ("nvidia-xid-79", "replace", True),
        ("nvidia-xid-79", "replace", True),
    ]
    code, out, _ = run(capsys, "triage", str(log))
    assert "verdict: notify, leave the node in service" in out
    assert "replace asked by a line the kernel did not log" in out
    log.write_text(f"4,7,5678901,-;{xid}\n")
    code, out, _ = run(capsys, "triage", str(log))
    assert "verdict: cordon, drain and replace this node" in out


@pytest.mark.parametrize(
    "line",
    [
        "[    5.123456] [    T421] {}",
        "[    5.123456][    C3] {}",
        "Nov 22 18:30:01.123456 ip-10-0-1-23 kernel: {}",
        "[ 5678.901234] ip-10-0-1-23 kernel: {}",
    ],
)
def test_caller_ids_and_precise_journal_times_are_stripped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, line: str
) -> None:
    """Rules match from the message's start, so every prefix a kernel log tool prints must
    go: the caller id of CONFIG_PRINTK_CALLER, ``journalctl -o short-precise`` and
    ``-o short-monotonic``."""
    xid = "NVRM: Xid (PCI:0000:2b:00): 48, pid=7, DBE"
    [entry] = messages([line.format(xid)])
    assert (entry.message, entry.facility) == (xid, None)
    log = tmp_path / "log.txt"
    log.write_text(line.format(xid) + "\n")
    code, out, _ = run(capsys, "triage", "--format", "json", str(log))
    assert code == 0
    assert [r["fault_id"] for r in fault_records(out)] == ["nvidia-xid-48"]


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "binary data"), (None, "cannot read")],
)
def test_unreadable_input_is_one_clear_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes | None, message: str
) -> None:
    path = tmp_path / "input"
    if content is not None:
        path.write_bytes(content)
    code, out, err = run(capsys, "triage", str(path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_the_installed_console_script_runs(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(BIN / "nodemedic"), "triage", "--format", "json", str(EVENTS / "dmesg-sample.txt")],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), "faults reported"


def test_a_pstore_record_is_read_without_its_part_header(
    capsys: pytest.CaptureFixture[str],
) -> None:
    dump = EVENTS_ROOT / "pstore" / "dmesg-erst-6953966727021461507"
    lines = dump.read_text().splitlines()
    assert lines[0] == "Panic#2 Part1"
    assert next(m.line_no for m in messages(lines)) == 2, "the header is no kernel line"
    code, out, _ = run(capsys, "triage", "--format", "json", str(dump))
    trace, record = fault_records(out)
    assert trace["fault_id"] == "kernel-trace-location", "the oops banner was lost, not its RIP"
    assert (code, record["fault_id"], record["injected"]) == (0, "kernel-panic", False)
    assert [lines[r["line_no"] - 1] for r in (trace, record)] == [trace["line"], record["line"]]
