"""The Prometheus text exposition format (version 0.0.4) of every family on ``/metrics``:
the agent's own and the accelerators', whose names and labels other exporters chose.

``prometheus_client`` writes it (``# HELP`` and ``# TYPE`` once per family, label values
and help texts escaped); the agent only hands it the families of one scrape. Its counters
follow OpenMetrics, where a counter's samples end in ``_total``: a counter named otherwise
(dcgm-exporter's ``DCGM_FI_DEV_RETIRED_SBE``) is exposed untyped, which keeps its name
and which PromQL reads as it reads a counter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

Kind = Literal["gauge", "counter"]
Labels = Mapping[str, str]
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
_TOTAL = "_total"


@dataclass
class Family:
    name: str
    kind: Kind
    help: str
    samples: list[tuple[Labels, float]] = field(default_factory=list)

    def add(self, labels: Labels, value: float) -> None:
        self.samples.append((labels, value))


def _metric(family: Family) -> Metric:
    """``family`` as the library's metric; its samples keep ``family.name`` as it is."""
    if family.kind == "gauge":
        metric = Metric(family.name, family.help, "gauge")
    elif family.name.endswith(_TOTAL):
        metric = Metric(family.name.removesuffix(_TOTAL), family.help, "counter")
    else:
        metric = Metric(family.name, family.help, "unknown")
    for labels, value in family.samples:
        metric.add_sample(family.name, {k: str(v) for k, v in labels.items()}, value)
    return metric


class _Scrape(Collector):
    """The families of one scrape, read once."""

    def __init__(self, families: Iterable[Family]) -> None:
        self.metrics = [_metric(family) for family in families]

    def collect(self) -> Iterable[Metric]:
        return self.metrics


def render(families: Iterable[Family]) -> str:
    """``families`` in the order given, each with its ``# HELP`` and ``# TYPE`` even when it
    has no sample."""
    return generate_latest(_Scrape(families)).decode("utf-8")
