"""``nodemedic backtest`` as an operator runs it on logs they kept."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from console.cli import main
from tests.support.backtest import benign_lines, fault_line, node, tail_line

XID79 = fault_line("nvidia-xid-79")
CLOCK = "rtc_cmos 00:00: setting system clock to 2026-11-22T17:58:03 UTC (1795370283)"
"""The RTC driver's line at boot (0.5 s of uptime): the node booted at 17:58:02.5."""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["backtest", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    """A node's own dmesg (ISO times), a node's journal and a healthy node's dmesg (times
    since boot, with the kernel's clock line)."""
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "gpu-node-1.log").write_text(
        "2026-11-22T18:00:01,000000+00:00 nvidia: loading out-of-tree module taints kernel.\n"
        f"2026-11-22T18:02:11,500000+00:00 {XID79}\n"
    )
    (folder / "gpu-node-2.txt").write_text(
        f"2026-11-22T18:02:30+0000 ip-10-0-1-2 kernel: {fault_line('nvidia-xid-48')}\n"
    )
    (folder / "healthy.log").write_text(
        f"[    0.500000] {CLOCK}\n"
        + "".join(f"[{i + 1:5}.000000] {line}\n" for i, line in enumerate(benign_lines()))
    )
    return folder


def test_default_settings_are_monitor_only_and_the_table_says_so(
    capsys: pytest.CaptureFixture[str], logs: Path
) -> None:
    code, out, _ = run(capsys, str(logs))
    assert code == 0
    assert out.startswith("monitor-only:")
    assert "monitor (would replace)" in out
    assert "monitor (would reboot)" in out
    assert "cordoned 0, rebooted 0, replaced 0" in out


