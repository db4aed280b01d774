"""``nodemedic triage`` in scripts: verdict objects, exit codes, several inputs, pipes."""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from console.cli import CLOSED_PIPE, main
from tests.support.paths import EVENTS
from tests.support.triage import fault_records, verdicts

BIN = Path(sys.executable).parent
XID = "NVRM: Xid (PCI:0000:2b:00): {code}, pid=7, name=python, {text}"
LINES = {
    "none": "[   12.1] nvidia-nvswitch: Probing device 0000:05:00.0",
    "notify": "[   12.2] " + XID.format(code=13, text="Graphics Exception: ESR 0x404600"),
    "reboot": "[   12.3] " + XID.format(code=48, text="An uncorrectable double bit error"),
    "replace": "[   12.4] " + XID.format(code=79, text="GPU has fallen off the bus."),
}


def triage(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["triage", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def log(tmp_path: Path, name: str, *lines: str) -> str:
    path = tmp_path / name
    path.write_text("".join(f"{line}\n" for line in lines))
    return str(path)


def stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_each_input_ends_with_a_verdict_object_no_reader_of_fault_lines_mistakes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    first = log(tmp_path, "a.log", LINES["notify"], LINES["replace"], LINES["none"])
    second = log(tmp_path, "b.log", LINES["none"])
    code, out, _ = triage(capsys, "--format", "json", first, second)
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    assert [sorted(r) if "verdict" in r else r["kind"] for r in records] == [
        *("fault", "fault", ["verdict"], ["verdict"])
    ], "one key: no fault_id, action or component at the top of a verdict"
    assert [r["file"] for r in fault_records(out)] == [first, first]
    assert verdicts(out) == [
        {
            "file": first,
            "format": "kernel-log",
            "action": "replace",
            "lines": 3,
            "faults": 2,
            "counts": {"notify": 1, "reboot": 0, "replace": 1},
            "waiting": [],
            "injected": 0,
            "skipped": {},
        },
        {
            "file": second,
            "format": "kernel-log",
            "action": "none",
            "lines": 1,
            "faults": 0,
            "counts": {"notify": 0, "reboot": 0, "replace": 0},
            "waiting": [],
            "injected": 0,
            "skipped": {},
        },
    ]


def test_a_rule_waiting_for_its_threshold_is_named_in_the_verdict(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    frame = "nfs_wb_all+0x5f/0x120 [nfs]"
    code, out, _ = triage(capsys, "--format", "json", log(tmp_path, "x.log", frame))
    assert (code, [(v["action"], v["waiting"]) for v in verdicts(out)]) == (
        0,
        [("none", ["nfs-writeback-hang"])],
    )


@pytest.mark.parametrize(
    ("strongest", "code"), [("none", 0), ("notify", 1), ("reboot", 3), ("replace", 4)]
)
def test_exit_code_says_the_strongest_action_of_all_inputs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, strongest: str, code: int
) -> None:
    order = list(LINES)
    weaker = [LINES[action] for action in order[: order.index(strongest) + 1]]
    files = [log(tmp_path, "healthy.log", LINES["none"]), log(tmp_path, "node.log", *weaker)]
    assert triage(capsys, "--exit-code", *files)[0] == code
    assert triage(capsys, *files)[0] == 0, "without the flag, as before"


def test_bad_input_wins_over_any_action_and_the_other_files_are_still_judged(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good = log(tmp_path, "good.log", LINES["replace"])
    missing = str(tmp_path / "missing.log")
    code, out, err = triage(capsys, "--exit-code", "--format", "json", missing, good)
    assert code == 2
    assert [v["file"] for v in verdicts(out)] == [good]
    assert err.count("\n") == 1 and missing in err and "cannot read" in err


@pytest.mark.parametrize("content", [b"", b"\n", b"-- No entries --\n"])
def test_a_quiet_node_is_a_healthy_node(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, content: bytes
) -> None:
    """``journalctl -k | nodemedic triage -`` on a node that logged nothing."""
    stdin(monkeypatch, content)
    code, out, err = triage(capsys, "--exit-code", "--format", "json", "-")
    assert (code, err) == (0, "")
    assert [(v["file"], v["action"], v["faults"]) for v in verdicts(out)] == [("-", "none", 0)]
    stdin(monkeypatch, content)
    code, out, _ = triage(capsys, "-")
    assert code == 0 and "verdict: leave this node alone" in out


def test_stdin_is_named_dash_in_fault_lines(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stdin(monkeypatch, f"{LINES['reboot']}\n".encode())
    code, out, _ = triage(capsys, "--format", "json", "-")
    assert code == 0 and [r["file"] for r in fault_records(out)] == ["-"]


def test_a_gzipped_log_is_read_as_the_log(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    sample = EVENTS / "kmsg" / "dmesg-sample.txt"
    packed = tmp_path / "dmesg.txt.2.gz"
    packed.write_bytes(gzip.compress(sample.read_bytes()))
    _, plain, _ = triage(capsys, "--format", "json", str(sample))
    code, out, _ = triage(capsys, "--format", "json", str(packed))
    assert code == 0 and fault_records(out)
    strip = [{k: v for k, v in r.items() if k != "file"} for r in fault_records(out)]
    assert strip == [{k: v for k, v in r.items() if k != "file"} for r in fault_records(plain)]


def test_a_damaged_gzip_file_is_bad_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    broken = tmp_path / "kern.log.gz"
    broken.write_bytes(gzip.compress(b"NVRM: Xid 79\n" * 50)[:30])
    code, out, err = triage(capsys, str(broken))
    assert (code, out) == (2, "") and "damaged gzip" in err


def test_journal_json_records_are_read_and_other_transports_are_not_the_kernel(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``journalctl -k -o json``: the kernel's records carry SYSLOG_FACILITY 0; a service
    that prints a driver's words is no kernel line."""
    message = XID.format(code=79, text="GPU has fallen off the bus.")
    kernel = {"_TRANSPORT": "kernel", "SYSLOG_FACILITY": "0", "PRIORITY": "4", "MESSAGE": message}
    service = {"_TRANSPORT": "stdout", "SYSLOG_IDENTIFIER": "job", "MESSAGE": message}
    as_bytes = {**kernel, "MESSAGE": list(message.encode())}
    path = log(tmp_path, "journal.json", *map(json.dumps, (kernel, service, as_bytes)))
    code, out, _ = triage(capsys, "--format", "json", path)
    found = [(r["line_no"], r["fault_id"], r["injected"]) for r in fault_records(out)]
    assert (code, found) == (
        0,
        [(1, "nvidia-xid-79", False), (2, "nvidia-xid-79", True), (3, "nvidia-xid-79", False)],
    )


def test_several_files_get_a_table_and_a_verdict_each_aligned_whatever_the_path(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    deep = tmp_path / ("a-rather-long-directory-name-" * 3)
    deep.mkdir()
    files = [
        log(deep, "node-with-a-long-name.log", LINES["notify"], LINES["reboot"]),
        log(tmp_path, "n.log", LINES["none"]),
    ]
    code, out, _ = triage(capsys, *files)
    assert code == 0
    first, second = out.split("\n\n" + files[1])
    assert first.startswith(f"{files[0]}: read as kernel-log\n")
    assert "verdict: cordon, drain and reboot this node" in first
    assert second.startswith(": read as kernel-log\nno faults found\n")
    assert "verdict: leave this node alone" in second
    table = first.splitlines()[1:4]
    starts = {
        line.index(word)
        for line, word in zip(table, ("fault", "nvidia-xid-13", "nvidia-xid-48"), strict=True)
    }
    assert len(starts) == 1, f"the fault column starts at one place: {table}"


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """``nodemedic triage big.log | head``: the reader goes away before the writer is done."""
    big = log(tmp_path, "big.log", *[LINES["replace"]] * 2000)
    for argv in (["catalog"], ["triage", "--format", "json", big]):
        done = subprocess.Popen(
            [str(BIN / "nodemedic"), *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert done.stdout is not None and done.stderr is not None
        done.stdout.close()
        err = done.stderr.read().decode()
        assert (done.wait(timeout=60), err) == (CLOSED_PIPE, ""), argv


def test_version_is_the_installed_package_s(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"nodemedic {metadata.version('nodemedic')}\n"
