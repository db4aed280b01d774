"""The simulated nodes' GPUs, as SSM Run Command finds them.

moto records ``SendCommand`` and answers every invocation ``Success``. The local world runs
the command instead (``motopatch.commands_run``): ``AWS-RunShellScript``'s commands run in a
shell on this machine, with a stand-in ``nvidia-smi`` (``world/data/nvidia-smi``) first on
the ``PATH`` that answers as the instance's GPU behaves. So the GPU reset the state machine
sends (``nodemedic.health.gpu_reset``, the very script a node would run) is run whole, and
its status and output are what SSM would report.

Public interface (used by the tests and the local demo):

- ``Gpus()``: ``behave(instance_id, behaviour, gpu=...)`` (``healthy`` unless told:
  ``busy``, ``reset-fails``, ``unhealthy``), ``resets`` (instance ids whose GPU reset ran,
  in order, with its result)
- ``nodes_run_commands(gpus)``: context manager; while active, SSM commands reach ``gpus``
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from world import motopatch

Behaviour = Literal["healthy", "busy", "reset-fails", "unhealthy"]
STAND_IN = Path(__file__).with_name("data")
"""Where the stand-in ``nvidia-smi`` is: this folder goes first on the command's ``PATH``."""
SHELL_DOCUMENT = "AWS-RunShellScript"


class Gpus:
    """Each simulated instance's GPU and how it takes a reset."""

    def __init__(self) -> None:
        self._behaviour: dict[str, tuple[Behaviour, str]] = {}
        self._lock = threading.Lock()
        self.resets: list[tuple[str, str]] = []
        """(instance id, SSM status) of every command run, in order."""

    def behave(self, instance_id: str, behaviour: Behaviour, gpu: str = "00000000:2B:00.0") -> None:
        """``gpu`` (``nvidia-smi``'s PCI form) of the instance behaves so from now on."""
        with self._lock:
            self._behaviour[instance_id] = (behaviour, gpu)

    def run(
        self, instance_id: str, document: str, parameters: dict[str, list[str]]
    ) -> dict[str, Any]:
        """Run the command as the instance's shell would: the invocation's fields after."""
        if document != SHELL_DOCUMENT:
            return _ended(1, "", f"no document {document} on this node")
        with self._lock:
            behaviour, gpu = self._behaviour.get(instance_id, ("healthy", "00000000:2B:00.0"))
        env = {
            **os.environ,
            "PATH": f"{STAND_IN}{os.pathsep}{os.environ.get('PATH', '')}",
            "NODEMEDIC_WORLD_GPU": behaviour,
            "NODEMEDIC_WORLD_GPU_ID": gpu,
        }
        done = subprocess.run(
            ["sh", "-c", "\n".join(parameters.get("commands", []))],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        ended = _ended(done.returncode, done.stdout, done.stderr)
        with self._lock:
            self.resets.append((instance_id, ended["Status"]))
        return ended


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
    with motopatch.commands_run(gpus.run):
        yield
