"""The node's side of a GPU reset (``nodemedic.health.gpu_reset``): which GPU an Xid names,
and the pre-reset check on ``nvidia-smi --query-compute-apps`` output (hand-written
stand-ins, ``tests/events/nvidia-smi-compute-apps/SOURCES.md``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nodemedic.health.gpu_reset import (
    ALLOWED,
    HEREDOC,
    PARAMETER,
    ComputeApp,
    compute_apps,
    document,
    gpu_of,
    holding,
    normalized,
)
from tests.support.paths import EVENTS

APPS = EVENTS / "nvidia-smi-compute-apps"


def _apps(name: str) -> list[ComputeApp]:
    return compute_apps((APPS / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("line", "gpu"),
    [
        ("NVRM: Xid (PCI:0000:2b:00): 46, pid='<unknown>', name=<unknown>", "00000000:2B:00.0"),
        # The real H200's Xid 31 (tests/events/kmsg), a VM's GPU at 00:06.
        ("NVRM: Xid (PCI:0000:00:06): 31, pid=478, name=python3, ...", "00000000:00:06.0"),
        ('{"check": "nvidia-smi", "device": "00000000:2B:00.0"}', None),
    ],
)
def test_the_gpu_to_reset_is_the_one_the_xid_line_names(line: str, gpu: str | None) -> None:
    assert gpu_of(line) == gpu


def test_bus_ids_are_compared_in_one_form() -> None:
    assert normalized("0000:2b:00.0") == normalized("00000000:2B:00.0") == "00000000:2B:00.0"


def test_a_training_node_has_a_process_on_every_gpu() -> None:
    apps = _apps("p5-training.csv")
    assert len(apps) == 8
    assert apps[0] == ComputeApp("00000000:53:00.0", 48211, "/usr/bin/python3", "71234 MiB")
    assert holding(apps, "00000000:97:00.0") == [apps[4]]


def test_a_process_left_on_the_gpu_refuses_the_reset_and_one_on_another_gpu_does_not() -> None:
    left = _apps("p5-one-left.csv")
    assert [a.pid for a in holding(left, "00000000:97:00.0")] == [50377]
    assert holding(left, "00000000:53:00.0") == []


def test_no_process_at_all_lets_the_reset_go() -> None:
    assert _apps("idle.csv") == []
    assert compute_apps("No running processes found\n") == []


def test_the_document_feeds_this_module_and_nothing_but_a_bus_id_to_the_hosts_python() -> None:
    (step,) = document()["mainSteps"]
    first, source, last = step["inputs"]["runCommand"]
    assert first == f"python3 - '{{{{ {PARAMETER} }}}}' <<'{HEREDOC}'"
    assert last == HEREDOC
    assert HEREDOC not in source.splitlines(), "the here-document would end early"
    assert "{{" not in source, "SSM would read it as a parameter"
    assert "import nodemedic" not in source and "from nodemedic" not in source
    allowed = re.compile(ALLOWED)
    assert allowed.match(normalized("0000:2b:00.0"))
    assert not allowed.match("0000:2b:00.0'; reboot; '")
    assert not allowed.match("0000:2b:00")


def test_the_shipped_program_runs_on_a_python_without_nodemedic(tmp_path: Path) -> None:
    """The document's program is the rules and the node-side script as one: run where no
    nodemedic is installed (a bare environment, from stdin as SSM feeds it), it resets an
    idle GPU and refuses one a process holds, with the script's exit statuses."""
    fake = tmp_path / "nvidia-smi"
    fake.write_text(
        '#!/bin/sh\ncase "$*" in\n'
        '  *query-compute-apps*) echo "00000000:53:00.0, 50377, python3, 100 MiB";;\n'
        '  *pci.bus_id*) echo "00000000:2B:00.0, 0";;\n'
        "  *) echo ok;;\nesac\n"
    )
    fake.chmod(0o755)
    (step,) = document()["mainSteps"]
    program = step["inputs"]["runCommand"][1]
    environment = {"PATH": f"{tmp_path}:/usr/bin:/bin"}

    def run(gpu: str) -> tuple[int, dict[str, str]]:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-", gpu],
            input=program,
            capture_output=True,
            text=True,
            env=environment,
            cwd=tmp_path,
            check=False,
        )
        return done.returncode, json.loads(done.stdout.splitlines()[-1])

    assert run("0000:2b:00.0") == (
        0,
        {"gpu": "00000000:2B:00.0", "result": "reset", "detail": "ok"},
    )
    code, said = run("00000000:53:00.0")
    assert (code, said["result"]) == (3, "busy")
    assert "pid 50377" in said["detail"]
