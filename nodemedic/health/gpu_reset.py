"""The GPU reset's rules: which GPU an Xid line names, which processes hold it, and the SSM
Command document that ships the node-side script (``gpu-reset.py`` beside this module).

The script is its own file: it calls ``nvidia-smi`` through ``subprocess`` and runs on the
node, which this module never does. On the node it runs on the host's Python 3 (Amazon
Linux 2023's 3.9), without nodemedic: the document feeds the host's Python this module's
source, then the script's without its import of this module, as one program. So this module
imports only the standard library and runs on 3.9, and the script adds nothing the host
lacks."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple

_XID_PCI = re.compile(
    r"\bPCI:(?P<domain>[0-9a-fA-F]{4,8}):(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})\b"
)
HEREDOC = "NODEMEDIC_GPU_RESET"
"""The here-document's delimiter: no line of this module or the script is it."""
SCRIPT = Path(__file__).with_name("gpu-reset.py")
"""The node-side script, shipped with this module (package data)."""
SCRIPT_IMPORT = f"from {__name__} import compute_apps, holding, normalized\n"
"""The script's import of this module, which the program leaves out (spelt from the module's
name, so that the program holds no import of nodemedic)."""


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
    """The rows of ``--query-compute-apps`` output (the script's ``COMPUTE_APPS``); no row (no
    process on any GPU) is empty."""
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


PARAMETER = "gpu"
ALLOWED = r"^[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-7]$"
"""What SSM lets through as the ``gpu`` parameter: ``bus_id``'s form and nothing else, so no
text of the fault line reaches the node's shell."""


def _placeholder(name: str) -> str:
    """SSM's placeholder of parameter ``name`` (the name between two opening and two closing
    braces), spelt so that this source holds none: SSM reads each in the document as one."""
    return "{" * 2 + f" {name} " + "}" * 2


def program() -> str:
    """What the node runs: this module's source, then the script's without its import of
    this module (the host has no nodemedic; the names it imports are defined above it)."""
    script = SCRIPT.read_text(encoding="utf-8")
    if SCRIPT_IMPORT not in script:
        raise ValueError(f"{SCRIPT.name} no longer imports {SCRIPT_IMPORT!r}")
    return Path(__file__).read_text(encoding="utf-8") + script.replace(SCRIPT_IMPORT, "")


def document() -> dict[str, Any]:
    """The SSM Command document the stack ships: ``program`` fed to the host's Python with
    the GPU's PCI bus id, its one parameter."""
    source = program()
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
