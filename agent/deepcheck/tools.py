"""What the deep check's sub-checks share: the node they look at, the tools they run, and
the way a sub-check says it did not run.

Every tool is a command line the operator can replace (``--dcgmi``, ``--all-reduce-perf``
...), like the agent's ``--nvidia-smi``, so a node with the tools elsewhere, and the
tests, run recorded outputs. ``{gpus}`` and ``{devices}`` in a command are the devices found.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agent.argtypes import seconds
from agent.checks.base import ToolMissing
from agent.checks.registry import Option
from nodemedic.health.instance_types import Devices
from nodemedic.health.result import Figure, Result

TIMEOUT = Option(
    "--deep-check-tool-timeout",
    900.0,
    "seconds one deep check tool may run before it counts as failed (default: %(default)s)",
    seconds,
)
DCGMI = Option(
    "--dcgmi", "dcgmi diag -r 2 -j", "DCGM diagnostics command (default: %(default)s)", str
)
ALL_REDUCE_PERF = Option(
    "--all-reduce-perf",
    "all_reduce_perf -b 256M -e 2G -f 2 -g {gpus}",
    "nccl-tests all-reduce command (default: %(default)s)",
    str,
)
NEURON_LS = Option("--neuron-ls", "neuron-ls -j", "neuron-ls command (default: %(default)s)", str)
NCCOM_TEST = Option(
    "--nccom-test", "nccom-test -r 2 allr", "Neuron collectives test (default: %(default)s)", str
)
FI_INFO = Option("--fi-info", "fi_info -p efa", "libfabric EFA listing (default: %(default)s)", str)
FI_PINGPONG = Option(
    "--fi-pingpong",
    "fi_pingpong -p efa -e rdm",
    "libfabric pingpong; run as server, then as client of 127.0.0.1 (default: %(default)s)",
    str,
)
MIN_BUSBW: Option[float | None] = Option(
    "--min-busbw",
    None,
    "least all-reduce bus bandwidth in GB/s (default: the instance type's, in "
    "nodemedic.health.bandwidth; none: measured, not judged)",
    float,
)
OPTIONS = (TIMEOUT, DCGMI, ALL_REDUCE_PERF, NEURON_LS, NCCOM_TEST, FI_INFO, FI_PINGPONG, MIN_BUSBW)
"""The deep check's command-line options; their values travel in ``Config.check_options``."""


class Skip(Exception):
    """The sub-check did not run on this node; ``reason`` (CamelCase) and ``detail`` say why."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


@dataclass
class Node:
    """What one deep check run knows of the node."""

    ts: str
    sys_root: Path
    state_dir: Path
    boot_id: str
    instance_type: str
    expected_gpus: int
    expected_neuron_devices: int
    expected_efa_devices: int
    options: Mapping[str, object] = field(default_factory=dict)

    def command(self, option: Option[str], **devices: int) -> list[str]:
        """The option's command line, with its device placeholders filled in."""
        return shlex.split(option.value(self.options).format(**devices))

    @property
    def timeout(self) -> float:
        return TIMEOUT.value(self.options)


@dataclass(frozen=True)
class Ran:
    exit_code: int
    output: str


def installed(command: list[str]) -> bool:
    return bool(command) and shutil.which(command[0]) is not None


def run_tool(command: list[str], timeout: float) -> Ran | None:
    """The tool's exit code and stdout; None when it ran out of time. Raises ToolMissing."""
    if not installed(command):
        raise ToolMissing(f"{command[0] if command else 'the command'} not found")
    try:
        done = subprocess.run(command, capture_output=True, timeout=timeout, check=False)
    except FileNotFoundError as exc:
        raise ToolMissing(str(exc)) from exc
    except subprocess.TimeoutExpired:
        return None
    return Ran(done.returncode, done.stdout.decode("utf-8", "replace"))


def failed(check: str, ran: Ran | None, node: Node) -> Result:
    """A tool that hung or exited non-zero without output to judge."""
    figures: dict[str, Figure] = (
        {"timeout_s": node.timeout} if ran is None else {"exit_code": ran.exit_code}
    )
    return Result(check, "node", "fail", "ToolFailed", figures, node.ts)


def skipped(check: str, reason: str, detail: str, ts: str) -> Result:
    return Result(check, "node", "skipped", reason, {"detail": detail}, ts)


def count_result(check: str, expected: int, found: int, missing: str, ts: str) -> Result:
    """The device count, always said: ``ok`` with both figures, or ``fail`` (``missing``)."""
    figures: dict[str, Figure] = {"expected": expected, "found": found}
    if found < expected:
        return Result(check, "node", "fail", missing, figures, ts)
    return Result(check, "node", "ok", "Healthy", figures, ts)


def run_optional(
    check: str, command: list[str], node: Node, read: Callable[[Ran], list[Result]]
) -> list[Result]:
    """Run a tool the node may not have: ``skipped`` (``ToolMissing``) without it, ``fail``
    when it hung or printed nothing ``read`` can judge (``read`` raises ValueError)."""
    try:
        ran = run_tool(command, node.timeout)
    except ToolMissing as exc:
        return [skipped(check, "ToolMissing", str(exc), node.ts)]
    if ran is None:
        return [failed(check, ran, node)]
    try:
        return read(ran)
    except ValueError:
        return [failed(check, ran, node)]


Evaluate = Callable[[str, Devices | None, str], list[Result]]
"""A ``nodemedic.dumps`` reader: (output, the devices expected, ts) -> results."""


def run_dump(
    check: str, option: Option[str], node: Node, evaluate: Evaluate, expected: Devices | None
) -> list[Result]:
    """``run_optional`` for a tool whose output ``nodemedic triage`` reads too."""
    return run_optional(
        check, node.command(option), node, lambda ran: evaluate(ran.output, expected, node.ts)
    )
