"""The simulated nodes' GPUs, as SSM Run Command finds them.

moto records ``SendCommand`` and answers every invocation ``Success``. The local world runs
the command instead (``motoservices.commands_run``): the ``aws:runShellScript`` steps of the
command's document (the stack's, deployed into moto) run in a shell on this machine, with
the parameters put in as SSM does, and a stand-in ``nvidia-smi`` (``world/data/nvidia-smi``)
first on the ``PATH`` that answers as the instance's GPU behaves. So the GPU reset the state
machine sends (``nodemedic.health.gpu_reset``, the very script a node would run) is run
whole, and its status and output are what SSM would report.

Public interface (used by the tests and the local demo):

- ``Gpus()``: ``behave(instance_id, behaviour, gpu=...)`` (``healthy`` unless told:
  ``busy``, ``reset-fails``, ``unhealthy``; or, of SSM rather than the GPU, ``unmanaged``:
  SSM refuses the command with ``InvalidInstanceId``; ``throttled``: SSM refuses the next
  command with ``ThrottlingException``, then the node runs them; ``unreported``: SSM takes
  the command but never knows its invocation), ``resets`` (instance id and SSM status of
  every command run, in order), ``refused`` (instance id and SSM's error of every command
  refused)
- ``nodes_run_commands(gpus)``: context manager; while active, SSM commands reach ``gpus``
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import subprocess
import threading
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from moto.ssm.exceptions import SSMException
from moto.ssm.models import ssm_backends

from world.aws import motoservices

Behaviour = Literal[
    "healthy", "busy", "reset-fails", "unhealthy", "unmanaged", "throttled", "unreported"
]
REFUSALS: dict[Behaviour, tuple[str, str]] = {
    "unmanaged": ("InvalidInstanceId", "Instances not in a valid state for account"),
    "throttled": ("ThrottlingException", "Rate exceeded"),
}
"""SSM's error code and message for a command to an instance that so behaves."""
STAND_IN = Path(__file__).parents[1] / "data"
"""Where the stand-in ``nvidia-smi`` is: this folder goes first on the command's ``PATH``."""


def bus_id(index: int) -> str:
    """The PCI bus id of a simulated node's GPU ``index`` (the device plugin's index id)."""
    return f"00000000:{0x2B + 0x11 * index:02X}:00.0"


FIRST_GPU = bus_id(0)
RECORDED_REPORT = STAND_IN / "nvidia-l4-x2-healthy.xml"
"""A recorded ``nvidia-smi -q -x`` of a healthy machine (``data/SOURCES.md``)."""


def node_report(gpus: int, into: Path) -> Path:
    """What a simulated node's ``nvidia-smi -q -x`` prints: the recorded report's first
    GPU once per simulated GPU, each at its bus id (``bus_id``) with a UUID of its own, so
    that the agent's health check reads a healthy GPU and its device record (which names
    each GPU by the bus id the report gives it) names the GPUs the SSM commands act on."""
    root = ET.parse(RECORDED_REPORT).getroot()  # noqa: S314 (the package's own data)
    first = root.find("gpu")
    assert first is not None, RECORDED_REPORT
    for old in root.findall("gpu"):
        root.remove(old)
    for index in range(gpus):
        gpu = copy.deepcopy(first)
        gpu.set("id", bus_id(index))
        for field, value in (
            ("uuid", f"GPU-{uuid.uuid5(uuid.NAMESPACE_OID, bus_id(index))}"),
            ("minor_number", str(index)),
        ):
            found = gpu.find(field)
            assert found is not None, field
            found.text = value
        root.append(gpu)
    attached = root.find("attached_gpus")
    assert attached is not None
    attached.text = str(gpus)
    into.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(into, encoding="utf-8", xml_declaration=True)
    return into


class Gpus:
    """Each simulated instance's GPU and how it takes a reset."""

    def __init__(self) -> None:
        self._behaviour: dict[str, tuple[Behaviour, str]] = {}
        self._lock = threading.Lock()
        self.resets: list[tuple[str, str]] = []
        """(instance id, SSM status) of every command run, in order."""
        self.refused: list[tuple[str, str]] = []
        """(instance id, SSM's error code) of every command SSM refused, in order."""

    def behave(self, instance_id: str, behaviour: Behaviour, gpu: str = FIRST_GPU) -> None:
        """``gpu`` (``nvidia-smi``'s PCI form) of the instance behaves so from now on."""
        with self._lock:
            self._behaviour[instance_id] = (behaviour, gpu)

    def run(self, instance_id: str, command: Any) -> dict[str, Any] | None:
        """Run moto's ``command`` as the instance's SSM agent would: the invocation's fields
        after; None where SSM never knows the invocation. Raises SSM's error where SSM
        refuses the command."""
        with self._lock:
            behaviour, gpu = self._behaviour.get(instance_id, ("healthy", FIRST_GPU))
            if behaviour in REFUSALS:
                self.refused.append((instance_id, REFUSALS[behaviour][0]))
                if behaviour == "throttled":
                    self._behaviour[instance_id] = ("healthy", gpu)
        if behaviour in REFUSALS:
            raise SSMException(*REFUSALS[behaviour])
        if behaviour == "unreported":
            return None
        backend = ssm_backends[command.account_id][command.backend_region]
        found = backend.get_document(command.document_name, "", "", "JSON")
        script = _script(json.loads(found["Content"]), command.parameters)
        if script is None:
            return _ended(1, "", "InvalidParameters: a value outside its allowedPattern")
        env = {
            **os.environ,
            "PATH": f"{STAND_IN}{os.pathsep}{os.environ.get('PATH', '')}",
            "NODEMEDIC_WORLD_GPU": behaviour,
            "NODEMEDIC_WORLD_GPU_ID": gpu,
        }
        done = subprocess.run(
            ["sh", "-c", script], capture_output=True, text=True, env=env, timeout=60, check=False
        )
        ended = _ended(done.returncode, done.stdout, done.stderr)
        with self._lock:
            self.resets.append((instance_id, ended["Status"]))
        return ended


def _script(content: dict[str, Any], parameters: dict[str, list[str]]) -> str | None:
    """The document's shell steps with ``{{ name }}`` replaced by the parameters' values, as
    SSM does; None when a value breaks its ``allowedPattern`` (SSM refuses the command)."""
    values = {}
    for name, spec in content.get("parameters", {}).items():
        value = " ".join(parameters.get(name, [spec.get("default", "")]))
        if "allowedPattern" in spec and not re.match(spec["allowedPattern"], value):
            return None
        values[name] = value
    lines = [
        line
        for step in content["mainSteps"]
        if step["action"] == "aws:runShellScript"
        for line in step["inputs"]["runCommand"]
    ]
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: values[m[1]], "\n".join(lines))


def _ended(code: int, stdout: str, stderr: str) -> dict[str, Any]:
    """An invocation's fields once the command exited with ``code``."""
    status = "Success" if code == 0 else "Failed"
    return {
        "Status": status,
        "StatusDetails": status,
        "ResponseCode": code,
        "StandardOutputContent": stdout,
        "StandardErrorContent": stderr,
    }


@contextlib.contextmanager
def nodes_run_commands(gpus: Gpus) -> Iterator[None]:
    with motoservices.commands_run(gpus.run):
        yield
