"""The classifier Lambda on a delivery of the deep check's stream (moto)."""

from __future__ import annotations

import json

import pytest

from nodemedic.catalog import load_catalog
from nodemedic.contracts.env import ENV_PROOF_OF_ORIGIN
from nodemedic.contracts.health import DEEP_CHECK_VERDICT
from nodemedic.detect.filterpattern import selected, subscription_filter_patterns
from tests.support.classify import CONTEXT, World, executions
from tests.support.payloads import decoded, wrap

FAILED = "deep-check-failed.json"


def _verdict(status: str, reason: str) -> str:
    line = {"check": DEEP_CHECK_VERDICT, "device": "node", "status": status, "reason": reason}
    return json.dumps(line | {"figures": {}, "ts": "2025-11-22T18:31:00Z"})


def test_a_failed_verdict_is_selected_and_starts_one_replacement(aws: World) -> None:
    data = decoded(FAILED)
    verdict = data["logEvents"][-1]["message"]
    assert selected(subscription_filter_patterns(load_catalog()), verdict)

    result = aws["handler"](wrap(data), CONTEXT)

    # The failed sub-check line is evidence for people, not a fault of its own.
    assert result["lines"] == 4 and result["faults"] == 1
    [decision] = executions(aws)
    assert decision["instance_id"] == "i-0a1b2c3d4e5f60718"
    assert decision["fault_id"] == "deep-check-failed"
    assert decision["action"] == "replace" and decision["source"] == "deep-check"
    assert decision["health_status"] == "UnschedulablePendingReplacement"
    # Only the deep check's own stream gives verdicts: on the health stream it is no fault.
    data["logStream"] = "i-0a1b2c3d4e5f60718/health"
    assert aws["handler"](wrap(data), CONTEXT)["faults"] == 0


@pytest.mark.parametrize(
    ("status", "reason", "fault_id"),
    [
        ("ok", "Passed", "deep-check-passed"),
        ("warn", "NothingChecked", "deep-check-nothing-checked"),
    ],
)
def test_a_pass_and_nothing_checked_are_notify_decisions(
    aws: World, status: str, reason: str, fault_id: str
) -> None:
    data = decoded(FAILED)
    data["logEvents"] = [
        {"id": "1", "timestamp": 1763836260000, "message": _verdict(status, reason)}
    ]

    aws["handler"](wrap(data), CONTEXT)

    [decision] = executions(aws)
    assert (decision["fault_id"], decision["action"]) == (fault_id, "notify")


def test_where_origin_is_enforced_an_unsigned_verdict_neither_replaces_nor_admits(
    aws: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_PROOF_OF_ORIGIN, "enforce")
    data = decoded(FAILED)
    failed = data["logEvents"][-1]
    passed = {"id": "2", "timestamp": failed["timestamp"] + 1, "message": _verdict("ok", "Passed")}
    data["logEvents"] = [failed, passed]

    result = aws["handler"](wrap(data), CONTEXT)

    assert result["unproven"] == [failed["id"], "2"]
    [decision] = executions(aws)
    assert (decision["fault_id"], decision["action"]) == ("deep-check-failed", "notify")
    assert decision["evidence_line"].startswith("(origin not proven: unsigned")


def test_each_run_of_the_deep_check_is_a_decision_of_its_own(aws: World) -> None:
    """The check after a reboot passes a minute after the one at first boot: its verdict
    must reach the pipeline (which lifts the reboot's hold), not be taken for a repeat of
    the first; the same verdict delivered twice starts nothing more."""
    data = decoded(FAILED)
    first, after_reboot = 1763836260000, 1763836320000  # one dedup window, a minute apart
    for at in (first, after_reboot, after_reboot):
        data["logEvents"] = [{"id": str(at), "timestamp": at, "message": _verdict("ok", "Passed")}]
        aws["handler"](wrap(data), CONTEXT)

    assert sorted(d["first_seen"] for d in executions(aws)) == [
        "2025-11-22T18:31:00Z",
        "2025-11-22T18:32:00Z",
    ]
