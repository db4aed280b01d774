"""History read as people keep it: gzipped files, syslog's folded lines, journal records."""

from __future__ import annotations

import gzip
import json
from datetime import datetime
from pathlib import Path

import pytest

from console.backtest.files import read_sources
from console.backtest.read import History, node_of, read_lines
from console.backtest.replay import replay
from console.backtest.report import rows
from console.inputs import InputError
from nodemedic.detect.classifier import default_classifier
from nodemedic.settings import ClusterSettings
from tests.support.backtest import fault_line

ENFORCING = ClusterSettings(name="bt", node_groups=("gpu",))
MLX5 = fault_line("mlx5-access-reg-failed")
"""Notified at its fifth line within an hour."""


def syslog(at: str, message: str) -> str:
    return f"Nov 22 18:{at} ip-10-0-1-23 kernel: {message}"


def test_a_folded_line_is_as_many_events_as_it_stands_for() -> None:
    found = History()
    lines = [syslog("00:01", MLX5), syslog("00:09", f"message repeated 4 times: [ {MLX5}]")]
    read_lines(found, lines, "node-1", boot=0.0, year=2026)
    events = found.streams["node-1", "kmsg"]
    assert [e.message for e in events] == [MLX5] * 5
    assert len({e.event_id for e in events}) == 5, "each counts once, as the Lambda counts"
    assert found.lines == 5


def test_a_folded_line_reaches_a_threshold_its_lines_would() -> None:
    rule = default_classifier().catalog.rule("mlx5-access-reg-failed")
    assert rule.threshold is not None and rule.threshold.count == 5
    folded = [syslog("00:01", MLX5), syslog("00:09", f"message repeated 4 times: [ {MLX5}]")]
    for lines, action in ((folded[:1], "below-threshold"), (folded, "notify")):
        found = History()
        read_lines(found, lines, "node-1", boot=0.0, year=2026)
        assert [r.action for r in rows(replay(found, default_classifier(), ENFORCING))] == [action]


def test_a_gzipped_log_is_read_and_named_without_its_suffixes(tmp_path: Path) -> None:
    line = syslog("00:01", fault_line("nvidia-xid-79"))
    (tmp_path / "gpu-node-1.log.1.gz").write_bytes(gzip.compress(f"{line}\n".encode()))
    (tmp_path / "gpu-node-2.log.gz").write_bytes(gzip.compress(f"{line}\n".encode()))
    found = read_sources([str(tmp_path)], year=2026)
    assert sorted(node for node, _ in found.streams) == ["gpu-node-1.log.1", "gpu-node-2"]
    assert node_of(Path("kern.txt.gz")) == "kern"


def test_a_journal_record_of_another_transport_than_the_kernel_is_marked_injected() -> None:
    xid = fault_line("nvidia-xid-79")
    at = {"__REALTIME_TIMESTAMP": "1795370400000000"}
    records = [
        {"_TRANSPORT": "kernel", "SYSLOG_FACILITY": "0", "MESSAGE": xid, "_HOSTNAME": "a"} | at,
        {"_TRANSPORT": "stdout", "MESSAGE": xid, "_HOSTNAME": "b"} | at,
    ]
    found = History()
    read_lines(found, map(json.dumps, records), "unused", boot=0.0, year=2026)
    assert found.streams["a", "kmsg"][0].message == xid
    assert found.streams["b", "kmsg"][0].message.endswith(xid)
    assert found.streams["b", "kmsg"][0].message.startswith("[injected ")


def test_lines_before_the_first_time_take_it_and_a_file_with_none_is_refused() -> None:
    xid = fault_line("nvidia-xid-79")
    found = History()
    read_lines(found, [xid, syslog("00:01", MLX5)], "node-1", year=2026)
    assert {e.at for e in found.streams["node-1", "kmsg"]} == {1795370401.0}  # 18:00:01
    with pytest.raises(InputError, match="node-2: no line gives a time"):
        read_lines(History(), [xid], "node-2", year=2026)


@pytest.mark.parametrize(
    ("head", "at"),
    [
        ("k3s-node5.lab: kern: warning: [2026-11-22T18:00:01.5Z]: ", "2026-11-22T18:00:01.5+00:00"),
        ("Sun Nov 22 20:00:01 2026 kern.warn kernel: [ 12.345678] ", "2026-11-22T20:00:01+00:00"),
        ("2026-11-22 20:00:01 +0200 CEST kern.warn kernel: ", "2026-11-22T18:00:01+00:00"),
        ("[Sun Nov 22 18:00:01 2026] ip-10-0-1-23 kernel: ", "2026-11-22T18:00:01+00:00"),
        ("Nov 22 18:00:01.250000 ip-10-0-1-23 kernel: ", "2026-11-22T18:00:01+00:00"),
    ],
)
def test_a_line_is_placed_at_the_time_its_head_gives(head: str, at: str) -> None:
    """The times of Talos, OpenWrt's logread, Go's time format and dmesg -T with a host,
    read by the grammar the message is read with (``nodemedic.detect.heads``)."""
    found = History()
    xid = fault_line("nvidia-xid-79")
    read_lines(found, [head + xid], "node-1", year=2026)
    [event] = found.streams["node-1", "kmsg"]
    assert (event.message, event.at) == (xid, datetime.fromisoformat(at).timestamp())
