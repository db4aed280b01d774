"""The kmsg record parser and the two readers: what gets shipped, and where a restart resumes."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from agent import kmsg
from agent.kmsg import DevKmsgReader, FileKmsgReader, Line, lost_message, parse_record
from nodemedic.contracts.logs import shipped_message
from tests.support.paths import EVENTS

RECORDS = EVENTS / "kmsg" / "kmsg-records.txt"
# Three records as read from a VM's /dev/kmsg (tab escaped as \x09; device metadata on
# continuation lines).
REAL = (
    b"6,89,222906,-;rcu: \\x09RCU restricting CPUs from NR_CPUS=256 to nr_cpu_ids=2.\n"
    b"6,191,272209,-;acpi PNP0A08:00: _OSC: OS supports [ExtendedConfig ASPM ClockPM Segments"
    b" MSI HPX-Type3]\n SUBSYSTEM=acpi\n DEVICE=+acpi:PNP0A08:00\n"
    b"5,281,403283,-;virtio_blk virtio1: [vda] 536870912 512-byte logical blocks (275 GB/256 GiB)\n"
    b" SUBSYSTEM=virtio\n DEVICE=+virtio:virtio1\n"
)


def plain(text: str) -> str:
    """A plain line (no record header) as the agent ships it: nothing says the kernel
    wrote it, so it is marked injected."""
    return shipped_message(text, None)


def test_record_fields_and_escapes_as_dmesg_prints_them() -> None:
    record = parse_record(REAL.split(b"\n", 1)[0])
    assert record == kmsg.Record(
        89, 222906, "rcu: \tRCU restricting CPUs from NR_CPUS=256 to nr_cpu_ids=2.", 0
    )
    with_metadata = parse_record(
        b"6,191,272209,-;acpi PNP0A08:00: x\n SUBSYSTEM=acpi\n DEVICE=+acpi:PNP0A08:00\n"
    )
    assert with_metadata is not None and with_metadata.message == "acpi PNP0A08:00: x"
    assert parse_record(b"NVRM: Xid (PCI:0000:2b:00): 79, pid=1234") is None
    # Escaped UTF-8 is decoded; bytes that are not UTF-8 stay visible as \xNN.
    assert parse_record(b"4,7,1,-;caf\\xc3\\xa9 \\xff").message == "café \\xff"  # type: ignore[union-attr]


def read_all(reader: FileKmsgReader) -> list[Line]:
    lines: list[Line] = []
    while batch := reader.read(0):
        lines += batch
    return lines


def test_file_of_records_ships_messages_only(tmp_path: Path) -> None:
    path = tmp_path / "kmsg"
    path.write_bytes(RECORDS.read_bytes() + REAL)
    lines = read_all(FileKmsgReader(str(path)))
    texts = [line.message for line in lines]
    assert texts[0] == "nvidia: loading out-of-tree module taints kernel."
    xid = "NVRM: Xid (PCI:0000:2b:00): 79, pid='<unknown>', name=<unknown>, "
    assert f"{xid}GPU has fallen off the bus." in texts
    assert not any(t.startswith((" ", "SUBSYSTEM=", "DEVICE=")) for t in texts)
    assert texts[-1].startswith("virtio_blk virtio1: [vda] 536870912")
    records = sum(1 for raw in path.read_bytes().splitlines() if raw[:1].isdigit())
    assert len(lines) == records
    assert all(line.ts_us is not None for line in lines)


def test_plain_lines_and_records_mix_and_are_numbered_by_line(tmp_path: Path) -> None:
    path = tmp_path / "kmsg"
    path.write_bytes(
        b"NVRM: Xid (PCI:0000:2b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
        b"6,1197,5644871,-;nvidia 0000:2b:00.0: enabling device (0000 -> 0003)\n"
        b" SUBSYSTEM=pci\n"
        b"\n"
        b"plain again\n"
    )
    lines = read_all(FileKmsgReader(str(path)))
    assert [(line.seq, line.ts_us, line.message) for line in lines] == [
        (
            1,
            None,
            plain(
                "NVRM: Xid (PCI:0000:2b:00): 79, pid=1234, name=python, GPU has fallen off the bus."
            ),
        ),
        (2, 5644871, "nvidia 0000:2b:00.0: enabling device (0000 -> 0003)"),
        (5, None, plain("plain again")),
    ]
    assert lines[-1].offset == path.stat().st_size


def test_only_the_kernels_own_records_ship_bare(tmp_path: Path) -> None:
    """Facility 0 is the kernel's; user space writes LOG_USER (1) or the facility it names
    (daemon: 3, local0: 16), and a plain line names none: those ship marked injected."""
    xid = "NVRM: Xid (PCI:0000:2b:00): 79, pid=1, name=python, GPU has fallen off the bus."
    path = tmp_path / "kmsg"
    path.write_text(f"4,1,10,-;{xid}\n12,2,20,-;{xid}\n30,3,30,-;{xid}\n131,4,40,-;{xid}\n{xid}\n")
    assert [line.message for line in read_all(FileKmsgReader(str(path)))] == [
        xid,
        f"[injected facility=1] {xid}",
        f"[injected facility=3] {xid}",
        f"[injected facility=16] {xid}",
        f"[injected facility=none] {xid}",
    ]


def test_resuming_at_a_checkpoint_reads_exactly_what_follows(tmp_path: Path) -> None:
    path = tmp_path / "kmsg"
    path.write_text("".join(f"line {n}\n" for n in range(1, 11)))
    first = read_all(FileKmsgReader(str(path)))
    fourth = first[3]
    resumed = read_all(FileKmsgReader(str(path), after=fourth.seq, offset=fourth.offset))
    assert [line.message for line in resumed] == [plain(f"line {n}") for n in range(5, 11)]
    assert [line.seq for line in resumed] == list(range(5, 11))


def test_a_truncated_file_is_read_from_the_start(tmp_path: Path) -> None:
    path = tmp_path / "kmsg"
    path.write_text("new 1\nnew 2\n")
    lines = read_all(FileKmsgReader(str(path), after=500, offset=40_000))
    assert [(line.seq, line.message) for line in lines] == [
        (1, plain("new 1")),
        (2, plain("new 2")),
    ]


def test_follows_a_growing_file_and_waits_for_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "kmsg"
    path.write_text("")
    reader = FileKmsgReader(str(path), idle_sleep=0.01)
    assert reader.read(0.05) == []
    with path.open("a") as handle:
        handle.write("half a li")
        handle.flush()
        assert reader.read(0.05) == []
        handle.write("ne\nnext\n")
    assert [line.message for line in reader.read(0.5)] == [plain("half a line"), plain("next")]


def test_invalid_utf8_and_huge_lines_are_kept_and_bounded(tmp_path: Path) -> None:
    path = tmp_path / "kmsg"
    huge = kmsg.MAX_LINE_BYTES + 1000
    path.write_bytes(
        b"bad \xff\xfe utf8 \x80\n" + b"x" * (2 * 1024 * 1024) + b"\n" + b"y" * huge + b"\nafter\n"
    )
    lines = read_all(FileKmsgReader(str(path), chunk=256 * 1024))
    assert lines[0].message == plain("bad \\xff\\xfe utf8 \\x80")
    assert lines[1].message == plain("x" * (2 * 1024 * 1024))
    # A line past the reader's bound is cut there; the rest of it is skipped, not shipped.
    cut = lines[2].message.removeprefix(plain(""))
    assert cut == "y" * len(cut)
    assert kmsg.MAX_LINE_BYTES < len(cut) <= kmsg.MAX_LINE_BYTES + 256 * 1024
    assert [(line.seq, line.message) for line in lines[3:]] == [(4, plain("after"))]


Script = list[bytes | type[OSError]]
DeviceLines = Callable[[int, Script], list[Line]]


class FakeDevice:
    """os.read for DevKmsgReader: one record per read, EPIPE when the ring buffer moved on."""

    def __init__(self, script: Script) -> None:
        self.script = list(script)

    def read(self, fd: int, size: int) -> bytes:
        if not self.script:
            raise BlockingIOError
        step = self.script.pop(0)
        if isinstance(step, bytes):
            return step
        raise step()


@pytest.fixture
def device_lines(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> DeviceLines:
    """Reads a scripted /dev/kmsg once, after checkpoint ``after``."""

    def read(after: int, script: Script) -> list[Line]:
        fake = tmp_path / "kmsg"
        fake.write_bytes(b"")
        reader = DevKmsgReader(str(fake), after)
        monkeypatch.setattr(os, "read", FakeDevice(script).read)
        try:
            return reader.read(0)
        finally:
            monkeypatch.undo()
            reader.close()

    return read


def test_overwritten_records_become_a_line_of_their_own(device_lines: DeviceLines) -> None:
    lines = device_lines(
        -1,
        [
            b"6,0,10,-;first\n",
            b"6,1,20,-;second\n",
            BrokenPipeError,
            b"6,1424,9000,-;after the flood\n",
        ],
    )
    assert [(line.seq, line.message, line.lost) for line in lines] == [
        (0, "first", 0),
        (1, "second", 0),
        (1423, lost_message(1422), 1422),
        (1424, "after the flood", 0),
    ]
    assert lost_message(1422) == "nodemedic: kmsg ring buffer overwritten, 1422 records lost"


def test_the_device_marks_what_user_space_wrote(device_lines: DeviceLines) -> None:
    """What ``echo ... > /dev/kmsg`` becomes: the kernel's LOG_USER, shipped marked."""
    lines = device_lines(
        -1, [b"4,0,10,-;NVRM: Xid (PCI:0000:2b:00): 48, x\n", b"12,1,20,-;myapp: 1f [#1] hi\n"]
    )
    assert [line.message for line in lines] == [
        "NVRM: Xid (PCI:0000:2b:00): 48, x",
        "[injected facility=1] myapp: 1f [#1] hi",
    ]


