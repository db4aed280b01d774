"""The backtest replays the quarantine as the state machine runs it: which nodes a storm
would have cordoned before the breaker admitted their repair, when, and which the
quarantine limit left untouched."""

from __future__ import annotations

import dataclasses
from typing import Any

from console.backtest.replay import replay
from console.backtest.report import document
from nodemedic.detect.classifier import default_classifier
from nodemedic.settings import ClusterSettings
from tests.support.backtest import fault_line, history, node

ENFORCING = ClusterSettings(
    name="bt", node_groups=("gpu",), quarantine_group_percent=50, quarantine_cluster_percent=50
)
DISTINCT = (
    "nvidia-xid-79",
    "nvidia-gpu-fallen-off-bus",
    "efa-device-reset-failed",
    "edac-uncorrectable",
    "memory-failure",
    "nvme-controller-lost",
)
"""Six distinct replace-level faults: independent hardware, no fleet event."""


def _storm(settings: ClusterSettings, group_size: int, faults: tuple[str, ...]) -> dict[str, Any]:
    lines = history([(10 + i, node(i), fault_line(f)) for i, f in enumerate(faults)])
    return document(replay(lines, default_classifier(), settings, group_size=group_size))


def _faulty(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [row for row in doc["rows"] if row["decided"] is not None]


def test_a_storm_of_distinct_faults_is_quarantined_at_once_while_the_breaker_paces_it() -> None:
    doc = _storm(ENFORCING, 20, DISTINCT)

    rows = _faulty(doc)
    assert [row["quarantined"] for row in rows] == [row["decided"] for row in rows]
    assert not any(row["quarantine_refused"] for row in rows)
    # max_parallel 2: the breaker held the rest, cordoned meanwhile.
    assert sum(1 for row in rows if row["breaker"]) == len(DISTINCT) - ENFORCING.max_parallel
    assert doc["totals"]["quarantined"] == len(DISTINCT)
    # The repairs keep their own limits: three replacements an hour.
    assert doc["totals"]["replaced"] == ENFORCING.replacements_per_hour


def test_the_quarantine_limit_leaves_the_rest_of_a_storm_to_the_breaker() -> None:
    doc = _storm(ENFORCING, 7, DISTINCT)  # 50 % of 7 nodes: 3

    rows = _faulty(doc)
    assert [row["quarantined"] is not None for row in rows] == [True] * 3 + [False] * 3
    assert [row["quarantine_refused"] for row in rows] == [False] * 3 + [True] * 3
    assert (doc["totals"]["quarantined"], doc["totals"]["quarantine_refused"]) == (3, 3)


def test_a_fleet_event_is_quarantined_only_before_its_pattern_shows() -> None:
    doc = _storm(ENFORCING, 20, ("nvidia-xid-79",) * 6)

    assert {row["action"] for row in _faulty(doc)} == {"held-fleet"}
    assert doc["totals"]["quarantined"] <= ENFORCING.fleet_min_nodes - 1


def test_a_monitor_only_cluster_quarantines_nothing() -> None:
    for settings in (
        dataclasses.replace(ENFORCING, dry_run=True),
        dataclasses.replace(ENFORCING, recovery_mode="None"),
    ):
        doc = _storm(settings, 20, DISTINCT)
        assert doc["totals"]["quarantined"] == 0
        assert all(row["quarantined"] is None for row in doc["rows"])
