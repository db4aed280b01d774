"""The storm benchmark at a small size: light stream writers in place of agent processes
still drive the whole pipeline, and the storm is decided as the fleet event it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.storm import storm

pytestmark = [pytest.mark.kube, pytest.mark.slow]


def test_a_storm_of_light_writers_is_one_fleet_event_and_harms_no_node(tmp_path: Path) -> None:
    figures = storm(nodes=8, share=0.75, spread=2.0, workdir=tmp_path)
    assert figures["errors"] == 0, figures
    assert figures["stormed"] == 6
    # One execution per stormed node, every one finished, the breaker never tripped.
    assert figures["executions"] == 6
    assert figures["statuses"] == {"SUCCEEDED": 6}
    assert figures["breaker"] == "closed"
    # One mail; every stormed node given back marked; at most the first two cordoned.
    assert figures["fleet_mails"] == 1
    assert figures["fleet_labelled"] == 6
    assert figures["cordoned"] <= 2
    assert figures["still_cordoned"] == 0
    # 8 heartbeats, 8 health runs of 8 results, 3 benign lines, 6 faults.
    assert figures["lines"] == 8 + 64 + 3 + 6
    assert figures["deliveries"] > 0


def test_a_storm_of_distinct_faults_is_no_fleet_event_and_the_breaker_paces_it(
    tmp_path: Path,
) -> None:
    figures = storm(nodes=8, share=0.5, spread=1.0, workdir=tmp_path, distinct=True)
    assert figures["errors"] == 0, figures
    assert figures["stormed"] == 4 and figures["executions"] == 4
    assert figures["statuses"] == {"SUCCEEDED": 4}
    # Four nodes, four different faults: no fleet event, each node acted on or held.
    assert figures["fleet_mails"] == 0 and figures["fleet_labelled"] == 0
    acted = sum(figures["outcomes"].get(o, 0) for o in ("rebooted", "replaced"))
    assert acted >= 1 and figures["cordoned"] >= acted
    assert figures["cordon_p50_s"] is not None
    assert 0 < figures["cordon_p50_s"] <= figures["cordon_p90_s"]
