"""``nodemedic backtest`` as an operator runs it on logs they kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.cli import main
from tests.support.backtest import benign_lines, fault_line, node, tail_line

XID79 = fault_line("nvidia-xid-79")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["backtest", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    """A node's own dmesg (ISO times), a node's journal and a healthy node's dmesg."""
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
        "".join(f"[{i + 1:5}.000000] {line}\n" for i, line in enumerate(benign_lines()))
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
