"""The replay decides as the pipeline would: thresholds, fleet correlation, the breaker's
limits, escalation, and a monitor-only default."""

from __future__ import annotations

from dataclasses import replace

from console.backtest.read import read_events
from console.backtest.replay import Replay, replay
from console.backtest.report import document, rows
from nodemedic.detect.classifier import default_classifier
from nodemedic.settings import ClusterSettings
from tests.support.backtest import START, fault_line, history, node

ENFORCING = ClusterSettings(name="bt", node_groups=("gpu",))
XID79 = fault_line("nvidia-xid-79")
"""GPU fallen off the bus: replace."""
XID48 = fault_line("nvidia-xid-48")
"""Double bit error: reboot."""


def actions(result: Replay) -> dict[tuple[str, str], list[str]]:
    found: dict[tuple[str, str], list[str]] = {}
    for row in rows(result):
        found.setdefault((row.node, row.fault_id), []).append(row.action)
    return found


def test_defaults_are_monitor_only_and_say_so() -> None:
    result = replay(history([(10, node(1), XID79)]), default_classifier(), ClusterSettings("bt"))
    doc = document(result)
    assert doc["monitor_only"] is True
    (row,) = doc["rows"]
    assert (row["action"], row["would"], row["cordoned"]) == ("monitor", "replace", False)
    assert doc["totals"]["cordoned"] == doc["totals"]["replaced"] == 0


def test_enforcing_cluster_replaces_after_the_fleet_window_settles() -> None:
    doc = document(replay(history([(10, node(1), XID79)]), default_classifier(), ENFORCING))
    (row,) = doc["rows"]
    assert (row["action"], row["cordoned"]) == ("replace", True)
    assert row["first_line"] == "2026-11-22T18:00:10Z"
    assert row["acted"] == "2026-11-22T18:01:10Z"  # fleet_settle (60 s) after the sighting
    assert doc["totals"]["replaced"] == doc["totals"]["cordoned"] == 1
    assert doc["totals"]["nodes"] == 2  # the healthy node counts too


def test_a_threshold_is_reached_only_at_its_nth_line() -> None:
    line = fault_line("mlx5-access-reg-failed")  # notify at 5 within an hour
    rule = default_classifier().catalog.rule("mlx5-access-reg-failed")
    assert rule.threshold is not None
    needed = rule.threshold.count
    short = history([(60 * i, node(1), line) for i in range(needed - 1)])
    assert actions(replay(short, default_classifier(), ENFORCING)) == {
        (node(1), "mlx5-access-reg-failed"): ["below-threshold"]
    }
    enough = history([(60 * i, node(1), line) for i in range(needed)])
    (row,) = rows(replay(enough, default_classifier(), ENFORCING))
    assert (row.action, row.lines) == ("notify", needed)
    assert row.decided == row.first_line + 60 * (needed - 1)  # at the nth line, not the first


def test_the_same_fault_on_many_nodes_at_once_is_held_as_a_fleet_event() -> None:
    storm = history([(10 + i, node(i), XID79) for i in range(6)])
    doc = document(replay(storm, default_classifier(), ENFORCING))
    assert {row["action"] for row in doc["rows"]} == {"held-fleet"}
    assert doc["totals"]["held_fleet"] == 6
    assert doc["totals"]["replaced"] == 0


def test_the_breaker_holds_replacements_past_the_hourly_limit() -> None:
    limits = replace(ENFORCING, breaker_hold=600)
    # One node every 11 minutes: never a fleet event (each window holds one node), all
    # within one clock hour.
    spread = history([(660 * i, node(i), XID79) for i in range(5)])
    result = replay(spread, default_classifier(), limits)
    doc = document(result)
    assert [row["action"] for row in doc["rows"] if row["node"] != node(999)] == [
        "replace",
        "replace",
        "replace",
        "held-breaker",
        "held-breaker",
    ]
    assert doc["totals"]["replaced"] == limits.replacements_per_hour
    assert doc["totals"]["held_breaker"] == 2
    held = doc["rows"][3]
    assert "replace limit 3 per hour" in held["reason"]


def test_a_held_decision_is_admitted_once_the_cooldown_and_the_hour_are_over() -> None:
    spread = history([(660 * i, node(i), XID79) for i in range(4)])
    result = replay(spread, default_classifier(), ENFORCING)
    fourth = next(o for n, o in result.outcomes if n == node(3))
    assert fourth.action == "replace"
    assert fourth.trips  # held first
    assert fourth.acted_at is not None
    assert fourth.acted_at > fourth.decided_at + ENFORCING.breaker_cooldown


def test_a_reboot_that_does_not_cure_the_fault_escalates_to_a_replacement() -> None:
    again = history([(10, node(1), XID48), (1800, node(1), XID48)])
    assert actions(replay(again, default_classifier(), ENFORCING)) == {
        (node(1), "nvidia-xid-48"): ["reboot", "replace"]
    }


def test_one_decision_per_node_and_batch_the_strongest() -> None:
    both = history([(10, node(1), XID48), (10.2, node(1), XID79)])
    found = actions(replay(both, default_classifier(), ENFORCING))
    assert found[(node(1), "nvidia-xid-79")] == ["replace"]
    assert found[(node(1), "nvidia-xid-48")] == ["superseded"]


def test_a_line_cloudwatch_took_in_past_stale_after_is_notified_as_the_pipeline_would() -> None:
    logged = START + 10
    late = [
        {
            "logStreamName": f"{node(1)}/kmsg",
            "timestamp": int(logged * 1000),
            "ingestionTime": int((logged + ENFORCING.stale_after + 1) * 1000),
            "message": XID79,
            "eventId": "late",
        }
    ]
    found = history([])
    read_events(found, late)

    (row,) = rows(replay(found, default_classifier(), ENFORCING))

    assert (row.rule_action, row.action, row.cordoned) == ("replace", "notify", False)
    assert "stale" in row.reason, row.reason
