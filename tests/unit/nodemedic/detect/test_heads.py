"""Every catalog example in every head form (``nodemedic.detect.headforms.FORMS``), with and
without trailing whitespace, gets the verdict of the bare line: in the grammar, in triage,
in the classifier on the line as the agent ships it, and through the subscription filter."""

from __future__ import annotations

import csv

import pytest

from console.findings import KernelLogCheck, kernel_findings
from nodemedic.catalog import load_catalog
from nodemedic.detect.classifier import Classifier
from nodemedic.detect.filterpattern import selected, subscription_filter_patterns
from nodemedic.detect.headforms import FORMS, UNSPELLED, Form
from nodemedic.detect.heads import INNER_REACH, inner_message, strip_head
from nodemedic.detect.logformat import Message, message_of
from tests.support.paths import ROOT

CATALOG = load_catalog()
CLASSIFIER = Classifier(CATALOG)
TAILS = ("", " ", "  \t", "\r")
"""Trailing whitespace as it reaches a log: the space older kernels print after an oops's
flags, tabs, a CRLF file's carriage return."""


def _examples() -> list[str]:
    rules = [rule.example for rule in CATALOG.rules if rule.source == "kmsg"]
    with (ROOT / "nodemedic" / "catalog" / "xid" / "examples.tsv").open() as table:
        return rules + [row["example"] for row in csv.DictReader(table, delimiter="\t")]


EXAMPLES = _examples()
BARE = {line: CLASSIFIER.classify(line) for line in EXAMPLES}


def _verdict(line: str) -> str | None:
    fault = CLASSIFIER.classify(line)
    return None if fault is None else fault.fault_id


def test_the_examples_cover_every_action() -> None:
    assert len(EXAMPLES) > 250
    actions = {fault.action for fault in BARE.values() if fault is not None}
    assert actions >= {"notify", "reboot", "replace"}


@pytest.mark.parametrize("form", FORMS, ids=lambda form: form.name)
def test_each_form_is_stripped_to_the_bare_message_of_every_example(form: Form) -> None:
    wrong = []
    for example in EXAMPLES:
        for tail in TAILS:
            parsed = message_of(form.head + example + tail)
            if parsed is None or parsed.text != example or parsed.facility not in (0, None):
                wrong.append((example, tail, parsed))
    assert wrong == []


@pytest.mark.parametrize("form", FORMS, ids=lambda form: form.name)
def test_triage_gives_each_form_the_bare_lines_faults(form: Form) -> None:
    lines = [form.head + example + tail for example in EXAMPLES for tail in TAILS]
    found = {
        f.line_no - 1: f.fault.fault_id
        for chunk in kernel_findings("-", lines, CLASSIFIER, KernelLogCheck())
        for f in chunk
    }
    expected = {
        n: fault.fault_id
        for n, example in enumerate(e for e in EXAMPLES for _ in TAILS)
        if (fault := BARE[example]) is not None
    }
    assert found == expected


@pytest.mark.parametrize("form", UNSPELLED, ids=lambda form: form.name)
def test_a_head_the_grammar_does_not_spell_out_is_read_from_its_stamp_or_tag(form: Form) -> None:
    """A relay's, a container log's or a paste's head before dmesg's stamp or syslog's tag:
    every example behind it gets the bare line's verdict, in triage as in the grammar."""
    assert message_of(form.head + "usb 1-1: new device") == Message("usb 1-1: new device", None)
    lines = [form.head + example for example in EXAMPLES]
    found = {
        f.line_no - 1: f.fault.fault_id
        for chunk in kernel_findings("-", lines, CLASSIFIER, KernelLogCheck())
        for f in chunk
    }
    expected = {n: fault.fault_id for n, e in enumerate(EXAMPLES) if (fault := BARE[e]) is not None}
    assert found == expected


def test_an_indented_unknown_head_is_read_however_its_message_ends() -> None:
    """A head of one character (a tab) is no head that ends where the message starts, even
    where the message's own last character is one a head ends with."""
    line = "\tdmesg-tail-1  | [ 3947.590120] usb 1-1: reset [1]"
    assert strip_head(line) == ("usb 1-1: reset [1]", None)


@pytest.mark.parametrize(
    "text",
    [
        "sd 0:0:0:0: [sda] 937703088 512-byte logical blocks",
        "[drm] amdgpu kernel modesetting enabled.",
        "Out of memory: Killed process 2625 (node) [kernel: none]",
        "ACPI: \\_SB_.PCI0: _OSC: OS supports [ExtendedConfig ASPM ClockPM Segments MSI]",
        "rcu: INFO: rcu_sched self-detected stall on CPU " + "x" * INNER_REACH + "[ 3947.590120] y",
    ],
)
def test_a_message_is_cut_only_at_a_stamp_or_a_tag_near_its_start(text: str) -> None:
    """Brackets, a tag's word within a sentence and a stamp past the reach stay the
    message's."""
    assert inner_message(text) == text


