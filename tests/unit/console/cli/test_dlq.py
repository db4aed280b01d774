"""What ``nodemedic dlq`` makes of a dead letter's body: a log batch, a scheduled run, or a
payload no function would take (a malformed one is shown, never an error)."""

from __future__ import annotations

import json

import pytest

from console.cli.deadletters import FIRST_LINE_CHARS, payload_of
from console.cli.dlq import summary
from tests.support.payloads import decoded, wrap

RULE = "arn:aws:events:us-east-1:123456789012:rule/nodemedic-demo-JobsSchedule"


def test_a_log_batch_is_summarized_by_its_source_and_first_line() -> None:
    data = decoded("xid79-with-noise.json")
    long = {**data, "logEvents": [{**data["logEvents"][0], "message": "x" * 500}]}
    payload = payload_of(json.dumps(wrap(long)))
    assert (payload.kind, payload.source, payload.log_stream) == (
        "awslogs",
        data["logGroup"],
        data["logStream"],
    )
    assert (payload.subscription_filter, payload.events) == ("nodemedic-faults", 1)
    assert payload.first_line == "x" * FIRST_LINE_CHARS


def test_a_scheduled_run_names_its_rule() -> None:
    body = json.dumps({"detail-type": "Scheduled Event", "resources": [RULE], "detail": {}})
    payload = payload_of(body)
    assert (payload.kind, payload.source) == ("scheduled", RULE)
    assert summary({"kind": "scheduled", "source": RULE}) == f"scheduled run of {RULE}"


@pytest.mark.parametrize(
    "body", ["", "not json", "[1, 2]", '{"awslogs": {"data": "!!"}}', '{"awslogs": 3}']
)
def test_anything_else_is_unknown(body: str) -> None:
    payload = payload_of(body)
    assert (payload.kind, payload.source, payload.size) == ("unknown", None, len(body))
