"""The agent's /metrics text: every label value escaped as the format requires, so a stream
or a check named with a quote, a backslash or a newline cannot break or forge a series."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agent.checks.nvidia import NvidiaSmi
from agent.kmsg import FileKmsgReader, Line
from agent.metrics import Metrics, xid_pattern
from agent.telemetry import exposition
from nodemedic.contracts.release import VERSION
from tests.support.paths import EVENTS
from tests.support.prometheus import read_exposition

AWKWARD = 'i-0abc/kmsg "quoted" back\\slash\nnew_series 1'


def test_label_values_are_escaped_and_read_back_whole() -> None:
    metrics = Metrics()
    metrics.events_shipped[AWKWARD] = 3
    metrics.check_status[AWKWARD] = "fail"
    text = metrics.render()
    assert 'stream="i-0abc/kmsg \\"quoted\\" back\\\\slash\\nnew_series 1"} 3' in text
    assert "\nnew_series" not in text
    seen = read_exposition(text)
    shipped = [k for k in seen if k.startswith("nodemedic_agent_events_shipped_total{")]
    assert len(shipped) == 1 and seen[shipped[0]] == 3
    failing = [k for k, v in seen.items() if k.startswith("nodemedic_agent_check_status{") and v]
    assert len(failing) == 1 and 'status="fail"' in failing[0]
    assert not any(k.startswith("new_series") for k in seen)


def test_xids_the_kernel_logged_are_counted_by_code_and_gpu_and_imitations_are_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NODE_NAME", "h200-node")
    recorded = (
        EVENTS / "kmsg" / "h200-kmsg-raw.txt"
    ).read_bytes()  # a real Xid 31 among boot records
    imitation = b"12,900,29118400,-;NVRM: Xid (PCI:0000:00:06): 79, pid=1, name=logger\n"
    path = tmp_path / "kmsg"
    path.write_bytes(recorded + recorded + imitation)
    metrics = Metrics()
    metrics.read(FileKmsgReader(str(path)).read(0))
    seen = read_exposition(metrics.render())
    xids = {k: v for k, v in seen.items() if k.startswith("nodemedic_agent_xid_total{")}
    assert xids == {
        'nodemedic_agent_xid_total{Hostname="h200-node",pci_bus_id="0000:00:06",xid="31"}': 2
    }
    assert seen["nodemedic_agent_lines_read_total"] == 2 * len(recorded.splitlines()) + 1


def test_pcie_replays_are_exported_under_dcgm_exporters_name() -> None:
    check = NvidiaSmi(["cat", str(EVENTS / "nvidia-smi" / "h200-healthy.xml")])
    check.run("2026-11-27T00:00:00Z")
    seen = read_exposition(exposition([check])())
    (replays,) = [v for k, v in seen.items() if k.startswith("DCGM_FI_DEV_PCIE_REPLAY_COUNTER{")]
    assert replays == 2  # the H200's <pci><replay_counter>


def test_the_agent_says_which_release_it_is() -> None:
    """A rollback checks every node runs the release it went back to (releasing.md)."""
    seen = read_exposition(Metrics().render())
    assert seen[f'nodemedic_agent_info{{version="{VERSION}"}}'] == 1


def test_a_user_rule_that_replaces_the_xid_rule_cannot_stall_the_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A catastrophic-backtracking pattern (``(?:\\w+\\s?)+$``) takes seconds with Python's
    ``re`` on this one 60-character line; the agent matches a user's rule with RE2, as the
    classifier does, so the line costs no more than any other and real Xids still count."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "schema: 1\nrules:\n  - id: nvidia-xid-unknown\n    source: kmsg\n"
        "    pattern: '^NVRM: Xid \\((?P<pci>[^)]*)\\): (?P<xid>\\d+), (?:\\w+\\s?)+$'\n"
        "    component: gpu\n    severity: warning\n    action: notify\n"
        "    metric: GpuXid\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("NODEMEDIC_CATALOG_EXTRA", str(rules))
    monkeypatch.setenv("NODE_NAME", "h200-node")
    xid_pattern.cache_clear()
    evil = "NVRM: Xid (PCI:0000:00:06): 79, " + "a" * 24 + "!"
    real = "NVRM: Xid (PCI:0000:00:06): 79, GPU has fallen off the bus"
    metrics = Metrics()
    xid_pattern()  # the catalog read once, before the clock: only the two lines are timed
    started = time.process_time()
    try:
        metrics.read([Line(1, None, evil, 0), Line(2, None, real, 0)])
    finally:
        xid_pattern.cache_clear()
    assert time.process_time() - started < 1.0, "CPU seconds on two lines"
    assert metrics.xids == {("79", "pci:0000:00:06"): 1}
