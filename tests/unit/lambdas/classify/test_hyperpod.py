"""SageMaker HyperPod's own findings through the classify handler: the events as HyperPod
writes them (tests/events/hyperpod) become decisions of source ``hyperpod`` for the instance
their stream names, at most notified unless the cluster lets them act; a listed group's bad
event costs only itself; a group the cluster does not list is refused and counted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lambdas.environment import EnvError
from nodemedic.contracts.env import (
    ENV_CLUSTER,
    ENV_PROOF_OF_ORIGIN,
    HYPERPOD_EVENTS_ENV,
    HYPERPOD_LOG_GROUPS_ENV,
)
from nodemedic.contracts.metrics import (
    HYPERPOD_REFUSED_METRIC,
    UNPARSABLE_METRIC,
    UNPROVEN_METRIC,
)
from nodemedic.contracts.substrates import HYPERPOD_SOURCE, hyperpod_log_group
from nodemedic.remediate.decision import UNPROVEN_NOTE
from nodemedic.remediate.hyperpod import HYPERPOD_UNPROVEN
from tests.support.classify import CONTEXT, World, executions
from tests.support.paths import EVENTS
from tests.support.payloads import wrap

CLUSTER = "trn-prod"
GROUP = hyperpod_log_group("ml-cluster", "9ixsdpsjyi2y")
INSTANCE = "i-0a1b2c3d4e5f60718"
AGENT_STREAM = f"SagemakerHealthMonitoringAgent/worker-group-1/{INSTANCE}"
DEEP_STREAM = f"DeepHealthCheckResults/{INSTANCE}"
AT = 1763836200000


def event(name: str) -> str:
    return (EVENTS / "hyperpod" / name).read_text().strip()


def payload(messages: list[str], stream: str = AGENT_STREAM, group: str = GROUP) -> dict[str, Any]:
    return {
        "messageType": "DATA_MESSAGE",
        "owner": "123456789012",
        "logGroup": group,
        "logStream": stream,
        "subscriptionFilters": ["nodemedic-hyperpod"],
        "logEvents": [
            {"id": str(n), "timestamp": AT + n, "message": message}
            for n, message in enumerate(messages, start=1)
        ],
    }


def printed_metrics(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


@pytest.fixture
def listed(aws: World, monkeypatch: pytest.MonkeyPatch) -> World:
    """The cluster lists GROUP and enforces the origin, as it does by default."""
    monkeypatch.setenv(HYPERPOD_LOG_GROUPS_ENV, f"/aws/sagemaker/Clusters/other/abc, {GROUP}")
    monkeypatch.setenv(ENV_CLUSTER, CLUSTER)
    monkeypatch.setenv(ENV_PROOF_OF_ORIGIN, "enforce")
    return aws


REAL = [
    (
        "agent-nvidia-error-terminate.json",
        AGENT_STREAM,
        "hyperpod-nvidia-error-terminate",
        "replace",
    ),
    ("agent-nvidia-error-reboot.json", AGENT_STREAM, "hyperpod-nvidia-error-reboot", "reboot"),
    (
        "deep-health-check-faulty-instance.json",
        DEEP_STREAM,
        "hyperpod-deep-health-check-replace",
        "replace",
    ),
]


@pytest.mark.parametrize("case", REAL, ids=[r[0] for r in REAL])
def test_a_hyperpod_finding_acts_where_the_cluster_lets_it(
    listed: World, monkeypatch: pytest.MonkeyPatch, case: tuple[str, str, str, str]
) -> None:
    name, stream, fault, action = case
    monkeypatch.setenv(HYPERPOD_EVENTS_ENV, "act")
    result = listed["handler"](wrap(payload([event(name)], stream)), CONTEXT)
    [decision] = executions(listed)
    assert result["started"] == [decision["decision_id"]] and result["source"] == "hyperpod"
    assert decision["source"] == HYPERPOD_SOURCE and decision["fault_id"] == fault
    assert decision["action"] == action
    assert decision["instance_id"] == INSTANCE and decision["cluster"] == CLUSTER
    assert decision["evidence_line"] == event(name)


def test_by_default_a_hyperpod_finding_is_notified_with_the_reason_and_pages_nobody(
    listed: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """Any node of the cluster can write the group: unproven, the replace is capped to a
    notify that says why; counted as unproven, but not by reason (whose alarm pages)."""
    line = event("agent-nvidia-error-terminate.json")
    result = listed["handler"](wrap(payload([line])), CONTEXT)
    [decision] = executions(listed)
    assert (
        decision["action"] == "notify" and decision["fault_id"] == "hyperpod-nvidia-error-terminate"
    )
    note = UNPROVEN_NOTE.format(reason=HYPERPOD_UNPROVEN.reason, action="replace")
    assert decision["evidence_line"] == note + line
    assert result["capped"] == [decision["decision_id"]] and result["unproven"] == ["1"]
    counts = printed_metrics(capsys)
    assert [c[UNPROVEN_METRIC] for c in counts if UNPROVEN_METRIC in c] == [[1.0]]
    assert not [c for c in counts if UNPROVEN_METRIC in c and "Reason" in c]


def test_an_event_that_does_not_parse_is_counted_and_the_rest_of_the_batch_classified(
    listed: World, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    good = event("agent-nvidia-error-reboot.json")
    bad = '{"level":"info","msg":"NPD caught event: %v","HealthMonitoringAgentDetectionEvent":1}'
    result = listed["handler"](wrap(payload(["not json", bad, good])), CONTEXT)
    [decision] = executions(listed)
    assert decision["fault_id"] == "hyperpod-nvidia-error-reboot"
    assert result["unparsable"] == ["1", "2"] and result["started"] == [decision["decision_id"]]
    [counted] = [c for c in printed_metrics(capsys) if UNPARSABLE_METRIC in c]
    assert counted[UNPARSABLE_METRIC] == [2.0] and counted["Cluster"] == CLUSTER
    [told] = [r for r in caplog.records if r.getMessage() == "unparsable lines"]
    assert [line["event_id"] for line in told.__dict__["lines"]] == ["1", "2"]


@pytest.mark.parametrize(
    "case",
    [
        ("/aws/sagemaker/Clusters/ml-cluster/otherid00000", AGENT_STREAM, "unlisted"),
        (GROUP, f"LifecycleConfig/worker-group-1/{INSTANCE}", "no-instance"),
        (GROUP, "DeepHealthCheckResults/3f2a9c1e-run", "no-instance"),
    ],
    ids=["unlisted-group", "lifecycle-stream", "deep-check-stream-of-no-instance"],
)
def test_a_hyperpod_event_the_cluster_cannot_place_is_refused_and_counted(
    listed: World,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    case: tuple[str, str, str],
) -> None:
    """Refused whole, even where HyperPod's events may act: nothing is started, and the
    events are counted by the reason, not sent to the dead-letter queue."""
    group, stream, reason = case
    monkeypatch.setenv(HYPERPOD_EVENTS_ENV, "act")
    lines = [event("agent-nvidia-error-terminate.json")] * 3
    result = listed["handler"](wrap(payload(lines, stream, group)), CONTEXT)
    assert result == {"refused": reason, "lines": 3}
    assert executions(listed) == []
    [counted] = [c for c in printed_metrics(capsys) if HYPERPOD_REFUSED_METRIC in c]
    assert counted[HYPERPOD_REFUSED_METRIC] == [3.0] and counted["Reason"] == reason


def test_a_hyperpod_group_is_refused_where_the_cluster_lists_none(aws: World) -> None:
    result = aws["handler"](wrap(payload([event("agent-nvidia-error-reboot.json")])), CONTEXT)
    assert result == {"refused": "unlisted", "lines": 1} and executions(aws) == []


def test_listing_hyperpod_groups_without_the_cluster_name_fails_the_first_invocation(
    aws: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(HYPERPOD_LOG_GROUPS_ENV, GROUP)
    with pytest.raises(EnvError, match=ENV_CLUSTER):
        aws["handler"](wrap(payload([event("agent-nvidia-error-reboot.json")])), CONTEXT)


def test_a_deep_check_stream_that_names_no_instance_is_placed_event_by_event(
    listed: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``DeepHealthCheckResults/<log_stream_id>``: each result is the node its own fields
    name; one that names none is refused and counted, the rest classified."""
    monkeypatch.setenv(HYPERPOD_EVENTS_ENV, "act")
    named = event("deep-health-check-faulty-instance-named.json")
    unnamed = event("deep-health-check-faulty-instance.json")
    stream = "DeepHealthCheckResults/3f2a9c1e-run"
    result = listed["handler"](wrap(payload([unnamed, named], stream)), CONTEXT)
    [decision] = executions(listed)
    assert (decision["instance_id"], decision["action"]) == (INSTANCE, "replace")
    assert decision["fault_id"] == "hyperpod-deep-health-check-replace"
    assert decision["evidence_line"] == named
    assert result["refused"] == "no-instance" and result["lines"] == 1
    assert [node["started"] for node in result["nodes"]] == [[decision["decision_id"]]]
    [counted] = [c for c in printed_metrics(capsys) if HYPERPOD_REFUSED_METRIC in c]
    assert counted[HYPERPOD_REFUSED_METRIC] == [1.0] and counted["Reason"] == "no-instance"
