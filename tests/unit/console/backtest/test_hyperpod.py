"""The backtest reads SageMaker HyperPod's own events, from its log group or a node's file,
and replays them as the classifier decides on them: for the instance the stream names, and
at most notified where the origin is enforced."""

from __future__ import annotations

from console.backtest.read import History, read_events, read_lines
from console.backtest.replay import replay
from console.backtest.report import rows
from nodemedic.detect.classifier import default_classifier
from nodemedic.settings import ClusterSettings
from tests.support.backtest import START
from tests.support.paths import EVENTS

INSTANCE = "i-0a1b2c3d4e5f60718"
TERMINATE = (EVENTS / "hyperpod" / "agent-nvidia-error-terminate.json").read_text().strip()
REBOOT = (EVENTS / "hyperpod" / "agent-nvidia-error-reboot.json").read_text().strip()
ENFORCING = ClusterSettings(name="bt", node_groups=("gpu",))


def decided(found: History, settings: ClusterSettings) -> list[tuple[str, str, str, str]]:
    result = replay(found, default_classifier(), settings)
    return [(row.node, row.fault_id, row.rule_action, row.action) for row in rows(result)]


def test_a_hyperpod_log_group_is_replayed_for_the_instances_its_streams_name() -> None:
    found = History()
    read_events(
        found,
        [
            {
                "logStreamName": f"SagemakerHealthMonitoringAgent/worker-group-1/{INSTANCE}",
                "timestamp": int(START * 1000),
                "message": TERMINATE,
                "eventId": "1",
            },
            {
                "logStreamName": f"LifecycleConfig/worker-group-1/{INSTANCE}",
                "timestamp": int(START * 1000),
                "message": TERMINATE,
                "eventId": "2",
            },
        ],
    )
    assert found.lines == 1
    expected = (INSTANCE, "hyperpod-nvidia-error-terminate", "replace")
    assert decided(found, ENFORCING) == [(*expected, "notify")]
    audit = ClusterSettings(name="bt", node_groups=("gpu",), proof_of_origin="audit")
    assert decided(found, audit) == [(*expected, "replace")]


def test_the_agents_detections_in_a_tailed_group_or_a_nodes_file_are_read() -> None:
    """As ``aws logs tail`` prints HyperPod's group, and as a detection kept in a file named
    after its node (its time from the event's own ``ts``)."""
    stream = f"SagemakerHealthMonitoringAgent/worker-group-1/{INSTANCE}"
    tailed, kept = History(), History()
    read_lines(tailed, [f"2026-11-22T18:00:10.000000+00:00 {stream} {REBOOT}"], "unused", year=2026)
    read_lines(kept, [REBOOT], INSTANCE, year=2026)
    for found in (tailed, kept):
        [(node, fault, rule_action, _)] = decided(found, ENFORCING)
        assert (node, fault, rule_action) == (INSTANCE, "hyperpod-nvidia-error-reboot", "reboot")