def test_json_names_each_node_after_its_file_with_times_from_its_lines(
    capsys: pytest.CaptureFixture[str], logs: Path
) -> None:
    code, out, _ = run(capsys, str(logs), "--enforce", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["monitor_only"] is False
    by_node = {row["node"]: row for row in doc["rows"]}
    assert set(by_node) == {"gpu-node-1", "gpu-node-2"}
    first = by_node["gpu-node-1"]
    assert (first["fault_id"], first["action"]) == ("nvidia-xid-79", "replace")
    assert first["first_line"] == "2026-11-22T18:02:11Z"
    assert by_node["gpu-node-2"]["action"] == "reboot"
    assert doc["totals"] | {"lines": 0} == doc["totals"] | {
        "lines": 0,
        "nodes": 3,
        "cordoned": 2,
        "rebooted": 1,
        "replaced": 1,
    }


def test_settings_file_is_the_stack_settings(
    capsys: pytest.CaptureFixture[str], logs: Path, tmp_path: Path
) -> None:
    settings = tmp_path / "cluster.yaml"
    settings.write_text("name: prod\nnode_groups: [gpu]\ndry_run: true\n")
    code, out, _ = run(capsys, str(logs), "--settings", str(settings), "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert (doc["cluster"], doc["group"], doc["monitor_only"]) == ("prod", "gpu", True)
    assert {row["action"] for row in doc["rows"]} == {"monitor"}


def test_a_group_s_own_action_is_replayed(
    capsys: pytest.CaptureFixture[str], logs: Path, tmp_path: Path
) -> None:
    """Xid 79 replaces by default; the training group reboots it instead."""
    settings = tmp_path / "cluster.yaml"
    settings.write_text(
        "name: prod\nnode_groups: [training]\n"
        "group_overrides: {training: {actions: {nvidia-xid-79: reboot}}}\n"
    )
    code, out, _ = run(capsys, str(logs), "--settings", str(settings), "--format", "json")
    assert code == 0
    by_node = {row["node"]: row for row in json.loads(out)["rows"]}
    assert by_node["gpu-node-1"]["action"] == "reboot"
    assert "by the setting actions['nvidia-xid-79']" in by_node["gpu-node-1"]["reason"]


def test_a_group_s_wait_before_acting_delays_the_action(
    capsys: pytest.CaptureFixture[str], logs: Path, tmp_path: Path
) -> None:
    settings = tmp_path / "cluster.yaml"
    acted = []
    for wait in (0, 900):
        settings.write_text(
            "name: prod\nnode_groups: [training]\n"
            f"group_overrides: {{training: {{wait_before_acting: {wait}}}}}\n"
        )
        code, out, _ = run(capsys, str(logs), "--settings", str(settings), "--format", "json")
        assert code == 0
        by_node = {row["node"]: row for row in json.loads(out)["rows"]}
        acted.append(by_node["gpu-node-1"])
    assert acted[0]["action"] == acted[1]["action"] == "replace"
    # At once, it waits only for the fault's fleet window to settle (fleet_settle, 60 s).
    waited = [
        (datetime.fromisoformat(row["acted"]) - datetime.fromisoformat(row["decided"]))
        for row in acted
    ]
    assert [w.total_seconds() for w in waited] == [60, 900]


def test_settings_naming_no_rule_of_the_catalog_exit_2(
    capsys: pytest.CaptureFixture[str], logs: Path, tmp_path: Path
) -> None:
    settings = tmp_path / "cluster.json"
    settings.write_text('{"node_groups": ["gpu"], "actions": {"nvidia-xid-7900": "reboot"}}')
    code, _, err = run(capsys, str(logs), "--settings", str(settings))
    assert code == 2
    assert "actions: 'nvidia-xid-7900' is neither a rule id" in err


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda d: d / "missing.log", "no such file"),
        (lambda d: d, "no log files"),
        (lambda d: _write(d / "core", b"\x7fELF\0\0\0"), "binary data"),
        (lambda d: _write(d / "bad.jsonl", b'{"message": 1}\n'), "needs a message"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, make: object, says: str
) -> None:
    assert callable(make)
    code, out, err = run(capsys, str(make(tmp_path)))
    assert code == 2
    assert out == ""
    assert says in err
    assert len(err.strip().splitlines()) == 1


def test_bad_settings_exit_2(
    capsys: pytest.CaptureFixture[str], logs: Path, tmp_path: Path
) -> None:
    settings = tmp_path / "cluster.json"
    settings.write_text('{"node_groups": "gpu"}')
    code, _, err = run(capsys, str(logs), "--settings", str(settings))
    assert code == 2
    assert "node_groups must be a list" in err


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_tagged_and_json_lines_name_the_node_by_its_stream(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    tail = tmp_path / "tail.log"
    tail.write_text(tail_line(5, node(1), XID79) + "\n")
    events = tmp_path / "events.jsonl"
    events.write_text(
        json.dumps(
            {"logStreamName": f"{node(2)}/kmsg", "timestamp": 1795370400000, "message": XID79}
        )
        + "\n"
    )
    code, out, _ = run(capsys, str(tail), str(events), "--format", "json")
    assert code == 0
    nodes = {row["node"]: row for row in json.loads(out)["rows"]}
    assert set(nodes) == {node(1), node(2)}
    assert nodes[node(2)]["first_line"] == "2026-11-22T18:00:00Z"


def test_a_candidate_catalog_shows_what_it_changes(
    capsys: pytest.CaptureFixture[str], logs: Path, tmp_path: Path
) -> None:
    rules = tmp_path / "mine.yaml"
    rules.write_text(
        "rules:\n"
        "  - id: nvidia-xid-48\n"
        "    source: kmsg\n"
        "    pattern: '^NVRM: Xid \\(PCI:(?P<pci>[0-9a-fA-F:.]+)\\): 48,'\n"
        "    component: gpu\n"
        "    severity: critical\n"
        "    action: replace\n"
        "    condition: AcceleratedHardwareReady\n"
        "    metric: NvidiaXid48\n"
    )
    code, out, err = run(capsys, str(logs), "--enforce", "--catalog", str(rules))
    assert code == 0, err
    assert "gpu-node-2  nvidia-xid-48: reboot -> replace" in out
    assert "gpu-node-1" not in out
    code, out, _ = run(capsys, str(logs), "--enforce", "--catalog", str(rules), "--format", "json")
    found = json.loads(out)
    assert found["totals"]["before"]["rebooted"] == 1
    assert found["totals"]["after"]["rebooted"] == 0
    assert found["totals"]["after"]["replaced"] == 2


@pytest.fixture
def uptimes(tmp_path: Path) -> Path:
    """Four nodes' dmesg, each with one Xid 79 and only seconds since boot: 100, 200, 300
    and 400 s after each node's own boot."""
    folder = tmp_path / "uptimes"
    folder.mkdir()
    for number, uptime in enumerate((100, 200, 300, 400), start=1):
        (folder / f"node-{number}.dmesg").write_text(f"[{uptime:5}.000000] {XID79}\n")
    return folder


def test_uptimes_of_different_nodes_never_make_a_fleet_event(
    capsys: pytest.CaptureFixture[str], uptimes: Path
) -> None:
    code, out, err = run(capsys, str(uptimes), "--enforce")
    assert "held-fleet" not in out
    assert code == 2
    assert "node-1.dmesg:1: lines timed since boot" in err
    assert "--boot-time node-1=TIME" in err


def test_one_boot_time_for_several_nodes_is_refused(
    capsys: pytest.CaptureFixture[str], uptimes: Path
) -> None:
    code, out, err = run(capsys, str(uptimes), "--enforce", "--boot-time", "2026-11-22T10:00Z")
    assert (code, out) == (2, "")
    assert "node-1.dmesg" in err and "node-4.dmesg" in err
    assert "--boot-time NODE=TIME for each" in err


def test_each_node_s_boot_time_places_its_own_lines(
    capsys: pytest.CaptureFixture[str], uptimes: Path
) -> None:
    boots = [f"--boot-time=node-{n}=2026-11-2{n}T10:00:00Z" for n in range(1, 5)]
    code, out, err = run(capsys, str(uptimes), "--enforce", "--format", "json", *boots)
    assert code == 0, err
    rows = json.loads(out)["rows"]
    assert [(r["node"], r["first_line"], r["action"]) for r in rows] == [
        ("node-1", "2026-11-21T10:01:40Z", "replace"),
        ("node-2", "2026-11-22T10:03:20Z", "replace"),
        ("node-3", "2026-11-23T10:05:00Z", "replace"),
        ("node-4", "2026-11-24T10:06:40Z", "replace"),
    ]


def test_a_file_s_own_clock_line_places_its_boot_and_a_later_boot_needs_its_own(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    dmesg = tmp_path / "gpu-node-7.dmesg"
    dmesg.write_text(
        f"[    0.000000] Linux version 6.1\n[    0.500000] {CLOCK}\n[  100.5] {XID79}\n"
    )
    code, out, err = run(capsys, str(dmesg), "--format", "json")
    assert code == 0, err
    (row,) = json.loads(out)["rows"]
    assert row["first_line"] == "2026-11-22T17:59:43Z"  # 17:58:02.5 + 100.5 s
    with dmesg.open("a") as rebooted:
        rebooted.write(f"[    3.000000] {XID79}\n")
    code, out, err = run(capsys, str(dmesg))
    assert (code, out) == (2, "")
    assert "gpu-node-7.dmesg:4: lines timed since boot" in err
    assert "a later boot" in err


def test_a_crashed_nodes_log_is_replayed_and_a_bad_file_is_left_out_alone(
    capsys: pytest.CaptureFixture[str], logs: Path
) -> None:
    """A node that died hard leaves NUL runs after its last lines; a core file among the
    logs is told and left out, the fleet's other files replayed."""
    (logs / "gpu-node-1.log").write_bytes(
        b"2026-11-22T18:00:01,000000+00:00 nvidia: loading out-of-tree module taints kernel.\n"
        + f"2026-11-22T18:02:11,500000+00:00 {XID79}\n".encode()
        + b"\0" * 40_000
        + b"2026-11-22T18:09:00,000000+00:00 Linux version 6.1.0\n"
    )
    _write(logs / "core", b"\x7fELF\0\0\0")
    code, out, err = run(capsys, str(logs), "--format", "json")
    assert code == 2
    assert "core: binary data" in err and len(err.strip().splitlines()) == 1
    replayed = json.loads(out)
    assert {(row["node"], row["fault_id"]) for row in replayed["rows"]} == {
        ("gpu-node-1", "nvidia-xid-79"),
        ("gpu-node-2", "nvidia-xid-48"),
    }
    assert replayed["group_size"] == 3, "the healthy node is replayed too"
