"""The backtest reads SageMaker HyperPod's own events, from its log group or a node's file,
and replays them as the classifier decides on them: for the instance the stream names, and
at most notified where the origin is enforced."""

from __future__ import annotations

from console.backtest.read import History, read_events, read_lines
from console.backtest.replay import replay
from console.backtest.report import document, rows
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


def _agent_history(message: str) -> History:
    """``message`` as ``aws logs tail`` prints HyperPod's group."""
    stream = f"SagemakerHealthMonitoringAgent/worker-group-1/{INSTANCE}"
    found = History()
    read_lines(found, [f"2026-11-22T18:00:10.000000+00:00 {stream} {message}"], "-", year=2026)
    return found


def test_a_listed_hyperpod_cluster_is_replayed_as_hyperpod_s_own_repair_would_have_it() -> None:
    """Its NodeRecovery cannot be read offline: taken as Automatic, its default, the repair
    is deferred to HyperPod (notified), and the document names the substrate."""
    settings = ClusterSettings(
        name="bt",
        hyperpod_clusters=(("ml-cluster", "abcdef123456"),),
        hyperpod_repair="when_recovery_off",
        proof_of_origin="audit",
    )
    result = replay(_agent_history(TERMINATE), default_classifier(), settings, group="ml-cluster")
    doc = document(result)
    assert (doc["substrate"], doc["monitor_only"]) == ("hyperpod", False)
    (row,) = doc["rows"]
    assert (row["action"], row["would"]) == ("notify", "notify")
    assert "replace deferred: HyperPod's automatic node recovery is on" in row["reason"]


def test_a_listed_nodepool_is_replayed_as_karpenter_repairs_it() -> None:
    settings = ClusterSettings(
        name="bt", karpenter_nodepools=("gpu-pool",), proof_of_origin="audit"
    )
    result = replay(_agent_history(REBOOT), default_classifier(), settings, group="gpu-pool")
    doc = document(result)
    assert (doc["substrate"], doc["monitor_only"]) == ("karpenter", False)
    assert [row["action"] for row in doc["rows"]] == ["reboot"]


def test_a_deep_check_result_is_replayed_for_the_instance_it_names_itself() -> None:
    """On a ``DeepHealthCheckResults/<log_stream_id>`` stream that names no instance, as the
    classifier places it: by the one instance the result names; one naming none is skipped."""
    named = (EVENTS / "hyperpod" / "deep-health-check-faulty-instance-named.json").read_text()
    unnamed = (EVENTS / "hyperpod" / "deep-health-check-faulty-instance.json").read_text()
    found = History()
    read_events(
        found,
        [
            {
                "logStreamName": "DeepHealthCheckResults/3f2a9c1e-run",
                "timestamp": int(START * 1000),
                "message": message.strip(),
                "eventId": str(n),
            }
            for n, message in enumerate((unnamed, named))
        ],
    )
    assert found.lines == 1
    assert decided(found, ENFORCING) == [
        (INSTANCE, "hyperpod-deep-health-check-replace", "replace", "notify")
    ]
