"""The classifier Lambda on moto: subscription payload in, Step Functions executions out."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from lambdas.environment import EnvError
from lambdas.recorded import record_start
from nodemedic.catalog import load_catalog
from nodemedic.contracts.env import ENV_ACCEPT_INJECTED
from nodemedic.remediate.recorded import KEPT_DAYS, marker
from tests.support.classify import CONTEXT, World, executions
from tests.support.payloads import decoded, wrap


def test_a_fault_line_starts_one_remediation_for_the_node_that_wrote_it(aws: World) -> None:
    result = aws["handler"](wrap(decoded("xid79-with-noise.json")), CONTEXT)
    assert result["lines"] == 4 and result["faults"] == 3
    [decision] = executions(aws)
    assert decision["instance_id"] == "i-0a1b2c3d4e5f60718"  # the stream, not the message
    assert decision["cluster"] == "trn-prod"
    assert decision["fault_id"] == "nvidia-xid-79"
    assert decision["action"] == "replace"
    assert decision["health_status"] == "UnschedulablePendingReplacement"
    assert decision["evidence_line"].startswith("NVRM: Xid (PCI:0000:2b:00): 79")
    assert decision["count"] == 2
    assert decision["first_seen"] == "2025-11-22T18:30:01Z"
    assert decision["schema"] == 1 and decision["source"] == "kmsg"
    assert result["started"] == [decision["decision_id"]]
    # The "fallen off the bus" line is the same failure: one replacement, not two.
    [superseded] = result["superseded"]
    assert "nvidia-gpu-fallen-off-bus" in superseded


def test_each_start_is_recorded_first_and_a_second_decision_of_its_id_keeps_the_first(
    aws: World, ledger: str
) -> None:
    result = aws["handler"](wrap(decoded("xid79-with-noise.json")), CONTEXT)
    [decision] = executions(aws)
    key = {"pk": {"S": "recorded#classifier"}, "sk": {"S": decision["decision_id"]}}
    dynamodb = boto3.client("dynamodb")
    recorded = dynamodb.get_item(TableName=ledger, Key=key)["Item"]
    assert recorded == marker(
        decision, starts_at=int(recorded["purge_at"]["N"]) - KEPT_DAYS * 86400
    )
    assert result["started"] == [decision["decision_id"]]

    record_start(dynamodb, ledger, decision | {"count": 3}, starts_at=0)

    assert dynamodb.get_item(TableName=ledger, Key=key)["Item"] == recorded


def test_the_same_batch_delivered_twice_is_acted_on_once(aws: World) -> None:
    payload = wrap(decoded("xid79-with-noise.json"))
    first = aws["handler"](payload, CONTEXT)
    second = aws["handler"](payload, CONTEXT)
    assert len(executions(aws)) == 1
    assert second["started"] == [] and second["duplicates"] == first["started"]


def test_a_threshold_rule_waits_for_its_count(aws: World) -> None:
    rule = next(r for r in load_catalog().rules if r.threshold and r.source == "kmsg")
    assert rule.threshold is not None
    data = decoded("xid79-with-noise.json")
    data["logEvents"] = [{"id": "1", "timestamp": 1763836200000, "message": rule.example}]
    assert rule.threshold.count > 1
    first = aws["handler"](wrap(data), CONTEXT)
    assert first["below_threshold"] == [rule.id]
    assert executions(aws) == []
    for n in range(1, rule.threshold.count):
        data["logEvents"][0]["timestamp"] += 1000
        data["logEvents"][0]["id"] = str(n + 1)
        aws["handler"](wrap(data), CONTEXT)
    [decision] = executions(aws)
    assert decision["fault_id"] == rule.id and decision["count"] == rule.threshold.count


def test_hits_further_apart_than_the_window_do_not_add_up(aws: World) -> None:
    rule = next(
        r
        for r in load_catalog().rules
        if r.threshold and r.threshold.count == 2 and r.source == "kmsg"
    )
    assert rule.threshold is not None
    data = decoded("xid79-with-noise.json")
    data["logEvents"] = [{"id": "1", "timestamp": 1763836200000, "message": rule.example}]
    aws["handler"](wrap(data), CONTEXT)
    data["logEvents"][0]["timestamp"] += (rule.threshold.window + 1) * 1000
    result = aws["handler"](wrap(data), CONTEXT)
    assert result["below_threshold"] == [rule.id]
    assert executions(aws) == []


def test_a_threshold_counts_a_redelivered_line_once(aws: World) -> None:
    """Subscription delivery is at least once: one GpuMissing result (threshold 2) sent
    twice is still one hit, and must not reboot the node."""
    rule = next(
        r
        for r in load_catalog().rules
        if r.threshold and r.threshold.count == 2 and r.source == "health"
    )
    data = decoded("health-mixed.json")
    data["logEvents"] = [{"id": "36937", "timestamp": 1763836200000, "message": rule.example}]
    for _ in range(2):
        result = aws["handler"](wrap(data), CONTEXT)
        assert result["below_threshold"] == [rule.id]
    assert executions(aws) == []
    data["logEvents"][0]["id"] = "36938"
    data["logEvents"][0]["timestamp"] += 60_000
    assert aws["handler"](wrap(data), CONTEXT)["started"]
    [decision] = executions(aws)
    assert decision["count"] == 2


def test_health_results_become_faults_and_a_torn_line_loses_nothing_else(aws: World) -> None:
    result = aws["handler"](wrap(decoded("health-mixed.json")), CONTEXT)
    [decision] = executions(aws)
    assert decision["source"] == "health" and decision["action"] == "replace"
    assert '"reason":"RowRemapFailure"' in decision["evidence_line"]
    assert result["lines"] == 3 and result["faults"] == 1


def test_a_control_message_does_nothing(aws: World) -> None:
    assert aws["handler"](wrap(decoded("control-message.json")), CONTEXT) == {"lines": 0}
    assert executions(aws) == []


@pytest.mark.parametrize(
    "event",
    [
        {"awslogs": {"data": "not base64 at all!"}},
        {"awslogs": {"data": "aGVsbG8="}},  # base64 of "hello", not gzip
        {"Records": []},
        wrap({"messageType": "DATA_MESSAGE"}),
    ],
    ids=["bad-base64", "not-gzip", "wrong-event", "missing-fields"],
)
def test_malformed_payloads_fail_with_a_clear_error_for_the_dead_letter_queue(
    aws: World, event: dict[str, Any]
) -> None:
    with pytest.raises(aws["module"].MalformedPayload, match="subscription payload"):
        aws["handler"](event, CONTEXT)


def test_a_stream_that_does_not_name_a_node_is_refused(aws: World) -> None:
    data = decoded("xid79-with-noise.json")
    data["logStream"] = "some-other-writer"
    with pytest.raises(aws["module"].MalformedPayload, match="is not <instance-id>"):
        aws["handler"](wrap(data), CONTEXT)
    assert executions(aws) == []


@pytest.mark.parametrize(
    ("setting", "action"), [(None, "notify"), ("false", "notify"), ("true", "replace")]
)
def test_an_injected_line_acts_only_where_the_cluster_accepts_injected_faults(
    aws: World, monkeypatch: pytest.MonkeyPatch, setting: str | None, action: str
) -> None:
    if setting is not None:
        monkeypatch.setenv(ENV_ACCEPT_INJECTED, setting)
    data = decoded("xid79-with-noise.json")
    line = "[injected facility=1] NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus."
    data["logEvents"] = [{"id": "1", "timestamp": 1763836200000, "message": line}]
    result = aws["handler"](wrap(data), CONTEXT)
    [decision] = executions(aws)
    assert (decision["fault_id"], decision["action"]) == ("nvidia-xid-79", action)
    assert result["capped"] == ([] if action == "replace" else result["started"])


def test_a_bad_setting_fails_the_first_invocation(
    aws: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even a control message, which reads nothing else: the error comes at cold start, not
    from whichever later invocation first needs the variable."""
    monkeypatch.setenv(ENV_ACCEPT_INJECTED, "yes")
    with pytest.raises(EnvError, match=ENV_ACCEPT_INJECTED):
        aws["handler"](wrap(decoded("control-message.json")), CONTEXT)
    monkeypatch.setenv(ENV_ACCEPT_INJECTED, "true")
    assert aws["handler"](wrap(decoded("control-message.json")), CONTEXT) == {"lines": 0}


def test_a_threshold_counts_two_copies_of_one_line_once_and_two_lines_twice(aws: World) -> None:
    """An agent that retries a PutLogEvents whose answer was lost, or drains its spool,
    has CloudWatch store the line again under a new event id: one GpuMissing result
    (threshold 2) stored twice, in one batch or in two, is one hit and reboots nothing."""
    rule = next(r for r in load_catalog().rules if r.id == "nvidia-smi-gpu-missing")
    assert rule.threshold is not None and rule.threshold.count == 2
    data = decoded("health-mixed.json")
    at = 1763836200000
    line = {"id": "36937", "timestamp": at, "message": rule.example}
    data["logEvents"] = [line, {**line, "id": "36938"}]
    assert aws["handler"](wrap(data), CONTEXT)["below_threshold"] == [rule.id]
    data["logEvents"] = [{**line, "id": "36990"}]
    assert aws["handler"](wrap(data), CONTEXT)["below_threshold"] == [rule.id]
    assert executions(aws) == []
    data["logEvents"] = [{**line, "id": "36991", "timestamp": at + 60_000}]
    assert aws["handler"](wrap(data), CONTEXT)["started"]
    [decision] = executions(aws)
    assert decision["count"] == 2
