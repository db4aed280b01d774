"""Replayed and late lines: a fault line heard more than ``stale_after`` after it was logged
is notified as stale, never acted on; a heartbeat counts from when it was written."""

from __future__ import annotations

import time
from typing import Any

import boto3
import pytest

from nodemedic.contracts.env import ENV_STALE_AFTER
from nodemedic.contracts.ledger import HEARTBEAT_PK
from nodemedic.contracts.logs import heartbeat_message
from nodemedic.detect.classifier import default_classifier
from nodemedic.remediate.batch import LogEvent, process_batch
from nodemedic.remediate.decision import STALE_NOTE, Decision
from nodemedic.remediate.silence import HEARD_AT
from nodemedic.settings import ClusterSettings
from tests.support.classify import CONTEXT, World, executions
from tests.support.payloads import wrap
from tests.unit.lambdas.classify.test_service import NODE, MemoryCounter

XID79 = "NVRM: Xid (PCI:0000:2b:00): 79, pid=0, name=python3, GPU has fallen off the bus."
LOGGED_MS = 1_763_836_200_000
TWO_DAYS = 2 * 86400
LIMIT = ClusterSettings.stale_after


def _decide(heard_after: float) -> tuple[str, str, list[str]]:
    """(action, evidence, stale event ids) of one Xid 79 heard ``heard_after`` s later."""
    started: list[Decision] = []

    def start(decision: Decision) -> bool:
        started.append(decision)
        return True

    result = process_batch(
        NODE,
        [LogEvent("1", LOGGED_MS, XID79)],
        classifier=default_classifier(),
        counter=MemoryCounter(),
        start=start,
        dedup_window=600,
        heard_at=LOGGED_MS / 1000 + heard_after,
        stale_after=LIMIT,
    )
    (decision,) = started
    return decision.action, decision.evidence_line, result.stale


def test_a_fault_line_two_days_old_is_notified_as_stale_not_replaced() -> None:
    action, line, stale = _decide(TWO_DAYS)
    assert action == "notify"
    assert line == STALE_NOTE.format(age=TWO_DAYS, limit=LIMIT, action="replace") + XID79
    assert stale == ["1"]


def test_a_line_heard_within_stale_after_still_acts() -> None:
    assert _decide(LIMIT) == ("replace", XID79, [])


def _payload(timestamp_ms: int, *messages: str) -> dict[str, Any]:
    return wrap(
        {
            "messageType": "DATA_MESSAGE",
            "owner": "123456789012",
            "logGroup": "/nodemedic/trn-prod/nodes",
            "logStream": f"{NODE.instance_id}/kmsg",
            "subscriptionFilters": ["nodemedic"],
            "logEvents": [
                {"id": str(i), "timestamp": timestamp_ms, "message": m}
                for i, m in enumerate(messages)
            ],
        }
    )


def test_the_classifier_notifies_a_replayed_fault_with_the_settings_default(
    aws: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_STALE_AFTER)
    logged = int((time.time() - TWO_DAYS) * 1000)

    result = aws["handler"](_payload(logged, XID79), CONTEXT)

    (decision,) = executions(aws)
    assert decision["action"] == "notify"
    assert decision["evidence_line"].startswith("(stale: logged ")
    assert result["stale"] == ["0"]


def test_a_replayed_heartbeat_counts_from_when_it_was_written(aws: World, ledger: str) -> None:
    logged = int((time.time() - TWO_DAYS) * 1000)

    aws["handler"](_payload(logged, heartbeat_message({"interval": 60})), CONTEXT)

    item = boto3.client("dynamodb").get_item(
        TableName=ledger, Key={"pk": {"S": HEARTBEAT_PK}, "sk": {"S": NODE.instance_id}}
    )["Item"]
    assert int(item[HEARD_AT]["N"]) == logged // 1000, "heard when written, not when replayed"