@pytest.mark.parametrize("tail", TAILS[1:], ids=repr)
def test_the_classifier_judges_a_message_with_trailing_whitespace_as_without(tail: str) -> None:
    """The agent ships a record's message as the kernel printed it, trailing space and all."""
    wrong = [e for e in EXAMPLES if _verdict(e + tail) != _verdict(e)]
    assert wrong == []


@pytest.mark.parametrize("form", FORMS, ids=lambda form: form.name)
def test_the_subscription_filter_passes_every_fault_line_in_each_form(form: Form) -> None:
    patterns = subscription_filter_patterns(CATALOG)
    faults = [e for e, fault in BARE.items() if fault is not None]
    missed = [e for e in faults for tail in TAILS if not selected(patterns, form.head + e + tail)]
    assert missed == []


def test_an_ena_probe_failure_behind_a_serial_console_capture_is_found_as_bare() -> None:
    """amzn-drivers#162's console capture wrote its time and the milliseconds since its
    line before, then dmesg's stamp; behind that head the ENA rule never saw its message."""
    bare = "ena 0000:00:05.0: ENA device init failed"
    headed = "00h 02m 10.529s(  51ms): [  131.912839] " + bare
    found = [
        f.fault.fault_id
        for chunk in kernel_findings("-", [bare, headed], CLASSIFIER, KernelLogCheck())
        for f in chunk
    ]
    assert found == ["ena-device-init-failed"] * 2
    assert selected(subscription_filter_patterns(CATALOG), headed)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        # A message's own start is never taken for a head.
        ("[Hardware Error]: event severity: fatal", "[Hardware Error]: event severity: fatal"),
        ("[Firmware Bug]: TSC doesn't count with P0 frequency!", None),
        ("[drm] amdgpu kernel modesetting enabled.", None),
        ("audit: type=1400 audit(1.2:3): apparmor=DENIED", None),
        ("nfs: server 10.0.0.1 not responding, timed out", None),
        ("md: raid1 personality registered for level 1", None),
        ("EDAC MC0: 1 CE memory read error", None),
        (
            "2025-01-02T03:04:05+00:00 EDAC MC0: 1 CE memory read error",
            "EDAC MC0: 1 CE memory read error",
        ),
        # dmesg -r's priority goes, a message's own first word stays ("1 " is RFC 5424's
        # version only before its time).
        ("<4>1 of 2 power supplies failed", "1 of 2 power supplies failed"),
        # A program other than the kernel keeps its tag: no kernel rule matches it.
        ("Mar 27 19:52:25 host systemd[1]: Started foo.", "host systemd[1]: Started foo."),
    ],
)
def test_what_is_no_head_stays(line: str, message: str | None) -> None:
    parsed = message_of(line)
    assert parsed is not None and parsed.text == (message or line)


@pytest.mark.parametrize(
    ("head", "facility"),
    [
        ("Thu Sep  1 19:19:48 2022 user.info kernel: [   16.479260] ", 1),
        ("k3s-node5.lab: daemon: warning: [2023-08-18T13:36:47.378241465Z]: ", 3),
        ("user  :notice: ", 1),
        ("<14>[ 5.1] ", 1),
        ("14,1234,5678901234,-;", 1),
        ("Jan  1 01:00:54 fritz kern.err kernel: ", 0),
    ],
)
def test_a_head_that_names_another_facility_than_the_kernels_says_so(
    head: str, facility: int
) -> None:
    """OpenWrt's procd logs through the kernel's buffer as ``user.info kernel:``: its lines
    are no kernel lines, and triage holds them to notify as the agent would mark them."""
    line = "NVRM: Xid (PCI:0000:2b:00): 79, pid=1, name=python, GPU has fallen off the bus."
    assert message_of(head + line) == Message(line, facility)


@pytest.mark.parametrize(
    ("line", "fault_id"),
    [
        # leptonai/gpud components/os/kmsg_matcher_test.go ("Kernel Panic with capital P").
        (
            "Kernel Panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)",
            "kernel-panic",
        ),
        ("Kernel Panic - not syncing: Fatal Machine check", "mce-fatal-panic"),
        # Kernels before 4.x print each oops flag with a space after it.
        ("divide error: 0000 [#1] SMP ", "kernel-oops"),
    ],
)
def test_spellings_the_kernel_and_peers_data_carry_are_the_same_fault(
    line: str, fault_id: str
) -> None:
    parsed = message_of(line)
    assert parsed is not None and _verdict(parsed.text) == fault_id
    assert _verdict(line) == fault_id, "as the agent ships the record"
    assert selected(subscription_filter_patterns(CATALOG), line)


@pytest.mark.parametrize(
    "line", ["[...]", "    [    ....    ]", "Nov 22 18:30:01 ip-10-0-1-23 kernel: [ 3947.590120] "]
)
def test_a_head_alone_is_no_message(line: str) -> None:
    """A paste's elided lines carry no message, not an empty one."""
    assert message_of(line) is None
