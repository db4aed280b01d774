"""Which lines of a log triage reads whole (``Classifier.suspects``): those holding a
rule's needle, found in one pass a line. Every fault line must be one, in every head form;
a filter term one rule names, a common word there, must not make every chatter line
holding it a suspect."""

from __future__ import annotations

from nodemedic.catalog import load_catalog
from nodemedic.detect.classifier import Classifier
from nodemedic.detect.headforms import FORMS
from tests.support.paths import EVENTS


def test_every_fault_line_is_a_suspect_in_every_head_form() -> None:
    classifier = Classifier(load_catalog())
    faults = [
        line.split("\t", 1)[1]
        for line in (EVENTS / "kmsg" / "faults.txt").read_text().splitlines()
        if line and line[0] != "#"
    ]
    found = [line for line in faults if classifier.classify(line) is not None]
    lines = [form.head + line for form in FORMS for line in found]
    suspects = classifier.suspects(lines)
    assert len(found) >= len(faults) * 0.9
    assert suspects is not None and sorted(suspects) == list(range(len(lines)))


def test_a_term_one_rule_names_is_the_filter_s_not_the_suspects() -> None:
    catalog = load_catalog()
    (ipoib,) = [rule for rule in catalog.rules if rule.id == "nic-driver-tx-timeout"]
    assert ipoib.term == "timeout"
    lines = [
        "[    3.0] ib0: transmit timeout handler armed",
        "[    4.0] ib0: transmit timeout: latency 20428 msecs",
        "[    5.0] sd 0:0:0:0: [sda] timeout set to 30 seconds",
    ]
    suspects = Classifier(catalog).suspects(lines)
    assert suspects is not None and sorted(suspects) == [1]
