"""Accelerator telemetry on the agent's ``/metrics``: what the node's tools already report
(``nvidia-smi -q -x``, ``neuron-monitor``'s JSON stream), under the names the ecosystem's
exporters give it (dcgm-exporter's ``DCGM_FI_DEV_*``, ``neuron-monitor-prometheus.py``'s),
so existing Grafana dashboards and alerts work unchanged.

A health check that holds such telemetry is an ``Exporter``; the agent renders every
exporter among its checks after its own metrics (``agent.main``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from agent.telemetry.exposition import Family, render


@runtime_checkable
class Exporter(Protocol):
    def families(self) -> list[Family]:
        """The metric families of the last report read; empty before the first."""
        ...


def telemetry(checks: Sequence[object]) -> Callable[[], list[Family]]:
    """The families of every check among ``checks`` that is an exporter, read when called
    (``/metrics`` and the EMF lines of ``agent.telemetry.emf`` share the one reading). A
    family with no sample is left out: a device the node does not have is not announced."""
    exporters = [check for check in checks if isinstance(check, Exporter)]
    return lambda: [
        family for exporter in exporters for family in exporter.families() if family.samples
    ]


def exposition(checks: Sequence[object]) -> Callable[[], str]:
    """What ``/metrics`` adds for ``checks``: the telemetry of each that is an exporter."""
    families = telemetry(checks)
    return lambda: render(families())


__all__ = ["Exporter", "Family", "exposition", "telemetry"]
