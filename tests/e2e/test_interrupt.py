"""Ctrl-C in the middle of ``nodemedic demo`` leaves no process behind: not the control
plane, not an agent, not an injection."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.support.paths import ROOT

pytestmark = [pytest.mark.kube, pytest.mark.slow]


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name, or None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text.rsplit(")", 1)[1].split()


def descendants(root: int) -> dict[int, str]:
    """Every process under ``root``, by pid, with its start time (pids are reused)."""
    parents: dict[int, int] = {}
    started: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            parents[int(entry.name)] = int(fields[1])
            started[int(entry.name)] = fields[19]
    found: dict[int, str] = {}
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in found:
                found[child] = started[child]
                frontier.append(child)
    return found


def alive(pid: int, started: str) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[19] == started and fields[0] != "Z"


def command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return "?"


_WITH_CTRL_C = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)
"""Runs the command in ``argv[1:]`` with SIGINT back to its default (see below)."""


def test_ctrl_c_stops_every_process_the_demo_started(tmp_path: Path) -> None:
    demo_args = [f"--workdir={tmp_path}"]
    demo = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _WITH_CTRL_C,
            sys.executable,
            "-m",
            "console.cli",
            "demo",
            *demo_args,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as a shell gives a foreground job
        # A terminal's foreground job takes Ctrl-C; a test run started in the background by
        # a non-interactive shell inherits SIGINT ignored, and Python then never raises
        # KeyboardInterrupt. The demo is run as a person runs it.
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in demo.stdout or []:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    output: list[str] = []
    try:
        while not any(line.startswith("World up") for line in output):
            output.append(lines.get(timeout=300))
        children = descendants(demo.pid)
        names = " ".join(command(pid) for pid in children)
        assert names.count("console.cli agent") == 8, names
        for process in ("etcd", "kube-apiserver", "kube-controller-manager"):
            assert process in names
        os.killpg(demo.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        assert demo.wait(timeout=90) == 130
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait()
    while not lines.empty():
        output.append(lines.get())
    survivors = {pid: command(pid) for pid, started in children.items() if alive(pid, started)}
    assert survivors == {}
    assert output[-1].startswith("nodemedic demo: interrupted"), output[-5:]
