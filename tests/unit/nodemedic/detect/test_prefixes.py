"""The first characters a rule's matches start with: how the bulk classifier reaches the
anchored rules by one lookup a line, and never misses a line one of them matches."""

from __future__ import annotations

import pytest

from nodemedic.catalog import load_catalog
from nodemedic.detect.classifier import Classifier
from nodemedic.detect.matching import prefixes
from tests.support.paths import EVENTS


@pytest.mark.parametrize(
    ("pattern", "starts"),
    [
        (r"^NVRM: Xid \((?P<pci>[^)]+)\): (?P<code>\d+),", {"NVR"}),
        (r"^(?:mce: )?\[Hardware Error\]: CPU", {"mce", "[Ha"}),
        (r"^(?:nvidia-nvswitch){1}\d+: SXid", {"nvi"}),
        (r"^(?:EXT[234]-fs|XFS) \(", {"EXT", "XFS"}),
        (r"^(?:E[XY]T4-fs|XFS) \(", {"EXT", "EYT", "XFS"}),
        (r"^(?:ib0|ib1|ibp)\w*: transmit", {"ib0", "ib1", "ibp"}),
        (r"^ib[0-9]: ", {f"ib{n}" for n in range(10)}),
        (r"^ib\d: ", None),
        (r"^ib[^x]: ", None),
        (r"^.{1,15} invoked oom-killer: ", None),
        (r"NVRM: Xid", None),
        (r"(?i)^nvrm: xid", None),
        (r"^md", None),
    ],
)
def test_the_starts_of_a_pattern_are_known_only_where_they_are_a_few_literals(
    pattern: str, starts: set[str] | None
) -> None:
    assert prefixes(pattern) == (None if starts is None else frozenset(starts))


def test_every_fault_line_is_found_in_bulk_as_line_by_line() -> None:
    """Each real fault line, and the same line after chatter that shares its first
    characters but not its needle, gets the same fault in bulk as alone."""
    classifier = Classifier(load_catalog())
    lines = [
        line.split("\t", 1)[1]
        for line in (EVENTS / "kmsg" / "faults.txt").read_text().splitlines()
        if line and line[0] != "#"
    ]
    chatter = [line[:3] + " loading module" for line in lines]
    mixed = [line for pair in zip(chatter, lines, strict=True) for line in pair]
    alone = [classifier.classify(line) for line in mixed]
    bulk = dict(classifier.classify_lines(mixed))
    assert [(f.fault_id if f else None) for f in alone] == [
        (bulk[n].fault_id if n in bulk else None) for n in range(len(mixed))
    ]
    assert sum(f is not None for f in alone) >= len(lines) * 0.9
