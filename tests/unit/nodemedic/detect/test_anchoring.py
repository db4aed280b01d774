"""Kernel rules match where a driver line starts, so a line only the kernel's own text can
begin is needed to set one off: not a process name, a file path or a user message that a
kernel line quotes after its head.

A tenant controls the start of a kernel line only through its process name (``comm``, 15
characters at most), which lines such as the segfault report print first, followed by
``[pid]`` or `` (pid)``; the rest of those lines is the kernel's text, or a file path and
other values the tenant chooses again.
"""

from __future__ import annotations

import dataclasses

import pytest

from nodemedic.catalog import Catalog, Rule, load_catalog
from nodemedic.detect.classifier import Classifier
from nodemedic.detect.logformat import messages
from nodemedic.detect.matching import anchored
from scripts.generate_xid_rules import EXAMPLES, read_examples
from tests.support.paths import EVENTS

CATALOG = load_catalog()
CLASSIFIER = Classifier(CATALOG)
KERNEL_RULES = [r for r in CATALOG.rules if r.source == "kmsg"]
ACTING = [r for r in KERNEL_RULES if r.action in ("reboot", "replace") and r.example]
COMM = 15
"""TASK_COMM_LEN - 1: the longest process name the kernel prints."""


def segfault(comm: str, path: str) -> str:
    """The kernel's report of a process that crashed (show_signal_msg), mapping ``path``."""
    return (
        f"{comm}[4242]: segfault at 0 ip 00007f0000001000 sp 00007ffd00000000 error 4 in "
        f"{path}[7f0000+1000] likely on CPU 3 (core 3, socket 0)"
    )


def oom_adj(comm: str) -> str:
    """What a process that writes its own /proc/self/oom_adj (no privilege needed) logs."""
    return (
        f"{comm} (4242): /proc/4242/oom_adj is deprecated, please use "
        "/proc/4242/oom_score_adj instead."
    )


@pytest.mark.parametrize("rule", KERNEL_RULES, ids=lambda r: r.id)
def test_every_kernel_rule_is_anchored_at_the_start_of_the_message(rule: Rule) -> None:
    assert anchored(rule.pattern), rule.pattern


@pytest.mark.parametrize("pattern", ["NVRM: Xid", "^a|b", "(?m)^NVRM: Xid", "(?:^a|b)", "x^a", ""])
def test_a_pattern_that_can_match_after_the_start_is_not_anchored(pattern: str) -> None:
    assert not anchored(pattern)


@pytest.mark.parametrize(
    "line",
    [
        # A crashing process whose mapped file is named like a driver line.
        segfault("python", "NVRM: Xid (PCI:0000:2b:00): 79,.so"),
        # ... and one whose name is the head of an Xid line, with the file giving the rest.
        segfault("NVRM: Xid (0", "x): 79, GPU has fallen off the bus.so"),
        # A process named like an oops banner, crashing or writing its oom_adj.
        segfault("Oops: 0 [#1]", "/usr/lib/libc.so.6"),
        oom_adj("Oops: 0 [#1]"),
        oom_adj("x: 1f [#1] SMP"),
        # Process names that spell a Neuron error (a longer one than a comm holds, too).
        segfault("python", "NEURON_HW_ERR=DMA_ERROR .so"),
        "INFO: task NEURON_HW_ERR=DMA_ERROR:4242 blocked for more than 120 seconds.",
        # A user message (as /dev/kmsg would get it, were it not marked).
        "myapp: 1f [#1] hello",
        "myapp: NEURON_HW_ERR=DMA_ERROR affecting neuron devices",
        'audit: type=1400 audit(1721318643.208:2): name="NEURON_HW_ERR=DMA_ERROR "',
        # Driver text inside the values of other kernel lines.
        "Out of memory: Killed process 4242 (EDAC MC0: 1 UE ) total-vm:1kB",
        "process 'NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.' started with "
        "executable stack",
    ],
)
def test_user_chosen_text_does_not_become_a_hardware_fault(line: str) -> None:
    fault = CLASSIFIER.classify(line)
    assert fault is None or fault.rule.action == "notify", (fault and fault.fault_id, line)


def test_a_process_name_inside_a_hung_task_line_stays_a_hung_task() -> None:
    line = "INFO: task EDAC MC0: 1 UE :4242 blocked for more than 120 seconds."
    fault = CLASSIFIER.classify(line)
    assert fault is not None and fault.fault_id == "hung-task"


@pytest.mark.parametrize("rule", ACTING, ids=lambda r: r.id)
def test_no_process_name_completes_the_head_of_a_rule_that_acts(rule: Rule) -> None:
    """The process name is every prefix of the rule's own example that fits in a comm, and
    the mapped file is the whole example: nothing the kernel prints after a process name
    lets the line pass for the driver's."""
    for length in range(1, COMM + 1):
        comm = rule.example[:length]
        for line in (segfault(comm, rule.example), oom_adj(comm)):
            fault = CLASSIFIER.classify(line)
            assert fault is None or fault.rule.action == "notify", (fault and fault.fault_id, line)


def corpus() -> list[str]:
    """Every real or documented kernel message the project keeps: the corpora under
    tests/events/kmsg (the three samples as triage reads them), every rule's example and
    every Xid example."""
    kmsg = EVENTS / "kmsg"
    lines = [
        raw.split("\t", 1)[-1]
        for name in ("faults.txt", "benign.txt")
        for raw in (kmsg / name).read_text().splitlines()
        if raw.strip() and not raw.startswith("#")
    ]
    for name in ("dmesg-sample.txt", "journalctl-sample.txt", "kmsg-records.txt"):
        lines += [entry.message for entry in messages((kmsg / name).read_text().splitlines())]
    lines += [rule.example for rule in KERNEL_RULES if rule.example]
    lines += list(read_examples(EXAMPLES.read_text(encoding="utf-8")).values())
    return lines


def test_anchoring_takes_no_real_line_its_fault() -> None:
    """The same rules searched anywhere in the line, as before they were anchored, find
    the same fault in every real line: anchoring only stops lines that merely contain a
    driver's text."""
    unanchored = Catalog(
        rules=tuple(
            dataclasses.replace(r, pattern=r.pattern.removeprefix("^")) if r.source == "kmsg" else r
            for r in CATALOG.rules
        )
    )
    searched = Classifier(unanchored)
    lines = corpus()
    assert len(lines) > 450
    changed = [
        (line, before.fault_id if before else None, after.fault_id if after else None)
        for line in lines
        if ((before := searched.classify(line)) and before.fault_id)
        != ((after := CLASSIFIER.classify(line)) and after.fault_id)
    ]
    assert changed == []
