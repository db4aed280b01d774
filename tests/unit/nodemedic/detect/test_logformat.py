"""The forms other tools write kernel lines in (tests/events/kmsg/syslog-forms.txt)."""

from __future__ import annotations

import json

import pytest

from nodemedic.detect.classifier import classify
from nodemedic.detect.logformat import Message, journal_message, message_of, messages
from tests.support.paths import EVENTS

XID = "NVRM: Xid (PCI:0000:2b:00): 79, pid=1, name=python, GPU has fallen off the bus."


def forms() -> list[tuple[str, int, str]]:
    rows = []
    for raw in (EVENTS / "kmsg" / "syslog-forms.txt").read_text().splitlines():
        if raw.strip() and not raw.startswith("#"):
            fault_id, count, line = raw.split("\t", 2)
            rows.append((fault_id, int(count), line))
    return rows


@pytest.mark.parametrize(("fault_id", "count", "line"), forms())
def test_each_form_is_the_fault_of_the_line_inside_as_often_as_it_stands_for(
    fault_id: str, count: int, line: str
) -> None:
    parsed = message_of(line)
    assert parsed is not None and parsed.repeats == count
    assert parsed.text == parsed.text.strip(), "no head or indentation left"
    fault = classify(parsed.text)
    assert (fault.fault_id if fault else "-") == fault_id


@pytest.mark.parametrize(
    "line",
    [
        f"kernel: {XID}",
        f"    {XID}",
        f"\t[ 5678.901234] {XID}",
        f"[T92772] {XID}",
        f"Nov 22 18:30:01 ip-10-0-1-23 kernel: [C3] {XID}",
        f"Nov 22 18:30:01 ip-10-0-1-23 kernel: message repeated 4 times: [ {XID}]",
        f"kernel: message repeated 4 times: [[ 5678.901234] {XID}]",
    ],
)
def test_heads_other_tools_write_are_stripped(line: str) -> None:
    parsed = message_of(line)
    assert parsed is not None and parsed.text == XID


def test_a_folded_line_counts_what_it_stands_for_and_keeps_its_priority() -> None:
    assert message_of(f"<12>[ 5.1] message repeated 2 times: [ {XID}]") == Message(XID, 1, 2)
    assert message_of(f"message repeated 2 times: [ {XID}]") == Message(XID, None, 2)
    [entry] = messages([f"kernel: message repeated 5 times: [ {XID}]"])
    assert (entry.message, entry.repeats) == (XID, 5)


def test_kmsg_continuation_lines_are_still_no_message_though_indented_lines_are() -> None:
    assert message_of(" SUBSYSTEM=pci") is None
    assert message_of(" DEVICE=+pci:0000:2b:00.0") is None
    assert message_of(f"  {XID}") == Message(XID, None)


@pytest.mark.parametrize(
    ("record", "facility"),
    [
        ({"_TRANSPORT": "kernel", "SYSLOG_FACILITY": "0"}, 0),
        ({"_TRANSPORT": "kernel"}, 0),
        ({"_TRANSPORT": "journal", "SYSLOG_FACILITY": "3"}, 3),
        ({"_TRANSPORT": "stdout"}, 1),
        ({}, None),
    ],
)
def test_a_journal_record_gives_its_message_and_who_logged_it(
    record: dict[str, str], facility: int | None
) -> None:
    whole = {**record, "MESSAGE": XID}
    assert journal_message(whole) == Message(XID, facility)
    assert message_of(json.dumps(whole)) == Message(XID, facility)


def test_a_journal_message_kept_as_bytes_is_decoded_and_other_json_is_no_record() -> None:
    raw = [*XID.encode(), 0xFF]
    assert journal_message({"MESSAGE": raw}) == Message(XID + "\ufffd", None)
    assert journal_message({"MESSAGE": 7}) is None
    assert journal_message({"message": XID}) is None
    health = '{"check": "nvidia-smi", "status": "fail"}'
    assert message_of(health) == Message(health, None), "a health result stays itself"
