"""The catalog against what other projects do about the same real lines (bench/corpus)."""

from __future__ import annotations

import pytest

from bench.detection import Entry, load_corpus, verdict
from nodemedic.catalog import load_catalog
from nodemedic.detect.classifier import Classifier

ENTRIES = load_corpus()
CLASSIFIER = Classifier(load_catalog())


def test_the_corpus_holds_every_family_the_issue_names() -> None:
    families = {entry.family for entry in ENTRIES}
    assert families >= {"efa", "gpu", "nvlink", "row-remap", "storage", "kernel", "network"}


@pytest.mark.parametrize(
    "entry", [e for e in ENTRIES if e.expect != "none"], ids=lambda e: e.line[-60:]
)
def test_every_line_a_peer_detects_gets_at_least_a_notification_unless_the_corpus_says_why(
    entry: Entry,
) -> None:
    assert verdict(CLASSIFIER, entry.line) != "none" or entry.why, (entry.peer, entry.line)


@pytest.mark.parametrize(
    "entry", [e for e in ENTRIES if e.expect in ("none", "notify")], ids=lambda e: e.line[-60:]
)
def test_no_reboot_or_replace_where_a_peer_does_not_act_unless_the_corpus_says_why(
    entry: Entry,
) -> None:
    action = verdict(CLASSIFIER, entry.line)
    assert action not in ("reboot", "replace") or entry.why, (entry.peer, entry.line, action)


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.expect == "none"], ids=lambda e: e.line)
def test_lines_a_peer_calls_benign_stay_silent(entry: Entry) -> None:
    assert verdict(CLASSIFIER, entry.line) == "none", (entry.peer, entry.line)
