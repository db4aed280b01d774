"""The chart (deploy/chart/nodemedic) as helm renders it, for the tests: the values a
render needs, over ``world.kube.chart`` (where helm is, the rendered documents, the agent's
command line), which the local world starts its agents with too. helm is never missing: a
chart test that skipped would hide a broken chart.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from world.kube import chart

REQUIRED = {"cluster": "prod-trn", "image.repository": "example.invalid/nodemedic-agent"}
"""The values the chart has no default for."""
ANY_ADDRESS = "0.0.0.0"  # noqa: S104 (a value the chart passes on, not a socket of ours)
SCRAPED = {**REQUIRED, "serviceMonitor.enabled": "true", "agent.metrics.address": ANY_ADDRESS}
"""The values of a cluster whose Prometheus operator scrapes the agents."""


def render(helm: Path, values: Mapping[str, str] = REQUIRED, **options: Any) -> str:
    """``world.kube.chart.render``, with the required values by default; AssertionError with
    helm's words when it refuses."""
    try:
        return chart.render(helm, values, **options)
    except chart.ChartError as exc:
        raise AssertionError(str(exc)) from exc
