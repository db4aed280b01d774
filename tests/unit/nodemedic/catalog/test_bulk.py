"""The bulk form, ``classify_lines``: what the classifier Lambda runs on every batch.

It searches a chunk of lines as one text, so these tests aim at what that could break:
line numbers across chunks, needles near the seams between lines, rules with no needle,
and agreement with the rule-by-rule definition on every real line we have.
"""

from __future__ import annotations

import itertools
import json
import random
import re

from nodemedic.catalog import Catalog, load_catalog, parse_rules
from nodemedic.contracts.health import NVIDIA_SMI_CHECK
from nodemedic.detect.classifier import Classifier
from tests.support.paths import EVENTS as EVENTS_ROOT

EVENTS = EVENTS_ROOT / "kmsg"
CATALOG = load_catalog()
CLASSIFIER = Classifier(CATALOG)
XID_79 = "NVRM: Xid (PCI:0000:2b:00): 79, pid=1, GPU has fallen off the bus."
DMA = "NEURON_HW_ERR=DMA_ERROR instance-id=i-0abc hostname=ip-10-0-0-1 nd0 nc1"
BENIGN = "nvme nvme0: 32/0/0 default/read/poll queues"


def real_lines() -> list[str]:
    lines = []
    for name in ("benign.txt", "faults.txt"):
        for raw in (EVENTS / name).read_text().splitlines():
            if raw.strip() and not raw.startswith("#"):
                lines.append(raw.split("\t", 1)[-1])
    return lines


def rule_by_rule(catalog: Catalog, line: str) -> str | None:
    """The classifier's definition: the first kmsg rule in catalog order that holds."""
    for rule in (r for r in catalog.rules if r.source == "kmsg"):
        found = re.search(rule.pattern, line)
        if found is not None and all(found.group(k) in vs for k, vs in rule.match):
            return None if rule.action == "ignore" else rule.id
    return None


def test_bulk_agrees_with_the_rule_by_rule_definition_on_a_shuffled_storm() -> None:
    rng = random.Random(11)
    lines = real_lines()
    storm = [rng.choice(lines) for _ in range(5000)]
    expected = {i: rule_by_rule(CATALOG, line) for i, line in enumerate(storm)}
    got = {i: fault.fault_id for i, fault in CLASSIFIER.classify_lines(storm)}
    assert got == {i: fault_id for i, fault_id in expected.items() if fault_id is not None}
    assert len(got) > 1000, "the storm holds faults in every chunk"


def test_line_numbers_stay_right_across_chunks_of_a_stream() -> None:
    at = {0, 1023, 1024, 2047, 2048, 4999}
    stream = (XID_79 if i in at else BENIGN for i in range(5000))
    assert [i for i, _ in CLASSIFIER.classify_lines(stream)] == sorted(at)


def test_a_stream_yields_its_first_fault_without_being_read_to_the_end() -> None:
    endless = itertools.chain([BENIGN] * 5, [DMA], itertools.repeat(BENIGN))
    number, fault = next(CLASSIFIER.classify_lines(endless))
    assert (number, fault.fault_id) == (5, "neuron-dma-error")


def test_a_needle_split_across_two_lines_is_no_fault() -> None:
    halves = ["kernel: device reset NEURON_HW_", "ERR=DMA_ERROR handled by firmware", BENIGN]
    assert list(CLASSIFIER.classify_lines(halves)) == []
    assert [i for i, _ in CLASSIFIER.classify_lines([*halves, DMA])] == [3]


def test_a_line_holding_a_needle_twice_and_two_rules_gets_the_earlier_rule() -> None:
    line = f"{XID_79} {XID_79} NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus."
    ((number, fault),) = CLASSIFIER.classify_lines([BENIGN, line])
    assert (number, fault.fault_id, fault.groups["xid"]) == (1, "nvidia-xid-79", "79")


def test_a_rule_with_no_needle_is_tried_on_every_line_in_catalog_order() -> None:
    text = "schema: 1\nrules:\n" + "".join(
        f"  - id: {rule_id}\n    source: kmsg\n    pattern: '{pattern}'\n"
        f"    component: kernel\n    severity: fatal\n    action: {action}\n"
        f"    metric: M{n}\n"
        for n, (rule_id, pattern, action) in enumerate(
            [
                ("quiet-probe", "Probing device", "ignore"),
                ("any-hang", "(?i)hung", "reboot"),
                ("task-blocked", "blocked for more than", "replace"),
            ]
        )
    )
    classifier = Classifier(Catalog(rules=tuple(parse_rules(text, "test"))))
    lines = [
        "INFO: task python:42 blocked for more than 120 seconds.",
        "watchdog: HUNG task detected",
        "nvidia-nvswitch: Probing device, hung",
        "",
        BENIGN,
    ]
    found = [(i, f.fault_id) for i, f in classifier.classify_lines(lines)]
    assert found == [(0, "task-blocked"), (1, "any-hang")]


def test_health_lines_that_are_not_health_results_are_skipped_not_misnumbered() -> None:
    failing = json.dumps(
        {"check": NVIDIA_SMI_CHECK, "status": "fail", "reason": "EccUncorrectable", "device": "0"}
    )
    lines = ["not json", '["a", "list"]', failing, "{}", failing]
    found = [i for i, _ in CLASSIFIER.classify_lines(lines, "health")]
    assert found == [2, 4]


def test_single_line_and_bulk_forms_give_the_same_faults() -> None:
    lines = [XID_79, BENIGN, DMA] * 10
    single = [(i, CLASSIFIER.classify(line)) for i, line in enumerate(lines)]
    assert [(i, f.fault_id) for i, f in single if f is not None] == [
        (i, f.fault_id) for i, f in CLASSIFIER.classify_lines(lines)
    ]
