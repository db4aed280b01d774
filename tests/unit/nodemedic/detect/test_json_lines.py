"""JSON lines (health results, deep-check verdicts, heartbeats) are read one at a time,
bounded in size and nesting: a line nobody's parser can take is refused with a reason, it
does not raise out of the batch it came in."""

from __future__ import annotations

import json

import pytest

from nodemedic.catalog import Source
from nodemedic.contracts.logs import (
    HEARTBEAT_MARK,
    MAX_HEARTBEAT_CHARS,
    MAX_JSON_DEPTH,
    UnparsableLine,
    heartbeat_message,
    json_line,
    parse_heartbeat,
)
from nodemedic.detect.classifier import MAX_LINE, default_classifier, unparsable_lines
from nodemedic.remediate.silence import Recent, interval_of, newest_heartbeat

BRACKETS = "[" * MAX_LINE
"""8 KiB of ``[``: Python's parser recursed once per bracket and raised RecursionError."""
HEARTBEAT_OF_BRACKETS = HEARTBEAT_MARK + "[" * (MAX_HEARTBEAT_CHARS - 3 - len(HEARTBEAT_MARK))
RESULT = json.dumps(
    {"check": "nvidia-smi", "device": "node", "status": "fail", "reason": "GpuMissing"}
)
VERDICT = json.dumps(
    {"check": "deep-check", "device": "node", "status": "fail", "reason": "Failed"}
)


@pytest.mark.parametrize(
    ("source", "line", "rule"),
    [("health", RESULT, "nvidia-smi-gpu-missing"), ("deep-check", VERDICT, "deep-check-failed")],
    ids=["health", "deep-check"],
)
def test_brackets_on_a_health_stream_are_no_fault_and_cost_the_others_nothing(
    source: Source, line: str, rule: str
) -> None:
    found = list(default_classifier().classify_lines([BRACKETS, line], source))
    assert [(index, fault.rule.id) for index, fault in found] == [(1, rule)]
    [(index, why)] = unparsable_lines([BRACKETS, line], source)
    assert index == 0 and why == f"JSON nested more than {MAX_JSON_DEPTH} deep"


def test_a_heartbeat_of_brackets_is_no_heartbeat() -> None:
    assert len(HEARTBEAT_OF_BRACKETS) == 1021
    assert parse_heartbeat(HEARTBEAT_OF_BRACKETS) is None
    good = heartbeat_message({"interval": 300, "lines_read": 7})
    assert newest_heartbeat([good, HEARTBEAT_OF_BRACKETS]) == {"interval": 300, "lines_read": 7}
    [(index, _)] = unparsable_lines([good, HEARTBEAT_OF_BRACKETS, "[[[ a kernel line"], "kmsg")
    assert index == 1


def test_a_heartbeats_count_too_large_for_a_float_is_dropped() -> None:
    """Its interval divided by two raised OverflowError, and DynamoDB refuses a number of
    more than 38 digits."""
    state = parse_heartbeat(HEARTBEAT_MARK + '{"interval": 1' + "0" * 400 + ', "lines_read": 3}')
    assert state == {"lines_read": 3}
    assert Recent().due("i-0a1b2c3d4e5f60718", 1.0, interval_of(state))


def test_nesting_is_bounded_outside_strings_only() -> None:
    deepest = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert json_line(deepest, MAX_LINE) is not None
    with pytest.raises(UnparsableLine, match="nested"):
        json_line("[" + deepest + "]", MAX_LINE)
    quoted = json.dumps({"reason": "[[{" * 40, "escaped": '\\"[[' * 40})
    assert json_line(quoted, MAX_LINE)["reason"] == "[[{" * 40


def test_size_type_and_fields_are_refused_with_a_reason() -> None:
    cases = {
        "x" * (MAX_LINE + 1): "more than 8192",
        "{": "not JSON",
        "[1, 2]": "not a JSON object",
        '{"check": "nvidia-smi", "status": "fail"}': "no reason, device",
        "1" * 5000: "not JSON",  # past Python's digits limit for int()
    }
    for line, why in cases.items():
        [(_, found)] = unparsable_lines([line], "health")
        assert why in found, line[:40]
    assert list(unparsable_lines([RESULT], "health")) == []
