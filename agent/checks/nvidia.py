"""NVIDIA GPUs, from ``nvidia-smi -q -x``.

Runs the tool; what its report means is ``nodemedic.health.nvidia_smi``'s, shared with
``nodemedic triage``. The command is configurable so the local mode and tests can replay a
recorded output.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import TYPE_CHECKING

from agent.argtypes import count, seconds
from agent.checks.base import Check, Figure, Result, ToolMissing
from agent.checks.registry import Option, Registration
from agent.expected import expected_count
from agent.telemetry import Family
from agent.telemetry.gpu import gpu_families, node_name
from nodemedic.contracts.health import NVIDIA_SMI_CHECK
from nodemedic.health.nvidia_smi import evaluate_tree

if TYPE_CHECKING:
    from agent.config import Config

COMMAND = Option(
    "--nvidia-smi",
    "nvidia-smi -q -x",
    "command printing nvidia-smi's XML report (default: %(default)s)",
    str,
)
TIMEOUT = Option(
    "--nvidia-smi-timeout",
    60.0,
    "seconds before nvidia-smi counts as failed (default: %(default)s)",
    seconds,
)
EXPECT_GPUS: Option[int | None] = Option(
    "--expect-gpus",
    None,
    "GPUs expected; fewer is GpuMissing (default: the instance type's; 0: unchecked)",
    count,
)


class NvidiaSmi(Check):
    name = NVIDIA_SMI_CHECK

    def __init__(
        self, command: Sequence[str], expected_gpus: int = 0, timeout: float = 60.0
    ) -> None:
        self.command = list(command)
        self.expected_gpus = expected_gpus
        self.timeout = timeout
        self.report: ET.Element | None = None
        """The last report read, for ``families``."""

    def run(self, ts: str) -> list[Result]:
        if not self.command or shutil.which(self.command[0]) is None:
            raise ToolMissing(f"{self.command[0] if self.command else 'nvidia-smi'} not found")

        self.report = None  # a failed run leaves no stale telemetry

        def failed(figures: dict[str, Figure]) -> list[Result]:
            return [Result(NVIDIA_SMI_CHECK, "node", "fail", "SmiFailed", figures, ts)]

        try:
            done = subprocess.run(
                self.command, capture_output=True, timeout=self.timeout, check=False
            )
        except FileNotFoundError as exc:
            raise ToolMissing(str(exc)) from exc
        except subprocess.TimeoutExpired:
            return failed({"timeout_s": self.timeout})
        if done.returncode != 0:
            return failed({"exit_code": done.returncode})
        try:
            # The document is nvidia-smi's own output; expat (>= 2.4) caps entity expansion.
            self.report = ET.fromstring(done.stdout)  # noqa: S314
        except ET.ParseError as exc:
            return failed({"exit_code": 0, "xml_error_line": exc.position[0]})
        return evaluate_tree(self.report, self.expected_gpus, ts)

    def families(self) -> list[Family]:
        """dcgm-exporter's metrics of the last report (``agent.telemetry.gpu``)."""
        if self.report is None:
            return []
        return gpu_families(self.report, node_name())


def expected_gpus(config: Config) -> int:
    """The flag, else the instance type's count: what this check and the deep check expect."""
    return expected_count(EXPECT_GPUS.value(config.check_options), config.instance_type, "gpus")


def build(config: Config) -> NvidiaSmi:
    options = config.check_options
    return NvidiaSmi(
        shlex.split(COMMAND.value(options)), expected_gpus(config), TIMEOUT.value(options)
    )


REGISTRATION = Registration("nvidia", NVIDIA_SMI_CHECK, build, (COMMAND, TIMEOUT, EXPECT_GPUS))
