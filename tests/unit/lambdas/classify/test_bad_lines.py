"""One bad line never costs the others: a line that is not what its stream carries is
counted (``UnparsableLines``) and reported with its evidence, and the rest of its batch is
classified as if it were not there."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nodemedic.contracts.logs import HEARTBEAT_MARK, MAX_HEARTBEAT_CHARS, node_log_group
from nodemedic.contracts.metrics import UNPARSABLE_METRIC
from tests.support.classify import CONTEXT, World, executions
from tests.support.payloads import wrap

INSTANCE = "i-0a1b2c3d4e5f60718"
AT = 1763836200000
XID79 = "NVRM: Xid (PCI:0000:2b:00): 79, pid=1234, name=python, GPU has fallen off the bus."
ROW_REMAP = json.dumps(
    {"check": "nvidia-smi", "device": "0000:2b:00.0", "status": "fail", "reason": "RowRemapFailure"}
)
VERDICT = json.dumps(
    {"check": "deep-check", "device": "node", "status": "fail", "reason": "Failed"}
)
BRACKETS = "[" * 8192
HEARTBEAT_OF_BRACKETS = HEARTBEAT_MARK + "[" * (MAX_HEARTBEAT_CHARS - 3 - len(HEARTBEAT_MARK))


def payload(source: str, messages: list[str]) -> dict[str, Any]:
    return {
        "messageType": "DATA_MESSAGE",
        "owner": "123456789012",
        "logGroup": node_log_group("trn-prod"),
        "logStream": f"{INSTANCE}/{source}",
        "subscriptionFilters": ["nodemedic-faults"],
        "logEvents": [
            {"id": str(n), "timestamp": AT + n, "message": message}
            for n, message in enumerate(messages, start=1)
        ],
    }


CASES = {
    "health": (BRACKETS, ROW_REMAP, "nvidia-smi-row-remap-failure"),
    "deep-check": (BRACKETS, VERDICT, "deep-check-failed"),
    "kmsg": (HEARTBEAT_OF_BRACKETS, XID79, "nvidia-xid-79"),
}
"""Stream kind: (a line nested past the parser's limit, a fault line, its fault)."""


@pytest.mark.parametrize("source", sorted(CASES))
@pytest.mark.usefixtures("ledger")
def test_a_line_that_cannot_be_parsed_costs_the_rest_of_its_batch_nothing(
    aws: World, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture, source: str
) -> None:
    bad, good, fault = CASES[source]
    result = aws["handler"](wrap(payload(source, [bad, good])), CONTEXT)
    [decision] = executions(aws)
    assert decision["fault_id"] == fault and result["started"] == [decision["decision_id"]]
    assert result["unparsable"] == ["1"] and result["lines"] == 2
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    [counted] = [p for p in printed if UNPARSABLE_METRIC in p]
    assert counted[UNPARSABLE_METRIC] == [1.0] and counted["Cluster"] == "trn-prod"
    [told] = [r for r in caplog.records if r.getMessage() == "unparsable lines"]
    [line] = told.__dict__["lines"]
    assert line["event_id"] == "1" and "nested more than" in line["reason"]
    assert line["evidence"].startswith(bad[:100])