def test_a_restart_skips_what_was_shipped_and_reports_what_it_missed(
    device_lines: DeviceLines,
) -> None:
    # Same boot, checkpoint at 41: 40 and 41 are skipped, 42..44 were overwritten while down.
    lines = device_lines(41, [b"6,40,1,-;old\n", b"6,41,2,-;old\n", b"6,45,3,-;new\n"])
    assert [(line.seq, line.message) for line in lines] == [(44, lost_message(3)), (45, "new")]
    # Resumed exactly where the buffer continues: nothing lost, nothing repeated.
    lines = device_lines(41, [b"6,41,2,-;old\n", b"6,42,3,-;next\n"])
    assert [(line.seq, line.message) for line in lines] == [(42, "next")]


def test_reads_the_real_dev_kmsg_the_same_way_as_a_file(tmp_path: Path) -> None:
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except (PermissionError, FileNotFoundError) as exc:
        pytest.skip(f"/dev/kmsg not readable here: {exc}")
    raw: list[bytes] = []
    try:
        while len(raw) < 20:
            raw.append(os.read(fd, kmsg.MAX_RECORD_BYTES))
    except BlockingIOError:
        pass
    finally:
        os.close(fd)
    assert raw, "a booted kernel has records"
    path = tmp_path / "recorded"
    path.write_bytes(b"".join(raw))
    from_file = read_all(FileKmsgReader(str(path)))
    reader = DevKmsgReader("/dev/kmsg", after=-1, max_lines=len(raw) + 1)
    try:
        from_device = [line for line in reader.read(0.5) if not line.lost][: len(raw)]
    finally:
        reader.close()
    assert [line.message for line in from_device] == [line.message for line in from_file]
    assert all(line.ts_us is not None for line in from_device)
    assert [line.seq for line in from_device] == sorted(line.seq for line in from_device)


def test_a_plain_line_ships_without_the_head_a_tool_wrote_and_still_marked(
    tmp_path: Path,
) -> None:
    """A file of dmesg or syslog lines (the local mode following /var/log/kern.log) ships
    the messages the rules read; the head's facility does not make a line the kernel's."""
    xid = "NVRM: Xid (PCI:0000:2b:00): 79, pid=1, name=python, GPU has fallen off the bus."
    path = tmp_path / "kern.log"
    path.write_text(
        f"Nov 22 18:30:01 ip-10-0-1-23 kernel: [ 3947.590120] {xid}\n"
        f"<4>[ 3947.590120] {xid}\n"
        f"k3s-node5.lab: kern: warning: [2023-08-18T13:36:47.378241465Z]: {xid}\n"
    )
    assert [line.message for line in read_all(FileKmsgReader(str(path)))] == [plain(xid)] * 3
