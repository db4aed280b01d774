"""AWS Neuron telemetry and ECC health, from ``neuron-monitor``'s JSON report stream.

Where ``neuron-monitor`` is installed the check runs it once, with a config asking for
what the Neuron observability pattern graphs (the runtime groups and the system groups of
``agent.telemetry.neuron_report``), and reads its reports as they come; ``/metrics`` shows
them under ``neuron-monitor-prometheus.py``'s names. At each run it reports, per Neuron
device, uncorrected HBM or SRAM ECC events counted since the last run whose results were
safe: the Neuron runtime guide's answer to either is replacing the instance (catalog rules
``neuron-monitor-*``). A device with none is ``ok``. No report yet: no result.

Where neuron-monitor already runs with its Prometheus exporter, ``--neuron-monitor-metrics``
points the check at that exporter's page instead (``agent.telemetry.neuron_scrape``): no
second neuron-monitor, and no Neuron series exported twice.
"""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.argtypes import seconds
from agent.checkpoint import write_atomically
from agent.checks.base import Check, Result, ToolMissing
from agent.checks.registry import Option, Registration
from agent.telemetry import Family
from agent.telemetry.neuron_report import RUNTIME_GROUPS, SYSTEM_GROUPS, NeuronTelemetry
from agent.telemetry.neuron_scrape import scrape, uncorrected_counts
from agent.telemetry.stream import ReportStream
from nodemedic.contracts.health import NEURON_MONITOR_CHECK

if TYPE_CHECKING:
    from agent.config import Config

TOOL = "neuron-monitor"
CONFIG_MARK = "{config}"
COMMAND = Option(
    "--neuron-monitor",
    f"{TOOL} -c {CONFIG_MARK}",
    f"command streaming neuron-monitor's JSON reports, {CONFIG_MARK} standing for the config "
    "the agent writes (default: %(default)s)",
    str,
)
PERIOD = Option(
    "--neuron-monitor-period",
    5.0,
    "seconds between neuron-monitor reports (default: %(default)s, neuron-monitor's own)",
    seconds,
)
EXISTING = Option(
    "--neuron-monitor-metrics",
    "",
    "URL of a neuron-monitor-prometheus.py already running on the node (e.g. "
    "http://127.0.0.1:8000/metrics): read it instead of starting a second neuron-monitor, "
    "and export no Neuron series of the agent's own (default: start one)",
    str,
)
REASONS = {"mem_ecc_uncorrected": "HbmUncorrectable", "sram_ecc_uncorrected": "SramUncorrectable"}


def monitor_config(period: float) -> dict[str, Any]:
    """neuron-monitor's config (Neuron Monitor User Guide, "Configuration file example"):
    every Neuron application, the groups the prometheus script exports."""
    return {
        "period": f"{period:g}s",
        "neuron_runtimes": [
            {"tag_filter": ".*", "metrics": [{"type": group} for group in RUNTIME_GROUPS]}
        ],
        "system_metrics": [{"type": group} for group in SYSTEM_GROUPS],
    }


class NeuronMonitor(Check):
    name = NEURON_MONITOR_CHECK

    def __init__(
        self,
        command: Sequence[str],
        telemetry: NeuronTelemetry | None = None,
        *,
        existing: str = "",
    ) -> None:
        self.telemetry = telemetry or NeuronTelemetry()
        self.stream = ReportStream(command, self.telemetry.read_line)
        self.existing = existing
        """An existing exporter's /metrics URL, read instead of starting neuron-monitor."""
        self._reported: dict[tuple[str, str], int] = {}
        self._seen: dict[tuple[str, str], int] = {}

    def run(self, ts: str) -> list[Result]:
        self._seen, counted = self._read() if not self.existing else self._scrape()
        devices = sorted({device for device, _ in self._seen} | counted)
        results: list[Result] = []
        for device in devices:
            grown = []
            for counter, reason in REASONS.items():
                total = self._seen.get((device, counter), 0)
                before = self._reported.get((device, counter), 0)
                increase = total - before if total >= before else total  # it restarted
                if increase > 0:
                    figures = {counter: total, "increase": increase}
                    grown.append(Result(NEURON_MONITOR_CHECK, device, "fail", reason, figures, ts))
            results.extend(grown or [Result(NEURON_MONITOR_CHECK, device, "ok", "Healthy", {}, ts)])
        return results

    def _read(self) -> tuple[dict[tuple[str, str], int], set[str]]:
        """The counts of the neuron-monitor the agent runs, started if it is not running."""
        tool = self.stream.command[0] if self.stream.command else TOOL
        if shutil.which(tool) is None:
            raise ToolMissing(f"{tool} not found")
        try:
            self.stream.ensure()
        except OSError as exc:
            raise ToolMissing(f"{tool}: {exc}") from exc
        return self.telemetry.uncorrected(), self._devices()

    def _scrape(self) -> tuple[dict[tuple[str, str], int], set[str]]:
        try:
            text = scrape(self.existing)
        except (OSError, ValueError) as exc:
            raise ToolMissing(f"{self.existing}: {exc}") from exc
        return uncorrected_counts(text, set(REASONS))

    def _devices(self) -> set[str]:
        """The devices the last reports counted ECC events of, none of them uncorrected."""
        return {
            f"neuron{labels['neuron_device_index']}"
            for family in self.telemetry.families()
            if family.name == "hardware_ecc_events_total"
            for labels, _ in family.samples
        }

    def commit(self) -> Callable[[], None]:
        seen = dict(self._seen)
        return lambda: self._reported.update(seen)

    def families(self) -> list[Family]:
        return [] if self.existing else self.telemetry.families()


def command_line(template: str, config: Path) -> list[str]:
    return [str(config) if word == CONFIG_MARK else word for word in shlex.split(template)]


def build(config: Config) -> NeuronMonitor:
    path = config.state_dir / "neuron-monitor.json"
    period = PERIOD.value(config.check_options)
    write_atomically(path, json.dumps(monitor_config(period), indent=2).encode())
    return NeuronMonitor(
        command_line(COMMAND.value(config.check_options), path),
        existing=EXISTING.value(config.check_options),
    )


REGISTRATION = Registration(
    "neuron-monitor", NEURON_MONITOR_CHECK, build, (COMMAND, PERIOD, EXISTING)
)
