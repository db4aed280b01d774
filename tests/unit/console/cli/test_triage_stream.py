"""``nodemedic triage`` on the logs a crashed node leaves, on journal records, and as the
head of a pipeline: each fault told as its line is read."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from console.cli import main
from tests.support.triage import fault_records, verdicts

XID_79 = "NVRM: Xid (PCI:0000:2b:00): 79, pid=1, name=python, GPU has fallen off the bus."
BIN = Path(sys.executable).parent


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_crashed_nodes_syslog_is_read_through_its_nul_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """After a hard reset the filesystem leaves the blocks it had allocated as NUL bytes,
    then the next boot's lines follow; a garbled line may sit among them."""
    log = tmp_path / "syslog"
    log.write_bytes(
        b"Nov 29 03:12:01 ip-10-0-1-23 kernel: nvidia 0000:2b:00.0: enabling device\n"
        + f"Nov 29 03:12:07 ip-10-0-1-23 kernel: {XID_79}\n".encode()
        + b"\0" * 70_000
        + b"Nov 29 03:19:44 ip-10-0-1-23 kernel: Linux version 6.1.0\n"
        + b"Nov 29 03:19:45 \xff\xfe\x01\x02 garbled\n"
        + b"Nov 29 03:19:46 ip-10-0-1-23 kernel: Command line: ro\n"
    )
    code, out, err = run(capsys, "triage", "--format", "json", str(log))
    assert (code, err) == (0, "")
    [found] = fault_records(out)
    assert (found["line_no"], found["fault_id"]) == (2, "nvidia-xid-79")
    [verdict] = verdicts(out)
    assert verdict["action"] == "replace"
    assert verdict["lines"] == 5
    assert verdict["skipped"] == {"nul_bytes": 70_000, "lines_not_text": 1}
    code, out, _ = run(capsys, "triage", str(log))
    assert "read through 70000 NUL bytes and 1 lines that are not text" in out


def test_a_file_with_no_line_of_text_is_still_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    core = tmp_path / "core"
    core.write_bytes(b"\0" * 100_000 + b"\x7fELF\x02\x01\n\0\0")
    code, out, err = run(capsys, "triage", str(core))
    assert (code, out) == (2, "")
    assert "binary data" in err and "100002 NUL bytes" in err


def test_a_journal_records_line_is_its_message(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    record = {
        "__REALTIME_TIMESTAMP": "1732300201000000",
        "_TRANSPORT": "kernel",
        "SYSLOG_FACILITY": "0",
        "_HOSTNAME": "ip-10-0-1-23",
        "MESSAGE": XID_79,
    }
    log = tmp_path / "journal.json"
    log.write_text(json.dumps(record) + "\n")
    code, out, _ = run(capsys, "triage", "--format", "json", str(log))
    assert code == 0
    [found] = fault_records(out)
    assert found["line"] == XID_79


def test_an_injected_lines_counts_agree_with_the_verdict(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A raw record of LOG_USER asks for reboot by its rule; the verdict holds it to notify,
    and so do the counts beside it."""
    xid_48 = "NVRM: Xid (PCI:0000:2b:00): 48, pid=7, An uncorrectable double bit error"
    log = tmp_path / "kmsg.txt"
    log.write_text(f"12,7,5678901,-;{xid_48}\n")
    code, out, _ = run(capsys, "triage", "--format", "json", str(log))
    assert code == 0
    [found] = fault_records(out)
    assert (found["action"], found["injected"]) == ("reboot", True), "the rule's own action"
    [verdict] = verdicts(out)
    assert verdict["action"] == "notify"
    assert verdict["counts"] == {"notify": 1, "reboot": 0, "replace": 0}
    assert verdict["injected"] == 1


def _lines_of(stream: subprocess.Popen[str], into: queue.Queue[str]) -> None:
    assert stream.stdout is not None
    for line in stream.stdout:
        into.put(line)


def test_faults_are_told_before_the_input_ends(tmp_path: Path) -> None:
    """``journalctl -kf | nodemedic triage -`` or ``| head -3``: the first faults come out
    while the input is still open, not after the last line."""
    triage = subprocess.Popen(
        [str(BIN / "nodemedic"), "triage", "--format", "json", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert triage.stdin is not None
    told: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_lines_of, args=(triage, told), daemon=True).start()
    try:
        chatter = "".join(f"[ {n}.000001] eth0: link up\n" for n in range(10_000))
        triage.stdin.write(f"[    1.000000] {XID_79}\n" * 3 + chatter)
        triage.stdin.flush()
        deadline = time.monotonic() + 60
        got: list[str] = []
        while len(got) < 3 and time.monotonic() < deadline:
            try:
                got.append(told.get(timeout=1))
            except queue.Empty:
                continue
        assert [json.loads(line)["fault_id"] for line in got] == ["nvidia-xid-79"] * 3
        assert triage.poll() is None, "the input is still open"
    finally:
        triage.stdin.close()
        triage.wait(timeout=60)
