"""Accelerator telemetry on the agent's ``/metrics``: what the node's tools already report
(``nvidia-smi -q -x``, ``neuron-monitor``'s JSON stream), under the names the ecosystem's
exporters give it (dcgm-exporter's ``DCGM_FI_DEV_*``, ``neuron-monitor-prometheus.py``'s),
so existing Grafana dashboards and alerts work unchanged.

A health check that holds such telemetry is an ``Exporter``; the agent renders every
exporter among its checks after its own metrics (``agent.main``). Where dcgm-exporter
already runs (the GPU Operator), the same names twice would double every ``sum()``:
``dcgm_named`` leaves them out of ``/metrics`` or prefixes them (``--dcgm-names``,
``--metric-prefix``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from agent.telemetry.exposition import Family, render

DCGM_NAMES = "DCGM_FI_DEV_"
"""What dcgm-exporter's own families' names begin with."""


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


def dcgm_named(
    families: Callable[[], list[Family]], dcgm_names: bool, prefix: str
) -> Callable[[], list[Family]]:
    """``families`` as ``/metrics`` shows them: dcgm-exporter's left out (``dcgm_names``
    off) or renamed ``<prefix><name>``; the others as they are. The EMF lines keep reading
    the unrenamed families: CloudWatch has no dcgm-exporter beside it to collide with."""

    def exposed() -> list[Family]:
        return [
            dataclasses.replace(family, name=prefix + family.name)
            if family.name.startswith(DCGM_NAMES)
            else family
            for family in families()
            if dcgm_names or not family.name.startswith(DCGM_NAMES)
        ]

    return exposed


def exposition(checks: Sequence[object]) -> Callable[[], str]:
    """What ``/metrics`` adds for ``checks``: the telemetry of each that is an exporter."""
    families = telemetry(checks)
    return lambda: render(families())


__all__ = ["DCGM_NAMES", "Exporter", "Family", "dcgm_named", "exposition", "telemetry"]
