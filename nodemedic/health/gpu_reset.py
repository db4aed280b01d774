"""The GPU reset as the node runs it: refuse while a process holds the GPU, reset it alone,
verify it answers again.

The stack ships this module's own source as an SSM Command document (``document``), which
the state machine runs on the node through SSM Run Command: the host has ``nvidia-smi`` and
a Python 3 (Amazon Linux 2023's 3.9), not nodemedic, so the module imports only the standard
library and runs on 3.9. What it prints last is one JSON line, ``{"gpu", "result",
"detail"}``, and its exit status says how it went (``EXIT``); the state machine reads the
command's status: anything but success falls back to a reboot.

NVIDIA's man page (``nvidia-smi --gpu-reset``): "There can't be any applications using these
devices"; persistence mode counts as one (NVSentinel found the reset refused "In use by
another client" while it is on), so it is turned off for the reset and back on after; and
"Following a reset, it is recommended that the health of each reset GPU be verified before
further use"."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

EXIT = {"reset": 0, "busy": 3, "failed": 4, "unhealthy": 5, "usage": 2}
"""The script's exit status per result: the command fails for every result but ``reset``."""
COMPUTE_APPS = (
    "nvidia-smi",
    "--query-compute-apps=gpu_bus_id,pid,process_name,used_memory",
    "--format=csv,noheader",
)
"""Every compute process of every GPU, one CSV row each, no header."""
_XID_PCI = re.compile(
    r"\bPCI:(?P<domain>[0-9a-fA-F]{4,8}):(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})\b"
)
HEREDOC = "NODEMEDIC_GPU_RESET"
"""The here-document's delimiter: no line of this module is it."""


class ComputeApp(NamedTuple):
    gpu: str
    pid: int
    name: str
    used_memory: str


def bus_id(domain: str, bus: str, device: str, function: str = "0") -> str:
    """A PCI address as ``nvidia-smi`` writes it (``00000000:2B:00.0``): the kernel's Xid
    line says ``0000:2b:00``, the queries say it in this form."""
    return f"{int(domain, 16):08X}:{int(bus, 16):02X}:{int(device, 16):02X}.{int(function, 16)}"


def gpu_of(line: str) -> str | None:
    """The PCI address of the GPU an Xid line names, in ``nvidia-smi``'s form; None if the
    line names none (a health result, a line of another driver)."""
    found = _XID_PCI.search(line)
    return bus_id(found["domain"], found["bus"], found["dev"]) if found else None


def normalized(address: str) -> str:
    """Any ``domain:bus:device.function`` the queries print, in ``bus_id``'s form."""
    head, _, function = address.strip().partition(".")
    domain, bus, device = head.split(":")
    return bus_id(domain, bus, device, function or "0")


def compute_apps(text: str) -> list[ComputeApp]:
    """The rows of ``COMPUTE_APPS``' output; no row (no process on any GPU) is empty."""
    apps = []
    for row in text.splitlines():
        if not row.strip() or row.startswith("No running"):
            continue
        gpu, pid, name, memory = (cell.strip() for cell in row.split(",", 3))
        apps.append(ComputeApp(normalized(gpu), int(pid), name, memory))
    return apps


def holding(apps: list[ComputeApp], gpu: str) -> list[ComputeApp]:
    """The processes on ``gpu``: a reset must wait for none (the drain evicted the pods that
    used it; one still there is a pod the drain missed or a process outside Kubernetes)."""
    return [app for app in apps if app.gpu == gpu]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)


def _said(done: subprocess.CompletedProcess[str]) -> str:
    return " ".join((done.stdout + done.stderr).split())[:300]


def reset(gpu: str) -> tuple[str, str]:
    """(result, detail): refuse while ``gpu`` is in use, reset it, check that it answers."""
    listed = _run(*COMPUTE_APPS)
    if listed.returncode != 0:
        return "failed", f"the compute apps query failed: {_said(listed)}"
    busy = holding(compute_apps(listed.stdout), gpu)
    if busy:
        return "busy", "in use by " + ", ".join(f"{a.name} (pid {a.pid})" for a in busy)
    persistent = _run(
        "nvidia-smi", "-i", gpu, "--query-gpu=persistence_mode", "--format=csv,noheader"
    )
    was_on = persistent.stdout.strip() == "Enabled"
    if was_on:
        _run("nvidia-smi", "-i", gpu, "-pm", "0")
    done = _run("nvidia-smi", "-r", "-i", gpu)
    if was_on:
        _run("nvidia-smi", "-i", gpu, "-pm", "1")
    if done.returncode != 0:
        return "failed", f"nvidia-smi -r exited {done.returncode}: {_said(done)}"
    check = _run(
        "nvidia-smi",
        "-i",
        gpu,
        "--query-gpu=pci.bus_id,ecc.errors.uncorrected.volatile.total",
        "--format=csv,noheader",
    )
    cells = [c.strip() for c in check.stdout.split(",")]
    if check.returncode != 0 or len(cells) != 2 or normalized(cells[0]) != gpu:
        return "unhealthy", f"the GPU does not answer after the reset: {_said(check)}"
    if cells[1] not in ("0", "[N/A]", "N/A"):
        return "unhealthy", f"{cells[1]} uncorrected ECC errors after the reset"
    return "reset", _said(done)


PARAMETER = "gpu"
ALLOWED = r"^[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-7]$"
"""What SSM lets through as the ``gpu`` parameter: ``bus_id``'s form and nothing else, so no
text of the fault line reaches the node's shell."""


def _placeholder(name: str) -> str:
    """SSM's placeholder of parameter ``name`` (the name between two opening and two closing
    braces), spelt so that this source holds none: SSM reads each in the document as one."""
    return "{" * 2 + f" {name} " + "}" * 2


def document() -> dict[str, Any]:
    """The SSM Command document the stack ships: this module fed to the host's Python with
    the GPU's PCI bus id, its one parameter."""
    source = Path(__file__).read_text(encoding="utf-8")
    return {
        "schemaVersion": "2.2",
        "description": "nodemedic: reset one GPU in place once no process holds it, and "
        "check that it answers (nodemedic.health.gpu_reset)",
        "parameters": {
            PARAMETER: {
                "type": "String",
                "description": "The GPU's PCI bus id, as nvidia-smi writes it",
                "allowedPattern": ALLOWED,
            }
        },
        "mainSteps": [
            {
                "action": "aws:runShellScript",
                "name": "resetGpu",
                "inputs": {
                    "runCommand": [
                        f"python3 - '{_placeholder(PARAMETER)}' <<'{HEREDOC}'",
                        source,
                        HEREDOC,
                    ],
                    "timeoutSeconds": "300",
                },
            }
        ],
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(json.dumps({"gpu": None, "result": "usage", "detail": "usage: - <pci bus id>"}))
        return EXIT["usage"]
    gpu = normalized(argv[0])
    result, detail = reset(gpu)
    print(json.dumps({"gpu": gpu, "result": result, "detail": detail}))
    return EXIT[result]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
