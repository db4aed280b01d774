"""``nodemedic inject``: the catalog's realistic lines, in a form the agent reads back."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from agent.inject import LOG_USER, InjectError, append_file, find_rule, line_for, write_device
from agent.kmsg import DevKmsgReader, FileKmsgReader
from console.cli import main as nodemedic
from nodemedic.catalog import load_catalog
from nodemedic.contracts.logs import shipped_message
from nodemedic.detect.classifier import classify
from tests.support.paths import ROOT


def shipped(path: Path) -> list[str]:
    return [line.message for line in FileKmsgReader(str(path)).read(0)]


def test_inject_xid_neuron_and_rule_lines_classify_as_their_fault(tmp_path: Path) -> None:
    target = tmp_path / "kmsg"
    assert nodemedic(["inject", "xid", "79", "--to", str(target)]) == 0
    assert nodemedic(["inject", "neuron", "dma_error", "--to", str(target)]) == 0
    assert nodemedic(["inject", "rule", "kmsg-records-lost", "--to", str(target), "--record"]) == 0
    faults = [classify(line) for line in shipped(target)]
    assert [(f.rule.id, f.injected) for f in faults if f] == [
        ("nvidia-xid-79", True),
        ("neuron-dma-error", True),
        ("kmsg-records-lost", True),
    ]
    raw = target.read_text().splitlines()
    assert raw[0] == load_catalog().rule("nvidia-xid-79").example
    # A record says what the kernel would say of a write to /dev/kmsg: facility LOG_USER
    # (priority 8 + level 4), never the kernel's own facility 0.
    assert raw[2].startswith("12,2,") and raw[2].endswith(
        ";nodemedic: kmsg ring buffer overwritten, 1423 records lost"
    )


def test_an_injected_neuron_line_names_the_node_it_lands_on(tmp_path: Path) -> None:
    """The catalog's example names the instance AWS recorded it on; a drill's line must name
    the node it is written on, or the timeline shows a fault of another machine."""
    target = tmp_path / "kmsg"
    here = ["--instance-id", "i-0aaaabbbbcccc1111", "--hostname", "ip-10-0-7-12"]
    assert nodemedic(["inject", "neuron", "DMA_ERROR", "--to", str(target), *here]) == 0
    (line,) = shipped(target)
    assert "instance-id=i-0aaaabbbbcccc1111 hostname=ip-10-0-7-12 " in line
    assert "i-0592464924bd45322" not in line
    fault = classify(line)
    assert fault is not None and fault.rule.id == "neuron-dma-error"


def test_every_kernel_fault_in_the_catalog_can_be_injected_and_reads_back_as_itself(
    tmp_path: Path,
) -> None:
    catalog = load_catalog()
    target = tmp_path / "kmsg"
    faults = [r for r in catalog.rules if r.source == "kmsg" and r.action != "ignore"]
    for n, rule in enumerate(faults):
        if (xid := rule.id.removeprefix("nvidia-xid-")).isdigit():
            assert find_rule(catalog, "xid", xid) is rule
        if rule.example.startswith("NEURON_HW_ERR="):
            kind = rule.example.split("=", 1)[1].split()[0]
            assert find_rule(catalog, "neuron", kind) is rule
        append_file(target, line_for(find_rule(catalog, "rule", rule.id)), 4, record=n % 2 == 1)
    read = [line.message for line in FileKmsgReader(str(target), max_lines=10_000).read(0)]
    found = [fault.rule.id if (fault := classify(line)) else None for line in read]
    assert found == [rule.id for rule in faults]
    assert len(faults) > 150


def test_appending_never_joins_an_unterminated_line(tmp_path: Path) -> None:
    target = tmp_path / "kmsg"
    target.write_text("partial line without newline")
    assert nodemedic(["inject", "xid", "48", "--count", "2", "--to", str(target)]) == 0
    lines = shipped(target)
    assert lines[0] == shipped_message("partial line without newline", None)
    assert len(lines) == 3


def test_bad_requests_get_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalog = load_catalog()
    with pytest.raises(InjectError, match=r"known: .*DMA_ERROR"):
        find_rule(catalog, "neuron", "NOT_A_TYPE")
    with pytest.raises(InjectError, match="no rule 'nvidia-xid-100000'"):
        find_rule(catalog, "xid", "100000")
    with pytest.raises(InjectError, match="health check results"):
        line_for(catalog.rule("nvidia-smi-row-remap-failure"))
    assert nodemedic(["inject", "xid", "abc", "--to", str(tmp_path / "k")]) == 2
    assert "an Xid is a number" in capsys.readouterr().err
    assert not (tmp_path / "k").exists()


def test_python_m_agent_inject_appends_to_a_file(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent", "inject", "xid", "79", "--to", str(tmp_path / "file")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "nvidia-xid-79 ->" in done.stdout
    example = load_catalog().rule("nvidia-xid-79").example
    assert shipped(tmp_path / "file") == [shipped_message(example, None)]


def test_a_write_to_dev_kmsg_becomes_one_record_of_facility_log_user() -> None:
    """A benign marker line, not a fault: this is the machine's real kernel log. The kernel
    records a user-space write with facility LOG_USER, and the agent ships it marked."""
    if not os.access("/dev/kmsg", os.R_OK | os.W_OK):
        pytest.skip("/dev/kmsg not writable here")
    marker = f"nodemedic test: inject self-check {uuid.uuid4()}"
    reader = DevKmsgReader("/dev/kmsg", after=-1, max_lines=100_000)
    try:
        while reader.read(0):
            pass  # skip what the kernel already has
        write_device(Path("/dev/kmsg"), marker, 4)
        lines = reader.read(1.0)
    finally:
        reader.close()
    assert [line.message for line in lines if not line.lost][-1] == shipped_message(
        marker, LOG_USER
    )
